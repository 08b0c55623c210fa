package runtime

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/gorma-hpc/gorma/runtime/internal/ulfm"
)

// Fault tolerance (ULFM). Under GORMA_FT=1 a peer's failure never ends this process.
// Calls that depend on the failed rank fail with its *ProcError, and the rest go on:
//
//   - a receive or probe from AnySource on a World fails while the World holds a failed
//     member that this rank has not acknowledged (AckFailed);
//   - a collective receive (Barrier, a Sibling World) fails once the World holds a failed
//     member, at every rank, acknowledged or not: such a World's collectives never
//     complete again, and Shrink makes one without the failed ranks;
//   - Worlds without a failed member are untouched.
//
// Without GORMA_FT any failure fails every AnySource and collective receive of the job, as
// failure.go describes, and the launcher ends the job. Revoke, GetFailed, AckFailed,
// Agree and Shrink work in both modes.
//
// ftState is the part that holds this. It owns the fault-tolerant view of every World:
// its failed members in the order learned, its acknowledgements, its revoke flood and its
// agreements (package ulfm's state machines). The failure path (failures), the message
// path (incomingLocked) and the calls of ulfm.go call it. Locks: worlds is guarded by
// mu, a leaf lock, so that World constructors may register with or without the engine's
// mu; everything inside an ftWorld but revoked is guarded by the engine's mu.
type ftState struct {
	e      *engine
	on     bool        // GORMA_FT=1: failures are scoped to the Worlds that hold them
	mu     sync.Mutex  // guards worlds
	any    atomic.Bool // some World was revoked: receives look up their World's state
	worlds map[uint16]*ftWorld
	early  map[uint16][]ftEarly // messages for Worlds not made here yet, by base context
	sends  uint32               // blocking sends that went out at once (sentLocked)
}

// ftPollEvery is how many blocking sends that complete at once go by between two polls
// of the devices under GORMA_FT. A rank that only sends eagerly never waits, and so would
// never take in a revoke or an agreement's message.
const ftPollEvery = 64

// sentLocked counts a blocking send that completed without a wait, and polls the devices
// every ftPollEvery of them.
func (f *ftState) sentLocked() {
	f.sends++
	if f.sends%ftPollEvery == 0 && !f.e.poll.active {
		f.e.progressLocked()
	}
}

// ftCtx is the context of ULFM's protocol messages; the tag is the World's base context.
// It lies above Split's blocks, beside ctlCtx.
const ftCtx = ctlCtx - 1

// ftMinEager is the least eager limit under which Agree and Shrink work: their messages
// must travel eagerly, since no receive is posted for them.
const ftMinEager = 2 << 10

// ftEarly is a protocol message that arrived before this rank made its World or started
// its agreement.
type ftEarly struct {
	src int // job rank
	m   ulfm.Msg
}

// ftWorld is the fault-tolerant state of one World and its sibling.
type ftWorld struct {
	base    uint16
	members []int   // job ranks, by member index: the World's ranks (an intercommunicator: local, then remote)
	index   []int32 // by job rank: member index, or -1
	me      int
	failed  []int       // member indices in the order this rank learned of them
	dead    ulfm.Bitmap // the members of failed
	acked   int         // failed[:acked] are acknowledged
	revoked atomic.Bool
	rv      *ulfm.Revoke
	seq     uint32               // the next agreement's sequence number
	agrees  map[uint32]*ftAgree  // started agreements, the last few kept to answer late messages
	early   map[uint32][]ftEarly // messages of agreements not started here yet
	owed    []ulfm.Send          // revoke messages this rank owes, from before it made the World

	// released: the World was freed and its contexts released here (its free marks
	// sent). A member's protocol messages that follow its free mark, and a non-member's,
	// are then for the next World on the same contexts (incomingLocked).
	released bool
}

// ftAgree is one Agree or Shrink at this rank.
type ftAgree struct {
	a *ulfm.Agreement
	r *Request // completed when a decides
}

// ftKeep is how many decided agreements a World keeps to answer a new coordinator's late
// query. A member can lag the others by one agreement only: the next one waits for its
// contribution.
const ftKeep = 4

