package collectives

import "github.com/gorma-hpc/gorma/runtime"

// allreduceRabenseifner is Rabenseifner's algorithm (MPICH's
// allreduce_intra_reduce_scatter_allgather). It first folds the extra ranks of a non
// power of two (foldExtra). Then a reduce-scatter by recursive halving leaves each rank
// with a 1/pof2 share of the result. In round k (k = 0, 1, ...) partners whose new ranks
// differ in bit k split their current range in two. Each sends the half the other keeps
// and combines the half it keeps. An allgather by recursive doubling retraces the rounds
// in reverse to assemble the whole vector. The extra ranks get it back. Rounds go from
// the lowest bit up, so the groups combined are always contiguous runs of ranks and rank
// order holds for non-commutative operators. Cost: 2 log2(p) rounds moving 2n(p-1)/p
// elements: the choice for long vectors on a power of two. It reads the input from src
// (buf itself for in place) and leaves the result in buf: on a power of two the first
// round sends from src and combines src's kept half with the partner's into buf in one
// pass (Op.combine). So src is never copied into buf (the allgather fills the rest of
// buf). Otherwise the folding works on buf, and src is copied there first. The scratch (a
// whole vector) is reused, or acquired per call under ScratchFresh (tempOf).
func allreduceRabenseifner[T runtime.Elem](c *call, src, buf []T, op Op[T]) (err error) {
	pof2 := pof2Below(c.s.size)
	rem := c.s.size - pof2
	if rem > 0 && len(buf) > 0 && &src[0] != &buf[0] {
		copy(buf, src)
		src = buf
	}
	tmp, fresh, err := tempOf[T](c, 0, len(buf))
	if err != nil {
		return err
	}
	defer func() { fresh.release(err == nil) }()
	newrank, err := foldExtra(c, buf, tmp, op, pof2)
	if err != nil {
		return err
	}
	if newrank >= 0 {
		if err := rabenseifnerCore(c, src, buf, tmp, op, newrank, pof2, rem); err != nil {
			return err
		}
	}
	return unfoldExtra(c, buf, pof2)
}

// rabenseifnerCore runs the halving and doubling rounds; the first reads from src (which
// is buf, or a vector of buf's length that does not overlap it, when there are no extra
// ranks).
func rabenseifnerCore[T runtime.Elem](c *call, src, buf, tmp []T, op Op[T], newrank, pof2, rem int) error {
	var ranges [64][2]int // the range held before each round, for the allgather
	lo, hi, round := 0, len(buf), 0
	for mask := 1; mask < pof2; mask <<= 1 {
		np := newrank ^ mask
		partner := realRank(np, rem)
		mid := lo + (hi-lo)/2
		keepLo, keepHi, sendLo, sendHi := lo, mid, mid, hi // the lower new rank keeps the lower half
		if np < newrank {
			keepLo, keepHi, sendLo, sendHi = mid, hi, lo, mid
		}
		from := buf
		if mask == 1 {
			from = src
		}
		in := tmp[:keepHi-keepLo]
		if err := exchange(c, from[sendLo:sendHi], partner, in, partner); err != nil {
			return err
		}
		switch out, own := buf[keepLo:keepHi], from[keepLo:keepHi]; {
		case len(out) == 0 || &own[0] == &out[0]:
			combine(op, out, in, np < newrank)
		case np < newrank && !op.commutative:
			op.combine(out, in, own) // the partner's lower ranks first
		default:
			op.combine(out, own, in)
		}
		ranges[round] = [2]int{lo, hi}
		round++
		lo, hi = keepLo, keepHi
	}
	for mask := pof2 / 2; mask > 0; mask >>= 1 {
		round--
		plo, phi := ranges[round][0], ranges[round][1]
		partner := realRank(newrank^mask, rem)
		olo, ohi := plo, lo // the partner holds the other part of [plo, phi)
		if lo == plo {
			olo, ohi = hi, phi
		}
		if err := exchange(c, buf[lo:hi], partner, buf[olo:ohi], partner); err != nil {
			return err
		}
		lo, hi = plo, phi
	}
	return nil
}
