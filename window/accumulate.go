package window

import (
	"context"
	"encoding/binary"
	"fmt"
	"unsafe"

	"github.com/gorma-hpc/gorma/collectives"
	"github.com/gorma-hpc/gorma/internal/prof"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/substrate"
)

// Accumulate-type operations (Accumulate, GetAccumulate, FetchAndOp, CompareAndSwap) are
// element-wise atomic with respect to each other, from every origin and on every provider,
// because every one of them holds the target's accumulate word (metadata word mAcc: 0
// free, rank+1 of the holder) while it reads and writes the target's memory:
//
//   - mapped target (this host, arena memory; or this rank itself): the word is taken by a
//     CPU compare-and-swap on the target's mapped metadata, the operator runs directly on
//     the target's memory, and a release store of 0 (unlockAcc) frees the word;
//   - otherwise (another host, or user memory of a Create window reached by cross-memory
//     attach): the word is taken by a CPU compare-and-swap where the target's metadata is
//     mapped, else by a remote compare-and-swap. The read of a range of up to 64 KiB is
//     posted right behind it (lockAccRead: one round trip instead of two, the read wasted
//     when the word was held). The range is read by RDMA into a scratch buffer, computed,
//     and written back by RDMA. The word is released after the write (by a remote
//     compare-and-swap posted behind the write on the same connection, which the target
//     executes in order, or by a CPU store once the write has completed).
//
// Long transport-path operations are cut into chunks of accChunk bytes, each under the
// word on its own (MPI's atomicity is per element), so the scratch stays bounded.
//
// These calls take no context: waiting for the word (whose holder releases it within one
// operation) ends when it is free or when the target or the holder fails (failure
// detection: waitOn's check), never by a deadline.

// accChunk is the largest range (bytes) one transport-path read-modify-write covers.
var accChunk = 1 << 20

// rmw describes one accumulate-type operation on elements [disp, disp+n) of a target.
type rmw[T runtime.Elem] struct {
	name   string // the call, for errors
	op     collectives.Op[T]
	origin []T // the operand (len n), or nil for NoOp
	result []T // receives the old values (len n), or nil
	// FetchAndOp and CompareAndSwap: one element, operand x, old value returned in old;
	// CompareAndSwap (cas) swaps x in where the old value has compare's bits.
	single     bool
	cas        bool
	x, compare T
	old        T
}

func (w *dataPath[T]) Accumulate(origin []T, rank, disp int, op collectives.Op[T]) error {
	if t, m := w.accMapped(rank, disp, len(origin), op.Valid()); m != nil {
		if len(origin) == 1 {
			if !applyKind(m, origin[0], op.Kind()) {
				applyAny(m, origin[0], op, &t.acc.one)
			}
		} else {
			op.Apply(m, origin)
		}
		w.unlockAcc(t)
		return nil
	}
	a := rmw[T]{name: "accumulate", op: op, origin: origin}
	if w.ob != nil {
		c := w.ob.begin(prof.CallAccumulate)
		err := w.accumulate(&a, rank, disp, len(origin))
		w.ob.rma(c, rank, len(origin)*w.esize, -1, -1, err)
		return err
	}
	return w.accumulate(&a, rank, disp, len(origin))
}

func (w *dataPath[T]) GetAccumulate(origin, result []T, rank, disp int, op collectives.Op[T]) error {
	if w.ob != nil {
		c := w.ob.begin(prof.CallGetAccumulate)
		err := w.getAccumulate("get_accumulate", origin, result, rank, disp, op)
		w.ob.rma(c, rank, len(origin)*w.esize, len(result)*w.esize, -1, err)
		return err
	}
	return w.getAccumulate("get_accumulate", origin, result, rank, disp, op)
}

func (w *dataPath[T]) getAccumulate(name string, origin, result []T, rank, disp int, op collectives.Op[T]) error {
	if op.Kind() == collectives.OpNoOp {
		origin = nil
	} else if len(origin) != len(result) && op.Valid() {
		return werrf(name, rank, disp, ErrInvalid, "origin of %d elements, result of %d", len(origin), len(result))
	}
	if t, m := w.accMapped(rank, disp, len(result), op.Valid()); m != nil {
		copy(result, m)
		if origin != nil {
			op.Apply(m, origin)
		}
		w.unlockAcc(t)
		return nil
	}
	a := rmw[T]{name: name, op: op, origin: origin, result: result}
	return w.accumulate(&a, rank, disp, len(result))
}

