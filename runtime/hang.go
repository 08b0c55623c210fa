package runtime

import (
	"bytes"
	"cmp"
	"maps"
	goruntime "runtime"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/gorma-hpc/gorma/internal/hang"
	"github.com/gorma-hpc/gorma/pmi"
	"github.com/gorma-hpc/gorma/runtime/internal/subcore"
)

// Hang records. Each rank keeps, at little cost, what its goroutines are blocked in, so
// that the launcher can ask (pmi.ReportAsked) and print where a job hangs:
//
//   - every blocking wait of the engine (untilLocked: a blocking Send, Recv, Probe, a
//     Request's Wait, WaitAny, Finalize's quiet wait) lists its Request in the hangWatch for
//     as long as it waits, with the call, the peer, the tag and the communicator. The call
//     is the one the program made (waitName): Ssend, Rsend, Sendrecv, Mrecv; a wait on a
//     Request names the call that started it (Isend, Issend, Irecv, Bsend for
//     BufferDetach's wait);
//   - a layer above (collectives, window) names its own calls with a Track. Begin runs at
//     the call's start: three atomic stores, and for a collective call an atomic add that
//     numbers it among the World's collective calls. End runs at its end: one store, and
//     for a collective call four more that keep it among the Track's last ended calls.
//     The report lists those as Done;
//   - e.match.completed counts completed requests, so that two reports tell whether the
//     rank moved in between.
//
// Times come from a coarse clock (subcore.Now) that the event watcher advances every
// clockTick while the rank is under a launcher that can ask; elsewhere it stays 0 and
// reports give no durations.

// clockTick is the coarse clock's resolution (subcore.Tick).
const clockTick = 100 * time.Millisecond

// coarseNow returns the coarse clock plus one, so that 0 means "not waiting".
func coarseNow() int64 { return subcore.Now() }

// tickClock advances the coarse clock.
func tickClock() { subcore.Tick() }

// sinceCoarse converts a coarseNow stamp into the time elapsed since it.
func sinceCoarse(stamp int64) time.Duration { return subcore.Since(stamp) }

// startWaitLocked lists r as waiting in call.
func (h *hangWatch) startWaitLocked(r *Request, call string) {
	r.waitFrom, r.waitCall, r.waitIdx = coarseNow(), call, len(h.waiting)
	h.e.obs.flushDueLocked() // off the path of what the rank waits for
	if !r.inCall {
		r.waitObs = h.e.obs.stamp()
	}
	h.waiting = append(h.waiting, r)
}

// endWaitLocked takes r off the waiting list.
func (h *hangWatch) endWaitLocked(r *Request) {
	i := r.waitIdx
	if i < 0 || i >= len(h.waiting) || h.waiting[i] != r {
		return
	}
	last := len(h.waiting) - 1
	h.waiting[i] = h.waiting[last]
	h.waiting[i].waitIdx = i
	h.waiting[last] = nil
	h.waiting = h.waiting[:last]
	r.waitFrom, r.waitIdx = 0, -1
	if r.waitObs != 0 {
		h.e.obs.waitEventLocked(r.waitObs, r.ctx, r.peer, r.waitCall)
		r.waitObs = 0
	}
}

// waitName is the name a blocking wait of r reports: Finalize's, else the user's call that
// started r (Ssend, Issend, Sendrecv...), else WaitAny's for a set, else r's kind.
func waitName(r *Request, quiet bool, set []*Request, finalizing bool) string {
	switch {
	case quiet || finalizing:
		return "Finalize"
	case r.call != callNone:
		return r.call.String()
	case set != nil:
		return "WaitAny"
	}
	switch r.kind {
	case reqSend:
		return "Send"
	case reqRecv:
		return "Recv"
	case reqProbe:
		return "Probe"
	}
	return "Wait"
}

// trackOps is the runtime's side of the Tracks (subcore.TrackOps): the engine's list of
// them, and GORMA_CHECK=1's messages (callcheck.go).
type trackOps struct{ e *engine }

