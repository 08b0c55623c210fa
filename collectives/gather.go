package collectives

import (
	"context"
	"fmt"
	"math/bits"

	"github.com/gorma-hpc/gorma/collectives/internal/hostgroup"
	"github.com/gorma-hpc/gorma/runtime"
)

// Gather collects every rank's send into root's recv, in rank order: rank r's block is
// recv[r*n:(r+1)*n] with n = len(send), and len(recv) must be Size()*n at root (recv is
// not used at other ranks). At root, send nil means in place: root's block is already in
// recv at its place (n = len(recv)/Size()); elsewhere send must not be nil.
//
// Every rank must pass the same n and root. A different n fails with ErrMismatch or
// runtime.ErrTruncated at the rank that receives it (root, or a rank that forwards a
// subtree), and the ranks waiting for that one end when ctx does. Ranks that pass
// different roots never take each other's messages (rootTag): those left waiting end when
// ctx does. A count of 0 still takes the tree's (empty) messages, so that a root passing
// 0 while others pass more is told.
//
// Root writes recv only once every rank's block is on its way: a call that does not
// match leaves recv as it was. Root copies its own block in once the others are in.
//
// On one host whose ranks map each other's scratch, blocks of up to 256 KiB go through
// shared memory (gather_shm.go): every rank copies its block into its scratch and root
// copies them out. There a different n or root fails with ErrMismatch at every rank.
//
// Otherwise the algorithm is the binomial tree (MPICH's gather_intra_binomial): log2(p) rounds,
// the fewest message latencies, and each block travels log2(p) hops at most. Root waits
// until its children's messages are there (probeChildren), then receives them into recv
// directly (but for one subtree when root is not 0: the one whose ranks wrap past p-1,
// received in scratch and copied).
func Gather[T runtime.Elem](ctx context.Context, w *runtime.World, send, recv []T, root int) error {
	if w.IsInter() {
		return interErr("gather", w, beginInter(w, "gather").end(interGather(ctx, w, send, recv, root), len(send)*elemSize[T]()))
	}
	c, err := begin(ctx, w, "gather", blockOf(w, send, recv), typeName[T](), "", root)
	if err != nil {
		return err
	}
	if c.observed() {
		n := blockOf(w, send, recv) * elemSize[T]()
		c.atRoot(root, n, n)
	}
	return c.end(gather(c, send, recv, root))
}

func gather[T runtime.Elem](c *call, sendBuf, recvBuf []T, root int) error {
	p, r := c.s.size, c.s.rank
	n := len(sendBuf)
	switch {
	case root < 0 || root >= p:
		return invalid("root %d of %d ranks", root, p)
	case r != root && sendBuf == nil:
		return invalid("nil send at a rank other than root (in place is for root only)")
	case r != root:
	case sendBuf == nil && len(recvBuf)%p != 0:
		return invalid("in place: len(recv) %d at root is not a multiple of %d ranks", len(recvBuf), p)
	case sendBuf == nil:
		n = len(recvBuf) / p
	case len(recvBuf) != p*n:
		return invalid("len(recv) %d at root != %d ranks * len(send) %d", len(recvBuf), p, n)
	case overlap(sendBuf, recvBuf):
		return errOverlap()
	}
	err := gatherOthers(c, sendBuf, recvBuf, n, root)
	if err == nil && r == root && sendBuf != nil { // root's own block, once the call matched
		copy(recvBuf[r*n:(r+1)*n], sendBuf)
	}
	return err
}

// gatherOthers gathers the other ranks' blocks into root's recv.
func gatherOthers[T runtime.Elem](c *call, sendBuf, recvBuf []T, n, root int) error {
	if c.s.size == 1 {
		return nil
	}
	c.tag = rootTag(c.tag, root)
	if g, err := worldGroup(c, n*elemSize[T](), hostgroup.RootedMost); g != nil || err != nil {
		if err != nil {
			return err
		}
		return gatherSHM(c, g, sendBuf, recvBuf, n, root)
	}
	c.chose("binomial")
	return gatherBinomial(c, sendBuf, recvBuf, n, root)
}

// gatherBinomial runs the tree (binomial.go): rank v receives the blocks of its children
// v+1, v+2, v+4, ... (each child's whole subtree, smallest first, as they complete in that
// order) behind its own, then sends its subtree's blocks to its parent. A leaf sends
// straight from send; an inner rank gathers in scratch; root gathers in recv, once every
// child's message is there (probeChildren).
func gatherBinomial[T runtime.Elem](c *call, sendBuf, recvBuf []T, n, root int) error {
	p, r := c.s.size, c.s.rank
	v := (r - root + p) % p
	cnt := subtree(v, p)
	if v == 0 {
		if err := probeChildren(c, n*elemSize[T](), root); err != nil {
			return err
		}
	}
	buf := sendBuf // the subtree's blocks in relative order (not used at root)
	if v != 0 && cnt > 1 {
		buf = scratchOf[T](c, 0, cnt*n)
		copy(buf, sendBuf)
	}
	for mask := 1; mask < cnt; mask <<= 1 {
		child, k := v+mask, min(mask, cnt-mask)
		src := (child + root) % p // the child's rank, and its block's place at root
		var err error
		switch {
		case v != 0:
			err = recv(c, buf[mask*n:(mask+k)*n], src)
		case src+k <= p:
			err = recv(c, recvBuf[src*n:(src+k)*n], src)
		default: // the subtree wraps past rank p-1
			tmp := scratchOf[T](c, 1, k*n)
			if err = recv(c, tmp, src); err == nil {
				unwrapBlocks(p, recvBuf, tmp, src, k, n)
			}
		}
		if err != nil {
			return err
		}
	}
	if v == 0 {
		return nil
	}
	parent := v - v&-v
	return send(c, buf, (parent+root)%p)
}

// probeChildren waits until the message of each of root's children in the tree is there
// (probeEach), n bytes a block. A child sends once its whole subtree has sent to it, with
// the call's tag (kind and root): so when every child's message is there, every rank made
// this call, and root may receive into recv. Root's transfers start only once the last
// child's message is there: for rendezvous messages they do not overlap the wait for the
// larger subtrees.
func probeChildren(c *call, n, root int) error {
	p := c.s.size
	return probeEach(c, bits.Len(uint(p-1)), func(i int) (int, int) {
		mask := 1 << i
		return (mask + root) % p, min(mask, p-mask) * n
	})
}

// probeEach waits until the message of each of k senders is there and checks its length,
// without receiving it: sender(i) gives the i-th sender's rank and the bytes it must send.
// A rank at another call leaves this rank waiting with its recv as it was. A length that
// differs fails the call after the messages probed so far are received into scratch, so
// that their senders end as they would have.
func probeEach(c *call, k int, sender func(i int) (src, want int)) error {
	for i := range k {
		src, want := sender(i)
		st, err := runtime.Probe(c.ctx, c.s.comm, c.s.world(src), c.tag)
		if err != nil {
			return fmt.Errorf("rank %d waiting for the blocks of rank %d: %w", c.s.rank, src, err)
		}
		if st.Bytes == want {
			continue
		}
		for j := range i + 1 { // drain: every length but the last is known
			from, n := sender(j)
			if j == i {
				n = st.Bytes
			}
			if err := recv(c, scratchOf[byte](c, 1, n), from); err != nil {
				return err
			}
		}
		return fmt.Errorf("%w: rank %d sent %d bytes of blocks to rank %d, expected %d (do all ranks pass the same counts?)",
			ErrMismatch, src, st.Bytes, c.s.rank, want)
	}
	return nil
}
