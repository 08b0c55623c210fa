package runtime

import (
	"context"
	"fmt"
	goruntime "runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unsafe"
)

// Hang records. Each rank keeps, at little cost, what its goroutines are blocked in, so
// that the launcher can ask (pmi.ReportAsked) and print where a job hangs:
//
//   - every blocking wait of the engine (untilLocked: a blocking Send, Recv, Probe, a
//     Request's Wait, WaitAny, Finalize's quiet wait) lists its Request in e.waiting for
//     as long as it waits, with the call, the peer, the tag and the communicator;
//   - a layer above (collectives, window) names its own calls with a Track: Begin at the
//     call's start (three atomic stores, and for a collective call an atomic add that
//     numbers it among the World's collective calls), End at its end (one store);
//   - e.progress counts completed requests, so that two reports tell whether the rank
//     moved in between.
//
// Times come from a coarse clock (clockMs) that the event watcher advances every
// clockTick while the rank is under a launcher that can ask; elsewhere it stays 0 and
// reports give no durations.

// clockTick is the coarse clock's resolution.
const clockTick = 100 * time.Millisecond

var (
	clockStart = time.Now()
	clockMs    atomic.Int64 // milliseconds since clockStart, advanced by tickClock
)

// coarseNow returns the coarse clock plus one, so that 0 means "not waiting".
func coarseNow() int64 { return clockMs.Load() + 1 }

// tickClock advances the coarse clock.
func tickClock() { clockMs.Store(time.Since(clockStart).Milliseconds()) }

// sinceCoarse converts a coarseNow stamp into the time elapsed since it.
func sinceCoarse(stamp int64) time.Duration {
	if stamp == 0 {
		return 0
	}
	return time.Duration(clockMs.Load()-(stamp-1)) * time.Millisecond
}

// startWaitLocked lists r as waiting in call.
func (e *engine) startWaitLocked(r *Request, call string) {
	r.waitFrom, r.waitCall, r.waitIdx = coarseNow(), call, len(e.waiting)
	e.waiting = append(e.waiting, r)
}

// endWaitLocked takes r off the waiting list.
func (e *engine) endWaitLocked(r *Request) {
	i := r.waitIdx
	if i < 0 || i >= len(e.waiting) || e.waiting[i] != r {
		return
	}
	last := len(e.waiting) - 1
	e.waiting[i] = e.waiting[last]
	e.waiting[i].waitIdx = i
	e.waiting[last] = nil
	e.waiting = e.waiting[:last]
	r.waitFrom, r.waitIdx = 0, -1
}

