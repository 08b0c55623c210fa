package runtime

import (
	"context"
	"fmt"

	"github.com/gorma-hpc/gorma/runtime/internal/subcore"
)

// createGroupTag is the tag of CreateGroup's exchange in the parent World's internal
// context, beside Barrier's rounds (below 64) and splitTag.
const createGroupTag = MaxTag - 2

// Create returns a World over g's members, ranked in g's order (MPI_Comm_create); a rank
// not in g gets a nil World and a nil error. Every rank of w calls it, in order with its
// other collective calls, with the same g or one of several disjoint groups. g's members are
// ranks of w. The new World follows Split's rules. On an intercommunicator each group passes
// a Group of its own ranks and gets the intercommunicator between the two.
func (w *World) Create(ctx context.Context, g Group) (*World, error) {
	if w == nil {
		return nil, withOp("create", errNilWorld)
	}
	color, key, err := w.k.createColor(w, g)
	if err != nil {
		return nil, withOp("create", err)
	}
	return w.Split(ctx, color, key)
}

// CreateGroup returns a World over g's members, ranked in g's order; only they call it
// (MPI_Comm_create_group), each with the same g and tag. A member that passes another fails
// the call at every member. The others may be doing anything meanwhile. A rank runs its
// CreateGroups and Splits one at a time. The new World follows Split's rules; ctx ends the
// wait for the other members.
func (w *World) CreateGroup(ctx context.Context, g Group, tag int) (*World, error) {
	const op = "create_group"
	if err := w.live(); err != nil {
		return nil, withOp(op, err)
	}
	if w.k.isInter() {
		return nil, withOp(op, errInter())
	}
	if tag < 0 || tag > MaxTag {
		return nil, withOp(op, invalidf("tag %d out of range [0, %d]", tag, MaxTag))
	}
	members, err := memberRanks(w, g)
	if err != nil {
		return nil, withOp(op, err)
	}
	me := groupIndex(g, w.e.rank)
	if me < 0 {
		return nil, withOp(op, invalidf("rank %d is not in the group (only the group's members call CreateGroup; the others call nothing)", w.Rank()))
	}
	e := w.e
	e.splitMu.Lock()
	defer e.splitMu.Unlock()
	recs, err := groupRecords(w, len(members), me, tag)
	if err != nil {
		return nil, withOp(op, err)
	}
	if err := exchangeAmong(ctx, w, members, me, recs, createGroupTag); err != nil {
		return nil, withOp(op, err)
	}
	for i, r := range members {
		if t, k, _, _ := splitRecAt(recs, i); t != tag || k != i {
			return nil, withOp(op, invalidf("rank %d called CreateGroup with tag %d and group rank %d, this rank with tag %d and group rank %d for it (every member passes the same group and tag)", r, t, k, tag, i))
		}
	}
	base, ok := agreeBlock(len(members),
		func(i int) uint16 { _, _, _, next := splitRecAt(recs, i); return next },
		func(i int) []byte { return recs[i*splitRec+splitHead : (i+1)*splitRec] })
	if !ok {
		return nil, withOp(op, invalidf("too many Worlds derived and not freed (no communication context left; Free those no longer used)"))
	}
	e.mu.Lock()
	fam := e.ctxs.takeSplit(base, true)
	e.mu.Unlock()
	return newSubgroup(e, base, newGroup(w, members, fam)), nil
}

// SplitShared splits w into Worlds of ranks that share memory
// (MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)): one per host by default, one per rank with tcp
// between every pair. On them window.AllocateShared gives every rank a peer's memory. Ranks
// are ordered by key, then by rank in w. Collective over w, as Split.
func (w *World) SplitShared(ctx context.Context, key int) (*World, error) {
	if w == nil {
		return nil, withOp("split_shared", errNilWorld)
	}
	if w.k.isInter() {
		return nil, withOp("split_shared", errInter())
	}
	color := w.Rank()
	for r := range w.Rank() {
		if (*subWorld)(w).ReachOf(r).Has(subcore.ReachMap) {
			color = r
			break
		}
	}
	return w.Split(ctx, color, key)
}

// groupRecords returns the buffer of CreateGroup's exchange among n members, with this
// rank's record (member me) filled in as Split's, tag in place of color and me as key.
func groupRecords(w *World, n, me, tag int) ([]byte, error) {
	e := w.e
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.checkLocked(); err != nil {
		return nil, err
	}
	if err := e.ft.worldFailedLocked(w); err != nil {
		return nil, err
	}
	recs := make([]byte, n*splitRec)
	putSplitRec(recs[me*splitRec:], tag, me, e.ctxs.top, e.ctxs.next)
	e.ctxs.busyBlocks(recs[me*splitRec+splitHead : (me+1)*splitRec])
	return recs, nil
}

// exchangeAmong gives each of members (ranks of w; this one is members[me]) the records
// of all, record i (splitRec bytes of recs) being members[i]'s, in w's internal context
// with tag, whose receives fail once any peer has failed.
func exchangeAmong(ctx context.Context, w *World, members []int, me int, recs []byte, tag int) error {
	e := w.e
	mine := recs[me*splitRec : (me+1)*splitRec]
	reqs := make([]Request, 0, len(members))
	for i, r := range members {
		if i == me {
			continue
		}
		jr, _ := jobRank(w, r)
		reqs = append(reqs, Request{})
		sr := &reqs[len(reqs)-1]
		e.mu.Lock()
		err := sr.resetLocked(e)
		if err == nil {
			sr.kind, sr.ctx, sr.peer, sr.tag, sr.buf, sr.esize = reqSend, w.ctx+1, jr, tag, mine, 1
			e.sendLocked(sr)
		}
		e.mu.Unlock()
		if err != nil {
			return err
		}
	}
	for i, r := range members {
		if i == me {
			continue
		}
		jr, _ := jobRank(w, r)
		st, err := e.recv(ctx, w.ctx+1, recs[i*splitRec:(i+1)*splitRec], 1, jr, tag, true)
		if err == nil && st.Bytes != splitRec {
			err = fmt.Errorf("%w: rank %d sent a %d-byte record (mismatched versions?)", ErrInvalid, r, st.Bytes)
		}
		if err != nil {
			return err
		}
	}
	for i := range reqs {
		if _, err := reqs[i].Wait(ctx); err != nil {
			return err
		}
	}
	return nil
}
