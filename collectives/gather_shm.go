package collectives

import "github.com/gorma-hpc/gorma/runtime"

// rootedSHMMost bounds the one-host Gather and Scatter through shared memory, in bytes
// of one block. Beyond it point to point, whose rendezvous copies each block once, from
// the sender's buffer: root copies (p-1) blocks either way, and shared memory adds a
// copy of each block into scratch. `golaunch -n 4 bin/allreducebench --test
// gather,scatter` (and its C twin under Open MPI and MPICH) measures the crossing.
const rootedSHMMost = alltoallSHMMost

// gatherSHM is the Gather of a one-host World, blocks of n elements. Each member but root
// copies its block into its scratch and publishes; root copies every other block out into
// its place in recv (its own is there in place, else gather copies it after). Up to
// shmSmallMax bytes a block takes one step (the flag line or the small slot), for which
// only root waits: the others publish and go on (stepLast); longer blocks go in chunks of
// the big buffer's size, one step per chunk. The first step carries the call's number and byte count: a member that passed
// another count (or named another root: rootTag) makes every member that waits for it
// fail with ErrMismatch. Each member but root stores n elements; root loads (p-1)·n.
func gatherSHM[T runtime.Elem](c *call, g *shmGroup, send, recv []T, n, root int) error {
	p, es := len(g.ranks), elemSize[T]()
	bytes := n * es
	if bytes <= shmSmallMax {
		v := g.seq + 1
		if g.me != root {
			scratchIn(g, smallSlot[T](g, g.me, v, n), send)
		}
		g.setMeta(c, v, bytes)
		only := shmWaitAll // root reads every slot; the others go on at once
		if g.me != root {
			only = shmWaitNone
		}
		if err := g.stepLast(c, v, bytes, only); err != nil {
			return err
		}
		if g.me == root {
			for j := range p {
				if j != root {
					scratchOut(g, recv[j*n:(j+1)*n], smallSlot[T](g, j, v, n))
				}
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
		if g.me != root {
			scratchInBig(g, big[T](g, g.me, b, hi-lo), send[lo:hi], g.ntSpread)
		}
		if err := g.chunkStep(c, v, lo == 0, bytes); err != nil {
			return err
		}
		if g.me == root {
			for j := range p {
				if j != root {
					scratchOut(g, recv[j*n+lo:j*n+hi], big[T](g, j, b, hi-lo))
				}
			}
		}
	}
	return g.releaseBig(c)
}

// scatterSHM is the Scatter of a one-host World, blocks of n elements: root copies every
// other member's block into its scratch, in rank order, and publishes; each member copies
// its own block out. When the p blocks fit in shmSmallMax bytes that is one step;
// otherwise the blocks go in parts, part k of every block in one step, as many elements
// per block as p of them fit in a big buffer. In the one step root waits for no one
// (stepLast). The first step checks call numbers and byte
// counts, as gatherSHM's does. Root stores (p-1)·n elements; every other member loads n.
func scatterSHM[T runtime.Elem](c *call, g *shmGroup, send, recv []T, n, root int) error {
	p, es := len(g.ranks), elemSize[T]()
	bytes := n * es
	if p*bytes <= shmSmallMax {
		v := g.seq + 1
		if g.me == root {
			mine := smallSlot[T](g, g.me, v, p*n)
			for j := range p {
				if j != root {
					scratchIn(g, mine[j*n:(j+1)*n], send[j*n:(j+1)*n])
				}
			}
		}
		g.setMeta(c, v, bytes)
		only := shmWaitAll // each reads root's slot and sees any member at another call; root goes on at once
		if g.me == root {
			only = shmWaitNone
		}
		if err := g.stepLast(c, v, bytes, only); err != nil {
			return err
		}
		if g.me != root {
			scratchOut(g, recv, smallSlot[T](g, root, v, p*n)[g.me*n:(g.me+1)*n])
		}
		return nil
	}
	per := max(g.chunk/(p*es), 1)
	for lo := 0; lo < n; lo += per {
		hi := min(n, lo+per)
		k := hi - lo
		v := g.seq + 1
		b, err := g.takeBig(c, v, v+1)
		if err != nil {
			return err
		}
		if g.me == root {
			mine := big[T](g, g.me, b, p*k)
			for j := range p {
				if j != root {
					scratchInBig(g, mine[j*k:(j+1)*k], send[j*n+lo:j*n+hi], g.ntSpread)
				}
			}
		}
		if err := g.chunkStep(c, v, lo == 0, bytes); err != nil {
			return err
		}
		if g.me != root {
			scratchOut(g, recv[lo:hi], big[T](g, root, b, p*k)[g.me*k:(g.me+1)*k])
		}
	}
	return g.releaseBig(c)
}