// accMapped is the accumulate-type calls' fast path, in one call: a mapped target (as
// Put's fast path checks it) whose accumulate word one compare-and-swap takes, with
// valid set for a valid operator. It returns the target and the n elements at disp, the
// word held: the caller applies the operator and releases the word (unlockAcc).
// Otherwise it returns nil, nil and the call takes its checked path, which waits for a
// held word. Observed windows, windows with a page cache and race builds (rmwMapped)
// take the checked path. A call of no elements takes the word and changes nothing.
func (w *dataPath[T]) accMapped(rank, disp, n int, valid bool) (*target[T], []T) {
	if !valid || w.ob != nil || w.coh != nil || raceEnabled || uint(rank) >= uint(len(w.tg)) {
		return nil, nil
	}
	t := &w.tg[rank]
	m := t.memReady()
	if m == nil || t.open == 0 || uint(disp) > uint(len(m)) || uint(n) > uint(len(m)-disp) || !t.live(w.comm) ||
		t.mw == nil || !cas(t.mw, mAcc, 0, w.accID()) {
		return nil, nil
	}
	w.markFence(t)
	return t, m[disp : disp+n : disp+n]
}

// unlockAcc releases t's accumulate word, held through t's mapped metadata, with a
// plain release store. It rings no doorbell: a ring after a plain store could miss a
// sleeper (x86 lets the load of the sleepers word pass the store), so an origin that
// waits for the word never sleeps on the doorbell (lockAcc). The word is held for one
// operation.
func (w *dataPath[T]) unlockAcc(t *target[T]) { release(t.mw, mAcc, 0) }

// applyOne sets m[0] = m[0] op x: Sum, Replace and NoOp inline (applyKind), other
// operators through applyAny.
func applyOne[T runtime.Elem](m []T, x T, op collectives.Op[T], one *[1]T) {
	if !applyKind(m, x, op.Kind()) {
		applyAny(m, x, op, one)
	}
}

// applyAny sets m[0] = m[0] op x through Apply, with x in one: scratch that the
// accumulate word guards (a local array would escape to the heap through the operator's
// function value).
func applyAny[T runtime.Elem](m []T, x T, op collectives.Op[T], one *[1]T) {
	one[0] = x
	op.Apply(m[:1], one[:])
}

// applyKind sets m[0] = m[0] op x for the operators of kind k that need no call (Sum,
// Replace, NoOp), and reports whether k was one of them.
func applyKind[T runtime.Elem](m []T, x T, k collectives.OpKind) bool {
	switch k {
	case collectives.OpSum:
		m[0] += x
	case collectives.OpReplace:
		m[0] = x
	case collectives.OpNoOp:
	default:
		return false
	}
	return true
}

// accumulate checks a and runs it on n elements of rank's memory at disp.
func (w *dataPath[T]) accumulate(a *rmw[T], rank, disp, n int) error {
	s, err := w.access(a.name, rank, disp, n)
	if c, ok := err.(*errCross); ok { // dynamic.go: into the next attachment
		if a.single || c.k == 0 {
			return w.accumulate(a, rank, c.next, n)
		}
		lo, hi := *a, *a
		lo.origin, hi.origin = part(a.origin, 0, c.k), part(a.origin, c.k, n)
		lo.result, hi.result = part(a.result, 0, c.k), part(a.result, c.k, n)
		if err := w.accumulate(&lo, rank, disp, c.k); err != nil {
			return err
		}
		return w.accumulate(&hi, rank, c.next, n-c.k)
	}
	if err != nil {
		return err
	}
	if !a.cas && !a.op.Valid() {
		return werrf(a.name, rank, disp, ErrInvalid, "the zero Op (use collectives.Sum, NoOp, NewOp...)")
	}
	if n == 0 {
		return nil
	}
	if s.mem != nil && s.t.mw != nil {
		err = w.rmwMapped(s, a, n)
		if err == nil && w.coh != nil {
			w.coh.wroteMapped(s, n) // cache.go
		}
	} else {
		err = w.rmwRemote(s, a, n)
	}
	return werr(a.name, rank, disp, err)
}

// rmwMapped runs a on n elements of s's mapped memory under the accumulate word.
//
// In race builds it also holds t.acc.mu (before the word, as rmwRemote does). The word
// orders this rank's goroutines too, but it lives in mmap'd memory, whose atomics the race
// detector does not see. So it reported two goroutines' accumulates on one target as a
// race (on t.acc.one, and on the memory of a Create window targeting itself).
func (w *dataPath[T]) rmwMapped(s span[T], a *rmw[T], n int) error {
	t := s.t
	if raceEnabled {
		t.acc.mu.Lock()
		defer t.acc.mu.Unlock()
	}
	if err := w.lockAcc(t); err != nil {
		return err
	}
	defer w.unlockAcc(t)
	mem := s.mem[s.off : s.off+n]
	switch {
	case a.single:
		a.old = mem[0]
		if a.cas {
			if sameBits(mem[0], a.compare) {
				mem[0] = a.x
			}
			return nil
		}
		applyOne(mem, a.x, a.op, &t.acc.one)
	default:
		if a.result != nil {
			copy(a.result, mem)
		}
		if a.origin != nil {
			a.op.Apply(mem, a.origin)
		}
	}
	return nil
}

