package window

import (
	"context"

	"github.com/gorma-hpc/gorma/collectives"
	"github.com/gorma-hpc/gorma/internal/prof"
	"github.com/gorma-hpc/gorma/runtime/substrate"
)

// Assert is a set of MPI assertions about an epoch, hints the window may use.
type Assert uint32

// Assertions (MPI_MODE_*).
const (
	NoCheck   Assert = 1 << iota // Lock: no other rank holds or asks for a conflicting lock: skip the lock word
	NoStore                      // Fence, Post: the local window was not stored to since the last synchronization
	NoPut                        // Fence, Post: the local window will not be written by Put or Accumulate until the next synchronization
	NoPrecede                    // Fence: no RMA call of this rank precedes the fence
	NoSucceed                    // Fence: no RMA call of this rank follows the fence: it closes the epoch
)

func (w *epochs[T]) Fence(ctx context.Context, assert Assert) error {
	if w.ob != nil {
		return w.ob.sync(prof.CallFence, -1, -1, func() error { return w.fence(ctx, assert) })
	}
	return w.fence(ctx, assert)
}

func (w *epochs[T]) fence(ctx context.Context, assert Assert) error {
	const op = "fence"
	if !w.flags { // a Barrier on the window's World, in its turn (comm.go)
		if err := w.commRef.enter(ctx); err != nil {
			return werr(op, -1, -1, err)
		}
		defer w.commRef.leave()
	}
	seq := w.track.Next()
	if err := w.usable(op, -1, -1); err != nil {
		return err
	}
	if w.locks > 0 || w.lockAll {
		return werrf(op, -1, -1, ErrEpoch, "Fence inside a passive-target epoch (Unlock first)")
	}
	if w.pscw.active() {
		return werrf(op, -1, -1, ErrEpoch, "Fence inside a PSCW epoch (Complete and Wait first)")
	}
	if substrate.CallCheck() {
		w.track.BeginSig(w.fenceSig, seq)
		err := w.track.Check(ctx, seq, w.fenceSig)
		w.track.End()
		if err != nil {
			return werr(op, -1, -1, err)
		}
	}
	if err := w.dp.flushAll(ctx, op); err != nil {
		return err
	}
	if assert&NoStore == 0 {
		if err := w.coh.ownerSync(ctx); err != nil { // cache.go
			return werr(op, -1, -1, err)
		}
	}
	if err := w.barrier(ctx, blocked{w.track, "window.Fence", seq, w.fenceSig}); err != nil {
		return werr(op, -1, -1, err)
	}
	preceded := w.fenceUsed.Load()
	w.fenceUsed.Store(false)
	if w.fenceOn {
		w.ob.ends(epFence)
	}
	w.fenceOn = assert&NoSucceed == 0
	if w.fenceOn {
		w.ob.begins(epFence)
	}
	for r := range w.tg {
		if w.fenceOn {
			w.tg[r].open |= openFence
		} else {
			w.tg[r].open &^= openFence
		}
	}
	if assert&NoPrecede != 0 && preceded {
		return werrf(op, -1, -1, ErrEpoch, "NoPrecede asserted, but RMA calls of this rank preceded the Fence (it completed them)")
	}
	return nil
}

// fenceGiveWay lets a Lock, LockAll, Post or Start (op) follow a Fence. A Fence starts
// an epoch only if RMA calls and another Fence follow it (MPI 12.5.1): when no RMA call
// of this rank followed the last Fence, its epoch ends here; when some did, op fails
// with ErrEpoch.
func (w *epochs[T]) fenceGiveWay(op string, rank int) error {
	if !w.fenceOn {
		return nil
	}
	if w.fenceUsed.Load() {
		return werrf(op, rank, -1, ErrEpoch, "%s inside a Fence epoch that RMA calls of this rank used (end it with a Fence first)", op)
	}
	w.fenceOn = false
	w.ob.ends(epFence)
	for r := range w.tg {
		w.tg[r].open &^= openFence
	}
	return nil
}

// barrier synchronizes every rank of the window. When every rank maps every other's
// metadata, it goes through the fence words: one release store per rank, then a wait on
// this rank's doorbell. A release store leaves the store buffer to drain while the wait
// polls, where an atomic store (an XCHG) would stall until the line is owned
// (`bin/golaunch -n 2 bin/rmabench --test fence`). The rings come after the quick polls
// and a full fence, which by then finds the stores drained: a sleeper counted before the
// fence is rung, and one counted after it sees the stores (wait.go). Otherwise it is the
// collectives' Barrier on the window's World, which connects no pair that the World's
// own collectives do not.
func (w *epochs[T]) barrier(ctx context.Context, at blocked) error {
	if !w.flags {
		if at.t != nil { // the waits on w.comm, marked internal, are named by the call
			at.t.BeginSig(at.sig, at.seq)
			defer at.t.End()
		}
		return collectives.Barrier(ctx, w.comm)
	}
	w.fenceSeq++
	seq := w.fenceSeq
	for r := range w.tg {
		release(w.tg[r].mw, mFence+w.rank, seq)
	}
	ready := func() bool {
		for r := range w.size {
			if load(w.mw, mFence+r) < seq {
				return false
			}
		}
		return true
	}
	quickPoll(ready, w.commRef.rule.Oversub())
	fullFence()
	for r := range w.tg {
		ring(w.tg[r].mw)
	}
	return w.waitOn(ctx, at, w.mw, ready, w.checkPeers)
}
