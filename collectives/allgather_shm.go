package collectives

import (
	"github.com/gorma-hpc/gorma/collectives/internal/hostgroup"
	"github.com/gorma-hpc/gorma/runtime"
)

// allgatherSHM is the Allgather of a one-host World. Each member copies its block (mine)
// into its scratch and publishes; then every member copies every other member's block
// out, and its own into recv last. A block of up to hostgroup.SmallMax bytes takes
// one step (the flag line or the small slot); a longer one goes in chunks of the big
// buffer's size, one step per chunk. Each member stores n and loads (p-1)·n elements of
// scratch. From hostgroup.SingleMin() bytes a block each member reads the others' blocks
// from their mine instead (single_shm.go): it loads (p-1)·n and stores nothing. It names
// the algorithm the call took (single or shm).
func allgatherSHM[T runtime.Elem](c *call, g *hostgroup.Group, recv, mine []T, n int) error {
	if m := hostgroup.SingleMin(); m > 0 && n*elemSize[T]() >= m {
		done, err := singleMove(c, g, bytesOf(mine), func(int) bool { return true }, n*elemSize[T](),
			func(add func(from, off int, dst []byte)) {
				for j := range g.Ranks {
					if j != g.Me {
						add(j, 0, bytesOf(recv[j*n:(j+1)*n]))
					}
				}
			})
		if done {
			c.chose("single")
			copy(recv[g.Me*n:(g.Me+1)*n], mine)
		}
		if err != nil || done {
			return err
		}
	}
	c.chose("shm")
	if err := allgatherSteps(c, g, recv, mine, n); err != nil {
		return err
	}
	copy(recv[g.Me*n:(g.Me+1)*n], mine)
	return g.ReleaseBig(c)
}

// allgatherSteps is allgatherSHM's steps, which leave recv's own block as it was, for a
// caller that goes on using the big buffers (allgatherHier).
func allgatherSteps[T runtime.Elem](c *call, g *hostgroup.Group, recv, mine []T, n int) error {
	p, es := len(g.Ranks), elemSize[T]()
	bytes := n * es
	if bytes <= hostgroup.SmallMax {
		v := g.Next()
		hostgroup.ScratchIn(g, hostgroup.SmallSlot[T](g, g.Me, v, n), mine)
		g.SetMeta(v, bytes)
		if err := g.Step(c, v, bytes); err != nil {
			return err
		}
		for j := range p {
			if j != g.Me {
				hostgroup.ScratchOut(g, recv[j*n:(j+1)*n], hostgroup.SmallSlot[T](g, j, v, n))
			}
		}
		return nil
	}
	return g.Chunks(c, n, es, 1, bytes, func(lo, hi, b int) {
		hostgroup.ScratchInBig(g, hostgroup.Big[T](g, g.Me, b, hi-lo), mine[lo:hi], false)
	}, func(lo, hi, b int) {
		for j := range p {
			if j != g.Me {
				hostgroup.ScratchOut(g, recv[j*n+lo:j*n+hi], hostgroup.Big[T](g, j, b, hi-lo))
			}
		}
	})
}
