package window

import (
	"context"

	"github.com/gorma-hpc/gorma/collectives"
)

// Free frees the window: collective over its World. No epoch may be open. Once the
// World's Finalize has begun, Free does nothing and returns nil: Finalize released the
// window's memory, and Go runs a deferred Free after a Finalize that main calls (free
// before Finalize otherwise, as MPI requires: see the package example). Afterwards
// every call on the window fails with ErrFreed, and the keys of its memory stop working
// at every rank (the arena bytes are reused, never reachable through an old key). The
// slice Local returned dies here. Arena memory goes to the arena's quarantine, reused
// only when the arena has no other free space or the quarantine is full. Under
// GORMA_CHECK=1 it is made inaccessible in this process until then, so that a stale
// write faults. Free prints one line naming the window and its range on stderr for the
// fault to be traced. If the closing barrier fails (ctx ends while a peer has not
// called Free, or a peer failed), Free returns its error and keeps the window's memory
// allocated, since a peer still in an epoch may write it.
func (w *Win[T]) Free(ctx context.Context) error {
	const op = "free"
	if !w.freed.Load() && w.comm.Finalized() {
		w.freed.Store(true) // a second Free fails with ErrFreed, as before Finalize
		return nil
	}
	if err := w.usable(op, -1, -1); err != nil {
		return err
	}
	if w.locks > 0 || w.lockAll || w.pscw.active() {
		return werrf(op, -1, -1, ErrEpoch, "an access or exposure epoch is still open (Unlock, Complete or Wait first)")
	}
	if err := w.commRef.enter(ctx); err != nil {
		return werr(op, -1, -1, err)
	}
	seq := w.track.Next()
	w.track.BeginSig(w.freeSig, seq)
	defer w.track.End()
	err := w.retire(ctx, seq)
	w.commRef.leave()
	if !w.freed.Load() {
		return err // the window is as it was
	}
	// attr.go: the attributes' delete functions, which may make collective calls of
	// other windows (and so need the turn).
	w.attrs.deleteAll()
	if err != nil {
		// A peer may still be in an epoch on this window (ctx ended first). One on this
		// host writes our memory through its mapping, which no key revocation stops, so
		// the memory stays allocated rather than handed out again under its writes. A
		// failed Free leaks the window's memory.
		return err
	}
	desc, local := w.describe(), w.local
	w.releaseRegions()
	w.reportGuarded(desc, local)
	w.commRef.release()
	w.track.Close()
	return nil
}

// retire is the part of Free (call number seq) that communicates, in the World's turn:
// it checks the call, completes this rank's operations, marks the window freed, closes
// its peers' regions and waits in the closing barrier. A failure before the mark leaves
// the window usable.
func (w *Win[T]) retire(ctx context.Context, seq uint64) error {
	const op = "free"
	if err := w.track.Check(ctx, seq, w.freeSig); err != nil {
		return werr(op, -1, -1, err)
	}
	if err := w.flushAll(ctx, op); err != nil {
		return err
	}
	w.freed.Store(true)
	if w.fenceOn {
		w.ob.ends(epFence) // the last Fence did not assert NoSucceed
	}
	w.closeRemotes()
	// After the barrier nobody holds a pin on our regions: Free revokes at once.
	if err := collectives.Barrier(ctx, w.comm); err != nil {
		return werr(op, -1, -1, err)
	}
	return nil
}
