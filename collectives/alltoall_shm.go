package collectives

import (
	"github.com/gorma-hpc/gorma/collectives/internal/hostgroup"
	"github.com/gorma-hpc/gorma/runtime"
)

// alltoallSHM is the Alltoall of a one-host World, with n elements per block. Each member
// copies its p blocks into its scratch, block d where member d reads it, and publishes;
// then every member copies block me out of every other member's scratch. When the p
// blocks fit in hostgroup.SmallMax bytes that is one step (the small slot); otherwise the
// blocks go in parts, part k of every block in one step, as many elements per block as p
// of them fit in a big buffer. send nil is in place: each step reads part k of every
// block of recv into scratch before any member writes part k back. Each member loads
// (p-1)·n elements of scratch. It stores p·n in one copy into the small slot, and the
// (p-1)·n that others read into the big buffers: no member reads its own block there.
func alltoallSHM[T runtime.Elem](c *call, g *hostgroup.Group, send, recv []T, n int) error {
	p, es := len(g.Ranks), elemSize[T]()
	if send == nil {
		send = recv
	}
	bytes := p * n * es
	if bytes <= hostgroup.SmallMax {
		v := g.Next()
		hostgroup.ScratchIn(g, hostgroup.SmallSlot[T](g, g.Me, v, p*n), send)
		g.SetMeta(v, bytes)
		if err := g.Step(c, v, bytes); err != nil {
			return err
		}
		for j := range p {
			if j != g.Me {
				hostgroup.ScratchOut(g, recv[j*n:(j+1)*n], hostgroup.SmallSlot[T](g, j, v, p*n)[g.Me*n:(g.Me+1)*n])
			}
		}
		copy(recv[g.Me*n:(g.Me+1)*n], send[g.Me*n:(g.Me+1)*n]) // in place: the same memory
		return nil
	}
	err := g.Chunks(c, n, es, p, bytes, func(lo, hi, b int) {
		k := hi - lo
		mine := hostgroup.Big[T](g, g.Me, b, p*k)
		for d := range p {
			if d != g.Me {
				hostgroup.ScratchInBig(g, mine[d*k:(d+1)*k], send[d*n+lo:d*n+hi], true)
			}
		}
	}, func(lo, hi, b int) {
		k := hi - lo
		for j := range p {
			if j != g.Me {
				hostgroup.ScratchOut(g, recv[j*n+lo:j*n+hi], hostgroup.Big[T](g, j, b, p*k)[g.Me*k:(g.Me+1)*k])
			}
		}
		copy(recv[g.Me*n+lo:g.Me*n+hi], send[g.Me*n+lo:g.Me*n+hi])
	})
	if err != nil {
		return err
	}
	return g.ReleaseBig(c)
}
