package collectives

import (
	"context"
	"math"
	"unsafe"

	"github.com/gorma-hpc/gorma/runtime"
)

// LocOp is MaxLoc or MinLoc, the operators of AllreduceLoc and ReduceLoc.
type LocOp uint8

// The (value, index) operators.
const (
	// MaxLoc (MPI_MAXLOC) keeps the largest value and, among the pairs that hold it, the
	// lowest index.
	MaxLoc LocOp = iota + 1
	// MinLoc (MPI_MINLOC) keeps the smallest value and, among the pairs that hold it, the
	// lowest index.
	MinLoc
)

// String returns "maxloc" or "minloc".
func (o LocOp) String() string {
	switch o {
	case MaxLoc:
		return "maxloc"
	case MinLoc:
		return "minloc"
	}
	return "LocOp(?)"
}

// LocIndex are the index types of a (value, index) pair. MPI's pair types
// (MPI_DOUBLE_INT, MPI_2INT, MPI_LONG_INT, ...) hold a C int: int32.
type LocIndex interface{ ~int32 | ~int64 }

// AllreduceLoc combines (value, index) pairs element by element across the ranks with
// MaxLoc or MinLoc (MPI_Allreduce with MPI_MAXLOC or MPI_MINLOC over MPI_DOUBLE_INT and
// kin), the pairs held as parallel slices: rank r's pair i is (sendVals[i], sendIdx[i]).
// Every rank's (vals[i], idx[i]) receives the largest (MaxLoc) or smallest (MinLoc) value
// and the lowest index among the pairs holding it, exactly as MPI defines the operators,
// ties included. With sendVals and sendIdx both nil the operation is in place: vals and
// idx hold this rank's pairs (which costs a copy of vals). All four slices have the same
// length, which every rank must pass alike, and send and receive slices must not overlap.
//
// For floating point the value is Max's or Min's (a NaN wins) and the index the lowest
// among the pairs holding a NaN; -0 and +0 count as equal values.
//
// It makes two reductions in one call: the values with Max or Min, then the indices of
// the pairs that hold the result with Min (the others count as the largest index).
func AllreduceLoc[V Ordered, I LocIndex](ctx context.Context, w *runtime.World, sendVals []V, sendIdx []I, vals []V, idx []I, op LocOp) error {
	c, err := begin(ctx, w, "allreduce_loc", len(vals), typeName[V]()+","+typeName[I](), op.String(), -1)
	if err != nil {
		return err
	}
	c.toAll(len(vals)*pairSize[V, I](), len(vals)*pairSize[V, I]())
	return c.end(locReduce(c, sendVals, sendIdx, vals, idx, op, true, -1))
}

// ReduceLoc is AllreduceLoc with the result at root only (MPI_Reduce with MPI_MAXLOC or
// MPI_MINLOC): vals and idx are not used at other ranks, and in place (sendVals and
// sendIdx nil) is for root only. Every rank needs the result's values to tell which of
// its pairs hold them: a rank other than root allocates len(sendVals) values and indices
// per call for them and its candidate indices.
func ReduceLoc[V Ordered, I LocIndex](ctx context.Context, w *runtime.World, sendVals []V, sendIdx []I, vals []V, idx []I, op LocOp, root int) error {
	n := len(sendIdx)
	if sendIdx == nil {
		n = len(idx)
	}
	c, err := begin(ctx, w, "reduce_loc", n, typeName[V]()+","+typeName[I](), op.String(), root)
	if err != nil {
		return err
	}
	c.atRoot(root, n*pairSize[V, I](), n*pairSize[V, I]())
	return c.end(locReduce(c, sendVals, sendIdx, vals, idx, op, false, root))
}

// locReduce runs AllreduceLoc (all) or ReduceLoc. The two reductions are two
// collectives in one call. The second takes a tag of its own (rootTag with root p for
// AllreduceLoc; Reduce mixes in its root), so that neither its messages nor its shm
// steps pass for the first's.
func locReduce[V Ordered, I LocIndex](c *call, sendVals []V, sendIdx []I, vals []V, idx []I, op LocOp, all bool, root int) error {
	p, r := c.s.size, c.s.rank
	if !all && (root < 0 || root >= p) {
		return invalid("root %d of %d ranks", root, p)
	}
	out := all || r == root // this rank receives the result
	inPlace := sendVals == nil && sendIdx == nil
	switch {
	case op != MaxLoc && op != MinLoc:
		return invalid("LocOp %d is neither MaxLoc nor MinLoc", op)
	case inPlace && !out:
		return invalid("nil send at a rank other than root (in place is for root only)")
	case out && len(vals) != len(idx):
		return invalid("len(vals) %d != len(idx) %d", len(vals), len(idx))
	case !inPlace && len(sendVals) != len(sendIdx):
		return invalid("len(sendVals) %d != len(sendIdx) %d", len(sendVals), len(sendIdx))
	case !inPlace && out && len(sendVals) != len(vals):
		return invalid("len(sendVals) %d != len(vals) %d", len(sendVals), len(vals))
	case !inPlace && out && (overlap(sendVals, vals) || overlap(sendIdx, idx)):
		return errOverlap()
	}
	if inPlace {
		sendVals, sendIdx = append([]V(nil), vals...), idx
	}
	best, cand := vals, idx // the result's values, and this rank's candidate indices
	if !out {
		best, cand = make([]V, len(sendVals)), make([]I, len(sendVals))
	}
	vop := Max[V]()
	if op == MinLoc {
		vop = Min[V]()
	}
	if err := allreduce(c, sendVals, best, vop); err != nil {
		return err
	}
	none := maxIndex[I]()
	for i, v := range sendVals {
		m := best[i]
		if v == m || (v != v && m != m) {
			cand[i] = sendIdx[i]
		} else {
			cand[i] = none
		}
	}
	if all {
		c.tag = rootTag(c.tag, p)
		return allreduce(c, nil, cand, Min[I]())
	}
	if out {
		return reduce(c, nil, cand, Min[I](), root)
	}
	return reduce(c, cand, nil, Min[I](), root)
}

// pairSize is the size of one (value, index) pair: the bytes of an element of both slices.
func pairSize[V Ordered, I LocIndex]() int {
	var v V
	var i I
	return int(unsafe.Sizeof(v) + unsafe.Sizeof(i))
}

// maxIndex is I's largest value.
func maxIndex[I LocIndex]() I {
	var z I
	m := int64(math.MaxInt64)
	if unsafe.Sizeof(z) == 4 {
		m = math.MaxInt32
	}
	return I(m)
}
