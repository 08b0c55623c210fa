package window

import (
	"context"
	"encoding/binary"

	"github.com/gorma-hpc/gorma/internal/prof"
)

// LockType is the kind of a passive-target lock.
type LockType uint8

// Lock types.
const (
	Exclusive LockType = iota + 1 // one holder; excludes every other lock on the rank
	Shared                        // any number of shared holders
)

const (
	lockShared uint8 = iota + 1
	lockExclHeld
	lockNoCheck
)

// Lock opens a passive-target access epoch to rank: it acquires rank's lock word (in the
// rank's metadata, by CPU atomics on a mapped rank and by remote atomics otherwise, so
// the target's code never runs) unless assert has NoCheck. A rank may hold locks on
// several ranks at once, but one on each.
func (w *Win[T]) Lock(ctx context.Context, lt LockType, rank int, assert Assert) error {
	if w.ob != nil {
		return w.ob.sync(prof.CallLock, -1, rank, func() error { return w.lock(ctx, lt, rank, assert) })
	}
	return w.lock(ctx, lt, rank, assert)
}

func (w *Win[T]) lock(ctx context.Context, lt LockType, rank int, assert Assert) error {
	const op = "lock"
	t, err := w.syncTarget(op, rank)
	if err != nil {
		return err
	}
	if lt != Exclusive && lt != Shared {
		return werrf(op, rank, -1, ErrInvalid, "lock type %d", lt)
	}
	if t.lock != 0 || w.lockAll {
		return werrf(op, rank, -1, ErrEpoch, "rank %d is already locked by this rank", rank)
	}
	if w.pscw.active() {
		return werrf(op, rank, -1, ErrEpoch, "Lock inside a PSCW epoch (Complete and Wait first)")
	}
	if err := w.fenceGiveWay(op, rank); err != nil {
		return err
	}
	state := lockNoCheck
	if assert&NoCheck == 0 {
		if err := w.acquire(ctx, t, lt); err != nil {
			return werr(op, rank, -1, err)
		}
		state = lockShared
		if lt == Exclusive {
			state = lockExclHeld
		}
	}
	t.lock = state
	t.open |= openLock
	w.locks++
	w.ob.lockBegins(rank)
	return nil
}

// Unlock completes every operation of this rank to rank (at the target: a later Get of
// any rank sees it) and releases the lock.
func (w *Win[T]) Unlock(ctx context.Context, rank int) error {
	if w.ob != nil {
		return w.ob.sync(prof.CallUnlock, -1, rank, func() error { return w.unlock(ctx, rank) })
	}
	return w.unlock(ctx, rank)
}

func (w *Win[T]) unlock(ctx context.Context, rank int) error {
	const op = "unlock"
	t, err := w.syncTarget(op, rank)
	if err != nil {
		return err
	}
	if t.lock == 0 || w.lockAll {
		return werrf(op, rank, -1, ErrEpoch, "rank %d is not locked by this rank (Lock, or UnlockAll for LockAll)", rank)
	}
	ferr := w.flush(ctx, t, op)
	if ferr == nil && rank == w.rank {
		ferr = werr(op, rank, -1, w.ownerSync(ctx))
	}
	rerr := w.release(ctx, t, t.lock)
	t.lock = 0
	t.open &^= openLock
	w.locks--
	w.ob.lockEnds(rank)
	if ferr != nil {
		return ferr
	}
	return werr(op, rank, -1, rerr)
}

// LockAll opens a shared passive-target epoch to every rank (MPI_Win_lock_all).
func (w *Win[T]) LockAll(ctx context.Context, assert Assert) error {
	if w.ob != nil {
		return w.ob.sync(prof.CallLock, lLockAll, -1, func() error { return w.lockEvery(ctx, assert) })
	}
	return w.lockEvery(ctx, assert)
}

func (w *Win[T]) lockEvery(ctx context.Context, assert Assert) error {
	const op = "lock_all"
	if err := w.usable(op, -1, -1); err != nil {
		return err
	}
	if w.lockAll || w.locks > 0 {
		return werrf(op, -1, -1, ErrEpoch, "a passive-target epoch is already open")
	}
	if w.pscw.active() {
		return werrf(op, -1, -1, ErrEpoch, "LockAll inside a PSCW epoch (Complete and Wait first)")
	}
	if err := w.fenceGiveWay(op, -1); err != nil {
		return err
	}
	state := lockNoCheck
	if assert&NoCheck == 0 {
		state = lockShared
	}
	for r := range w.tg {
		t := &w.tg[r]
		if state == lockShared {
			if err := w.acquire(ctx, t, Shared); err != nil {
				for q := 0; q < r; q++ {
					w.release(ctx, &w.tg[q], lockShared)
					w.tg[q].lock, w.tg[q].open = 0, w.tg[q].open&^openLock
				}
				return werr(op, r, -1, err)
			}
		}
		t.lock = state
		t.open |= openLock
	}
	w.lockAll = true
	w.ob.begins(epLockAll)
	return nil
}