// NewTrack returns a Track for calls on w, reported until Close (substrate.NewTrack).
func (s *subWorld) NewTrack() *subcore.Track {
	w := (*World)(s)
	if on := w.k.trackOn(w); on != w {
		// An intercommunicator's calls are made in the same order by the ranks of its
		// local group, whose World its reports name.
		return (*subWorld)(on).NewTrack()
	}
	calls := w.calls.Load()
	if calls == nil {
		w.calls.CompareAndSwap(nil, new(atomic.Uint64))
		calls = w.calls.Load()
	}
	info := subcore.TrackInfo{Comm: commName(w), Ctx: w.ctx, Me: w.Rank(), Size: w.Size(), Internal: w.internal.Load()}
	info.Members = w.k.members(w)
	t := subcore.NewTrack(trackOps{w.e}, calls, info)
	w.e.watch.mu.Lock()
	w.e.watch.tracks = append(w.e.watch.tracks, t)
	w.e.watch.mu.Unlock()
	return t
}

// MarkInternal marks w as a layer's own World (the window package's Dup, say): hang
// reports leave out the calls on it while a call on another World is under way, which
// it serves, and the profile does not count its messages and calls as the user's.
func (s *subWorld) MarkInternal() {
	w := (*World)(s)
	w.internal.Store(true)
	w.e.obs.markInternal(w.ctx, true) // its messages and calls are the layer's, not the user's
	h := &w.e.watch
	h.mu.Lock()
	if h.inner == nil {
		h.inner = make(map[uint16]bool)
	}
	h.inner[w.ctx/4] = true
	h.mu.Unlock()
}

// CloseTrack stops reporting t.
func (o trackOps) CloseTrack(t *subcore.Track) {
	h := &o.e.watch
	h.mu.Lock()
	defer h.mu.Unlock()
	for i, x := range h.tracks {
		if x == t {
			h.tracks = append(h.tracks[:i], h.tracks[i+1:]...)
			return
		}
	}
}

// commName names a World in reports: "World" for Init's, "World#k" for the k-th context
// Dup or Split made, with ".sibling" for a Sibling's.
func commName(w *World) string {
	return ctxName(w.ctx)
}

func ctxName(ctx uint16) string {
	base := int(ctx / 4)
	name := "World"
	if base > 0 {
		name += "#" + strconv.Itoa(base)
	}
	if ctx%4 >= 2 {
		name += ".sibling"
	}
	return name
}

// hangRecords returns what this rank is blocked in: the Tracks' calls under way, then
// the engine's waits, longest first; the last collective calls the Tracks ended
// (subcore.TrackDone), so that a rank that returned early from a call shows which; and
// its progress: the messages it completed, the
// calls its Tracks ended and the collective calls its Worlds numbered. A rank whose only
// traffic is shared memory (collectives, RMA epochs) moves it with every call. A wait on a Sibling's context (the collectives' and
// windows' own traffic) is left out while a Track names the call it serves.
func (h *hangWatch) hangRecords() (recs, done []hang.Record, progress uint64) {
	e := h.e
	h.mu.Lock()
	outer := false // a call on a World not marked internal is under way
	for _, t := range h.tracks {
		outer = outer || (!subcore.Info(t).Internal && subcore.Busy(t))
	}
	var calls uint64 // the Tracks' progress: calls that end, collective or not, RMA epochs among them
	for _, t := range h.tracks {
		calls += subcore.Progress(t)
	}
	for _, t := range h.tracks {
		info := subcore.Info(t)
		call, seq, sig, since, ok := subcore.TrackRecord(t)
		if !ok || (info.Internal && outer) {
			continue
		}
		rec := hang.Record{Call: call, Comm: info.Comm, Members: info.Members,
			Seq: seq, Peer: hang.NoRank, Root: -1, Count: -1, Since: subcore.Since(since)}
		if sig != nil {
			rec.Count, rec.Type, rec.Op, rec.Root, rec.Win = sig.Count, sig.Type, sig.Op, sig.Root, sig.Win
		}
		recs = append(recs, rec)
	}
	for _, t := range h.tracks {
		info := subcore.Info(t)
		subcore.TrackDone(t, func(call string, seq uint64, sig *subcore.CallSig) {
			rec := hang.Record{Call: call, Comm: info.Comm, Members: info.Members, Seq: seq, Peer: hang.NoRank, Root: -1, Count: -1}
			if sig != nil {
				rec.Count, rec.Type, rec.Op, rec.Root, rec.Win = sig.Count, sig.Type, sig.Op, sig.Root, sig.Win
			}
			done = append(done, rec)
		})
	}
	inner := maps.Clone(h.inner)
	h.mu.Unlock()
	tracked := len(recs) > 0
	e.mu.Lock()
	for _, r := range h.waiting {
		call := r.waitCall
		if r.ctx%2 == 1 && r.ctx%4 < 2 && call != "Finalize" {
			call = "Barrier" // a World's internal context carries its Barrier
		}
		if tracked && (r.ctx%4 >= 2 || inner[r.ctx/4]) {
			continue
		}
		rec := hang.Record{Call: call, Comm: ctxName(r.ctx &^ 1), Peer: r.peer, Tag: r.tag, Root: -1, Count: -1,
			Since: sinceCoarse(r.waitFrom)}
		if call == "Finalize" || call == "Barrier" || r.kind == reqSync { // WaitAny's and WaitSome's token: no peer
			rec.Peer = hang.NoRank
		}
		recs = append(recs, rec)
	}
	progress = e.match.completed + calls
	e.mu.Unlock()
	slices.SortStableFunc(recs, func(a, b hang.Record) int { return cmp.Compare(b.Since, a.Since) })
	return recs, done, progress
}

