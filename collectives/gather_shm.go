package collectives

import (
	"github.com/gorma-hpc/gorma/collectives/internal/hostgroup"
	"github.com/gorma-hpc/gorma/runtime"
)

// gatherSHM is the Gather of a one-host World, blocks of n elements. Each member but root
// copies its block into its scratch and publishes; root copies every other block out into
// its place in recv (its own is there in place, else gather copies it after). Up to
// hostgroup.SmallMax bytes a block takes one step (the flag line or the small slot), for
// which only root waits: the others publish and go on (stepLast); longer blocks go in
// chunks of the big buffer's size, one step per chunk. The first step carries the call's
// number and byte count: a member that passed another count (or named another root:
// rootTag) makes every member that waits for it fail with ErrMismatch. Each member but
// root stores n elements; root loads (p-1)·n.
func gatherSHM[T runtime.Elem](c *call, g *hostgroup.Group, send, recv []T, n, root int) error {
	p, es := len(g.Ranks), elemSize[T]()
	bytes := n * es
	c.chose("shm")
	if bytes <= hostgroup.SmallMax {
		v := g.Next()
		if g.Me != root {
			hostgroup.ScratchIn(g, hostgroup.SmallSlot[T](g, g.Me, v, n), send)
		}
		g.SetMeta(v, bytes)
		only := hostgroup.WaitAll // root reads every slot; the others go on at once
		if g.Me != root {
			only = hostgroup.WaitNone
		}
		if err := g.StepLast(c, v, bytes, only); err != nil {
			return err
		}
		if g.Me == root {
			for j := range p {
				if j != root {
					hostgroup.ScratchOut(g, recv[j*n:(j+1)*n], hostgroup.SmallSlot[T](g, j, v, n))
				}
			}
		}
		return nil
	}
	err := g.Chunks(c, n, es, 1, bytes, func(lo, hi, b int) {
		if g.Me != root {
			hostgroup.ScratchInBig(g, hostgroup.Big[T](g, g.Me, b, hi-lo), send[lo:hi], true)
		}
	}, func(lo, hi, b int) {
		if g.Me == root {
			for j := range p {
				if j != root {
					hostgroup.ScratchOut(g, recv[j*n+lo:j*n+hi], hostgroup.Big[T](g, j, b, hi-lo))
				}
			}
		}
	})
	if err != nil {
		return err
	}
	return g.ReleaseBig(c)
}

// scatterSHM is the Scatter of a one-host World, blocks of n elements: root copies every
// other member's block into its scratch, in rank order, and publishes; each member copies
// its own block out. When the p blocks fit in hostgroup.SmallMax bytes that is one step;
// otherwise the blocks go in parts, part k of every block in one step, as many elements
// per block as p of them fit in a big buffer. In the one step root waits for no one
// (stepLast). The first step checks call numbers and byte
// counts, as gatherSHM's does. Root stores (p-1)·n elements; every other member loads n.
func scatterSHM[T runtime.Elem](c *call, g *hostgroup.Group, send, recv []T, n, root int) error {
	p, es := len(g.Ranks), elemSize[T]()
	bytes := n * es
	if bytes >= hostgroup.ScatterSingleMin() {
		done, err := singleMove(c, g, bytesOf(send), func(j int) bool { return j == root }, bytes,
			func(add func(from, off int, dst []byte)) {
				if g.Me != root {
					add(root, g.Me*bytes, bytesOf(recv))
				}
			})
		if done {
			c.chose("single")
		}
		if err != nil || done {
			return err
		}
	}
	c.chose("shm")
	if p*bytes <= hostgroup.SmallMax {
		v := g.Next()
		if g.Me == root {
			mine := hostgroup.SmallSlot[T](g, g.Me, v, p*n)
			for j := range p {
				if j != root {
					hostgroup.ScratchIn(g, mine[j*n:(j+1)*n], send[j*n:(j+1)*n])
				}
			}
		}
		g.SetMeta(v, bytes)
		only := hostgroup.WaitAll // each reads root's slot and sees any member at another call; root goes on at once
		if g.Me == root {
			only = hostgroup.WaitNone
		}
		if err := g.StepLast(c, v, bytes, only); err != nil {
			return err
		}
		if g.Me != root {
			hostgroup.ScratchOut(g, recv, hostgroup.SmallSlot[T](g, root, v, p*n)[g.Me*n:(g.Me+1)*n])
		}
		return nil
	}
	err := g.Chunks(c, n, es, p, bytes, func(lo, hi, b int) {
		k := hi - lo
		if g.Me == root {
			mine := hostgroup.Big[T](g, g.Me, b, p*k)
			for j := range p {
				if j != root {
					hostgroup.ScratchInBig(g, mine[j*k:(j+1)*k], send[j*n+lo:j*n+hi], true)
				}
			}
		}
	}, func(lo, hi, b int) {
		k := hi - lo
		if g.Me != root {
			hostgroup.ScratchOut(g, recv[lo:hi], hostgroup.Big[T](g, root, b, p*k)[g.Me*k:(g.Me+1)*k])
		}
	})
	if err != nil {
		return err
	}
	return g.ReleaseBig(c)
}