// UnlockAll completes every operation of this rank and releases the locks of LockAll.
func (w *Win[T]) UnlockAll(ctx context.Context) error {
	if w.ob != nil {
		return w.ob.sync(prof.CallUnlock, lUnlockAll, -1, func() error { return w.unlockEvery(ctx) })
	}
	return w.unlockEvery(ctx)
}

func (w *Win[T]) unlockEvery(ctx context.Context) error {
	const op = "unlock_all"
	if err := w.usable(op, -1, -1); err != nil {
		return err
	}
	if !w.lockAll {
		return werrf(op, -1, -1, ErrEpoch, "no LockAll epoch is open")
	}
	first := w.flushAll(ctx, op)
	if first == nil {
		first = werr(op, w.rank, -1, w.ownerSync(ctx))
	}
	for r := range w.tg {
		t := &w.tg[r]
		if err := w.release(ctx, t, t.lock); err != nil && first == nil {
			first = werr(op, r, -1, err)
		}
		t.lock = 0
		t.open &^= openLock
	}
	w.lockAll = false
	w.ob.ends(epLockAll)
	return first
}

// syncTarget checks a synchronization call naming rank.
func (w *Win[T]) syncTarget(op string, rank int) (*target[T], error) {
	if err := w.usable(op, rank, -1); err != nil {
		return nil, err
	}
	if uint(rank) >= uint(w.size) {
		return nil, werrf(op, rank, -1, ErrInvalid, "rank %d of a window of %d ranks", rank, w.size)
	}
	return &w.tg[rank], nil
}

// acquire takes t's lock word.
func (w *Win[T]) acquire(ctx context.Context, t *target[T], lt LockType) error {
	if err := w.reach(t); err != nil {
		return err
	}
	if t.mw != nil {
		return w.acquireMapped(ctx, t, lt)
	}
	return w.acquireRemote(ctx, t, lt)
}

func (w *Win[T]) acquireMapped(ctx context.Context, t *target[T], lt LockType) error {
	mw := t.mw
	if lt == Exclusive && cas(mw, mLock, 0, lockExcl) {
		return nil // uncontended: one CAS
	}
	check := func() error { return w.targetErr(t) }
	if lt == Exclusive {
		return waitOn(ctx, blocked{w.track, "window.Lock", 0, nil}, w.comm, mw, func() bool { return load(mw, mLock) == 0 && cas(mw, mLock, 0, lockExcl) }, check)
	}
	return waitOn(ctx, blocked{w.track, "window.Lock", 0, nil}, w.comm, mw, func() bool {
		if load(mw, mLock)&lockExcl != 0 {
			return false
		}
		if add(mw, mLock, 1)&lockExcl == 0 {
			return true
		}
		add(mw, mLock, ^uint64(0)) // an exclusive holder got in first: back out
		return false
	}, check)
}

func (w *Win[T]) acquireRemote(ctx context.Context, t *target[T], lt LockType) error {
	var err error
	ready := func() bool {
		var old uint64
		if lt == Exclusive {
			old, err = w.remoteCAS(ctx, t, mLock, 0, lockExcl)
			return err != nil || old == 0
		}
		old, err = w.remoteAdd(ctx, t, mLock, 1)
		if err != nil || old&lockExcl == 0 {
			return true
		}
		_, err = w.remoteAdd(ctx, t, mLock, ^uint64(0))
		return err != nil
	}
	if perr := waitOn(ctx, blocked{w.track, "window.Lock", 0, nil}, w.comm, nil, ready, nil); perr != nil {
		return perr
	}
	return err
}

// release gives back the lock state held on t.
func (w *Win[T]) release(ctx context.Context, t *target[T], state uint8) error {
	var delta uint64
	switch state {
	case lockShared:
		delta = ^uint64(0)
	case lockExclHeld:
		delta = ^lockExcl + 1
	default:
		return nil
	}
	if t.mw != nil {
		add(t.mw, mLock, delta)
		ring(t.mw) // a waiting origin may sleep on the target's doorbell (acquireMapped)
		return nil
	}
	_, err := w.remoteAdd(ctx, t, mLock, delta)
	return err
}

// remoteAdd runs a fetch-and-add on metadata word i of t and waits for it.
func (w *Win[T]) remoteAdd(ctx context.Context, t *target[T], i int, v uint64) (uint64, error) {
	if err := t.meta.FetchAdd(t.ctr, uint64(i*wordLen), v, t.res[:8]); err != nil {
		return 0, err
	}
	if err := t.ctr.Wait(ctx); err != nil {
		return 0, err
	}
	return binary.NativeEndian.Uint64(t.res[:8]), nil
}

// remoteCAS runs a compare-and-swap on metadata word i of t and waits for it.
func (w *Win[T]) remoteCAS(ctx context.Context, t *target[T], i int, old, new uint64) (uint64, error) {
	if err := t.meta.CmpSwap(t.ctr, uint64(i*wordLen), old, new, t.res[:8]); err != nil {
		return 0, err
	}
	if err := t.ctr.Wait(ctx); err != nil {
		return 0, err
	}
	return binary.NativeEndian.Uint64(t.res[:8]), nil
}

