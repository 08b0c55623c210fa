package collectives

import (
	"context"

	"github.com/gorma-hpc/gorma/runtime"
)

// Allgatherv is Allgather with a count per rank: rank r contributes counts[r] elements
// (len(send) == counts[r]), and every rank's recv, of sum(counts) elements, receives the
// blocks in rank order, rank r's at displacement counts[0]+...+counts[r-1] (the prefix
// sums of counts; MPI's displs, which Allgatherv does not take). len(counts) must be
// Size(), and no count may be negative. With send nil the operation is in place: rank
// r's block is already in recv at its place.
//
// Every rank must pass the same counts. Every block passes through every rank, each
// rank checking that it has the length its own counts give. A rank whose counts differ
// from those of the rank it receives a block from fails with ErrMismatch (shorter) or
// runtime.ErrTruncated (longer), the ranks waiting for it end when ctx does. A rank
// that succeeds has every block whole, as its owner sent it. Zero-length blocks still
// take their (empty) messages, so that a rank passing 0 for a block the others count is
// told.
//
// On one host whose ranks map each other's scratch, a first shared-memory step compares
// the ranks' counts (vector_shm.go): ranks that differ fail at every rank with
// ErrMismatch. The blocks then go through shared memory, but for 2 ranks with a block
// over 8 KiB (the ring's single copy wins).
//
// Otherwise the algorithm is the ring (MPICH's allgatherv_intra_ring): in step s each
// rank passes block r-s to its right neighbour and receives block r-s-1 from its left
// one, p-1 steps. A ring rather than every rank sending to every other at once: one
// message each way at a time, no scratch and one Request, and a large block costs each
// link once.
func Allgatherv[T runtime.Elem](ctx context.Context, w *runtime.World, send, recv []T, counts []int) error {
	if w.IsInter() {
		return interErr("allgatherv", w, beginInter(w, "allgatherv").end(interAllgatherv(ctx, w, send, recv, counts), len(send)*elemSize[T]()))
	}
	c, err := begin(ctx, w, "allgatherv", len(recv), typeName[T](), "", -1)
	if err != nil {
		return err
	}
	if c.observed() {
		n := len(send)
		if send == nil && c.s.rank < len(counts) {
			n = counts[c.s.rank] // in place: its block is in recv
		}
		c.toAll(n*elemSize[T](), n*elemSize[T]())
	}
	return c.end(allgatherv(c, send, recv, counts))
}

func allgatherv[T runtime.Elem](c *call, send, recv []T, counts []int) error {
	p, r := c.s.size, c.s.rank
	total, err := checkCounts("counts", counts, p)
	if err != nil {
		return err
	}
	off := offset(counts, r)
	switch {
	case send != nil && len(send) != counts[r]:
		return invalid("len(send) %d != counts[%d] %d", len(send), r, counts[r])
	case len(recv) != total:
		return invalid("len(recv) %d != sum(counts) %d", len(recv), total)
	case overlap(send, recv):
		return errOverlap()
	case send != nil:
		copy(recv[off:off+counts[r]], send)
	}
	if p == 1 {
		return nil
	}
	if g, err := worldGroup(c, 0, 0); g != nil || err != nil {
		if err != nil {
			return err
		}
		return allgathervSHM(c, g, recv, counts, off)
	}
	c.chose("ring")
	return allgathervRing(c, recv, counts, off, total)
}

// allgathervRing runs the ring over buf, whose block r starts at off; total is
// sum(counts). The offset of the block received in a step is that of the block sent in
// the same step minus the received block's count (it is the block just before), or, when
// the ring wraps, the total minus the last count.
func allgathervRing[T runtime.Elem](c *call, buf []T, counts []int, off, total int) error {
	p, r := c.s.size, c.s.rank
	right, left := (r+1)%p, (r-1+p)%p
	sb, soff := r, off
	for s := 0; s < p-1; s++ {
		rb := (sb - 1 + p) % p
		roff := soff - counts[rb]
		if rb == p-1 {
			roff = total - counts[rb]
		}
		if err := exchange(c, buf[soff:soff+counts[sb]], right, buf[roff:roff+counts[rb]], left); err != nil {
			return err
		}
		sb, soff = rb, roff
	}
	return nil
}
