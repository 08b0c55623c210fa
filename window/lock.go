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

func (w *epochs[T]) Lock(ctx context.Context, lt LockType, rank int, assert Assert) error {
	if w.ob != nil {
		return w.ob.sync(prof.CallLock, -1, rank, func() error { return w.lock(ctx, lt, rank, assert) })
	}
	return w.lock(ctx, lt, rank, assert)
}

func (w *epochs[T]) lock(ctx context.Context, lt LockType, rank int, assert Assert) error {
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

func (w *epochs[T]) Unlock(ctx context.Context, rank int) error {
	if w.ob != nil {
		return w.ob.sync(prof.CallUnlock, -1, rank, func() error { return w.unlock(ctx, rank) })
	}
	return w.unlock(ctx, rank)
}

func (w *epochs[T]) unlock(ctx context.Context, rank int) error {
	const op = "unlock"
	t, err := w.syncTarget(op, rank)
	if err != nil {
		return err
	}
	if t.lock == 0 || w.lockAll {
		return werrf(op, rank, -1, ErrEpoch, "rank %d is not locked by this rank (Lock, or UnlockAll for LockAll)", rank)
	}
	ferr := w.dp.flush(ctx, t, op)
	if ferr == nil && rank == w.rank {
		ferr = werr(op, rank, -1, w.coh.ownerSync(ctx))
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

func (w *epochs[T]) LockAll(ctx context.Context, assert Assert) error {
	if w.ob != nil {
		return w.ob.sync(prof.CallLock, lLockAll, -1, func() error { return w.lockEvery(ctx, assert) })
	}
	return w.lockEvery(ctx, assert)
}

func (w *epochs[T]) lockEvery(ctx context.Context, assert Assert) error {
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

func (w *epochs[T]) UnlockAll(ctx context.Context) error {
	if w.ob != nil {
		return w.ob.sync(prof.CallUnlock, lUnlockAll, -1, func() error { return w.unlockEvery(ctx) })
	}
	return w.unlockEvery(ctx)
}

func (w *epochs[T]) unlockEvery(ctx context.Context) error {
	const op = "unlock_all"
	if err := w.usable(op, -1, -1); err != nil {
		return err
	}
	if !w.lockAll {
		return werrf(op, -1, -1, ErrEpoch, "no LockAll epoch is open")
	}
	first := w.dp.flushAll(ctx, op)
	if first == nil {
		first = werr(op, w.rank, -1, w.coh.ownerSync(ctx))
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
func (w *epochs[T]) syncTarget(op string, rank int) (*target[T], error) {
	if err := w.usable(op, rank, -1); err != nil {
		return nil, err
	}
	if uint(rank) >= uint(w.size) {
		return nil, werrf(op, rank, -1, ErrInvalid, "rank %d of a window of %d ranks", rank, w.size)
	}
	return &w.tg[rank], nil
}

// acquire takes t's lock word.
func (w *epochs[T]) acquire(ctx context.Context, t *target[T], lt LockType) error {
	if err := w.reach(t); err != nil {
		return err
	}
	if t.mw != nil {
		return w.acquireMapped(ctx, t, lt)
	}
	return w.acquireRemote(ctx, t, lt)
}

func (w *epochs[T]) acquireMapped(ctx context.Context, t *target[T], lt LockType) error {
	mw := t.mw
	if lt == Exclusive && cas(mw, mLock, 0, lockExcl) {
		return nil // uncontended: one CAS
	}
	check := func() error { return w.targetErr(t) }
	if lt == Exclusive {
		return w.waitOn(ctx, blocked{w.track, "window.Lock", 0, nil}, mw, func() bool { return load(mw, mLock) == 0 && cas(mw, mLock, 0, lockExcl) }, check)
	}
	return w.waitOn(ctx, blocked{w.track, "window.Lock", 0, nil}, mw, func() bool {
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

func (w *epochs[T]) acquireRemote(ctx context.Context, t *target[T], lt LockType) error {
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
	if perr := w.waitOn(ctx, blocked{w.track, "window.Lock", 0, nil}, nil, ready, nil); perr != nil {
		return perr
	}
	return err
}

// release gives back the lock state held on t.
func (w *epochs[T]) release(ctx context.Context, t *target[T], state uint8) error {
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
func (w *epochs[T]) remoteAdd(ctx context.Context, t *target[T], i int, v uint64) (uint64, error) {
	if err := t.meta.FetchAdd(t.ctr, uint64(i*wordLen), v, t.res[:8]); err != nil {
		return 0, err
	}
	if err := t.ctr.Wait(ctx); err != nil {
		return 0, err
	}
	return binary.NativeEndian.Uint64(t.res[:8]), nil
}

// remoteCAS runs a compare-and-swap on metadata word i of t and waits for it.
func (w *epochs[T]) remoteCAS(ctx context.Context, t *target[T], i int, old, new uint64) (uint64, error) {
	if err := t.meta.CmpSwap(t.ctr, uint64(i*wordLen), old, new, t.res[:8]); err != nil {
		return 0, err
	}
	if err := t.ctr.Wait(ctx); err != nil {
		return 0, err
	}
	return binary.NativeEndian.Uint64(t.res[:8]), nil
}

func (w *epochs[T]) Flush(ctx context.Context, rank int) error {
	if w.ob != nil {
		return w.ob.sync(prof.CallFlush, -1, rank, func() error { return w.flushChecked(ctx, rank) })
	}
	if uint(rank) < uint(len(w.tg)) {
		// Nothing outstanding (always the case for mapped ranks): one check per kind.
		if t := &w.tg[rank]; t.lock != 0 && !t.pend.Load() && w.dp.reqs.n.Load() == 0 && !t.gone() {
			return nil
		}
	}
	return w.flushChecked(ctx, rank)
}

// flushChecked is Flush without its fast path, which it agrees with.
func (w *epochs[T]) flushChecked(ctx context.Context, rank int) error {
	const op = "flush"
	t, err := w.syncTarget(op, rank)
	if err != nil {
		return err
	}
	if t.lock == 0 {
		return werrf(op, rank, -1, ErrEpoch, "Flush outside a passive-target epoch on rank %d", rank)
	}
	return w.dp.flush(ctx, t, op)
}

func (w *epochs[T]) FlushAll(ctx context.Context) error {
	if w.ob != nil {
		return w.ob.sync(prof.CallFlush, lFlushAll, -1, func() error { return w.flushEvery(ctx) })
	}
	return w.flushEvery(ctx)
}

func (w *epochs[T]) flushEvery(ctx context.Context) error {
	const op = "flush_all"
	if err := w.usable(op, -1, -1); err != nil {
		return err
	}
	if w.locks == 0 && !w.lockAll {
		return werrf(op, -1, -1, ErrEpoch, "FlushAll outside a passive-target epoch")
	}
	return w.dp.flushAll(ctx, op)
}

func (w *epochs[T]) Sync(ctx context.Context) error {
	const op = "sync"
	if err := w.usable(op, -1, -1); err != nil {
		return err
	}
	return werr(op, w.rank, -1, w.coh.ownerSync(ctx))
}
