package window

import (
	"unsafe"

	"github.com/gorma-hpc/gorma/collectives"
	"github.com/gorma-hpc/gorma/internal/prof"
)

// FetchAndOp stores the element of rank's window memory at disp into *result and
// combines origin into it, as one atomic step (MPI_Fetch_and_op): *result = target[disp];
// target[disp] = target[disp] op origin. With collectives.NoOp it is an atomic read
// (origin is ignored). It is atomic with respect to every accumulate-type operation of
// every rank (see Accumulate). A nil result or the zero Op fails with ErrInvalid.
//
// Completion: *result holds the old value when FetchAndOp returns (MPI promises it only
// after a flush; here it is valid at once) and is set only on success; the target is
// updated as by Accumulate. No buffer is retained.
func (w *Win[T]) FetchAndOp(origin T, result *T, rank, disp int, op collectives.Op[T]) error {
	const name = "fetch_and_op"
	if result == nil {
		return werrf(name, rank, disp, ErrInvalid, "nil result")
	}
	if t, m := w.accMapped(rank, disp, 1, op.Valid()); m != nil {
		old := m[0]
		applyOne(m, origin, op, &t.acc.one)
		w.unlockAcc(t)
		*result = old
		return nil
	}
	a := rmw[T]{name: name, op: op, single: true, x: origin}
	if w.ob != nil {
		c := w.ob.begin(prof.CallFetchAndOp)
		err := w.accumulate(&a, rank, disp, 1)
		w.ob.rma(c, rank, w.esize, w.esize, -1, err)
		if err != nil {
			return err
		}
	} else if err := w.accumulate(&a, rank, disp, 1); err != nil {
		return err
	}
	*result = a.old
	return nil
}

// CompareAndSwap replaces the element of rank's window memory at disp by origin if it
// equals compare, and stores the element's old value into *result, as one atomic step
// (MPI_Compare_and_swap). Equality is bitwise (for floating-point types: a NaN matches a
// NaN of the same bits, and -0 does not match +0), so that a word used as a lock compares
// as it was stored. It is atomic with respect to every accumulate-type operation of every
// rank (see Accumulate). A nil result fails with ErrInvalid.
//
// Completion: *result holds the old value when CompareAndSwap returns (valid at once, MPI
// promises it only after a flush) and is set only on success; the swap is complete at the
// target as an Accumulate's update is. No buffer is retained.
func (w *Win[T]) CompareAndSwap(origin, compare T, result *T, rank, disp int) error {
	const name = "compare_and_swap"
	if result == nil {
		return werrf(name, rank, disp, ErrInvalid, "nil result")
	}
	if t, m := w.accMapped(rank, disp, 1, true); m != nil {
		old := m[0]
		if sameBits(old, compare) {
			m[0] = origin
		}
		w.unlockAcc(t)
		*result = old
		return nil
	}
	a := rmw[T]{name: name, single: true, cas: true, x: origin, compare: compare}
	if w.ob != nil {
		c := w.ob.begin(prof.CallCompareAndSwap)
		err := w.accumulate(&a, rank, disp, 1)
		w.ob.rma(c, rank, w.esize, w.esize, -1, err) // the operand out, the old value back
		if err != nil {
			return err
		}
	} else if err := w.accumulate(&a, rank, disp, 1); err != nil {
		return err
	}
	*result = a.old
	return nil
}

// sameBits reports whether a and b have the same bytes.
func sameBits[T any](a, b T) bool {
	pa, pb := unsafe.Pointer(&a), unsafe.Pointer(&b)
	switch unsafe.Sizeof(a) {
	case 1:
		return *(*uint8)(pa) == *(*uint8)(pb)
	case 2:
		return *(*uint16)(pa) == *(*uint16)(pb)
	case 4:
		return *(*uint32)(pa) == *(*uint32)(pb)
	case 8:
		return *(*uint64)(pa) == *(*uint64)(pb)
	case 16:
		qa, qb := (*[2]uint64)(pa), (*[2]uint64)(pb)
		return qa[0] == qb[0] && qa[1] == qb[1]
	}
	return unsafe.String((*byte)(pa), unsafe.Sizeof(a)) == unsafe.String((*byte)(pb), unsafe.Sizeof(b))
}
