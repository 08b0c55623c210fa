package collectives

import (
	"context"

	"github.com/gorma-hpc/gorma/runtime"
)

// Bcast copies root's buf into every other rank's buf. Every rank must pass the same
// len(buf) and root; a different length fails with ErrMismatch (or ends when ctx does),
// and ranks that name different roots never take each other's messages (rootTag): those
// left waiting end when ctx does.
// On one host (every rank mapping the others' memory) root's data goes through shared
// memory (bcastSHM). Across hosts of which some hold several ranks, through shared memory
// on each host and point to point among the hosts' leaders (bcastHier). Otherwise short
// vectors (or p <= 2) go down a binomial tree; from bcastLongMsg bytes they are scattered
// down the tree and gathered around a ring.
func Bcast[T runtime.Elem](ctx context.Context, w *runtime.World, buf []T, root int) error {
	if w.IsInter() {
		return interErr("bcast", w, beginInter(w, "bcast").end(interBcast(ctx, w, buf, root), len(buf)*elemSize[T]()))
	}
	c, err := begin(ctx, w, "bcast", len(buf), typeName[T](), "", root)
	if err != nil {
		return err
	}
	c.atRoot(root, len(buf)*elemSize[T](), len(buf)*elemSize[T]())
	return c.end(bcast(c, buf, root))
}

func bcast[T runtime.Elem](c *call, buf []T, root int) error {
	p := c.s.size
	if root < 0 || root >= p {
		return invalid("root %d of %d ranks", root, p)
	}
	c.tag = rootTag(c.tag, root) // ranks that name different roots never match
	if p == 1 || len(buf) == 0 {
		return nil
	}
	if g, err := worldGroup(c, len(buf)*elemSize[T](), 0); g != nil || err != nil {
		if err != nil {
			return err
		}
		return bcastSHM(c, g, buf, root) // names the algorithm: shm or single
	}
	if l := localOf(c.s); bcastHierOK(l) {
		c.chose("hier")
		return bcastHier(c, l, buf, root)
	}
	if len(buf)*elemSize[T]() < bcastLongMsg || p <= 2 || len(buf) < p {
		c.chose("binomial")
		return bcastBinomial(c, buf, root)
	}
	c.chose("scatter_allgather")
	return bcastScatterAllgather(c, buf, root)
}

// bcastBinomial is the binomial tree (MPICH's bcast_intra_binomial): with ranks relative
// to root, rank v receives from v minus its lowest set bit, then sends to v+mask for each
// smaller power of two mask. log2(p) rounds.
func bcastBinomial[T runtime.Elem](c *call, buf []T, root int) error {
	p, r := c.s.size, c.s.rank
	vr := (r - root + p) % p
	mask := 1
	for ; mask < p; mask <<= 1 {
		if vr&mask != 0 {
			if err := recv(c, buf, (r-mask+p)%p); err != nil {
				return err
			}
			break
		}
	}
	for mask >>= 1; mask > 0; mask >>= 1 {
		if vr+mask < p {
			if err := send(c, buf, (r+mask)%p); err != nil {
				return err
			}
		}
	}
	return nil
}
