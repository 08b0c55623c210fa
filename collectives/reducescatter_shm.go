package collectives

import (
	"github.com/gorma-hpc/gorma/collectives/internal/hostgroup"
	"github.com/gorma-hpc/gorma/runtime"
)

// reduceScatterSHM is the ReduceScatter of a one-host World: in holds p blocks of n
// elements, and out (n elements) gets block me of the reduction. Each member copies the
// blocks the others reduce into its scratch, block d where member d reads it, and
// publishes; then member me combines block me of every member, its own from in, in rank
// order (any operator) into out. Long vectors go in parts, part k of every block in one
// step, as many elements per block as p of them fit in a big buffer; the small slot
// serves when all p blocks fit in it. Each member stores (p-1)·n elements of scratch and
// loads (p-1)·n. out may be in[:n] (in place): member 0 reduces into its own operand,
// the others write where block 0 was read before the step.
func reduceScatterSHM[T runtime.Elem](c *call, g *hostgroup.Group, in, out []T, op Op[T], n int) error {
	p, es := len(g.Ranks), elemSize[T]()
	me := g.Me
	bytes := p * n * es
	if bytes <= hostgroup.SmallMax {
		v := g.Next()
		mine := hostgroup.SmallSlot[T](g, me, v, p*n)
		for d := range p {
			if d != me {
				hostgroup.ScratchIn(g, mine[d*n:(d+1)*n], in[d*n:(d+1)*n])
			}
		}
		g.SetMeta(v, bytes)
		if err := g.Step(c, v, bytes); err != nil {
			return err
		}
		reduceInto(out, op, p, loadedFrom(g, me, func(i int) []T {
			if i == me {
				return in[me*n : (me+1)*n]
			}
			return hostgroup.SmallSlot[T](g, i, v, p*n)[me*n : (me+1)*n]
		}))
		return nil
	}
	err := g.Chunks(c, n, es, p, bytes, func(lo, hi, b int) {
		k := hi - lo
		mine := hostgroup.Big[T](g, me, b, p*k)
		for d := range p {
			if d != me {
				hostgroup.ScratchInBig(g, mine[d*k:(d+1)*k], in[d*n+lo:d*n+hi], true)
			}
		}
	}, func(lo, hi, b int) {
		k := hi - lo
		reduceInto(out[lo:hi], op, p, loadedFrom(g, me, func(i int) []T {
			if i == me {
				return in[me*n+lo : me*n+hi]
			}
			return hostgroup.Big[T](g, i, b, p*k)[me*k : (me+1)*k]
		}))
	})
	if err != nil {
		return err
	}
	return g.ReleaseBig(c)
}
