package window

import (
	"context"
	"math"

	"github.com/gorma-hpc/gorma/collectives"
)

// Free frees the window: collective over its World. No epoch may be open at any rank:
// every rank's Free first agrees with the others that none has a Lock, LockAll or PSCW
// epoch open. If one has, Free fails at every rank with an *Error wrapping ErrEpoch that
// names the lowest such rank and its epoch ("rank 1 holds a Lock on rank 0"), and the
// window stays usable at every rank: close the epoch and call Free again. Once the
// World's Finalize has begun, Free does nothing and returns nil: Finalize released the
// window's memory, and Go runs a deferred Free after a Finalize that main calls (free
// before Finalize otherwise, as MPI requires: see the package example). Afterwards
// every call on the window fails with ErrFreed, and the keys of its memory stop working
// at every rank (the arena bytes are reused, never reachable through an old key). The
// slice Local returned dies here. Arena memory goes to the arena's quarantine, reused
// only when the arena has no other free space or the quarantine is full. Under
// GORMA_CHECK=1 it is made inaccessible in this process until then, so that a stale
// write faults. Free prints one line naming the window and its range on stderr for the
// fault to be traced. If the agreement or the closing barrier fails (ctx ends while a
// peer has not called Free, or a peer failed), Free returns its error and keeps the
// window's memory allocated, since a peer still in an epoch may write it.
func (w *Win[T]) Free(ctx context.Context) error {
	const op = "free"
	if !w.freed.Load() && w.comm.Finalized() {
		w.freed.Store(true) // a second Free fails with ErrFreed, as before Finalize
		return nil
	}
	if err := w.usable(op, -1, -1); err != nil {
		return err
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
// it checks the call, completes this rank's operations, agrees with every rank that none
// has an epoch open, marks the window freed, closes its peers' regions and waits in the
// closing barrier. A refusal, or a failure before the mark, leaves the window usable.
//
// The agreement and the closing barrier are two collectives, not one. The agreement
// comes before anything is torn down, so that a refusal leaves every rank's window as
// it was. The barrier comes after every rank's closeRemotes, so that no peer holds a pin
// on our regions once it returns and Free revokes them at once.
func (w *Win[T]) retire(ctx context.Context, seq uint64) error {
	const op = "free"
	if err := w.track.Check(ctx, seq, w.freeSig); err != nil {
		return werr(op, -1, -1, err)
	}
	mine := w.ep.freeVerdict()
	if mine.ok() {
		// Completing the operations early is harmless if a peer refuses.
		if err := w.dp.flushAll(ctx, op); err != nil {
			return err
		}
	}
	all, aerr := w.agree(ctx, mine)
	switch {
	case aerr == nil && !all.ok():
		return all.err(op)
	case !mine.ok():
		// The agreement failed: this rank's own epoch still forbids the teardown.
		return mine.err(op)
	}
	w.freed.Store(true)
	if w.ep.fenceOn {
		w.ob.ends(epFence) // the last Fence did not assert NoSucceed
	}
	w.dp.closeRemotes()
	if aerr != nil {
		// Peers may have agreed and gone on to free (a collective can end at some ranks
		// and fail at others), so this rank frees too, as after a failed barrier.
		return werr(op, -1, -1, aerr)
	}
	// After the barrier nobody holds a pin on our regions: Free revokes at once.
	if err := collectives.Barrier(ctx, w.comm); err != nil {
		return werr(op, -1, -1, err)
	}
	return nil
}

// agree runs Free's agreement: a Min reduction of every rank's verdict over the window's
// World. It returns freeOK when every rank can free, else the lowest refusing rank's
// verdict.
func (w *Win[T]) agree(ctx context.Context, mine verdict) (verdict, error) {
	v := []uint64{uint64(mine)}
	if err := collectives.Allreduce(ctx, w.comm, nil, v, collectives.Min[uint64]()); err != nil {
		return mine, err
	}
	return verdict(v[0]), nil
}

// freeVerdict is this rank's vote in Free's agreement: freeOK, or the first epoch it has
// open (LockAll, a Lock on the lowest locked rank, PSCW access, PSCW exposure).
func (w *epochs[T]) freeVerdict() verdict {
	switch {
	case w.lockAll:
		return refusal(w.rank, refuseLockAll, 0)
	case w.locks > 0:
		for r := range w.tg {
			if w.tg[r].lock != 0 {
				return refusal(w.rank, refuseLock, r)
			}
		}
		return refusal(w.rank, refuseLock, -1)
	case w.pscw.accessOn:
		return refusal(w.rank, refuseAccess, 0)
	case w.pscw.exposureOn:
		return refusal(w.rank, refuseExposure, 0)
	}
	return freeOK
}

// verdict is one rank's word in Free's agreement. freeOK (all ones) says the rank can
// free. A refusal holds the rank in its high 32 bits, the open epoch's kind in the next
// 4 and, for a Lock, the locked rank plus one in the low 28 (0: not named). The Min of
// all ranks' words is thus freeOK or the lowest refusing rank's refusal.
type verdict uint64

const freeOK verdict = math.MaxUint64

// Kinds of epoch that refuse a Free.
const (
	refuseLock uint64 = iota + 1
	refuseLockAll
	refuseAccess
	refuseExposure
)

const verdictTarget = 1<<28 - 1 // the low 28 bits: the locked rank plus one

// refusal is the verdict of a rank with an epoch of kind open; target is the locked rank
// of a Lock (-1, or a rank past the field, names none).
func refusal(rank int, kind uint64, target int) verdict {
	t := uint64(target + 1)
	if target < 0 || t > verdictTarget {
		t = 0
	}
	return verdict(uint64(rank)<<32 | kind<<28 | t)
}

func (v verdict) ok() bool { return v == freeOK }

// err is the error of Free call op refused by v, naming v's rank (Error.Rank) and its epoch.
func (v verdict) err(op string) error {
	rank := int(v >> 32)
	const after = "; the window stays open"
	switch uint64(v>>28) & 0xf {
	case refuseLock:
		if t := uint64(v) & verdictTarget; t != 0 {
			return werrf(op, rank, -1, ErrEpoch, "rank %d holds a Lock on rank %d (Unlock before Free)"+after, rank, t-1)
		}
		return werrf(op, rank, -1, ErrEpoch, "rank %d holds a Lock (Unlock before Free)"+after, rank)
	case refuseLockAll:
		return werrf(op, rank, -1, ErrEpoch, "rank %d holds a LockAll epoch (UnlockAll before Free)"+after, rank)
	case refuseAccess:
		return werrf(op, rank, -1, ErrEpoch, "rank %d has a PSCW access epoch open (Complete before Free)"+after, rank)
	case refuseExposure:
		return werrf(op, rank, -1, ErrEpoch, "rank %d has a PSCW exposure epoch open (Wait or Test before Free)"+after, rank)
	}
	return werrf(op, rank, -1, ErrEpoch, "rank %d has an epoch open (kind %d)"+after, rank, uint64(v>>28)&0xf)
}
