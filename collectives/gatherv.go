package collectives

import (
	"context"

	"github.com/gorma-hpc/gorma/runtime"
)

// Gatherv is Gather with a count and a displacement per rank (MPI_Gatherv): root's recv
// receives counts[r] elements from rank r at recv[displs[r]:displs[r]+counts[r]], and
// rank r's send must hold counts[r] elements. counts and displs are read at root only
// (other ranks may pass nil); both hold Size() entries, in elements, none negative, every
// block inside recv, and no two non-empty blocks overlapping (each element of recv is
// written at most once). displs nil means the blocks lie one after the other in rank
// order (the prefix sums of counts). At root, send nil means in place: root's block is
// already in recv at its place. At a rank other than root, send nil is an empty
// contribution; recv is not used there.
//
// A rank whose len(send) differs from counts at root makes root fail with ErrMismatch
// (shorter) or runtime.ErrTruncated (longer). Ranks that pass different roots never take
// each other's messages (rootTag): those left waiting end when ctx does. Empty blocks
// still take their (empty) messages, so that a rank sending something root counts as 0,
// or the other way round, is told.
//
// On one host whose ranks map each other's scratch, a first shared-memory step compares
// every rank's length with root's counts (vector_shm.go): a mismatch fails at every rank
// with ErrMismatch. Blocks of up to 256 KiB then go through shared memory; longer ones
// point to point.
//
// Otherwise the algorithm is MPICH's linear one (gatherv_allcomm_linear): root posts a
// receive from every rank straight into its block of recv and waits for them all; every
// other rank sends once. Only root knows the counts, so no rank could forward a subtree's
// blocks.
func Gatherv[T runtime.Elem](ctx context.Context, w *runtime.World, send, recv []T, counts, displs []int, root int) error {
	if w.IsInter() {
		return interErr("gatherv", w, beginInter(w, "gatherv").end(interGatherv(ctx, w, send, recv, counts, displs, root), len(send)*elemSize[T]()))
	}
	c, err := begin(ctx, w, "gatherv", -1, typeName[T](), "", root)
	if err != nil {
		return err
	}
	if c.observed() {
		n := len(send)
		if send == nil && c.s.rank == root && root < len(counts) {
			n = counts[root] // in place: root's block is in recv
		}
		c.perMember(n*elemSize[T](), counts, elemSize[T](), root)
	}
	return c.end(gatherv(c, send, recv, counts, displs, root))
}

func gatherv[T runtime.Elem](c *call, sendBuf, recvBuf []T, counts, displs []int, root int) error {
	p, r := c.s.size, c.s.rank
	if root < 0 || root >= p {
		return invalid("root %d of %d ranks", root, p)
	}
	c.tag = rootTag(c.tag, root)
	if r != root {
		if p == 1 {
			return nil
		}
		return gathervFrom(c, sendBuf, recvBuf, counts, displs, root)
	}
	if err := checkLayout("recv", counts, displs, len(recvBuf), p, true); err != nil {
		return err
	}
	switch {
	case sendBuf == nil:
	case len(sendBuf) != counts[r]:
		return invalid("len(send) %d at root != counts[%d] %d", len(sendBuf), r, counts[r])
	case overlap(sendBuf, recvBuf):
		return errOverlap()
	}
	if p > 1 {
		if err := gathervFrom(c, sendBuf, recvBuf, counts, displs, root); err != nil {
			return err
		}
	}
	if sendBuf != nil { // root's own block, once the call has matched
		d := displ(counts, displs, r)
		copy(recvBuf[d:d+counts[r]], sendBuf)
	}
	return nil
}

// gathervFrom moves the other ranks' blocks of a Gatherv of two or more ranks to root.
func gathervFrom[T runtime.Elem](c *call, sendBuf, recvBuf []T, counts, displs []int, root int) error {
	if g, err := worldGroup(c, 0, 0); g != nil || err != nil {
		if err != nil {
			return err
		}
		return gathervSHM(c, g, sendBuf, recvBuf, counts, displs, root)
	}
	c.chose("linear")
	if c.s.rank != root {
		return send(c, sendBuf, root)
	}
	return gathervLinear(c, recvBuf, counts, displs, root)
}

// gathervLinear is root's part of the linear Gatherv: once every other rank's message
// is there (probeSenders), a receive from each straight into its block of recv, then a
// wait for them all.
func gathervLinear[T runtime.Elem](c *call, recvBuf []T, counts, displs []int, root int) error {
	p, r := c.s.size, c.s.rank
	if err := probeSenders(c, counts, elemSize[T]()); err != nil {
		return err
	}
	off := 0
	for src := range p {
		d := off
		if displs != nil {
			d = displs[src]
		}
		off += counts[src]
		if src == r {
			continue
		}
		if err := postRecv(c, c.Req(peerIndex(src, r)), recvBuf[d:d+counts[src]], src); err != nil {
			return err
		}
	}
	for src := range p {
		if src == r {
			continue
		}
		st, err := c.Req(peerIndex(src, r)).Wait(c.ctx)
		if err := c.checkStatus(st, err, src, counts[src]); err != nil {
			return err
		}
	}
	return nil
}

// probeSenders waits until the message of every rank but root (this rank) is there,
// counts[src] elements of es bytes (probeEach). Each carries the call's tag (kind and
// root): so when all are there, every rank made this call, and root may receive into
// recv.
func probeSenders(c *call, counts []int, es int) error {
	r := c.s.rank
	return probeEach(c, c.s.size-1, func(i int) (int, int) {
		src := peerRank(i, r)
		return src, counts[src] * es
	})
}

// peerIndex numbers the ranks other than r from 0: the Request of a linear algorithm's
// message with rank i.
func peerIndex(i, r int) int {
	if i > r {
		return i - 1
	}
	return i
}

// peerRank is peerIndex's inverse: the rank of the i-th rank other than r.
func peerRank(i, r int) int {
	if i >= r {
		return i + 1
	}
	return i
}