// rmwRemote runs a on n elements of s's region through the transport, chunk by chunk.
func (w *dataPath[T]) rmwRemote(s span[T], a *rmw[T], n int) error {
	if s.data == nil {
		return fmt.Errorf("internal: rank %d's memory is neither mapped with its metadata nor remote", s.t.rank)
	}
	st := &s.t.acc
	st.mu.Lock()
	defer st.mu.Unlock()
	w.accInit(s.t)
	chunk := max(1, accChunk/w.esize)
	if want := max(2, min(n, chunk)); len(st.buf) < want {
		st.buf = make([]T, want)
	}
	c := *a
	for done := 0; done < n; done += chunk {
		k := min(n-done, chunk)
		if a.origin != nil {
			c.origin = a.origin[done : done+k]
		}
		if a.result != nil {
			c.result = a.result[done : done+k]
		}
		if err := w.rmwChunk(s, &c, s.off+done, k); err != nil {
			return err
		}
	}
	a.old = c.old
	return nil
}

// accInit readies t's transport-path state. t.acc.mu is held.
func (w *dataPath[T]) accInit(t *target[T]) {
	if t.acc.ctr == nil {
		t.acc.ctr = substrate.NewCounter(w.comm)
	}
}

// rmwChunk runs a on k elements of s's region at element off, under the accumulate
// word. t.acc.mu is held.
func (w *dataPath[T]) rmwChunk(s span[T], a *rmw[T], off, k int) error {
	t := s.t
	st := &t.acc
	cur := st.buf[:k]
	boff := uint64(off * w.esize)
	got, err := w.lockAccRead(t, s, boff, cur)
	if err != nil {
		return err
	}
	if !got {
		if err := w.lockAcc(t); err != nil {
			return err
		}
		err := s.data.Read(st.ctr, boff, asBytes(cur))
		if err == nil {
			err = st.ctr.Wait(context.Background())
		}
		if err != nil {
			return w.abandonAcc(t, err)
		}
	}
	write := a.origin != nil && a.op.Kind() != collectives.OpNoOp
	switch {
	case a.single && a.cas:
		a.old = cur[0]
		write = sameBits(cur[0], a.compare)
		cur[0] = a.x
	case a.single:
		a.old = cur[0]
		st.buf[1] = a.x
		a.op.Apply(cur, st.buf[1:2])
		write = a.op.Kind() != collectives.OpNoOp
	default:
		if a.result != nil {
			copy(a.result, cur)
		}
		if write {
			a.op.Apply(cur, a.origin)
		}
	}
	if write {
		if err := s.data.Write(st.ctr, boff, asBytes(cur)); err != nil {
			return w.abandonAcc(t, err)
		}
	}
	if err := w.unlockAccRemote(t); err != nil {
		return err
	}
	if write {
		w.wroteRemote(s, boff, k*w.esize)
	}
	return nil
}

// abandonAcc gives up an operation that failed holding t's accumulate word: the word
// is released if the target can still be reached, and err is returned.
func (w *dataPath[T]) abandonAcc(t *target[T], err error) error {
	w.unlockAccRemote(t)
	return err
}

// accID is this rank's value in an accumulate word it holds.
func (w *house[T]) accID() uint64 { return uint64(w.rank) + 1 }

// lockAcc takes t's accumulate word: by CPU atomics where t's metadata is mapped, else by
// remote compare-and-swap (t.acc.mu held). It waits while another origin holds it, until
// the target or the holder fails.
func (w *dataPath[T]) lockAcc(t *target[T]) error {
	me := w.accID()
	if mw := t.mw; mw != nil {
		if cas(mw, mAcc, 0, me) {
			return nil
		}
		return w.waitOn(context.Background(), blocked{w.track, "window.Accumulate", 0, nil}, nil,
			func() bool { return load(mw, mAcc) == 0 && cas(mw, mAcc, 0, me) },
			func() error { return w.holderErr(t, load(mw, mAcc)) })
	}
	var holder uint64
	var err error
	ready := func() bool {
		holder, err = w.accCAS(t, 0, me)
		return err != nil || holder == 0
	}
	if perr := w.waitOn(context.Background(), blocked{w.track, "window.Accumulate", 0, nil}, nil, ready, func() error { return w.holderErr(t, holder) }); perr != nil {
		return perr
	}
	return err
}

