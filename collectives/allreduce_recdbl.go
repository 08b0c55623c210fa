package collectives

import "github.com/gorma-hpc/gorma/runtime"

// allreduceRecdbl is recursive doubling (MPICH's allreduce_intra_recursive_doubling):
// after folding the extra ranks of a non power of two (foldExtra), in round k each rank
// exchanges its whole vector with the rank whose new rank differs in bit k and combines.
// So after log2(pof2) rounds every rank holds the result. Then the extra ranks get it
// back. Each rank combines with the group of ranks below or above its own contiguous
// group, so rank order holds for non-commutative operators. Cost: log2(p) (+2) rounds of
// the whole vector: the choice for short vectors.
func allreduceRecdbl[T runtime.Elem](c *call, buf []T, op Op[T]) error {
	pof2 := pof2Below(c.s.size)
	rem := c.s.size - pof2
	tmp := scratchOf[T](c, 0, len(buf))
	newrank, err := foldExtra(c, buf, tmp, op, pof2)
	if err != nil {
		return err
	}
	if newrank >= 0 {
		for mask := 1; mask < pof2; mask <<= 1 {
			np := newrank ^ mask
			partner := realRank(np, rem)
			if err := exchange(c, buf, partner, tmp, partner); err != nil {
				return err
			}
			combine(op, buf, tmp, np < newrank)
		}
	}
	return unfoldExtra(c, buf, pof2)
}
