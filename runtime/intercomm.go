package runtime

import (
	"context"
	"encoding/binary"
	"github.com/gorma-hpc/gorma/runtime/internal/mpigroup"
	"slices"
)

// Intercommunicators (MPI_Intercomm_create, MPI_Intercomm_merge).
//
// An intercommunicator is a World whose group g is the remote group: jobRank, rankOf
// and a Request's grp translate the remote ranks that its point-to-point calls and
// Status.Source use, with no code of their own. Its kind (inter, kind.go) holds the
// rest: the local group's World (an intracommunicator with a context of its own, for the
// local steps of Barrier and of package collectives' calls), whose group own is.
//
// Both groups take their contexts from one Split block, agreed as Split agrees on one
// (agreeBlock) over the records of every rank of both groups. The block's first World
// is the intercommunicator, its second the local group's World (the two groups, being
// disjoint, share that context without their messages meeting), and Dup takes two more
// per copy.

// Root is the root argument that a rooted collective's root passes on an intercommunicator
// (MPI_ROOT). The rest of its group passes ProcNull; the remote group passes its rank.
const Root = -4

// intercommTag is the tag of CreateIntercomm's and Merge's messages in internal
// contexts, beside Barrier's rounds, splitTag and createGroupTag.
const intercommTag = MaxTag - 3

// IsInter reports whether w is an intercommunicator (MPI_Comm_test_inter).
func (w *World) IsInter() bool { return w != nil && w.k.isInter() }

// RemoteSize is the size of an intercommunicator's remote group, 0 for an
// intracommunicator (MPI_Comm_remote_size).
func (w *World) RemoteSize() int { return w.k.remoteSize(w) }

// RemoteGroup returns an intercommunicator's remote group, ranked as its point-to-point
// calls name the remote ranks (MPI_Comm_remote_group); the empty Group for an
// intracommunicator.
func (w *World) RemoteGroup() Group { return w.k.remoteGroup(w) }

// Local returns the World over an intercommunicator's local group, ranked as Rank is, with
// a context of its own; nil for an intracommunicator. Package collectives runs its local
// steps on it, so a program's own calls on it are ordered with those on the
// intercommunicator. It is freed with the intercommunicator.
func (w *World) Local() *World { return w.k.local(w) }

// CreateIntercomm returns an intercommunicator between w's ranks (the local group) and
// another World's group (MPI_Intercomm_create). Every rank of both groups calls it on its
// own group's World, naming its group's leader there (localLeader). The two leaders also
// pass a World they both belong to (peer), each other's rank in it (remoteLeader) and one
// tag, and exchange their groups on peer. The groups must be disjoint.
//
// In the result, Rank, Size and Group speak of the local group, and the point-to-point
// calls of the remote group's ranks (RemoteSize, RemoteGroup). Barrier waits for both
// groups. Merge, Dup, Split and Free work on it.
func (w *World) CreateIntercomm(ctx context.Context, localLeader int, peer *World, remoteLeader, tag int) (*World, error) {
	const op = "intercomm_create"
	if err := w.live(); err != nil {
		return nil, withOp(op, err)
	}
	if w.k.isInter() {
		return nil, withOp(op, invalidf("the local World is an intercommunicator (pass the World of the local group: Local)"))
	}
	if localLeader < 0 || localLeader >= w.Size() {
		return nil, withOp(op, invalidf("local leader %d out of range [0, %d)", localLeader, w.Size()))
	}
	e := w.e
	e.splitMu.Lock()
	defer e.splitMu.Unlock()
	// A leader whose arguments are wrong still takes part, so that the others fail too.
	swap := func(mine, theirs []byte) (int, error) {
		peerJob, err := peerLeader(w, peer, remoteLeader, tag)
		if err != nil {
			return 0, err
		}
		return e.swap(ctx, peer.ctx, peerJob, tag, mine, theirs, false)
	}
	u, err := unite(ctx, w, localLeader, 0, 0, w.Rank(), swap)
	if err != nil {
		return nil, withOp(op, err)
	}
	base, ok := u.agree()
	if !ok {
		return nil, withOp(op, invalidf("too many Worlds derived and not freed (no communication context left; Free those no longer used)"))
	}
	e.mu.Lock()
	fam := e.ctxs.takeSplit(base, true)
	lctx, _, _ := e.ctxs.takeFamily(fam) // a fresh family: nothing to reuse
	e.mu.Unlock()
	return interOn(e, base, lctx, u.local, u.remote, fam), nil
}

