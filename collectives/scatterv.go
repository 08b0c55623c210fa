package collectives

import (
	"context"
	"fmt"

	"github.com/gorma-hpc/gorma/runtime"
)

// Scatterv is Gatherv's inverse (MPI_Scatterv): rank r's recv receives the counts[r]
// elements of root's send at send[displs[r]:displs[r]+counts[r]], and must hold exactly
// counts[r] elements. counts and displs are read at root only (other ranks may pass nil);
// both hold Size() entries, in elements, none negative, every block inside send. Blocks
// may overlap, since they are only read (one element sent to several ranks). displs nil
// means the blocks lie one after the other in rank order (the prefix sums of counts). At
// root, recv nil means in place: root's block stays where it is in send; otherwise
// len(recv) must be counts[root] and recv must not overlap send. At a rank other than
// root, recv nil receives an empty block; send is not used there.
//
// A rank whose len(recv) differs from counts at root fails with ErrMismatch (shorter) or
// runtime.ErrTruncated (longer). Ranks that pass different roots never take each other's
// messages (rootTag): those left waiting end when ctx does. Empty blocks still take
// their (empty) messages, so that a mismatch is told whichever side counts 0.
//
// On one host whose ranks map each other's scratch, a first shared-memory step compares
// every rank's length with root's counts (vector_shm.go): a mismatch fails at every rank
// with ErrMismatch. Blocks of up to 256 KiB then go through shared memory; longer ones
// point to point.
//
// Otherwise the algorithm is MPICH's linear one (scatterv_allcomm_linear): root starts a
// send of each block straight from send, in rank order, keeps its own, and waits for them
// all; every other rank receives once.
func Scatterv[T runtime.Elem](ctx context.Context, w *runtime.World, send []T, counts, displs []int, recv []T, root int) error {
	if w.IsInter() {
		return interErr("scatterv", w, beginInter(w, "scatterv").end(interScatterv(ctx, w, send, counts, displs, recv, root), len(send)*elemSize[T]()))
	}
	c, err := begin(ctx, w, "scatterv", -1, typeName[T](), "", root)
	if err != nil {
		return err
	}
	if c.observed() {
		c.perMember(sendSize(c, send, recv, root), counts, elemSize[T](), root)
	}
	return c.end(scatterv(c, send, counts, displs, recv, root))
}

func scatterv[T runtime.Elem](c *call, sendBuf []T, counts, displs []int, recvBuf []T, root int) error {
	p, r := c.s.size, c.s.rank
	if root < 0 || root >= p {
		return invalid("root %d of %d ranks", root, p)
	}
	c.tag = rootTag(c.tag, root)
	if r == root {
		if err := checkLayout("send", counts, displs, len(sendBuf), p, false); err != nil {
			return err
		}
		d := displ(counts, displs, r)
		switch {
		case recvBuf == nil:
		case len(recvBuf) != counts[r]:
			return invalid("len(recv) %d at root != counts[%d] %d", len(recvBuf), r, counts[r])
		case overlap(sendBuf, recvBuf):
			return invalid("send and recv overlap (pass a nil recv at root for in place)")
		default:
			copy(recvBuf, sendBuf[d:d+counts[r]])
		}
	}
	if p == 1 {
		return nil
	}
	if g, err := worldGroup(c, 0, 0); g != nil || err != nil {
		if err != nil {
			return err
		}
		return scattervSHM(c, g, sendBuf, counts, displs, recvBuf, root)
	}
	c.chose("linear")
	if r != root {
		return recv(c, recvBuf, root)
	}
	return scattervLinear(c, sendBuf, counts, displs, root)
}

// scattervLinear is root's part of the linear Scatterv: a send of every other rank's
// block straight from send, in rank order, then a wait for them all.
func scattervLinear[T runtime.Elem](c *call, sendBuf []T, counts, displs []int, root int) error {
	p, r := c.s.size, c.s.rank
	off := 0
	for dst := range p {
		d := off
		if displs != nil {
			d = displs[dst]
		}
		off += counts[dst]
		if dst == r {
			continue
		}
		if err := postSend(c, c.Req(peerIndex(dst, r)), sendBuf[d:d+counts[dst]], dst); err != nil {
			return err
		}
	}
	for dst := range p {
		if dst == r {
			continue
		}
		if _, err := c.Req(peerIndex(dst, r)).Wait(c.ctx); err != nil {
			return fmt.Errorf("rank %d sending to rank %d: %w", r, dst, err)
		}
	}
	return nil
}
