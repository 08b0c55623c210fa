package collectives

import "github.com/gorma-hpc/gorma/runtime"

// The binomial tree of Gather and Scatter, over ranks relative to root (v = r-root mod
// p): rank v > 0 hangs below v minus its lowest set bit, and its subtree is the relative
// ranks [v, v+subtree(v, p)). A subtree's blocks therefore sit together in relative order,
// and so do each child's within its parent's.

// subtree returns the number of relative ranks in v's subtree (v itself included): the
// lowest set bit of v, cut at p; all p for the root.
func subtree(v, p int) int {
	if v == 0 {
		return p
	}
	return min(v&-v, p-v)
}

// rootTagStride is odd, so that rootTag gives different tags for different roots in one
// call. It is 2^31 divided by the golden ratio, so that the tags of a root's calls stay
// far from those of another root's calls (see rootTag).
const rootTagStride = 0x4F1BBCDD

// rootTag returns the tag of a rooted call (Gather, Scatter, Bcast, Reduce) made with tag and
// root: the root is mixed into the call's tag, so that the messages of ranks that passed
// different roots never match each other. Without it such a call could hand a rank the blocks
// of a root it did not name, silently. A rank that names itself root sends to the ranks that
// are its children in its own tree. One of them may expect a message from it in the tree of the
// root it named (TestRootedMismatch). With it, every message a rank takes comes from the tree
// of the root it passed, so a rank that waits for a rank that named another root ends at its
// deadline. Ranks that wait for nobody of the kind (a Scatter whose every rank names itself
// root, say) succeed, each with what its own arguments ask for. The price: a message that a
// failed rooted call left unmatched could match a call at least about 2^31/(3p) calls later
// (TestRootTag checks this up to 4096 ranks), instead of 2^31 for the other collectives.
func rootTag(tag, root int) int {
	return (tag + root*rootTagStride) & runtime.MaxTag
}

// wrappedBlocks returns the k blocks of n elements of the ranks a, a+1, ... (mod p) of
// buf, p blocks in rank order, as one slice: buf itself when they do not wrap past rank
// p-1, else a copy in scratch slot 1 (below the root, at most one subtree wraps).
func wrappedBlocks[T runtime.Elem](c *call, buf []T, a, k, n int) []T {
	p := c.s.size
	if a+k <= p {
		return buf[a*n : (a+k)*n]
	}
	tmp := scratchOf[T](c, 1, k*n)
	m := copy(tmp, buf[a*n:])
	copy(tmp[m:], buf[:(a+k-p)*n])
	return tmp
}

// unwrapBlocks is wrappedBlocks' inverse for blocks that wrap: it copies tmp, the k
// blocks of the ranks a, a+1, ... (mod p), to their places in buf.
func unwrapBlocks[T runtime.Elem](p int, buf, tmp []T, a, k, n int) {
	m := copy(buf[a*n:], tmp)
	copy(buf[:(a+k-p)*n], tmp[m:])
}
