package collectives

import "github.com/gorma-hpc/gorma/runtime"

// allgatherSHM is the Allgather of a one-host World. Each member copies its block (recv's
// block me, which allgather filled) into its scratch and publishes; then every member
// copies every other member's block out. A block of up to shmSmallMax bytes takes one step
// (the flag line or the small slot); a longer one goes in chunks of the big buffer's size,
// one step per chunk. Each member stores n and loads (p-1)·n elements of scratch. From
// singleMin bytes a block each member reads the others' blocks from their recv instead
// (single_shm.go): it loads (p-1)·n and stores nothing. It names the algorithm the call
// took (single or shm).
func allgatherSHM[T runtime.Elem](c *call, g *shmGroup, recv []T, n int) error {
	if m := singleMin(); m > 0 && n*elemSize[T]() >= m {
		done, err := singleMove(c, g, bytesOf(recv[g.me*n:(g.me+1)*n]), func(int) bool { return true }, n*elemSize[T](),
			func(add func(from, off int, dst []byte)) {
				for j := range g.ranks {
					if j != g.me {
						add(j, 0, bytesOf(recv[j*n:(j+1)*n]))
					}
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
	if err := allgatherSteps(c, g, recv, n); err != nil {
		return err
	}
	return g.releaseBig(c)
}

// allgatherSteps is allgatherSHM but for the release of fresh big buffers, for a caller
// that goes on using them (allgatherHier).
func allgatherSteps[T runtime.Elem](c *call, g *shmGroup, recv []T, n int) error {
	p, es := len(g.ranks), elemSize[T]()
	mine := recv[g.me*n : (g.me+1)*n]
	bytes := n * es
	if bytes <= shmSmallMax {
		v := g.seq + 1
		scratchIn(g, smallSlot[T](g, g.me, v, n), mine)
		g.setMeta(c, v, bytes)
		if err := g.step(c, v, bytes); err != nil {
			return err
		}
		for j := range p {
			if j != g.me {
				scratchOut(g, recv[j*n:(j+1)*n], smallSlot[T](g, j, v, n))
			}
		}
		return nil
	}
	per := g.chunk / es
	for lo := 0; lo < n; lo += per {
		hi := min(n, lo+per)
		v := g.seq + 1
		b, err := g.takeBig(c, v, v+1)
		if err != nil {
			return err
		}
		scratchInBig(g, big[T](g, g.me, b, hi-lo), mine[lo:hi], g.nt)
		if err := g.chunkStep(c, v, lo == 0, bytes); err != nil {
			return err
		}
		for j := range p {
			if j != g.me {
				scratchOut(g, recv[j*n+lo:j*n+hi], big[T](g, j, b, hi-lo))
			}
		}
	}
	return nil
}