// interOn returns the intercommunicator on contexts c (its own) and lctx (its local
// group's) between the local and the remote job ranks, with the family fam.
func interOn(e *engine, c, lctx uint16, local, remote []int, fam *family) *World {
	return newInter(e, c, newSubgroup(e, lctx, newJobGroup(e, local, fam)), newJobGroup(e, remote, fam))
}

// split is Split of an intercommunicator (MPI_Comm_split on one). The ranks of
// each group that pass one color form the local group of a new intercommunicator, whose
// remote group is the other group's ranks of that color, each ordered by key, then by
// rank. A rank whose color no rank of the other group passes gets nil, as does NoColor.
func (x *inter) split(ctx context.Context, w *World, color, key int) (*World, error) {
	e, local := w.e, x.lw
	e.splitMu.Lock()
	defer e.splitMu.Unlock()
	swap := func(mine, theirs []byte) (int, error) {
		return e.swap(ctx, w.ctx+1, w.g.ranks[0], intercommTag, mine, theirs, true)
	}
	u, err := unite(ctx, local, 0, 0, color, key, swap)
	if err != nil {
		return nil, err
	}
	base, ok := u.agree()
	if !ok {
		return nil, invalidf("too many Worlds derived and not freed (no communication context left; Free those no longer used)")
	}
	pick := func(jobs []int, recs []byte) []int {
		idx := splitMembers(recs, len(jobs), color)
		out := make([]int, len(idx))
		for i, r := range idx {
			out[i] = jobs[r]
		}
		return out
	}
	var lm, rm []int
	if color != NoColor {
		lm, rm = pick(u.local, u.lrecs), pick(u.remote, u.rrecs)
	}
	member := len(lm) > 0 && len(rm) > 0
	e.mu.Lock()
	fam := e.ctxs.takeSplit(base, member)
	var lctx uint16
	if member {
		lctx, _, _ = e.ctxs.takeFamily(fam) // a fresh family: nothing to reuse
	}
	e.mu.Unlock()
	if !member {
		return nil, nil
	}
	return interOn(e, base, lctx, lm, rm, fam), nil
}

// peerLeader checks a leader's arguments to CreateIntercomm and returns the remote
// leader's job rank.
func peerLeader(w, peer *World, remoteLeader, tag int) (int, error) {
	if peer == nil {
		return 0, invalidf("the local leader (rank %d) passed no peer World (the leaders pass a World that holds both)", w.Rank())
	}
	if err := peer.live(); err != nil {
		return 0, err
	}
	if peer.k.isInter() {
		return 0, invalidf("the peer World of the local leader (rank %d) is an intercommunicator (pass an intracommunicator holding both leaders)", w.Rank())
	}
	if tag < 0 || tag > MaxTag {
		return 0, invalidf("tag %d out of range [0, %d]", tag, MaxTag)
	}
	jr, ok := jobRank(peer, remoteLeader)
	if !ok {
		return 0, invalidf("remote leader %d out of range [0, %d) of the peer World", remoteLeader, peer.Size())
	}
	if jr == w.e.rank {
		return 0, invalidf("the remote leader (rank %d of the peer World) is the local leader itself (the groups must be disjoint)", remoteLeader)
	}
	return jr, nil
}

// union is what both groups of an intercommunicator learn of each other: each group's
// job ranks, split records (Split's splitRec, key the group rank) and flag.
type union struct {
	local, remote []int
	lrecs, rrecs  []byte
	lflag, rflag  byte
}

// agree returns the Split block free at every rank of both groups.
func (u *union) agree() (uint16, bool) {
	nl := len(u.local)
	rec := func(i int) []byte {
		if i < nl {
			return u.lrecs[i*splitRec : (i+1)*splitRec]
		}
		i -= nl
		return u.rrecs[i*splitRec : (i+1)*splitRec]
	}
	return agreeBlock(nl+len(u.remote),
		func(i int) uint16 { return binary.LittleEndian.Uint16(rec(i)[18:]) },
		func(i int) []byte { return rec(i)[splitHead:] })
}

// localFirst reports whether the local group comes first in the union's order: the
// group that passed flag 0 (Merge's high false) first, and for equal flags the group
// holding the lower job rank.
func (u *union) localFirst() bool {
	if u.lflag != u.rflag {
		return u.lflag < u.rflag
	}
	return slices.Min(u.local) < slices.Min(u.remote)
}

