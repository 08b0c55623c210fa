package collectives

import (
	"context"

	"github.com/gorma-hpc/gorma/runtime"
)

// Allgather gathers every rank's send into every rank's recv, rank r's block at
// recv[r*n:(r+1)*n] with n = len(send); len(recv) must be Size()*n. With send nil the
// operation is in place: rank r's block is already in recv (n = len(recv)/Size()). Every
// rank must pass the same n.
//
// On one host the blocks go through shared memory (allgatherSHM). Otherwise a
// power-of-two rank count with less than allgatherLongMsg bytes in all uses recursive
// doubling (log2(p) rounds); anything else the ring (p-1 steps, bandwidth-optimal).
func Allgather[T runtime.Elem](ctx context.Context, w *runtime.World, send, recv []T) error {
	if w.IsInter() {
		return interErr("allgather", w, beginInter(w, "allgather").end(interAllgather(ctx, w, send, recv), len(send)*elemSize[T]()))
	}
	c, err := begin(ctx, w, "allgather", blockOf(w, send, recv), typeName[T](), "", -1)
	if err != nil {
		return err
	}
	if c.observed() {
		n := blockOf(w, send, recv) * elemSize[T]()
		c.toAll(n, n)
	}
	return c.end(allgather(c, send, recv))
}

func allgather[T runtime.Elem](c *call, send, recv []T) error {
	p, r := c.s.size, c.s.rank
	n := len(send)
	switch {
	case send == nil && len(recv)%p != 0:
		return invalid("in place: len(recv) %d is not a multiple of %d ranks", len(recv), p)
	case send == nil:
		n = len(recv) / p
	case len(recv) != p*n:
		return invalid("len(recv) %d != %d ranks * len(send) %d", len(recv), p, n)
	case overlap(send, recv):
		return errOverlap()
	}
	// mine is this rank's block. The algorithms read it from send, and store it in recv
	// only once the others' blocks came: a call that does not match writes no recv.
	mine := recv[r*n : (r+1)*n]
	if send != nil {
		mine = send
	}
	if p == 1 || n == 0 {
		copy(recv[r*n:(r+1)*n], mine)
		return nil
	}
	if g, err := worldGroup(c, n*elemSize[T](), 0); g != nil || err != nil {
		if err != nil {
			return err
		}
		return allgatherSHM(c, g, recv, mine, n) // names the algorithm: shm or single
	}
	if l := localOf(c.s); bcastHierOK(l) {
		c.chose("hier")
		return allgatherHier(c, l, recv, mine, n)
	}
	if p&(p-1) == 0 && len(recv)*elemSize[T]() < allgatherLongMsg {
		c.chose("recdbl")
		return allgatherRecdbl(c, recv, mine, n)
	}
	c.chose("ring")
	return allgatherRing(c, recv, mine, n)
}
