package collectives

import (
	"context"
	"fmt"

	"github.com/gorma-hpc/gorma/runtime"
)

// Allreduce combines the ranks' send vectors element by element with op and leaves the
// result in every rank's recv: recv[i] = x0[i] ∘ x1[i] ∘ ... ∘ x(p-1)[i], where xr is
// rank r's send. Non-commutative operators are applied in that rank order. With send nil
// the operation is in place: recv holds this rank's input and is overwritten with the
// result. Every rank must call Allreduce with the same len(recv) and an equivalent op;
// different lengths fail with ErrMismatch (or end when ctx does).
//
// The algorithm is chosen by selectAllreduce (see the package documentation) unless
// GORMA_ALLREDUCE forces one.
func Allreduce[T runtime.Elem](ctx context.Context, w *runtime.World, send, recv []T, op Op[T]) error {
	if w.IsInter() {
		return interErr("allreduce", w, beginInter(w, "allreduce").end(interAllreduce(ctx, w, send, recv, op), len(send)*elemSize[T]()))
	}
	c, err := begin(ctx, w, "allreduce", len(recv), typeName[T](), op.name, -1)
	if err != nil {
		return err
	}
	c.toAll(len(recv)*elemSize[T](), len(recv)*elemSize[T]())
	return c.end(allreduce(c, send, recv, op))
}

func allreduce[T runtime.Elem](c *call, send, recv []T, op Op[T]) error {
	switch {
	case !op.Valid():
		return invalid("zero Op")
	case send != nil && len(send) != len(recv):
		return invalid("len(send) %d != len(recv) %d", len(send), len(recv))
	case overlap(send, recv):
		return errOverlap()
	case c.s.cfgErr != nil:
		return c.s.cfgErr
	}
	src := send
	if src == nil {
		src = recv
	}
	if c.s.size == 1 || len(recv) == 0 {
		copy(recv, src)
		return nil
	}
	loc := localOf(c.s).loc
	a := selectAllreduce(c.s.force, len(recv)*elemSize[T](), len(recv), c.s.size, op.commutative, loc)
	c.choseAlgo(a)
	switch a {
	case algoSHM:
		return allreduceWorldSHM(c, src, recv, op)
	case algoHier:
		return allreduceHier(c, src, recv, op)
	case algoDirect:
		return allreduceDirect(c, src, recv, op)
	case algoLanes:
		return allreduceLanes(c, src, recv, op)
	case algoRabenseifner:
		return allreduceRabenseifner(c, src, recv, op)
	}
	copy(recv, src)
	return allreduceP2P(c, a, recv, op)
}

// allreduceP2P runs the point-to-point algorithm a on buf, in place.
func allreduceP2P[T runtime.Elem](c *call, a algo, buf []T, op Op[T]) error {
	switch a {
	case algoRecdbl:
		return allreduceRecdbl(c, buf, op)
	case algoRabenseifner:
		return allreduceRabenseifner(c, buf, buf, op)
	case algoRing:
		return allreduceRing(c, buf, op)
	case algoDirect:
		return allreduceDirect(c, buf, buf, op)
	}
	return fmt.Errorf("allreduce algorithm %v not available", a)
}

// foldExtra is the first step of recursive doubling and Rabenseifner when p is not a
// power of two: with rem = p - pof2, the ranks below 2*rem pair up (2i, 2i+1). The even
// one sends its vector to the odd one, which combines (keeping rank order) and takes part
// in the power-of-two algorithm as rank i. Ranks from 2*rem on take part as rank r-rem.
// It returns this rank's new rank, or -1 for a rank that sits out (and gets the result
// back from unfoldExtra).
func foldExtra[T runtime.Elem](c *call, buf, tmp []T, op Op[T], pof2 int) (int, error) {
	r, rem := c.s.rank, c.s.size-pof2
	switch {
	case r >= 2*rem:
		return r - rem, nil
	case r%2 == 0:
		return -1, send(c, buf, r+1)
	}
	if err := recv(c, tmp, r-1); err != nil {
		return -1, err
	}
	combine(op, buf, tmp, true)
	return r / 2, nil
}

// unfoldExtra returns the result to the ranks that sat out.
func unfoldExtra[T runtime.Elem](c *call, buf []T, pof2 int) error {
	r, rem := c.s.rank, c.s.size-pof2
	switch {
	case r >= 2*rem:
		return nil
	case r%2 == 0:
		return recv(c, buf, r+1)
	}
	return send(c, buf, r-1)
}

// realRank maps a new rank of foldExtra back to a rank of the World.
func realRank(newrank, rem int) int {
	if newrank < rem {
		return 2*newrank + 1
	}
	return newrank + rem
}
