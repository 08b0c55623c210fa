package collectives

import "github.com/gorma-hpc/gorma/runtime"

// reduceScatterRing is the ring reduce-scatter for commutative operators: in step s rank
// r sends its partial sum of block r-s-1 to the right and receives the left neighbour's
// partial sum of block r-s-2, to which it adds its own contribution. After p-1 steps the
// partial sum received is block r's, complete. p-1 steps of n elements. The partial sums
// alternate between two scratch blocks so that in is never written (unless in place).
func reduceScatterRing[T runtime.Elem](c *call, in, out []T, op Op[T], inPlace bool) error {
	p, r, n := c.s.size, c.s.rank, len(out)
	right, left := (r+1)%p, (r-1+p)%p
	bufs := [2][]T{scratchOf[T](c, 0, n), scratchOf[T](c, 1, n)}
	sb := (r - 1 + p) % p
	cur := in[sb*n : (sb+1)*n]
	for s := 0; s < p-1; s++ {
		rb := (r - s - 2 + 2*p) % p
		dst := bufs[s%2]
		if s == p-2 && !inPlace {
			dst = out // in place, out overlaps block 0 of the input
		}
		if err := exchange(c, cur, right, dst, left); err != nil {
			return err
		}
		op.fn(dst, in[rb*n:(rb+1)*n])
		cur = dst
	}
	if inPlace {
		copy(out, cur)
	}
	return nil
}