// answerReport sends the agent this rank's hang report (pmi.ReportAsked), with every
// goroutine's stack when stacks is set.
func (h *hangWatch) answerReport(stacks bool) {
	if rp, ok := h.e.pm.(interface{ Report(text string) error }); ok {
		rp.Report(h.hangReport(stacks))
	}
}

// apiNames sets each record's API name from the function of substrate.NameCalls.
func apiNames(recs []hang.Record) {
	f := subcore.CallNames.Load()
	if f == nil {
		return
	}
	for i := range recs {
		if n := (*f)(recs[i].Call); n != recs[i].Call {
			recs[i].API = n
		}
	}
}

// hangReport is this rank's report (hang.AppendReport's text): its records and
// progress, and every goroutine's stack when stacks is set.
func (h *hangWatch) hangReport(stacks bool) string {
	e := h.e
	recs, done, progress := h.hangRecords()
	apiNames(recs)
	apiNames(done)
	rep := hang.Report{Rank: e.rank, Host: e.host, State: hang.Running, Records: recs, Done: done, Progress: progress,
		Trace: e.obs.hangDump(e)}
	if len(recs) > 0 {
		rep.State = hang.Blocked
	}
	// The report must fit pmi.MaxReport to parse at the launcher: Done records beyond it
	// go, the first Tracks' oldest first.
	rep.Done = rep.Done[max(len(rep.Done)-hang.MaxRecords, 0):] // what AppendReport keeps
	for size := len(hang.AppendReport(nil, rep)); size > pmi.MaxReport-64 && len(rep.Done) > 0; rep.Done = rep.Done[1:] {
		size -= len(hang.AppendRecord(nil, rep.Done[0])) + 1
	}
	if stacks {
		// The stacks fill what the report line leaves (pmi.MaxReport), cut after the
		// last whole goroutine that fits.
		room := pmi.MaxReport - len(hang.AppendReport(nil, rep)) - 64
		buf := make([]byte, 1<<20)
		st := buf[:goruntime.Stack(buf, true)]
		if len(st) > room {
			st = st[:max(room, 0)]
			if i := bytes.LastIndex(st, []byte("\n\ngoroutine ")); i >= 0 {
				st = st[:i+1]
			}
			st = append(st, "(more goroutines left out)\n"...)
		}
		rep.Stacks = string(st)
	}
	return string(hang.AppendReport(nil, rep))
}
