package collectives

import (
	"context"

	"github.com/gorma-hpc/gorma/collectives/internal/hostgroup"
	"github.com/gorma-hpc/gorma/runtime"
)

// Scatter is Gather's inverse: root's send holds Size() blocks of n = len(recv) elements
// in rank order, and rank r's recv gets block r, send[r*n:(r+1)*n]; len(send) must be
// Size()*n at root (send is not used at other ranks). At root, recv nil means in place:
// root's block stays where it is in send (n = len(send)/Size()); elsewhere recv must not
// be nil.
//
// Every rank must pass the same n and root. A different n fails with ErrMismatch or
// runtime.ErrTruncated at the rank that receives it, and the ranks below that one in the
// tree end when ctx does. Ranks that pass different roots never take each other's
// messages (rootTag): those left waiting end when ctx does. A count of 0 still takes the
// tree's (empty) messages, so that a rank passing 0 while root passes more is told.
//
// On one host whose ranks map each other's scratch, blocks of up to 256 KiB go through
// shared memory (gather_shm.go): root copies the blocks into its scratch and each rank
// copies its own out. From 128 KiB, on 3 ranks or more, each rank reads its block from
// root's send instead (single copy, single_shm.go), at any size. There a different n or
// root fails with ErrMismatch at every rank.
//
// Otherwise the algorithm is the binomial tree (MPICH's scatter_intra_binomial): log2(p)
// rounds, the fewest message latencies; root sends straight from send (but for one
// subtree when root is not 0: the one whose ranks wrap past p-1, copied together in
// scratch first).
func Scatter[T runtime.Elem](ctx context.Context, w *runtime.World, send, recv []T, root int) error {
	if w.IsInter() {
		return interErr("scatter", w, beginInter(w, "scatter").end(interScatter(ctx, w, send, recv, root), len(send)*elemSize[T]()))
	}
	c, err := begin(ctx, w, "scatter", blockOf(w, recv, send), typeName[T](), "", root)
	if err != nil {
		return err
	}
	if c.observed() {
		c.atRoot(root, sendSize(c, send, recv, root), blockOf(w, recv, send)*elemSize[T]())
	}
	return c.end(scatter(c, send, recv, root))
}

func scatter[T runtime.Elem](c *call, sendBuf, recvBuf []T, root int) error {
	p, r := c.s.size, c.s.rank
	n := len(recvBuf)
	switch {
	case root < 0 || root >= p:
		return invalid("root %d of %d ranks", root, p)
	case r != root && recvBuf == nil:
		return invalid("nil recv at a rank other than root (in place is for root only)")
	case r != root:
	case recvBuf == nil && len(sendBuf)%p != 0:
		return invalid("in place: len(send) %d at root is not a multiple of %d ranks", len(sendBuf), p)
	case recvBuf == nil:
		n = len(sendBuf) / p
	case len(sendBuf) != p*n:
		return invalid("len(send) %d at root != %d ranks * len(recv) %d", len(sendBuf), p, n)
	case overlap(sendBuf, recvBuf):
		return invalid("send and recv overlap (pass a nil recv at root for in place)")
	default:
		copy(recvBuf, sendBuf[r*n:(r+1)*n])
	}
	if p == 1 {
		return nil
	}
	c.tag = rootTag(c.tag, root)
	most := p * hostgroup.RootedMost // root's scratch holds p blocks
	if n*elemSize[T]() >= hostgroup.ScatterSingleMin() {
		most = 0 // single copy, at any size (scatterSHM)
	}
	if g, err := worldGroup(c, p*n*elemSize[T](), most); g != nil || err != nil {
		if err != nil {
			return err
		}
		return scatterSHM(c, g, sendBuf, recvBuf, n, root)
	}
	c.chose("binomial")
	return scatterBinomial(c, sendBuf, recvBuf, n, root)
}

// scatterBinomial runs the tree (binomial.go): rank v receives its subtree's blocks from
// its parent (a leaf straight into recv, an inner rank into scratch), then sends each
// child its subtree's blocks, the largest subtree first (it has the most left to do), and
// keeps its own block.
func scatterBinomial[T runtime.Elem](c *call, sendBuf, recvBuf []T, n, root int) error {
	p, r := c.s.size, c.s.rank
	v := (r - root + p) % p
	cnt := subtree(v, p)
	buf := recvBuf // the subtree's blocks in relative order (not used at root)
	if v != 0 {
		if cnt > 1 {
			buf = scratchOf[T](c, 0, cnt*n)
		}
		parent := v - v&-v
		if err := recv(c, buf, (parent+root)%p); err != nil {
			return err
		}
	}
	if cnt > 1 {
		for mask := pof2Below(cnt - 1); mask > 0; mask >>= 1 {
			child, k := v+mask, min(mask, cnt-mask)
			dst := (child + root) % p
			var blocks []T
			if v == 0 {
				blocks = wrappedBlocks(c, sendBuf, dst, k, n)
			} else {
				blocks = buf[mask*n : (mask+k)*n]
			}
			if err := send(c, blocks, dst); err != nil {
				return err
			}
		}
	}
	if v != 0 && cnt > 1 {
		copy(recvBuf, buf[:n])
	}
	return nil
}