// unite runs the exchange of CreateIntercomm and Merge over w, whose ranks are one
// group. The ranks' split records go to every rank of local (exchange), the leader
// (localLeader) swaps its group's ranks, records and flag with the other group's leader
// by swap, and sends what it got to the others in w's internal context. A leader
// that fails sends the others an empty answer, so every rank returns an error. The
// caller holds splitMu.
func unite(ctx context.Context, w *World, localLeader int, flag byte, color, key int, swap func(mine, theirs []byte) (int, error)) (*union, error) {
	e, n, me := w.e, w.Size(), w.Rank()
	recs := make([]byte, n*splitRec)
	e.mu.Lock()
	err := e.checkLocked()
	if err == nil {
		err = e.ft.worldFailedLocked(w)
	}
	if err == nil {
		putSplitRec(recs[me*splitRec:], color, key, e.ctxs.top, e.ctxs.next)
		e.ctxs.busyBlocks(recs[me*splitRec+splitHead : (me+1)*splitRec])
	}
	e.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if err := exchange(ctx, w, recs); err != nil {
		return nil, err
	}
	u := &union{local: mpigroup.Procs(w.Group()), lrecs: recs, lflag: flag}
	// The most a group's description takes: every rank of the job in it, spawned ones too.
	theirs := make([]byte, unionMsgLen(max(e.size, e.links.known())))
	leaderJob, _ := jobRank(w, localLeader)
	var m int
	if me == localLeader {
		m, err = swap(encodeUnion(u.local, recs, flag), theirs)
		if err != nil {
			m = 0
		}
		for r := range n {
			if r == me {
				continue
			}
			jr, _ := jobRank(w, r)
			if serr := e.send(ctx, callNone, w.ctx+1, theirs[:m], 1, jr, intercommTag); serr != nil && err == nil {
				err = serr
			}
		}
		if err != nil {
			return nil, err
		}
	} else {
		st, rerr := e.recv(ctx, w.ctx+1, theirs, 1, leaderJob, intercommTag, true)
		if rerr != nil {
			return nil, rerr
		}
		m = st.Bytes
		if m == 0 {
			return nil, invalidf("the local leader (rank %d) failed to exchange with the remote leader (its error names why)", localLeader)
		}
	}
	if u.remote, u.rrecs, u.rflag, err = decodeUnion(theirs[:m]); err != nil {
		return nil, err
	}
	if err := learnRanks(ctx, e, u.remote); err != nil { // spawn.go
		return nil, err
	}
	for _, jr := range u.remote {
		if slices.Contains(u.local, jr) {
			return nil, invalidf("process %d of the job is in both groups (the groups of an intercommunicator must be disjoint)", jr)
		}
	}
	return u, nil
}

// unionMsgLen is the size of a group's description of n ranks: count, flag, job ranks,
// split records.
func unionMsgLen(n int) int { return 5 + n*(4+splitRec) }

func encodeUnion(jobs []int, recs []byte, flag byte) []byte {
	b := make([]byte, 5, unionMsgLen(len(jobs)))
	binary.LittleEndian.PutUint32(b, uint32(len(jobs)))
	b[4] = flag
	for _, jr := range jobs {
		b = binary.LittleEndian.AppendUint32(b, uint32(jr))
	}
	return append(b, recs...)
}

// decodeUnion parses encodeUnion's bytes; the error names what is wrong with them.
func decodeUnion(b []byte) (jobs []int, recs []byte, flag byte, err error) {
	if len(b) < 5 {
		return nil, nil, 0, invalidf("the remote group's description has %d bytes (mismatched versions?)", len(b))
	}
	n := int(binary.LittleEndian.Uint32(b))
	if n < 1 || len(b) != unionMsgLen(n) {
		return nil, nil, 0, invalidf("the remote group's description of %d ranks has %d bytes (mismatched versions?)", n, len(b))
	}
	flag = b[4]
	jobs = make([]int, n)
	for i := range jobs {
		jobs[i] = int(binary.LittleEndian.Uint32(b[5+4*i:]))
	}
	return jobs, b[5+4*n:], flag, nil
}

