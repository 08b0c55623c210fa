package collectives

import (
	"context"
	"fmt"

	"github.com/gorma-hpc/gorma/runtime"
)

// ReduceScatterV is ReduceScatter with a count per rank (MPI_Reduce_scatter). The ranks'
// send vectors, of sum(counts) elements each, are combined element by element with op in
// rank order, and rank r's recv receives the counts[r] elements of block r, which starts
// at counts[0]+...+counts[r-1]. len(counts) must be Size(), no count negative, len(send)
// sum(counts) and len(recv) counts[r]. With send nil the operation is in place, as
// MPI_IN_PLACE: recv holds the whole input (sum(counts) elements) and on return
// recv[:counts[r]] holds this rank's block (the rest is undefined).
//
// Every rank must pass the same counts. A rank that receives a block of another length
// than its own counts give fails with ErrMismatch (shorter) or runtime.ErrTruncated
// (longer), and the ranks waiting for it end when ctx does. Empty blocks still take their
// (empty) messages, so that a rank counting 0 for a block others count is told. A rank
// checks only its own block's length: one whose block has the length the others send it
// succeeds, with the elements their counts place there, even where its counts differ.
//
// The algorithm is the pairwise exchange of ReduceScatter's non-commutative case, which
// suits any operator and any counts: each rank sends block d of its input to rank d,
// all at once, and combines the blocks it receives in rank order.
func ReduceScatterV[T runtime.Elem](ctx context.Context, w *runtime.World, send, recv []T, counts []int, op Op[T]) error {
	if w.IsInter() {
		return interErr("reduce_scatter_v", w, beginInter(w, "reduce_scatter_v").end(interReduceScatterV(ctx, w, send, recv, counts, op), len(send)*elemSize[T]()))
	}
	total := -1
	if w != nil && len(counts) == w.Size() {
		total = 0
		for _, n := range counts {
			total += n
		}
	}
	c, err := begin(ctx, w, "reduce_scatter_v", total, typeName[T](), op.name, -1)
	if err != nil {
		return err
	}
	c.perMember(inputLen(send, recv)*elemSize[T](), counts, elemSize[T](), -1)
	return c.end(reduceScatterV(c, send, recv, counts, op))
}

func reduceScatterV[T runtime.Elem](c *call, send, recv []T, counts []int, op Op[T]) error {
	p, r := c.s.size, c.s.rank
	total, err := checkCounts("counts", counts, p)
	if err != nil {
		return err
	}
	in := send
	switch {
	case !op.Valid():
		return invalid("zero Op")
	case send == nil && len(recv) != total:
		return invalid("in place: len(recv) %d != sum(counts) %d", len(recv), total)
	case send == nil:
		in = recv
	case len(send) != total:
		return invalid("len(send) %d != sum(counts) %d", len(send), total)
	case len(recv) != counts[r]:
		return invalid("len(recv) %d != counts[%d] %d", len(recv), r, counts[r])
	case overlap(send, recv):
		return errOverlap()
	}
	off := offset(counts, r)
	out := recv[:counts[r]]
	if p == 1 {
		copy(out, in)
		return nil
	}
	c.chose("pairwise")
	return reduceScatterVPairwise(c, in, out, counts, off, op)
}

// reduceScatterVPairwise sends block d of in (at its offset) to every rank d on Requests
// 1 .. p-1, combines the blocks of rank r (own at off) in scratch, and copies the result
// to out once the sends are done (in place, out is the start of in, which they read).
func reduceScatterVPairwise[T runtime.Elem](c *call, in, out []T, counts []int, off int, op Op[T]) error {
	p, r := c.s.size, c.s.rank
	posted := 0
	var err error
	d0 := off
	for s := 1; s < p; s++ {
		d := (r + s) % p
		d0 += counts[(d-1+p)%p]
		if d == 0 {
			d0 = 0
		}
		if err = postSend(c, c.Req(s), in[d0:d0+counts[d]], d); err != nil {
			break
		}
		posted = s
	}
	var acc []T
	if err == nil {
		acc, err = reduceScatterVGather(c, in[off:off+counts[r]], op)
	}
	for s := 1; s <= posted; s++ {
		if _, werr := c.Req(s).Wait(c.ctx); werr != nil && err == nil {
			err = fmt.Errorf("rank %d sending to rank %d: %w", r, (r+s)%p, werr)
		}
	}
	if err == nil {
		copy(out, acc)
	}
	return err
}

// reduceScatterVGather receives block r from every rank and combines the blocks with own
// (this rank's) in rank order, in scratch.
func reduceScatterVGather[T runtime.Elem](c *call, own []T, op Op[T]) ([]T, error) {
	p, r, n := c.s.size, c.s.rank, len(own)
	acc, tmp := scratchOf[T](c, 1, n), scratchOf[T](c, 0, n)
	if r == 0 {
		copy(acc, own)
	} else if err := recv(c, acc, 0); err != nil {
		return nil, err
	}
	for src := 1; src < p; src++ {
		x := own
		if src != r {
			if err := recv(c, tmp, src); err != nil {
				return nil, err
			}
			x = tmp
		}
		if n > 0 {
			op.fn(acc, x)
		}
	}
	return acc, nil
}
