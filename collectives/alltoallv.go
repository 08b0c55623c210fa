package collectives

import (
	"context"

	"github.com/gorma-hpc/gorma/collectives/internal/hostgroup"
	"github.com/gorma-hpc/gorma/runtime"
)

// Alltoallv is Alltoall with a count per pair of ranks: rank r sends sendCounts[d]
// elements to rank d, the blocks of send in rank order (block d at displacement
// sendCounts[0]+...+sendCounts[d-1]), and receives recvCounts[s] elements from rank s
// into recv, in rank order as well (displacements the prefix sums of recvCounts). Both
// counts slices hold Size() counts, none negative; len(send) must be sum(sendCounts) and
// len(recv) sum(recvCounts), and a rank's block to itself must have the same count on
// both sides (sendCounts[r] == recvCounts[r]). With send and sendCounts both nil the
// operation is in place (MPI_IN_PLACE): recv holds the blocks to send, placed by
// recvCounts. Each is replaced by the block received from the same rank (at the cost of
// a copy of recv, in scratch kept between calls). Otherwise send is nil only when every
// send count is 0, and must not overlap recv.
//
// recvCounts[s] at rank d must equal sendCounts[d] at rank s. A rank that receives a
// block of another length fails with ErrMismatch (shorter) or runtime.ErrTruncated
// (longer), and the ranks waiting for it end when ctx does. Zero-length blocks still take
// their (empty) messages, so that a rank expecting nothing from a rank that sends
// something, or the other way round, is told.
//
// On one host whose ranks map each other's scratch, a first shared-memory step compares
// every pair's counts (vector_shm.go): a mismatch fails at every rank with ErrMismatch.
// The blocks then go through shared memory, up to 256 KiB sent per rank; beyond, point
// to point.
//
// Otherwise the algorithm is MPICH's basic one (alltoallv_intra_scattered, with every
// message in flight at once): each rank posts its p-1 receives (from r-1, r-2, ...), then
// its p-1 sends (to r+1, r+2, ...), and waits for them all; its own block is copied.
func Alltoallv[T runtime.Elem](ctx context.Context, w *runtime.World, send []T, sendCounts []int, recv []T, recvCounts []int) error {
	if w.IsInter() {
		return interErr("alltoallv", w, beginInter(w, "alltoallv").end(interAlltoallv(ctx, w, send, sendCounts, recv, recvCounts), len(send)*elemSize[T]()))
	}
	c, err := begin(ctx, w, "alltoallv", -1, typeName[T](), "", -1)
	if err != nil {
		return err
	}
	if c.observed() {
		if send == nil && sendCounts == nil { // in place: recv holds the blocks to send
			c.perMember(len(recv)*elemSize[T](), recvCounts, elemSize[T](), -1)
		} else {
			c.perMember(len(send)*elemSize[T](), sendCounts, elemSize[T](), -1)
		}
	}
	return c.end(alltoallv(c, send, sendCounts, recv, recvCounts))
}

func alltoallv[T runtime.Elem](c *call, send []T, sendCounts []int, recv []T, recvCounts []int) error {
	p, r := c.s.size, c.s.rank
	if send == nil && sendCounts == nil {
		if _, err := checkCounts("recvCounts", recvCounts, p); err != nil {
			return err
		}
		send, sendCounts = scratchOf[T](c, 0, len(recv)), recvCounts
		copy(send, recv)
	}
	stotal, err := checkCounts("sendCounts", sendCounts, p)
	if err != nil {
		return err
	}
	rtotal, err := checkCounts("recvCounts", recvCounts, p)
	if err != nil {
		return err
	}
	switch {
	case send == nil && stotal > 0:
		return invalid("nil send with send counts (pass nil sendCounts too for in place)")
	case len(send) != stotal:
		return invalid("len(send) %d != sum(sendCounts) %d", len(send), stotal)
	case len(recv) != rtotal:
		return invalid("len(recv) %d != sum(recvCounts) %d", len(recv), rtotal)
	case sendCounts[r] != recvCounts[r]:
		return invalid("sendCounts[%d] %d != recvCounts[%d] %d (rank %d's block to itself)", r, sendCounts[r], r, recvCounts[r], r)
	case overlap(send, recv):
		return invalid("send and recv overlap (pass a nil send and nil sendCounts for in place)")
	}
	soff, roff := offset(sendCounts, r), offset(recvCounts, r)
	copy(recv[roff:roff+recvCounts[r]], send[soff:soff+sendCounts[r]])
	if p == 1 {
		return nil
	}
	if g, err := worldGroup(c, 0, 0); g != nil || err != nil {
		if err != nil {
			return err
		}
		if 16*p <= hostgroup.SmallMax {
			return alltoallvSHM(c, g, send, sendCounts, recv, recvCounts)
		}
	}
	c.chose("scattered")
	return alltoallvP2P(c, send, sendCounts, recv, recvCounts)
}

// alltoallvP2P is the scattered Alltoallv: every receive and send posted at once, then
// a wait for them all. The rank's own block is already in place.
func alltoallvP2P[T runtime.Elem](c *call, send []T, sendCounts []int, recv []T, recvCounts []int) error {
	p, r := c.s.size, c.s.rank
	soff, roff := offset(sendCounts, r), offset(recvCounts, r)
	if err := alltoallvPost(c, send, sendCounts, soff, recv, recvCounts, roff, len(recv)); err != nil {
		return err
	}
	for k := 1; k < p; k++ {
		src := (r - k + p) % p
		st, err := c.Req(k - 1).Wait(c.ctx)
		if err := c.checkStatus(st, err, src, recvCounts[src]); err != nil {
			return err
		}
	}
	return waitSends(c, p-1, p, r)
}

// alltoallvPost posts the receives from ranks r-1, r-2, ... on Requests 0 .. p-2, then
// the sends to ranks r+1, r+2, ... on Requests p-1 .. 2p-3. soff and roff are the
// displacements of rank r's own blocks in send and recv, and rtotal is len(recv): going
// down from r, a block starts where the one after it started minus its count, and going
// up, where the one before it ended, but for the wrap past rank p-1.
func alltoallvPost[T runtime.Elem](c *call, send []T, sendCounts []int, soff int, recv []T, recvCounts []int, roff, rtotal int) error {
	p, r := c.s.size, c.s.rank
	off := roff
	for k := 1; k < p; k++ {
		src := (r - k + p) % p
		off -= recvCounts[src]
		if src == p-1 {
			off = rtotal - recvCounts[src]
		}
		if err := postRecv(c, c.Req(k-1), recv[off:off+recvCounts[src]], src); err != nil {
			return err
		}
	}
	off = soff
	for k := 1; k < p; k++ {
		dst := (r + k) % p
		off += sendCounts[(dst-1+p)%p]
		if dst == 0 {
			off = 0
		}
		if err := postSend(c, c.Req(p-1+k-1), send[off:off+sendCounts[dst]], dst); err != nil {
			return err
		}
	}
	return nil
}