// swap sends mine to job rank peer and receives its answer into theirs, in context
// ctxID with tag, and returns the answer's size.
func (c *comms) swap(ctx context.Context, ctxID uint16, peer, tag int, mine, theirs []byte, collective bool) (int, error) {
	e := c.e
	var sr Request
	e.mu.Lock()
	err := sr.resetLocked(e)
	if err == nil {
		sr.kind, sr.ctx, sr.peer, sr.tag, sr.buf, sr.esize = reqSend, ctxID, peer, tag, mine, 1
		e.sendLocked(&sr)
	}
	e.mu.Unlock()
	if err != nil {
		return 0, err
	}
	st, rerr := e.recv(ctx, ctxID, theirs, 1, peer, tag, collective)
	if _, err := sr.Wait(ctx); err != nil {
		return 0, err
	}
	if rerr != nil {
		return 0, rerr
	}
	return st.Bytes, nil
}

// Merge returns an intracommunicator of both groups of the intercommunicator w
// (MPI_Intercomm_merge): the group that passes high false first, or, when both pass the same,
// the group holding the lower job rank. Every rank of both groups calls it. The new World
// follows Split's rules.
func (w *World) Merge(ctx context.Context, high bool) (*World, error) {
	const op = "intercomm_merge"
	if err := w.live(); err != nil {
		return nil, withOp(op, err)
	}
	m, err := w.k.merge(ctx, w, high)
	return m, withOp(op, err)
}

// merge is Merge of the intercommunicator w.
func (x *inter) merge(ctx context.Context, w *World, high bool) (*World, error) {
	var flag byte
	if high {
		flag = 1
	}
	e, local := w.e, x.lw
	e.splitMu.Lock()
	defer e.splitMu.Unlock()
	swap := func(mine, theirs []byte) (int, error) {
		return e.swap(ctx, w.ctx+1, w.g.ranks[0], intercommTag, mine, theirs, true)
	}
	u, err := unite(ctx, local, 0, flag, 0, local.Rank(), swap)
	if err != nil {
		return nil, err
	}
	base, ok := u.agree()
	if !ok {
		return nil, invalidf("too many Worlds derived and not freed (no communication context left; Free those no longer used)")
	}
	jobs := slices.Concat(u.local, u.remote)
	if !u.localFirst() {
		jobs = slices.Concat(u.remote, u.local)
	}
	e.mu.Lock()
	fam := e.ctxs.takeSplit(base, true)
	e.mu.Unlock()
	return newSubgroup(e, base, newJobGroup(e, jobs, fam)), nil
}

// barrier is Barrier on an intercommunicator: a barrier of the local group, the
// leaders' swap of empty messages, and a second barrier of the local group, which its
// ranks leave only once the leader has heard from the other group's.
func (x *inter) barrier(ctx context.Context, w *World) error {
	local := x.lw
	if err := barrier(ctx, local); err != nil {
		return err
	}
	if local.Rank() == 0 {
		if _, err := w.e.swap(ctx, w.ctx+1, w.g.ranks[0], 0, nil, nil, true); err != nil {
			return err
		}
	}
	return barrier(ctx, local)
}

// dupLocked is Dup of an intercommunicator: two contexts of its family, taken in the
// same order at every rank of both groups; full when the block is.
func (x *inter) dupLocked(w *World) (*World, bool, error) {
	e := w.e
	c, ok, err := e.takeFamilyLocked(w.g.fam)
	if err != nil || !ok {
		return nil, !ok && err == nil, err
	}
	lctx, ok, err := e.takeFamilyLocked(w.g.fam)
	if err != nil || !ok {
		e.ctxs.giveBack(c, w.g.fam)
		e.ctxs.release(c, true)
		return nil, !ok && err == nil, err
	}
	return newInter(e, c, newSubgroup(e, lctx, x.lw.g), w.g), false, nil
}

// newJobGroup returns the group of jobs (job ranks, in the new World's order), whose
// Worlds take their contexts from fam; this rank's place in it, if any, is me.
func newJobGroup(e *engine, jobs []int, fam *family) *group {
	g := &group{ranks: slices.Clone(jobs), of: make([]int32, max(slices.Max(jobs), e.rank)+1), me: -1, fam: fam}
	for i := range g.of {
		g.of[i] = -1
	}
	for i, jr := range g.ranks {
		g.of[jr] = int32(i)
		if jr == e.rank {
			g.me = i
		}
	}
	for i, jr := range g.ranks {
		if e.links.local(jr) {
			if i == g.me {
				g.localRank = g.localSize
			}
			g.localSize++
		}
	}
	return g
}

// errInter is the error of a call that takes an intracommunicator only.
func errInter() error {
	return invalidf("the World is an intercommunicator (Merge it, or use its Local World)")
}
