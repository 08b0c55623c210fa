package collectives

import "github.com/gorma-hpc/gorma/runtime"

// reduceScatterHalving is recursive halving for a power-of-two rank count and a
// commutative operator (MPICH's reduce_scatter_intra_recursive_halving): a copy of the
// input is cut in half log2(p) times. In each round partners whose ranks differ in the
// round's bit send each other the half of their current run of blocks that the other
// keeps, and combine the half they keep. The groups combined are not contiguous runs of
// ranks, hence commutative operators only.
func reduceScatterHalving[T runtime.Elem](c *call, in, out []T, op Op[T]) error {
	p, r, n := c.s.size, c.s.rank, len(out)
	acc := scratchOf[T](c, 0, p*n)
	copy(acc, in)
	tmp := scratchOf[T](c, 1, p*n/2)
	lo, hi := 0, p // blocks held
	for mask := p / 2; mask > 0; mask >>= 1 {
		partner := r ^ mask
		mid := lo + mask
		keepLo, keepHi, sendLo, sendHi := lo, mid, mid, hi
		if r&mask != 0 {
			keepLo, keepHi, sendLo, sendHi = mid, hi, lo, mid
		}
		got := tmp[:(keepHi-keepLo)*n]
		if err := exchange(c, acc[sendLo*n:sendHi*n], partner, got, partner); err != nil {
			return err
		}
		op.fn(acc[keepLo*n:keepHi*n], got)
		lo, hi = keepLo, keepHi
	}
	copy(out, acc[r*n:(r+1)*n])
	return nil
}
