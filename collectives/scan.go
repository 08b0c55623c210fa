package collectives

import (
	"context"

	"github.com/gorma-hpc/gorma/runtime"
)

// Scan is the inclusive prefix reduction: rank r's recv gets x0 ∘ x1 ∘ ... ∘ xr element by
// element, where xi is rank i's send, combined in that rank order whether or not op is
// commutative. With send nil the operation is in place: recv holds this rank's input and
// is overwritten with the result. Every rank must pass the same len(recv) and an
// equivalent op; a different length fails with ErrMismatch or runtime.ErrTruncated (or
// ends when ctx does). A count of 0 still takes the algorithm's (empty) messages, so that
// a rank passing 0 while others pass more is told.
//
// The algorithm is recursive doubling (MPICH's scan_intra_recursive_doubling): log2(p)
// rounds of the whole vector, in each of which a rank exchanges the reduction of its group
// so far with the rank whose number differs in one bit. It keeps rank order for any op.
func Scan[T runtime.Elem](ctx context.Context, w *runtime.World, send, recv []T, op Op[T]) error {
	c, err := begin(ctx, w, "scan", len(recv), typeName[T](), op.name, -1)
	if err != nil {
		return err
	}
	c.toAbove(len(recv) * elemSize[T]())
	return c.end(scan(c, send, recv, op, false))
}

// Exscan is the exclusive prefix reduction: rank r > 0's recv gets x0 ∘ x1 ∘ ... ∘ x(r-1),
// combined in rank order. Rank 0's recv is left untouched (MPI leaves it undefined): in
// place, it still holds rank 0's input. Otherwise as Scan (send nil means in place: recv
// holds this rank's input, and is overwritten with the result at ranks above 0).
func Exscan[T runtime.Elem](ctx context.Context, w *runtime.World, send, recv []T, op Op[T]) error {
	c, err := begin(ctx, w, "exscan", len(recv), typeName[T](), op.name, -1)
	if err != nil {
		return err
	}
	c.toAbove(len(recv) * elemSize[T]())
	return c.end(scan(c, send, recv, op, true))
}

func scan[T runtime.Elem](c *call, sendBuf, recvBuf []T, op Op[T], exclusive bool) error {
	switch {
	case !op.Valid():
		return invalid("zero Op")
	case sendBuf != nil && len(sendBuf) != len(recvBuf):
		return invalid("len(send) %d != len(recv) %d", len(sendBuf), len(recvBuf))
	case overlap(sendBuf, recvBuf):
		return errOverlap()
	}
	in := sendBuf
	if in == nil {
		in = recvBuf
	}
	if c.s.size == 1 {
		if !exclusive {
			copy(recvBuf, in)
		}
		return nil
	}
	c.chose("recdbl")
	return scanRecdbl(c, in, recvBuf, op, exclusive)
}

// scanRecdbl is recursive doubling. Before the round of mask 2^k, rank r's partial is the
// reduction, in rank order, of its group: the ranks below p that differ from r in the low
// k bits only. In that round it swaps partials with r^mask, whose group is the other half
// of their merged group. Both merge them, the lower half first, and the rank of the upper
// half also puts the lower half's partial in front of its result. A rank whose partner
// would be p or more has no upper half and sits the round out, so any p works. log2(p)
// rounds of n elements, against p-1 for a chain; the last round merges no partials
// (nothing reads them).
//
// in may be out (in place): it is read before out is written. For an exclusive scan out
// gets the first partial from below as it is, and rank 0 never writes it.
func scanRecdbl[T runtime.Elem](c *call, in, out []T, op Op[T], exclusive bool) error {
	p, r, n := c.s.size, c.s.rank, len(out)
	m := n
	if !op.commutative {
		m = 2 * n // and prepend's spare
	}
	partial := scratchOf[T](c, 0, m)
	partial, spare := partial[:n:n], partial[n:]
	tmp := scratchOf[T](c, 1, n)
	copy(partial, in)
	have := !exclusive // out holds a result so far
	if have && !overlap(in, out) {
		copy(out, in)
	}
	for mask := 1; mask < p; mask <<= 1 {
		peer := r ^ mask
		if peer >= p {
			continue
		}
		if err := exchange(c, partial, peer, tmp, peer); err != nil {
			return err
		}
		switch {
		case peer < r && !have:
			copy(out, tmp)
			have = true
		case peer < r:
			prepend(op, out, tmp, spare)
		}
		if 2*mask >= p { // the last round: partial is not needed any more
			break
		}
		switch {
		case peer > r || op.commutative:
			op.fn(partial, tmp)
		default: // partial = tmp ∘ partial, made in tmp; the two swap roles
			op.fn(tmp, partial)
			partial, tmp = tmp, partial
		}
	}
	return nil
}

// prepend sets acc = in ∘ acc, leaving in as it is; spare (len(acc) elements) is scratch
// for a non-commutative op.
func prepend[T runtime.Elem](op Op[T], acc, in, spare []T) {
	if op.commutative {
		op.fn(acc, in)
		return
	}
	op.combine(spare, in, acc)
	copy(acc, spare)
}