// register makes w's fault-tolerant state, over members (job ranks, by member index).
func (f *ftState) register(w *World, members []int) {
	top := f.e.size
	for _, jr := range members {
		top = max(top, jr+1)
	}
	fw := &ftWorld{base: w.ctx, members: members, index: make([]int32, top),
		me: -1, dead: ulfm.NewBitmap(len(members)), agrees: map[uint32]*ftAgree{}, early: map[uint32][]ftEarly{}}
	for i := range fw.index {
		fw.index[i] = -1
	}
	for i, jr := range members {
		fw.index[jr] = int32(i)
		if jr == f.e.rank {
			fw.me = i
		}
	}
	fw.rv = ulfm.NewRevoke(fw.me, len(members), ulfm.NewBitmap(len(members)))
	w.ft = fw
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.worlds == nil {
		f.worlds = map[uint16]*ftWorld{}
	}
	f.worlds[w.ctx] = fw
	// Messages that came before the World: an agreement's wait for its start; a revoke
	// marks the World at once (no call on it can be pending), and this rank's share of
	// the flood goes out with its next message.
	for _, m := range f.early[w.ctx] {
		if !fw.has(m.src) {
			continue
		}
		if m.m.Kind != ulfm.KindRevoke {
			fw.early[m.m.Seq] = append(fw.early[m.m.Seq], m)
			continue
		}
		fw.owed = append(fw.owed, fw.rv.Recv(int(fw.index[m.src]))...)
		fw.revoked.Store(true)
		f.any.Store(true)
	}
	delete(f.early, w.ctx)
}

// worldOf returns the state of the World whose contexts hold ctx, or nil.
func (f *ftState) worldOf(ctx uint16) *ftWorld {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.worlds[ctx&^(ctxPerWorld-1)]
}

// has reports whether job rank jr is a member.
func (fw *ftWorld) has(jr int) bool { return jr >= 0 && jr < len(fw.index) && fw.index[jr] >= 0 }

// scopeHasLocked reports whether a failure of job rank jr concerns AnySource or
// collective receive r: always without GORMA_FT, else when jr is a member of r's World.
func (f *ftState) scopeHasLocked(r *Request, jr int) bool {
	if !f.on {
		return true
	}
	fw := f.worldOf(r.ctx)
	return fw == nil || fw.has(jr)
}

// failedForLocked returns the error AnySource or collective receive r fails with under
// GORMA_FT, or nil: the first failed member of its World that r must not wait past.
func (f *ftState) failedForLocked(r *Request) error {
	fw := f.worldOf(r.ctx)
	if fw == nil {
		return f.e.failed
	}
	from := 0
	if !r.anyFail {
		from = fw.acked // an AnySource receive waits past acknowledged failures
	}
	for _, i := range fw.failed[from:] {
		if p := f.e.links.peers[fw.members[i]]; p != nil && p.failed != nil {
			return p.failed
		}
	}
	return nil
}

// collectiveSendFailedLocked returns the error that the wait of a collective's blocking
// send r (anyFail) ends with, or nil: its World revoked, or a member failed (under
// GORMA_FT), or any peer (without it, as a collective's receives fail: failure.go). A
// collective cannot complete without every member, and the peer it sends to may have
// left the call already, so that nobody will take a rendezvous offer. The wait ends as
// when its context ends: the offer stands, and the request is recycled once the peer
// reads or withdraws it (finishSendLocked). Without GORMA_FT the error is the job's
// first failure, the one the launcher names, not the peer's own: a Barrier's send to a
// rank that the launcher's abort ended names the rank whose failure aborted the job.
func (f *ftState) collectiveSendFailedLocked(r *Request) error {
	if err := f.revokedForLocked(r); err != nil {
		return err
	}
	if f.e.failed == nil {
		return nil
	}
	if !f.on {
		return f.e.failed
	}
	return f.failedForLocked(r)
}

// collectiveErrLocked returns the error a collective's blocking send that failed with
// err returns. Without GORMA_FT a peer's failure fails every collective, and the
// collective names the job's first failure, the one the launcher names: the peer it sent
// to may be a rank that the launcher's abort ended (failure.go, agentWordWait). Under
// GORMA_FT it is err, the failure of the member it sent to.
func (f *ftState) collectiveErrLocked(err error) error {
	if !f.on && f.e.failed != nil && errors.Is(err, ErrProcFailed) {
		return f.e.failed
	}
	return err
}