// lockAccRead tries once to take t's accumulate word by remote compare-and-swap and to
// read the range at boff into cur, in one round trip. The read is posted behind the
// compare-and-swap on the same connection, so the target runs it after, under the word
// when the swap succeeded. It reports whether it took the word (cur then holds the range).
// It does not try where t's metadata is mapped (a CPU compare-and-swap costs nothing
// there) or for a range over accPipelined bytes (a failed try would have read it for
// nothing). The caller then takes the word and reads as usual. On an error the word is
// released if it was taken. t.acc.mu is held.
//
// Why. Without it an accumulate-type operation over tcp takes three round trips (take the
// word, read, write and release); with the first two in one it takes two. Over loopback
// the system calls at both ends, not the wire, make most of a round trip, so the gain is
// small there (`golaunch -n 2 --transport tcp bin/rmabench --test fop_lat` measures it);
// on a network whose round trip is longer, a whole one is saved.
func (w *dataPath[T]) lockAccRead(t *target[T], s span[T], boff uint64, cur []T) (bool, error) {
	if t.mw != nil || len(cur)*w.esize > accPipelined {
		return false, nil
	}
	st := &t.acc
	err := t.meta.CmpSwap(st.ctr, uint64(mAcc*wordLen), 0, w.accID(), st.res[:])
	if err != nil {
		return false, err
	}
	err = s.data.Read(st.ctr, boff, asBytes(cur))
	if werr := st.ctr.Wait(context.Background()); err == nil {
		err = werr
	}
	if err != nil {
		return false, w.abandonAcc(t, err)
	}
	return binary.NativeEndian.Uint64(st.res[:]) == 0, nil
}

// accPipelined is the largest range (bytes) whose read lockAccRead posts with its try.
const accPipelined = 64 << 10

// unlockAccRemote releases t's accumulate word after this rank's transport-path
// requests to t: by a CPU store once they have completed where t's metadata is mapped,
// else by a remote compare-and-swap (this rank's id to 0) posted behind them on the same
// connection, which the target executes after them. t.acc.mu is held.
func (w *dataPath[T]) unlockAccRemote(t *target[T]) error {
	st := &t.acc
	if t.mw != nil {
		err := st.ctr.Wait(context.Background())
		w.unlockAcc(t)
		return err
	}
	err := t.meta.CmpSwap(st.ctr, uint64(mAcc*wordLen), w.accID(), 0, st.res[:])
	if werr := st.ctr.Wait(context.Background()); err == nil {
		err = werr
	}
	if err != nil {
		return err
	}
	if old := binary.NativeEndian.Uint64(st.res[:]); old != w.accID() {
		return fmt.Errorf("internal: rank %d's accumulate word held by id %d at this rank's release", t.rank, old)
	}
	return nil
}

// accCAS runs a compare-and-swap on t's accumulate word and waits for it.
func (w *dataPath[T]) accCAS(t *target[T], old, new uint64) (uint64, error) {
	st := &t.acc
	if err := t.meta.CmpSwap(st.ctr, uint64(mAcc*wordLen), old, new, st.res[:]); err != nil {
		return 0, err
	}
	if err := st.ctr.Wait(context.Background()); err != nil {
		return 0, err
	}
	return binary.NativeEndian.Uint64(st.res[:]), nil
}

// holderErr returns the failure of t, or of the rank whose id (rank+1) holder is, or nil.
func (w *dataPath[T]) holderErr(t *target[T], holder uint64) error {
	if err := w.targetErr(t); err != nil {
		return err
	}
	if holder == 0 || holder > uint64(w.size) || int(holder-1) == w.rank {
		return nil
	}
	h := &w.tg[holder-1]
	if err := w.reach(h); err != nil {
		return err
	}
	return w.targetErr(h)
}

// part returns s[lo:hi], or nil for a nil s (an operand the operation does not have).
func part[T any](s []T, lo, hi int) []T {
	if s == nil {
		return nil
	}
	return s[lo:hi]
}

func (w *dataPath[T]) FetchAndOp(origin T, result *T, rank, disp int, op collectives.Op[T]) error {
	const name = "fetch_and_op"
	if result == nil {
		return werrf(name, rank, disp, ErrInvalid, "nil result")
	}
	if t, m := w.accMapped(rank, disp, 1, op.Valid()); m != nil {
		old := m[0]
		if !applyKind(m, origin, op.Kind()) {
			applyAny(m, origin, op, &t.acc.one)
		}
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

func (w *dataPath[T]) CompareAndSwap(origin, compare T, result *T, rank, disp int) error {
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
