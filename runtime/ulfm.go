package runtime

import (
	"context"
	"math/bits"
)

// ULFM's calls on World: Revoke, GetFailed, AckFailed, Agree and Shrink. Under the
// timeline (GORMA_TRACE) Revoke, Agree and Shrink are events named by the call. ft.go
// holds their state; package ulfm holds the agreement and revoke protocols; ulfm/design.md
// gives their invariants. The failure detector behind them is the one the transport and
// the launcher feed (failure.go): a peer's process seen gone on its host, its connection
// lost across hosts, or golaunch's word. None of them is a timeout on a slow rank.

// Revoke marks w revoked at every rank of w that has not failed (MPI_Comm_revoke). It is
// not collective and returns at once; the mark spreads despite failures. Pending and later
// calls on w then fail with ErrRevoked, except GetFailed, AckFailed, Agree and Shrink.
// On a freed w it fails with ErrInvalid, as every call does.
func (w *World) Revoke() error {
	if w == nil {
		return withOp("revoke", errNilWorld)
	}
	if w.life != nil && w.life.freed.Load() {
		return withOp("revoke", errFreed)
	}
	e := w.e
	start := e.obs.stamp()
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.checkLocked(); err != nil {
		return withOp("revoke", err)
	}
	e.ft.sendLocked(w.ft, w.ft.rv.Local())
	e.ft.revokeLocked(w.ft)
	e.obs.ulfmEvent(start, w.ctx, lRevoke)
	return nil
}

// GetFailed returns the group of w's ranks that this rank knows have failed
// (MPI_Comm_get_failed), in the order it learned of them: each call's group starts with
// the previous call's. It does not communicate.
func (w *World) GetFailed() Group {
	if w == nil {
		return Group{}
	}
	e := w.e
	e.mu.Lock()
	procs := make([]int, len(w.ft.failed))
	for i, m := range w.ft.failed {
		procs[i] = w.ft.members[m]
	}
	e.mu.Unlock()
	return newGroupOf(procs, e.rank+1)
}

// AckFailed acknowledges the first n ranks of GetFailed's group and returns how many are
// acknowledged (MPI_Comm_ack_failed); n 0 only asks. Receives from AnySource on w then
// wait past those failures, and Agree no longer reports them. It does not communicate.
func (w *World) AckFailed(n int) int {
	if w == nil {
		return 0
	}
	e := w.e
	e.mu.Lock()
	defer e.mu.Unlock()
	w.ft.acked = max(w.ft.acked, min(n, len(w.ft.failed)))
	return w.ft.acked
}

// Agree returns the bitwise AND of flag over w's ranks that have not failed
// (MPI_Comm_agree). Every rank that returns gets the same value, despite failures during
// the call, and a revoked w still agrees. If a rank failed that not every caller had
// acknowledged, every rank gets a *ProcError wrapping ErrProcFailed with the value.
func (w *World) Agree(ctx context.Context, flag int) (int, error) {
	if err := ulfmArg(w); err != nil {
		return 0, withOp("agree", err)
	}
	e, fw := w.e, w.ft
	defer e.obs.ulfmEvent(e.obs.stamp(), w.ctx, lAgree)
	n := len(fw.members)
	and := make([]uint64, 1+(n+63)/64)
	and[0] = uint64(int64(flag))
	e.mu.Lock()
	for _, m := range fw.failed[:fw.acked] {
		and[1+m/64] |= 1 << (m % 64)
	}
	d, err := e.ft.agreeLocked(ctx, fw, and)
	var pe error
	if err == nil {
		for _, m := range d.Failed.Members() {
			if d.And[1+m/64]&(1<<(m%64)) == 0 {
				pe = e.ft.memberErrLocked(fw, m)
				break
			}
		}
	}
	e.mu.Unlock()
	if err != nil {
		return 0, withOp("agree", err)
	}
	return int(int64(d.And[0])), withOp("agree", pe)
}

// Shrink returns a new World of w's ranks that have not failed, in w's order
// (MPI_Comm_shrink). The ranks agree on its members and context despite failures during
// the call, and a revoked w still shrinks. A rank that fails during the call may still be
// a member, whose failure the new World then reports.
func (w *World) Shrink(ctx context.Context) (*World, error) {
	if err := ulfmArg(w); err != nil {
		return nil, withOp("shrink", err)
	}
	e, fw := w.e, w.ft
	defer e.obs.ulfmEvent(e.obs.stamp(), w.ctx, lShrink)
	e.splitMu.Lock() // Split's lock: the context counters stay as read
	defer e.splitMu.Unlock()
	e.mu.Lock()
	d, err := e.ft.agreeLocked(ctx, fw, freeBlocks(&e.ctxs))
	if err != nil {
		e.mu.Unlock()
		return nil, withOp("shrink", err)
	}
	k := firstSet(d.And)
	if k < 0 || k >= splitBlocks {
		e.mu.Unlock()
		return nil, withOp("shrink", invalidf("too many Worlds derived and not freed (no communication context left; Free those no longer used)"))
	}
	base := blockBase(k)
	fam := e.ctxs.takeSplit(base, true)
	e.mu.Unlock()
	var live []int
	for r := range len(fw.members) {
		if !d.Failed.Has(r) {
			live = append(live, r)
		}
	}
	return newSubgroup(e, base, newGroup(w, live, fam)), nil
}

// ulfmArg checks the World of Agree and Shrink: live (a revoked World is), an
// intracommunicator.
func ulfmArg(w *World) error {
	if w == nil {
		return errNilWorld
	}
	if w.life != nil && w.life.freed.Load() {
		return errFreed
	}
	if w.IsInter() {
		return invalidf("an intercommunicator (Merge it first)")
	}
	return w.e.check()
}

// memberErrLocked returns the *ProcError of fw's member m.
func (f *ftState) memberErrLocked(fw *ftWorld, m int) error {
	jr := fw.members[m]
	if p := f.e.links.peers[jr]; p != nil && p.failed != nil {
		return p.failed
	}
	return &ProcError{Rank: jr, Err: ErrProcFailed, Why: "failed (the survivors' agreement says so)", Cause: errAgreedFailed}
}

// freeBlocks returns Shrink's contribution: a bit for each Split block that this rank
// does not use and that lies above its Dups (agreeBlock's rule), in block order.
func freeBlocks(a *ctxAlloc) []uint64 {
	busy := make([]byte, busyBytes)
	a.busyBlocks(busy)
	words := make([]uint64, (splitBlocks+63)/64)
	for k := 0; k < splitBlocks && int(blockBase(k)) >= int(a.next); k++ {
		if !blockBusy(busy, k) {
			words[k/64] |= 1 << (k % 64)
		}
	}
	return words
}

// firstSet returns the index of the lowest set bit of words, or -1.
func firstSet(words []uint64) int {
	for i, x := range words {
		if x != 0 {
			return i*64 + bits.TrailingZeros64(x)
		}
	}
	return -1
}