// wakeCollectiveSendsLocked wakes the parked waits of collectives' blocking sends in the
// Worlds that hold job rank jr, which just failed, so that they end
// (collectiveSendFailedLocked).
func (f *ftState) wakeCollectiveSendsLocked(jr int) {
	for _, r := range f.e.poll.waiters {
		if r != nil && r.kind == reqSend && r.anyFail && r.parked && f.scopeHasLocked(r, jr) {
			select {
			case r.wake <- struct{}{}:
			default:
			}
		}
	}
}

// revokedForLocked returns ErrRevoked's error when r's World was revoked, or nil.
func (f *ftState) revokedForLocked(r *Request) error {
	if !f.any.Load() {
		return nil
	}
	if fw := f.worldOf(r.ctx); fw != nil && fw.revoked.Load() {
		return errRevoked
	}
	return nil
}

// worldFailedLocked returns the failure that a collective call on w must fail with at
// its start, or nil: without GORMA_FT, any peer's; with it, a member's of w.
func (f *ftState) worldFailedLocked(w *World) error {
	e := f.e
	if e.failed == nil {
		return nil
	}
	if !f.on || w.ft == nil {
		return e.failed
	}
	for _, i := range w.ft.failed {
		if p := e.links.peers[w.ft.members[i]]; p != nil && p.failed != nil {
			return p.failed
		}
	}
	return nil
}

// peerFailedLocked tells every World that holds job rank jr, and their revoke floods and
// agreements, that it failed.
func (f *ftState) peerFailedLocked(jr int) {
	f.mu.Lock()
	var hit []*ftWorld
	for _, fw := range f.worlds {
		if fw.has(jr) {
			hit = append(hit, fw)
		}
	}
	f.mu.Unlock()
	for _, fw := range hit {
		i := int(fw.index[jr])
		if i == fw.me || fw.dead.Has(i) {
			continue
		}
		fw.dead.Set(i)
		fw.failed = append(fw.failed, i)
		fw.rv.Failed(i)
		for _, ag := range fw.agrees {
			if _, done := ag.a.Decided(); !done {
				f.sendLocked(fw, ag.a.Failed(i))
				f.checkLocked(fw, ag)
			}
		}
	}
}

// incomingLocked handles a protocol message from job rank src for the World at base.
// A message for a World not made here yet waits for it: no World at base, or one
// released here whose member src has sent its free mark, or of which src is no member.
// A rank's messages arrive in the order it sent them, and a rank frees a World before
// it makes another on its contexts (free.go). A released World's own messages come
// from members whose mark is awaited, the decided agreements' late answers among them.
func (f *ftState) incomingLocked(src int, base uint16, payload []byte) {
	m, err := ulfm.Decode(payload)
	if err != nil {
		return // a malformed message from a rank of this job: its sender is broken, and drops out as failed
	}
	f.mu.Lock()
	fw := f.worlds[base]
	if fw == nil || fw.released && !f.e.ctxs.awaiting(base, src) {
		if f.early == nil {
			f.early = map[uint16][]ftEarly{}
		}
		f.early[base] = append(f.early[base], ftEarly{src, m})
		f.mu.Unlock()
		return
	}
	f.mu.Unlock()
	f.deliverLocked(fw, src, m)
}

// deliverLocked applies message m from job rank src to fw.
func (f *ftState) deliverLocked(fw *ftWorld, src int, m ulfm.Msg) {
	if !fw.has(src) {
		return
	}
	from := int(fw.index[src])
	if m.Kind == ulfm.KindRevoke {
		sends := fw.rv.Recv(from)
		if !fw.released { // after its free marks, they would reach the next World
			f.sendLocked(fw, sends)
		}
		f.revokeLocked(fw)
		return
	}
	ag := fw.agrees[m.Seq]
	if ag == nil {
		if m.Seq >= fw.seq {
			fw.early[m.Seq] = append(fw.early[m.Seq], ftEarly{src, m})
		}
		return // an agreement decided and dropped long ago
	}
	f.recvLocked(fw, ag, from, m)
}