// targetErr returns the error of t's failed rank, or nil.
// gone reports, in atomic loads, that t's rank is reached and known to have failed.
func (t *target[T]) gone() bool { return t.ready.Load() && t.meta != nil && t.meta.Gone() }

func (w *Win[T]) targetErr(t *target[T]) error {
	if !t.ready.Load() || t.meta == nil {
		return nil
	}
	return t.meta.Err()
}

// Flush completes every operation of this rank to rank, at the origin and at the target.
// It is valid in a passive-target epoch (Lock or LockAll).
func (w *Win[T]) Flush(ctx context.Context, rank int) error {
	if w.ob != nil {
		return w.ob.sync(prof.CallFlush, -1, rank, func() error { return w.flushChecked(ctx, rank) })
	}
	if uint(rank) < uint(len(w.tg)) {
		// Nothing outstanding (always the case for mapped ranks): one check per kind.
		if t := &w.tg[rank]; t.lock != 0 && !t.pend.Load() && w.reqs.n.Load() == 0 && !t.gone() {
			return nil
		}
	}
	return w.flushChecked(ctx, rank)
}

// flushChecked is Flush without its fast path, which it agrees with.
func (w *Win[T]) flushChecked(ctx context.Context, rank int) error {
	const op = "flush"
	t, err := w.syncTarget(op, rank)
	if err != nil {
		return err
	}
	if t.lock == 0 {
		return werrf(op, rank, -1, ErrEpoch, "Flush outside a passive-target epoch on rank %d", rank)
	}
	return w.flush(ctx, t, op)
}

// FlushAll is Flush for every rank.
func (w *Win[T]) FlushAll(ctx context.Context) error {
	if w.ob != nil {
		return w.ob.sync(prof.CallFlush, lFlushAll, -1, func() error { return w.flushEvery(ctx) })
	}
	return w.flushEvery(ctx)
}

func (w *Win[T]) flushEvery(ctx context.Context) error {
	const op = "flush_all"
	if err := w.usable(op, -1, -1); err != nil {
		return err
	}
	if w.locks == 0 && !w.lockAll {
		return werrf(op, -1, -1, ErrEpoch, "FlushAll outside a passive-target epoch")
	}
	return w.flushAll(ctx, op)
}

// FlushLocal completes every operation of this rank to rank at the origin: its buffers
// may be reused. gorma's transport path holds origin buffers until the target has
// completed the operation, so FlushLocal is Flush.
func (w *Win[T]) FlushLocal(ctx context.Context, rank int) error { return w.Flush(ctx, rank) }

// FlushLocalAll is FlushLocal for every rank.
func (w *Win[T]) FlushLocalAll(ctx context.Context) error { return w.FlushAll(ctx) }

// Sync makes this rank's own stores to its window memory visible to Gets of other ranks,
// cached copies included (MPI_Win_sync in the unified model).
func (w *Win[T]) Sync(ctx context.Context) error {
	const op = "sync"
	if err := w.usable(op, -1, -1); err != nil {
		return err
	}
	return werr(op, w.rank, -1, w.ownerSync(ctx))
}

// flush completes the transport-path operations to t and their coherence work.
func (w *Win[T]) flush(ctx context.Context, t *target[T], op string) error {
	if err := w.flushRequests(ctx, t); err != nil { // request.go
		return werr(op, t.rank, -1, err)
	}
	if t.ctr == nil || !t.pend.Load() {
		// Mapped targets complete every operation in the call; a target known to have
		// failed fails the call that would complete them (ErrProcFailed, naming it). The
		// check of a live target is Flush's: atomic loads (gone), no lock.
		if !t.gone() {
			return nil
		}
		return werr(op, t.rank, -1, w.targetErr(t))
	}
	t.pend.Store(false)
	w.mu.Lock()
	dirty := t.dirty
	t.dirty = false
	w.mu.Unlock()
	// The writes' coherence work (cache.go: a fetch-and-add and a read at the target) goes
	// out before the wait for the operations, not after it: work requests to one rank
	// execute in the order they were posted. So the target runs it after the writes, as
	// the protocol needs, and one round trip carries both. Waiting for the writes first
	// made a Put + Flush to a rank over tcp two round trips.
	var cerr error
	if dirty {
		cerr = w.completeWrites(ctx, t)
	}
	if err := t.ctr.Wait(ctx); err != nil {
		return werr(op, t.rank, -1, err) // the operations' own error comes first
	}
	if cerr != nil {
		return werr(op, t.rank, -1, cerr)
	}
	return nil
}

func (w *Win[T]) flushAll(ctx context.Context, op string) error {
	for r := range w.tg {
		if err := w.flush(ctx, &w.tg[r], op); err != nil {
			return err
		}
	}
	return nil
}
