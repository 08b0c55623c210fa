package collectives

import (
	"context"

	"github.com/gorma-hpc/gorma/runtime"
)

// ReduceScatter combines the ranks' send vectors element by element with op (in rank
// order) and scatters the result in equal blocks: rank r's recv gets block r, the
// elements [r*n, (r+1)*n) with n = len(recv); len(send) must be Size()*n. With send nil
// the operation is in place, as MPI_IN_PLACE: recv holds the whole input (Size()*n
// elements) and on return recv[:n] holds this rank's block (the rest is undefined).
// Every rank must pass the same n.
//
// On one host the blocks go through shared memory (reduceScatterSHM), in rank order.
// Otherwise commutative operators use recursive halving for a power-of-two rank count
// and at most reduceScatterShortMsg bytes in all, the ring otherwise; non-commutative
// ones a pairwise exchange that combines the blocks in rank order.
func ReduceScatter[T runtime.Elem](ctx context.Context, w *runtime.World, send, recv []T, op Op[T]) error {
	if w.IsInter() {
		counts := make([]int, w.Size())
		for i := range counts {
			counts[i] = len(recv)
		}
		return interErr("reduce_scatter", w, beginInter(w, "reduce_scatter").end(interReduceScatterV(ctx, w, send, recv, counts, op), len(send)*elemSize[T]()))
	}
	n := len(recv)
	if send == nil && w != nil {
		n /= w.Size() // in place: recv holds the whole input
	}
	c, err := begin(ctx, w, "reduce_scatter", n, typeName[T](), op.name, -1)
	if err != nil {
		return err
	}
	c.toAll(inputLen(send, recv)*elemSize[T](), n*elemSize[T]())
	return c.end(reduceScatter(c, send, recv, op))
}

func reduceScatter[T runtime.Elem](c *call, send, recv []T, op Op[T]) error {
	p := c.s.size
	in, n := send, len(recv)
	switch {
	case !op.Valid():
		return invalid("zero Op")
	case send == nil && len(recv)%p != 0:
		return invalid("in place: len(recv) %d is not a multiple of %d ranks", len(recv), p)
	case send == nil:
		in, n = recv, len(recv)/p
	case len(send) != p*n:
		return invalid("len(send) %d != %d ranks * len(recv) %d", len(send), p, n)
	case overlap(send, recv):
		return errOverlap()
	}
	out := recv[:n]
	switch {
	case n == 0:
		return nil
	case p == 1:
		copy(out, in)
		return nil
	}
	if g, err := worldGroup(c, len(in)*elemSize[T](), 0); g != nil || err != nil {
		if err != nil {
			return err
		}
		c.chose("shm")
		return reduceScatterSHM(c, g, in, out, op, n)
	}
	switch {
	case !op.commutative:
		c.chose("pairwise")
		return reduceScatterPairwise(c, in, out, op)
	case p&(p-1) == 0 && len(in)*elemSize[T]() <= reduceScatterShortMsg:
		c.chose("halving")
		return reduceScatterHalving(c, in, out, op)
	}
	c.chose("ring")
	return reduceScatterRing(c, in, out, op, send == nil)
}