// recvLocked feeds m from member from to ag, or fails ag's call when m does not fit it:
// its sender called another of Agree and Shrink at this point.
func (f *ftState) recvLocked(fw *ftWorld, ag *ftAgree, from int, m ulfm.Msg) {
	if err := ag.a.Fits(from, m); err != nil {
		if ag.r != nil && !ag.r.done {
			f.e.completeLocked(ag.r, invalidf("rank %d called another of Agree and Shrink at this point "+
				"(every rank must call them on a World in the same order): %v", fw.members[from], err))
		}
		return
	}
	f.sendLocked(fw, ag.a.Recv(from, m))
	f.checkLocked(fw, ag)
}

// sendLocked sends the protocol messages of fw's state machines, skipping failed members.
func (f *ftState) sendLocked(fw *ftWorld, sends []ulfm.Send) {
	e := f.e
	if len(fw.owed) > 0 {
		sends = append(fw.owed, sends...)
		fw.owed = nil
	}
	for _, s := range sends {
		jr := fw.members[s.To]
		if jr == e.rank || fw.dead.Has(s.To) {
			continue
		}
		if p := e.links.peers[jr]; p != nil && p.failed != nil {
			continue
		}
		buf := s.M.Append(nil)
		if r := e.startSendLocked(ftCtx, buf, 1, jr, int(fw.base)); r != nil {
			if r.done {
				e.match.recycleLocked(r)
			} else {
				r.detached = true
			}
		}
	}
}

// checkLocked completes ag's request once ag has decided, and takes in the failures the
// decision names: under a detector that is never wrong they are failures of their own.
func (f *ftState) checkLocked(fw *ftWorld, ag *ftAgree) {
	d, ok := ag.a.Decided()
	if !ok || ag.r == nil || ag.r.done {
		return
	}
	f.e.completeLocked(ag.r, nil)
	for _, i := range d.Failed.Members() {
		if i == fw.me || fw.dead.Has(i) {
			continue
		}
		jr := fw.members[i]
		p := f.e.links.peers[jr]
		if p == nil {
			p = f.e.links.placeholderLocked(jr)
		}
		f.e.peerFailedWhyLocked(p, "failed (the survivors' agreement says so)", errAgreedFailed)
	}
}

var errAgreedFailed = errors.New("the agreement of the surviving ranks named it failed")

// agreeLocked runs one agreement of fw with this rank's contribution and returns the
// decision. Called with the engine's mu held, which it releases while it waits.
func (f *ftState) agreeLocked(ctx context.Context, fw *ftWorld, and []uint64) (ulfm.Decision, error) {
	e := f.e
	if lim := min(e.cfg.eagerSHM, e.cfg.eagerTCP); lim < ftMinEager {
		return ulfm.Decision{}, fmt.Errorf("%w: %s=%d: Agree and Shrink need an eager limit of at least %d bytes",
			ErrConfig, EnvEagerLimit, lim, ftMinEager)
	}
	seq := fw.seq
	fw.seq++
	ag := &ftAgree{a: ulfm.NewAgreement(fw.me, len(fw.members), seq, and, fw.dead.Clone()),
		r: e.match.newRequestLocked(e, reqSync)}
	fw.agrees[seq] = ag
	delete(fw.agrees, seq-ftKeep)
	f.sendLocked(fw, ag.a.Start())
	for _, m := range fw.early[seq] {
		if fw.has(m.src) {
			f.recvLocked(fw, ag, int(fw.index[m.src]), m.m)
		}
	}
	delete(fw.early, seq)
	f.checkLocked(fw, ag)
	r := ag.r
	if err := e.waitLocked(ctx, r); err != nil {
		ag.r = nil
		e.match.abandonLocked(r)
		return ulfm.Decision{}, err
	}
	ag.r = nil
	err := r.err
	e.match.recycleLocked(r)
	if err != nil {
		return ulfm.Decision{}, err
	}
	d, _ := ag.a.Decided()
	return d, nil
}

