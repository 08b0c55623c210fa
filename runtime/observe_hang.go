package runtime

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/gorma-hpc/gorma/internal/safefile"
	"github.com/gorma-hpc/gorma/internal/trace"
	"github.com/gorma-hpc/gorma/runtime/internal/subcore"
)

// A hang report's part of the timeline: the line that points into it, and the dump of a
// blocked rank, whose open calls are the calls the rank is blocked in.

// hangDump returns the line a hang report carries to point into the timeline
// (trace.Pointer), or "" when the timeline is off. When this rank is blocked (it has
// open calls: openCalls), one of them for dumpAfter or longer, it also writes the flight
// recorder's dump with those calls beside the timeline's file, as <file>.<rank>.gtrc,
// and the line names it; golaunch merges the dumps of a hang into <file>. The dump is
// written again only when the rank recorded an event or its open calls changed since:
// golaunch asks every few seconds (its quiet checks), and a hung rank's dump stays the
// same. A rank that runs, or that is in Finalize (the gatherer has its timeline), writes
// none.
func (o *observer) hangDump(e *engine) string {
	if o.Obs == nil || o.Rec == nil {
		return ""
	}
	rank, file := e.rank, e.cfg.traceFile
	if e.mu.TryLock() { // free while a call waits; else a call holds it, and flushes before it waits again
		o.flushLocked()
		e.mu.Unlock()
	}
	now := o.Rec.Now()
	seq, end, ok := o.Rec.Last()
	line := trace.PointerAt(rank, seq, end, ok, now)
	if e.atExit.Load() {
		return line + " (in Finalize)"
	}
	calls := o.openCalls(e)
	if len(calls) == 0 {
		return line + " (running)"
	}
	if slices.MaxFunc(calls, func(a, b openCall) int { return cmp.Compare(a.since, b.since) }).since < dumpAfter {
		return line + " (blocked for less than " + dumpAfter.String() + ")"
	}
	path := trace.DumpPath(file, rank)
	total, lost := o.Rec.Recorded()
	mark := dumpMark{total, lost, openKey(calls)}
	if mark == o.dumped {
		return line + " (dump " + path + ")"
	}
	d := o.Rec.Snapshot()
	d.Open = o.placeOpen(calls, d, now)
	d.Labels = o.Rec.Labels() // with the open calls' names
	line = trace.Pointer(rank, d, now)
	b, err := trace.AppendDump(nil, d)
	if err == nil {
		err = safefile.WriteFile(path, b, 0o644)
	}
	if err != nil {
		o.dumped = dumpMark{}
		return line + " (no dump: " + err.Error() + ")"
	}
	o.dumped = mark
	return line + " (dump " + path + ")"
}

// dumpAfter is how long a rank's longest open call must have been blocked for its hang
// report to write a dump: a rank of a job that progresses waits briefly, and golaunch's
// quiet checks would otherwise make it write its whole recorder every few seconds.
const dumpAfter = 500 * time.Millisecond

// dumpMark is what a hang dump held: the recorder's counts and its open calls.
type dumpMark struct {
	total, lost uint64
	open        string
}

// openCall is a call this rank is blocked in: its event but for its times, and where its
// start comes from.
type openCall struct {
	ev     trace.Event
	stamp  int64         // the wait's start on the recorder's clock (a Stamp), 0 when it took none
	since  time.Duration // else how long ago it began, to the coarse clock's tick
	follow bool          // a wait of the engine: it starts after the rank's last event
}

// openKey names a set of open calls by their kinds, labels, peers and tags; not by their
// starts, which the coarse clock moves from one report to the next.
func openKey(calls []openCall) string {
	var b []byte
	for _, c := range calls {
		b = fmt.Appendf(b, "%d %d %d %d;", c.ev.Kind, c.ev.Label, c.ev.Peer, c.ev.Tag)
	}
	return string(b)
}

// openCalls returns the calls this rank is blocked in: the engine's blocking waits, and
// the calls the Tracks of the layers above have under way (collectives, window calls).
func (o *observer) openCalls(e *engine) []openCall {
	var calls []openCall
	var names []string // calls[i]'s label, given once no lock is held (LOCKING.md)
	h := &e.watch
	h.mu.Lock()
	for _, t := range h.tracks {
		call, seq, _, since, ok := subcore.TrackRecord(t)
		if !ok {
			continue
		}
		kind := trace.Call
		if seq != 0 {
			kind = trace.Collective
		}
		calls = append(calls, openCall{ev: trace.Event{Kind: kind, Bytes: -1, Peer: trace.NoPeer, Tag: -1},
			since: subcore.Since(since)})
		names = append(names, call)
	}
	h.mu.Unlock()
	e.mu.Lock()
	for _, r := range h.waiting {
		kind, n := trace.Wait, int64(-1)
		if r.inCall && (r.kind == reqSend || r.kind == reqRecv) {
			kind, n = trace.Recv, int64(len(r.buf))
			if r.kind == reqSend {
				kind = trace.Send
			}
		}
		name := r.waitCall
		if !o.user(r.ctx) {
			name += " (internal)"
		}
		calls = append(calls, openCall{ev: trace.Event{Kind: kind, Bytes: n, Peer: max(int32(r.peer), trace.NoPeer),
			Tag: max(int32(r.tag), -1)}, stamp: r.waitObs, since: sinceCoarse(r.waitFrom), follow: true})
		names = append(names, name)
	}
	e.mu.Unlock()
	for i := range calls {
		calls[i].ev.Label = o.Label(names[i])
	}
	return calls
}

// placeOpen returns the open calls of the dump d, taken at now (nanoseconds of the
// recorder's clock): each ends at now. A wait that stamped its start (a Wait on
// requests) starts there. The others start when the coarse clock says (hang.go:
// clockTick), a wait of the engine no earlier than the end of d's last event, which its
// call follows.
func (o *observer) placeOpen(calls []openCall, d trace.Dump, now int64) []trace.Event {
	var last int64
	for _, ev := range d.Events {
		last = max(last, ev.End)
	}
	ns := o.Rec.Clock().Exact()
	open := make([]trace.Event, len(calls))
	for i, c := range calls {
		start := max(now-int64(c.since), 0)
		switch {
		case c.stamp != 0:
			start = ns(c.stamp)
		case c.follow:
			start = max(start, last)
		}
		open[i] = c.ev
		open[i].Start, open[i].End = min(start, now), now
	}
	return open
}
