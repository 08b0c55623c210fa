package collectives

import (
	"github.com/gorma-hpc/gorma/collectives/internal/hostgroup"
	"github.com/gorma-hpc/gorma/runtime"
)

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

// A call's messages carry a tag made of its number on the World's sequence (seq, modulo
// 2^31), its kind (hostgroup.Kind: a Bcast, an Allreduce, their nonblocking and
// persistent forms) and its root: seq + (kind + tagKinds*root)*tagStride modulo 2^31
// (kindTag, then rootTag; a call without a root adds no root term, and a second reduction
// within a call takes root p). So the messages of two calls at one number never match
// unless the calls have the same kind and root, at any size and rank count: a Bcast of
// root 0 and an Allreduce wait for each other, and the hang check names both calls. The
// price: a message that a failed call left unmatched could match a call of another kind
// or root that comes at least 2^31/(3*tagKinds*(p+1)) calls later on p ranks (about 1365
// at 4096 ranks); a call of the same kind and root comes 2^31 calls later.

// tagStride is odd, so that different kinds and roots give different tags at one call
// number. It was chosen among odd numbers as the one whose multiples up to
// tagKinds*(p+1) stay farthest from 0 modulo 2^31, for every p up to 4096 (`go test
// -run TestCallTag ./collectives` checks the bound above).
const tagStride = 0x4170A833

// tagKinds is the number of kinds that hostgroup.Kind gives.
const tagKinds = 1 << hostgroup.KindBits

// setupTag is the tag of call c without its kind: that of the shared-memory setup's
// exchange of scratch descriptions (exchangeDescs), in which members at calls of
// different kinds (a Bcast and an Allreduce) meet and fail naming both calls. It is the
// tag of kind 0, which no call has, so the reuse bound above holds for it.
func setupTag(c *call) int {
	return (c.tag - int(c.kind)*tagStride) & runtime.MaxTag
}

// rootTagStride is tagStride for one more root: tagKinds kinds apart.
const rootTagStride = tagKinds * tagStride & runtime.MaxTag

// kindTag returns the tag of a call of kind made with tag, its number. Every collective
// call takes it in begin (beginPart: SetupDup's).
func kindTag(tag int, kind uint8) int {
	return (tag + int(kind)*tagStride) & runtime.MaxTag
}

// rootTag returns the tag of a rooted call (Gather, Scatter, Bcast, Reduce and the v-forms)
// made with tag (kindTag's) and root: the root is mixed into the call's tag, so that the
// messages of ranks that passed different roots never match each other. Without it such a
// call could hand a rank the blocks of a root it did not name, silently. A rank that names
// itself root sends to the ranks that are its children in its own tree. One of them may
// expect a message from it in the tree of the root it named (TestRootedMismatch). With it,
// every message a rank takes comes from the tree of the root it passed, so a rank that
// waits for a rank that named another root waits until ctx ends or the hang check ends
// the job. Ranks that wait for nobody of the kind (a Scatter whose every rank names itself
// root, say) succeed, each with what its own arguments ask for.
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