// fenceLocked is Finalize's fence under GORMA_FT with a foreign process manager (Slurm,
// Hydra, Flux), whose own fence waits for every rank, dead ones too: an agreement over
// Init's World, which every surviving rank reaches in Finalize. Called with the engine's
// mu held, which it releases while it waits.
func (f *ftState) fenceLocked(ctx context.Context) error {
	fw := f.worldOf(0)
	if fw == nil {
		return nil
	}
	_, err := f.agreeLocked(ctx, fw, []uint64{0})
	return err
}

// releasedLocked records that the World at base was released here (releaseWorldLocked):
// its contexts freed, its free marks sent, the marks it awaits recorded.
func (f *ftState) releasedLocked(base uint16) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if fw := f.worlds[base]; fw != nil {
		fw.released = true
	}
}

// revokeLocked marks fw revoked and fails what waits on its contexts.
func (f *ftState) revokeLocked(fw *ftWorld) {
	if fw.revoked.Swap(true) {
		return
	}
	f.any.Store(true)
	e := f.e
	on := func(r *Request) bool { return r.ctx >= fw.base && r.ctx < fw.base+ctxPerWorld }
	for _, q := range []*reqQueue{&e.match.posted, &e.match.probes} {
		for r := range q.All() {
			if on(r) {
				q.Remove(&r.link)
				e.completeLocked(r, errRevoked)
			}
		}
	}
	for _, p := range e.links.peers {
		if p == nil {
			continue
		}
		// A send still queued never reached its peer: it leaves the queue and ends now.
		p.out.filter(func(op *outOp) bool {
			r := op.r
			if op.kind == opRead || op.kind == opFIN || r == nil || r.kind != reqSend || !on(r) || r.done {
				return true
			}
			r.outQueued = false
			e.completeLocked(r, errRevoked)
			return false
		})
	}
	for _, r := range e.match.table.slots {
		if r != nil && on(r) && r.kind == reqSend {
			e.revokeSendLocked(r)
		}
	}
	e.poll.kickLocked()
}

// revokeSendLocked ends send r of a revoked World with errRevoked. An offer that has
// left for a live peer outlives r: the peer may be reading it, and answers it with FIN,
// or with msgWithdrawn to the msgCancel sent now. A detached request keeps r's cookie
// and registration until that answer or the peer's failure, so that the answer meets a
// known rendezvous: r itself when its caller gave up already (abandonLocked), else a
// new one. Releasing them at once would make the live peer's read fail, or its FIN look
// forged, and each side would take the other for failed.
func (e *engine) revokeSendLocked(r *Request) {
	var p *peer
	if r.peer != e.rank {
		p = e.links.peers[r.peer]
	}
	if !r.inTable || p == nil || p.failed != nil {
		e.completeLocked(r, errRevoked)
		return
	}
	keeper := r
	if !r.detached {
		keeper = e.match.newRequestLocked(e, reqSend)
		keeper.ctx, keeper.peer, keeper.tag, keeper.buf, keeper.detached = r.ctx, r.peer, r.tag, r.buf, true
		keeper.mr, keeper.mrOwned, keeper.mrCache = r.mr, r.mrOwned, r.mrCache
		keeper.slot, keeper.gen, keeper.inTable = r.slot, r.gen, true
		e.match.table.slots[r.slot] = keeper
		r.mr, r.mrCache, r.inTable = nil, nil, false
	}
	if !r.cancelAsked {
		e.queueCookieLocked(p, msgCancel, keeper.cookie())
	}
	keeper.cancelAsked = true
	if keeper != r {
		e.completeLocked(r, errRevoked)
	}
}

// errRevoked is the error of a call on a revoked World.
var errRevoked = fmt.Errorf("%w: a rank called Revoke on this World; Agree and Shrink still work, "+
	"and Shrink makes a World of the surviving ranks", ErrRevoked)

// Broken returns the error a collective call on w fails with now (substrate.Broken).
func (s *subWorld) Broken() error {
	w := (*World)(s)
	if w.ft != nil && w.ft.revoked.Load() {
		return errRevoked
	}
	e := w.e
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.poll.active {
		e.progressLocked() // its caller waits outside the runtime: take in a revoke
	}
	if w.ft != nil && w.ft.revoked.Load() {
		return errRevoked
	}
	return e.ft.worldFailedLocked(w)
}
