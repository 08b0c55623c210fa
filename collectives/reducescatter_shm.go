package collectives

import "github.com/gorma-hpc/gorma/runtime"

// reduceScatterSHM is the ReduceScatter of a one-host World: in holds p blocks of n
// elements, and out (n elements) gets block me of the reduction. Each member copies the
// blocks the others reduce into its scratch, block d where member d reads it, and
// publishes; then member me combines block me of every member, its own from in, in rank
// order (any operator) into out. Long vectors go in parts, part k of every block in one
// step, as many elements per block as p of them fit in a big buffer; the small slot
// serves when all p blocks fit in it. Each member stores (p-1)·n elements of scratch and
// loads (p-1)·n. out may be in[:n] (in place): member 0 reduces into its own operand,
// the others write where block 0 was read before the step.
func reduceScatterSHM[T runtime.Elem](c *call, g *shmGroup, in, out []T, op Op[T], n int) error {
	p, es := len(g.ranks), elemSize[T]()
	me := g.me
	bytes := p * n * es
	if bytes <= shmSmallMax {
		v := g.seq + 1
		mine := smallSlot[T](g, me, v, p*n)
		for d := range p {
			if d != me {
				scratchIn(g, mine[d*n:(d+1)*n], in[d*n:(d+1)*n])
			}
		}
		g.setMeta(c, v, bytes)
		if err := g.step(c, v, bytes); err != nil {
			return err
		}
		reduceInto(out, op, p, loadedFrom(g, me, func(i int) []T {
			if i == me {
				return in[me*n : (me+1)*n]
			}
			return smallSlot[T](g, i, v, p*n)[me*n : (me+1)*n]
		}))
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
		mine := big[T](g, me, b, p*k)
		for d := range p {
			if d != me {
				scratchInBig(g, mine[d*k:(d+1)*k], in[d*n+lo:d*n+hi], g.ntSpread)
			}
		}
		if err := g.chunkStep(c, v, lo == 0, bytes); err != nil {
			return err
		}
		reduceInto(out[lo:hi], op, p, loadedFrom(g, me, func(i int) []T {
			if i == me {
				return in[me*n+lo : me*n+hi]
			}
			return big[T](g, i, b, p*k)[me*k : (me+1)*k]
		}))
	}
	return g.releaseBig(c)
}
