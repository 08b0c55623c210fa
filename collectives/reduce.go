package collectives

import (
	"context"

	"github.com/gorma-hpc/gorma/runtime"
)

// Reduce combines the ranks' send vectors element by element with op, in rank order, and
// leaves the result in root's recv (recv is not used at other ranks). At root, send nil
// means in place: root's recv holds its input. Every rank must pass the same len(send)
// (at root: len(recv)), op and root; ranks that name different roots never take each
// other's messages (rootTag): those left waiting end when ctx does.
//
// On one host the ranks reduce through shared memory (reduceSHM), in rank order, and
// root's recv takes only the result: a call that does not match leaves it as it was.
// Across hosts of which some hold several ranks, a commutative operator reduces through
// shared memory on each host and point to point among the hosts' leaders (reduceHier).
// Otherwise the algorithm is a binomial tree (MPICH's reduce_intra_binomial) rooted at
// root for commutative operators; a non-commutative one is reduced to rank 0, where
// rank order holds, and sent to root. On these paths root combines into recv as the
// blocks come, so a call that fails there may have written it.
func Reduce[T runtime.Elem](ctx context.Context, w *runtime.World, send, recv []T, op Op[T], root int) error {
	if w.IsInter() {
		return interErr("reduce", w, beginInter(w, "reduce").end(interReduce(ctx, w, send, recv, op, root), len(send)*elemSize[T]()))
	}
	c, err := begin(ctx, w, "reduce", inputLen(send, recv), typeName[T](), op.name, root)
	if err != nil {
		return err
	}
	c.atRoot(root, inputLen(send, recv)*elemSize[T](), inputLen(send, recv)*elemSize[T]())
	return c.end(reduce(c, send, recv, op, root))
}

func reduce[T runtime.Elem](c *call, sendBuf, recvBuf []T, op Op[T], root int) error {
	p, r := c.s.size, c.s.rank
	switch {
	case !op.Valid():
		return invalid("zero Op")
	case root < 0 || root >= p:
		return invalid("root %d of %d ranks", root, p)
	case r != root && sendBuf == nil:
		return invalid("nil send at a rank other than root (in place is for root only)")
	case r == root && sendBuf != nil && len(sendBuf) != len(recvBuf):
		return invalid("len(send) %d != len(recv) %d at root", len(sendBuf), len(recvBuf))
	case r == root && overlap(sendBuf, recvBuf):
		return errOverlap()
	}
	c.tag = rootTag(c.tag, root) // ranks that name different roots never match
	n := len(sendBuf)
	if r == root {
		n = len(recvBuf)
	}
	if p == 1 || n == 0 {
		if r == root && sendBuf != nil {
			copy(recvBuf, sendBuf)
		}
		return nil
	}
	if g, err := worldGroup(c, n*elemSize[T](), 0); g != nil || err != nil {
		if err != nil {
			return err
		}
		c.chose("shm")
		src, dst := sendBuf, sendBuf
		if r == root {
			src, dst = recvBuf, recvBuf
			if sendBuf != nil {
				src = sendBuf
			}
		}
		return reduceSHM(c, g, src, dst, op, root) // root's recv takes only the result
	}
	if l := localOf(c.s); op.commutative && bcastHierOK(l) {
		c.chose("hier")
		return reduceHier(c, l, sendBuf, recvBuf, op, root)
	}
	treeRoot := root
	if !op.commutative {
		treeRoot = 0
	}
	c.chose("binomial")
	vr := (r - treeRoot + p) % p
	in := sendBuf // this rank's input: root's recv in place
	if in == nil {
		in = recvBuf
	}
	var acc, out []T // leaves send their input as it is
	if vr&1 == 0 && vr+1 < p {
		acc = scratchOf[T](c, 0, n)
	}
	switch {
	case r == root && r == treeRoot:
		out = recvBuf // written once, with the last child's block
	case r == treeRoot:
		out = acc // non-commutative: rank 0 sends the result to root
	}
	if err := reduceBinomial(c, in, acc, out, op, treeRoot); err != nil {
		return err
	}
	if treeRoot != root { // non-commutative: rank 0 holds the result
		switch r {
		case 0:
			return send(c, out, root)
		case root:
			return recv(c, recvBuf, 0)
		}
	}
	return nil
}

// reduceBinomial reduces the ranks' inputs up a binomial tree rooted at treeRoot (MPICH's
// reduce_intra_binomial), in rank order. in is this rank's input. A rank with children
// combines their blocks into acc as they come (acc may be in itself, when in is
// scratch) and sends the result to its parent; a leaf sends in. treeRoot puts the result
// in out, which it writes once, with its last child's block: every rank's block is in
// that one, so a call that does not match at every rank leaves out as it was.
func reduceBinomial[T runtime.Elem](c *call, in, acc, out []T, op Op[T], treeRoot int) error {
	p, r := c.s.size, c.s.rank
	vr := (r - treeRoot + p) % p
	tmp := scratchOf[T](c, 1, len(in))
	cur := in // the subtree's result so far
	for mask := 1; mask < p; mask <<= 1 {
		if vr&mask != 0 {
			return send(c, cur, (vr-mask+treeRoot)%p)
		}
		if vr+mask >= p {
			continue
		}
		if err := recv(c, tmp, (vr+mask+treeRoot)%p); err != nil {
			return err
		}
		dst := acc
		if vr == 0 && 2*mask >= p {
			dst = out // treeRoot's last child
		}
		op.combine(dst, cur, tmp) // one pass: dst = cur ∘ tmp
		cur = dst
	}
	return nil
}