// waitName is the name a blocking wait of r reports when untilLocked is not told one.
func waitName(r *Request, quiet bool, set []*Request, finalizing bool) string {
	switch {
	case quiet || finalizing:
		return "Finalize"
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

// A Track names the calls of a layer above the runtime (a collective, a window call) in
// this rank's hang reports. One goroutine at a time runs a Track's calls (Begin ... End);
// reports read it from another goroutine.
type Track struct {
	e     *engine
	calls *atomic.Uint64 // the World's collective calls
	comm  string
	name  atomic.Pointer[byte] // the call's name (static text), nil between calls
	word  atomic.Uint64        // len(name)<<48 | the call's number on the World
	since atomic.Int64         // coarseNow at Begin
}

// NewTrack returns a Track for calls on w, reported until Close.
func (w *World) NewTrack() *Track {
	calls := w.calls.Load()
	if calls == nil {
		w.calls.CompareAndSwap(nil, new(atomic.Uint64))
		calls = w.calls.Load()
	}
	t := &Track{e: w.e, calls: calls, comm: w.commName()}
	w.e.tracksMu.Lock()
	w.e.tracks = append(w.e.tracks, t)
	w.e.tracksMu.Unlock()
	return t
}

// Close stops reporting t.
func (t *Track) Close() {
	e := t.e
	e.tracksMu.Lock()
	defer e.tracksMu.Unlock()
	for i, x := range e.tracks {
		if x == t {
			e.tracks = append(e.tracks[:i], e.tracks[i+1:]...)
			return
		}
	}
}

// Begin marks the start of call (a name of at most 64 KiB, normally a constant) on the
// Track's World. A collective call (one every rank of the World makes, in the same
// order) gets the next number of the World's collective calls, counted across all its
// Tracks (the collectives' and the windows'), so that reports of two ranks compare;
// another call gets none.
func (t *Track) Begin(call string, collective bool) {
	var seq uint64
	if collective {
		seq = t.calls.Add(1)
	}
	t.since.Store(coarseNow())
	t.word.Store(uint64(len(call))<<48 | seq&(1<<48-1))
	t.name.Store(unsafe.StringData(call))
}

// End marks the end of the call Begin named.
func (t *Track) End() { t.name.Store(nil) }

// commName names a World in reports: "World" for Init's, "World#k" for the k-th context
// Dup or Split made, with ".sibling" for a Sibling's.
func (w *World) commName() string {
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

// HangRecord is one call a rank is blocked in, as HangReport gives it.
type HangRecord struct {
	Call  string        // "Recv", "Send", "Probe", "WaitAny", "Barrier", "Finalize", or a Track's call
	Comm  string        // the World ("World", "World#2", ...)
	Seq   uint64        // a Track's call number on Comm, 0 for the runtime's own waits
	Peer  int           // the peer rank (AnySource for any), or -2 when the call names none
	Tag   int           // the tag (AnyTag for any), meaningful with Peer >= -1
	Since time.Duration // how long it has been blocked (0 where the clock does not run)
}

// hangRecords returns what this rank is blocked in: the Tracks' calls under way, then
// the engine's waits, longest first. A wait on a Sibling's context (the collectives' and
// windows' own traffic) is left out while a Track names the call it serves.
func (e *engine) hangRecords() (recs []HangRecord, progress uint64) {
	e.tracksMu.Lock()
	for _, t := range e.tracks {
		p := t.name.Load()
		if p == nil {
			continue
		}
		w := t.word.Load()
		recs = append(recs, HangRecord{Call: unsafe.String(p, int(w>>48)), Comm: t.comm, Seq: w & (1<<48 - 1),
			Peer: -2, Since: sinceCoarse(t.since.Load())})
	}
	e.tracksMu.Unlock()
	tracked := len(recs) > 0
	e.mu.Lock()
	for _, r := range e.waiting {
		call := r.waitCall
		if r.ctx%2 == 1 && r.ctx%4 < 2 && call != "Finalize" {
			call = "Barrier" // a World's internal context carries its Barrier
		}
		if r.ctx%4 >= 2 && tracked {
			continue
		}
		rec := HangRecord{Call: call, Comm: ctxName(r.ctx &^ 1), Peer: r.peer, Tag: r.tag, Since: sinceCoarse(r.waitFrom)}
		if call == "Finalize" || call == "Barrier" || call == "WaitAny" {
			rec.Peer = -2
		}
		recs = append(recs, rec)
	}
	progress = e.progress
	e.mu.Unlock()
	sortBySince(recs)
	return recs, progress
}

func sortBySince(recs []HangRecord) {
	for i := 1; i < len(recs); i++ {
		for j := i; j > 0 && recs[j].Since > recs[j-1].Since; j-- {
			recs[j], recs[j-1] = recs[j-1], recs[j]
		}
	}
}

// String formats r as a report line shows it: "Recv(src=1, tag=0, World)".
func (r HangRecord) String() string {
	var b strings.Builder
	b.WriteString(r.Call)
	if r.Seq > 0 {
		b.WriteString(" #")
		b.WriteString(strconv.FormatUint(r.Seq, 10))
	}
	b.WriteString("(")
	if r.Peer >= -1 {
		dir := "src"
		if r.Call == "Send" {
			dir = "dest"
		}
		peer := strconv.Itoa(r.Peer)
		if r.Peer == AnySource {
			peer = "any"
		}
		tag := strconv.Itoa(r.Tag)
		if r.Tag == AnyTag {
			tag = "any"
		}
		b.WriteString(dir + "=" + peer + ", tag=" + tag + ", ")
	}
	b.WriteString(r.Comm + ")")
	return b.String()
}

// reportWait bounds the delivery of one report to the agent.
const reportWait = 5 * time.Second

// answerReport sends the agent this rank's hang report (pmi.ReportAsked), with every
// goroutine's stack when stacks is set.
func (e *engine) answerReport(stacks bool) {
	rp, ok := e.pm.(interface {
		Report(ctx context.Context, text string) error
	})
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(e.stop, reportWait)
	defer cancel()
	rp.Report(ctx, e.hangReport(stacks))
}

// hangReport is this rank's report: a header line (rank, host, progress), one line per
// record, then the stacks when asked.
func (e *engine) hangReport(stacks bool) string {
	recs, progress := e.hangRecords()
	var b strings.Builder
	fmt.Fprintf(&b, "rank=%d host=%s progress=%d\n", e.rank, e.host, progress)
	for _, r := range recs {
		fmt.Fprintf(&b, "%s for %.1fs\n", r, r.Since.Seconds())
	}
	if stacks {
		buf := make([]byte, 1<<20)
		b.Write(buf[:goruntime.Stack(buf, true)])
	}
	return b.String()
}
