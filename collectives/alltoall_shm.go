package collectives

import "github.com/gorma-hpc/gorma/runtime"

// alltoallSHM is the Alltoall of a one-host World, with n elements per block. Each member
// copies its p blocks into its scratch, block d where member d reads it, and publishes;
// then every member copies block me out of every other member's scratch. When the p
// blocks fit in shmSmallMax bytes that is one step (the small slot); otherwise the blocks
// go in parts, part k of every block in one step, as many elements per block as p of
// them fit in a big buffer. send nil is in place: each step reads part k of every block
// of recv into scratch before any member writes part k back. Each member stores p·n and
// loads (p-1)·n elements of scratch.
func alltoallSHM[T runtime.Elem](c *call, g *shmGroup, send, recv []T, n int) error {
	p, es := len(g.ranks), elemSize[T]()
	if send == nil {
		send = recv
	}
	bytes := p * n * es
	if bytes <= shmSmallMax {
		v := g.seq + 1
		scratchIn(g, smallSlot[T](g, g.me, v, p*n), send)
		g.setMeta(c, v, bytes)
		if err := g.step(c, v, bytes); err != nil {
			return err
		}
		for j := range p {
			if j != g.me {
				scratchOut(g, recv[j*n:(j+1)*n], smallSlot[T](g, j, v, p*n)[g.me*n:(g.me+1)*n])
			}
		}
		copy(recv[g.me*n:(g.me+1)*n], send[g.me*n:(g.me+1)*n]) // in place: the same memory
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
		mine := big[T](g, g.me, b, p*k)
		for d := range p {
			scratchInBig(g, mine[d*k:(d+1)*k], send[d*n+lo:d*n+hi], g.ntSpread)
		}
		if err := g.chunkStep(c, v, lo == 0, bytes); err != nil {
			return err
		}
		for j := range p {
			if j != g.me {
				scratchOut(g, recv[j*n+lo:j*n+hi], big[T](g, j, b, p*k)[g.me*k:(g.me+1)*k])
			}
		}
		copy(recv[g.me*n+lo:g.me*n+hi], send[g.me*n+lo:g.me*n+hi])
	}
	return g.releaseBig(c)
}
