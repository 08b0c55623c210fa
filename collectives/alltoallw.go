package collectives

import (
	"context"

	"github.com/gorma-hpc/gorma/runtime"
)

// Alltoallw is Alltoallv over bytes with a displacement and an element size per block
// (MPI_Alltoallw): rank r sends block d of send (placed by sendBlocks) to rank d, and
// receives rank s's block into block s of recv (placed by recvBlocks). Every block must
// lie inside its buffer, recv's blocks must not overlap (each byte written at most once;
// send's may), and a rank's block to itself must have the same length in bytes on both
// sides. With send nil and sendBlocks the zero ByteBlocks the operation is in place
// (MPI_IN_PLACE): recv holds the blocks to send, placed by recvBlocks. Each is replaced
// by the block received from the same rank (at the cost of a copy of recv, in scratch
// kept between calls). Otherwise send must not overlap recv.
//
// The length in bytes of block d at rank s's send must equal that of block s at rank d's
// recv (the element sizes and counts may differ, as MPI's datatypes may, so long as the
// bytes match). A rank that receives a block of another length fails with ErrMismatch
// (shorter) or runtime.ErrTruncated (longer), its error counting bytes, and the ranks
// waiting for it end when ctx does. Empty blocks still take their (empty) messages.
//
// The algorithm is Alltoallv's: each rank posts its p-1 receives straight into recv, then
// its p-1 sends straight from send, and waits for them all; its own block is copied.
// With Sizes nil on both sides a call allocates nothing in steady state; Sizes cost a
// slice of p block lengths per call.
func Alltoallw(ctx context.Context, w *runtime.World, send []byte, sendBlocks ByteBlocks, recv []byte, recvBlocks ByteBlocks) error {
	if w.IsInter() {
		return interErr("alltoallw", w, beginInter(w, "alltoallw").end(interAlltoallw(ctx, w, send, sendBlocks, recv, recvBlocks), len(send)))
	}
	c, err := begin(ctx, w, "alltoallw", -1, "", "", -1)
	if err != nil {
		return err
	}
	if c.observed() {
		if send == nil && sendBlocks.Counts == nil && sendBlocks.Displs == nil && sendBlocks.Sizes == nil {
			c.perBlock(len(recv), recvBlocks) // in place: recv holds the blocks to send
		} else {
			c.perBlock(len(send), sendBlocks)
		}
	}
	return c.end(alltoallw(c, send, sendBlocks, recv, recvBlocks))
}

func alltoallw(c *call, send []byte, sb ByteBlocks, recv []byte, rb ByteBlocks) error {
	p, r := c.s.size, c.s.rank
	if send == nil && sb.Counts == nil && sb.Displs == nil && sb.Sizes == nil {
		if err := rb.check("recv", len(recv), p, true); err != nil {
			return err
		}
		send, sb = scratchOf[byte](c, 0, len(recv)), rb
		copy(send, recv)
	}
	if err := sb.check("send", len(send), p, false); err != nil {
		return err
	}
	if err := rb.check("recv", len(recv), p, true); err != nil {
		return err
	}
	switch {
	case sb.bytes(r) != rb.bytes(r):
		return invalid("block %d is %d bytes in send and %d in recv (rank %d's block to itself)", r, sb.bytes(r), rb.bytes(r), r)
	case overlap(send, recv):
		return invalid("send and recv overlap (pass a nil send and zero sendBlocks for in place)")
	}
	copy(rb.of(recv, r), sb.of(send, r))
	if p == 1 {
		return nil
	}
	c.chose("scattered")
	for k := 1; k < p; k++ {
		src := (r - k + p) % p
		if err := postRecv(c, c.Req(k-1), rb.of(recv, src), src); err != nil {
			return err
		}
	}
	for k := 1; k < p; k++ {
		dst := (r + k) % p
		if err := postSend(c, c.Req(p-1+k-1), sb.of(send, dst), dst); err != nil {
			return err
		}
	}
	for k := 1; k < p; k++ {
		src := (r - k + p) % p
		st, err := c.Req(k - 1).Wait(c.ctx)
		if err := c.checkStatus(st, err, src, rb.bytes(src)); err != nil {
			return err
		}
	}
	return waitSends(c, p-1, p, r)
}

// Ialltoallw starts Alltoallw (MPI_Ialltoallw).
func Ialltoallw(ctx context.Context, w *runtime.World, send []byte, sendBlocks ByteBlocks, recv []byte, recvBlocks ByteBlocks) *Request {
	return started(ctx, newRequest(w, "alltoallw", false, func(ctx context.Context) error {
		return Alltoallw(ctx, w, send, sendBlocks, recv, recvBlocks)
	}))
}

// AlltoallwInit returns a persistent Request for Alltoallw (MPI_Alltoallw_init).
func AlltoallwInit(w *runtime.World, send []byte, sendBlocks ByteBlocks, recv []byte, recvBlocks ByteBlocks) *Request {
	return newPersistent(w, "alltoallw", func(ctx context.Context) error {
		return Alltoallw(ctx, w, send, sendBlocks, recv, recvBlocks)
	})
}
