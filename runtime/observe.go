package runtime

import (
	"context"
	"fmt"
	"os"
	gotrace "runtime/trace"
	"strconv"
	"sync/atomic"
	"syscall"

	"github.com/gorma-hpc/gorma/internal/prof"
	"github.com/gorma-hpc/gorma/internal/trace"
	"github.com/gorma-hpc/gorma/pmi"
	"github.com/gorma-hpc/gorma/runtime/internal/subcore"
)

// Observation. Under GORMA_PROFILE, GORMA_SUMMARY or GORMA_TRACE a rank observes its own
// calls (subcore.Obs): per peer the bytes and messages it sends, per call kind the calls,
// bytes and time (internal/prof), and a timeline of its calls in a flight recorder
// (internal/trace). Finalize writes the outputs (observe_out.go). Off, every hook is one
// nil check that the compiler inlines; its work is in a function of its own (the ...On
// functions), called only when observation is on.
//
// A message's flow number (internal/trace/design.md) is its place in the sender's stream
// to its receiver. The sender numbers each eager message and rendezvous offer when it
// enters the engine (numberLocked: sendLocked and the fast-box path of startSendLocked);
// the receiver counts each one as it arrives (arrivedLocked: incomingLocked and
// sendSelfLocked), before matching or discarding it. The runtime keeps a pair's messages
// in the order they entered the engine, so the two counts agree. The engine's control
// messages take numbers too, but start no flow: no receive takes them.

// The environment variables of observation, read by Init (docs/api.md's knobs table).
const (
	envProfile     = "GORMA_PROFILE"      // a folder: prof.<rank>.prof, prof.<rank>.json; the gatherer adds the job's files
	envTrace       = "GORMA_TRACE"        // a file: the gatherer writes the job's timeline there (Chrome trace-event JSON)
	envSummary     = "GORMA_SUMMARY"      // 1: rank 0 prints the profile's summary to stderr at Finalize
	envTraceEvents = "GORMA_TRACE_EVENTS" // the events each rank's flight recorder keeps
)

// defaultTraceEvents is the flight recorder's size in events (56 bytes each).
const defaultTraceEvents = 1 << 17

// observer is the part that observes this rank's calls. Obs is nil when observation is
// off; sent and got are guarded by the engine's mu and nil when the timeline is off.
type observer struct {
	*subcore.Obs
	local     *prof.Local                                // the profile's counts of the engine's calls and messages, guarded by its mu
	batch     *trace.Batch                               // the engine's events on their way to the recorder, guarded by its mu (flushLocked)
	sent, got []uint64                                   // by job rank: messages numbered to it, messages counted from it
	carry     bool                                       // a send call records its message's flow itself (carryLocked)
	flow      uint64                                     // the number given while carry was set
	offsets   []int64                                    // at rank 0: each host leader's clock offset, measured at Init (align)
	leaders   []int                                      // at rank 0: each rank's host leader (align)
	labels    [2][nLabels]uint16                         // [0]: a user's call; [1]: a layer's or the runtime's own (internal)
	lastWait  string                                     // the call of the last Wait event, guarded by the engine's mu
	waitInner bool                                       // whether that Wait was on an internal context
	waitLabel uint16                                     // its label
	inner     *[1 << 16 / ctxPerWorld / 64]atomic.Uint64 // a bit per World context: marked internal (markInternal)
	late      *timeline                                  // at the gatherer: the timeline to merge at the end of Finalize (observe_out.go)
	dumped    dumpMark                                   // what the last hang dump held: only the goroutine that answers reports touches it (hangDump)
}

// The timeline's labels of the engine's own events.
const (
	lSend = iota
	lRecv
	lIsend
	lIrecv
	lSendrecv
	lSsend
	lOut
	lIn
	lBarrier
	lBarrierInter
	lRevoke
	lAgree
	lShrink
	nLabels
)

var labelNames = [nLabels]string{"Send", "Recv", "Isend", "Irecv", "Sendrecv", "Ssend", "message out", trace.MatchName,
	"Barrier dissemination", "Barrier inter", "Revoke", "Agree", "Shrink"}

// init readies o for job rank rank of size ranks as cfg asks.
func (o *observer) init(cfg *config, rank, size int) {
	events := 0
	if cfg.traceFile != "" {
		events = cfg.traceEvents
	}
	var err error
	o.Obs, err = subcore.NewObs(rank, size, cfg.profDir != "" || cfg.summary, events, cfg.traceRing)
	if cfg.traceRing != nil {
		cfg.traceRing.Close() // mapped, or of no use
		cfg.traceRing = nil
	}
	if err != nil {
		o.warn(rank, fmt.Errorf("its flight recorder is not in golaunch's ring file (a crash loses its timeline): %w", err))
	}
	if o.Obs == nil {
		return
	}
	o.local = o.NewLocal()
	o.inner = new([1 << 16 / ctxPerWorld / 64]atomic.Uint64)
	if o.Rec == nil {
		return
	}
	o.sent, o.got = make([]uint64, size), make([]uint64, size)
	o.batch = trace.NewBatch(o.Rec)
	for i, n := range labelNames {
		o.labels[0][i] = o.Label(n)
		o.labels[1][i] = o.Label(n + trace.Internal)
	}
}

// userCtx reports whether ctx carries a World's user messages (not its internal
// traffic, a Sibling's, or the engine's control).
func userCtx(ctx uint16) bool { return ctx%ctxPerWorld == 0 && ctx < splitTop }

// user reports whether ctx carries a user's messages: userCtx, and not a World a layer
// marked internal (topo's neighbourhood World, a window's), whose layer counts its calls.
func (o *observer) user(ctx uint16) bool {
	return userCtx(ctx) && o.inner[ctx/ctxPerWorld/64].Load()&(1<<(ctx/ctxPerWorld%64)) == 0
}

// markInternal records that the World of context ctx is a layer's (MarkInternal), or
// with on false that it is not (at Free, as a later World may get the context).
func (o *observer) markInternal(ctx uint16, on bool) {
	if o.Obs == nil {
		return
	}
	w, bit := &o.inner[ctx/ctxPerWorld/64], uint64(1)<<(ctx/ctxPerWorld%64)
	if on {
		w.Or(bit)
	} else {
		w.And(^bit)
	}
}

// internal is 1 for a context of internal traffic, 0 for a user's.
func (o *observer) internal(ctx uint16) int {
	if o.user(ctx) {
		return 0
	}
	return 1
}

// numberLocked numbers a message of n bytes on ctx to job rank peer as it enters the
// engine, and counts it in the profile when it is a user's point-to-point message. It
// returns the clock when the timeline is on (the caller then calls sentLocked once the
// message is posted), else 0.
func (o *observer) numberLocked(ctx uint16, peer, n int) int64 {
	if o.Obs == nil {
		return 0
	}
	return o.number(ctx, peer, n)
}

func (o *observer) number(ctx uint16, peer, n int) int64 {
	if o.user(ctx) {
		o.local.Send(peer, n)
	}
	if o.Rec == nil || peer >= len(o.sent) {
		return 0
	}
	o.sent[peer]++
	if ctx >= ftCtx {
		// The engine's control messages (Free's marks, --ft's news) take a number, as
		// the receiver counts every arrival, but no receive takes them: no flow.
		return 0
	}
	if o.carry {
		o.flow = o.sent[peer]
		return 0
	}
	return o.Stamp()
}

// carryLocked makes the message that a send call posts next carry its flow on the
// call's own event (endSend) rather than on an event of its own: one event and two clock
// reads less per message. flowLocked ends it and returns the message's number. Both run
// with the engine's mu held, and nothing waits between them.
func (o *observer) carryLocked() {
	o.carry, o.flow = o.Obs != nil, 0
}

// flowLocked ends carryLocked and returns the number it gave, 0 for none.
func (o *observer) flowLocked() uint64 {
	o.carry = false
	return o.flow
}

// sentLocked records the message numberLocked numbered at t0, now posted, as a Send
// event that starts its flow. The event lasts at least Obs.Span, so that the flow binds
// inside it (internal/trace.Merge).
func (o *observer) sentLocked(t0 int64, ctx uint16, peer, tag, n int) {
	if t0 != 0 {
		o.sentOn(t0, ctx, peer, tag, n)
	}
}

func (o *observer) sentOn(t0 int64, ctx uint16, peer, tag, n int) {
	o.batch.Put(trace.Send, t0, max(o.Stamp(), t0+o.Span()), int64(n), o.sent[peer], int32(peer), int32(tag),
		o.labels[o.internal(ctx)][lOut])
}

// arrivedLocked counts a message from job rank src as it arrives and returns its flow
// number, 0 when the timeline is off.
func (o *observer) arrivedLocked(src int) uint64 {
	if src >= len(o.got) {
		return 0
	}
	o.got[src]++
	return o.got[src]
}

// begin starts observing a send or receive on ctx; kind is prof.CallSend,
// prof.CallRecv or prof.CallSendrecv. Only a user's call counts in the profile; a call on
// an internal context is a timeline event only.
func (o *observer) begin(ctx uint16, kind prof.CallKind) subcore.ObsCall {
	if o.Obs == nil {
		return subcore.ObsCall{}
	}
	return o.beginOn(ctx, kind, false)
}

// beginLaterLocked is begin for a call that holds the engine's mu until it ends: it
// counts in the engine's own counts (local), with plain adds. Where the timeline alone
// observes, the call's start is read only once the caller calls Start, before the call
// waits (subcore.Obs.Later).
func (o *observer) beginLaterLocked(ctx uint16, kind prof.CallKind) subcore.ObsCall {
	if o.Obs == nil {
		return subcore.ObsCall{}
	}
	return o.laterOn(ctx, kind)
}

func (o *observer) laterOn(ctx uint16, kind prof.CallKind) subcore.ObsCall {
	if o.Prof == nil {
		return o.Later(kind)
	}
	return o.beginOn(ctx, kind, true)
}

func (o *observer) beginOn(ctx uint16, kind prof.CallKind, locked bool) subcore.ObsCall {
	switch {
	case !o.user(ctx):
		return o.Track(kind)
	case locked:
		return o.BeginLocked(o.local, kind)
	}
	return o.Begin(kind)
}

// endSend records the send call c of n bytes to job rank peer with tag; flow is its
// message's number when the call carries it (carryLocked), else 0 and the message's own
// event (sentLocked) nests inside. Only a user's send counts as a call in the profile.
// The caller holds the engine's mu, as for every event of the engine's (flushLocked).
func (o *observer) endSend(c subcore.ObsCall, ctx uint16, label int, peer, tag, n int, flow uint64) {
	if c.On() {
		o.sendOn(c, ctx, label, peer, tag, n, flow)
	}
}

func (o *observer) sendOn(c subcore.ObsCall, ctx uint16, label int, peer, tag, n int, flow uint64) {
	end := c.Finish(n) // the profile counts only a user's call (beginOn)
	if o.Rec != nil {
		start := c.Started()
		if start == 0 { // a call begun with Later that never waited
			start = end - o.Span()
		}
		o.batch.Put(trace.Send, start, max(end, start+o.Span()), int64(n), flow, int32(peer), int32(tag),
			o.labels[o.internal(ctx)][label])
	}
}

// endRecv records the receive c on ctx from job rank src (trace.NoPeer when unknown) of n
// bytes. m is what its wait learned: its message's number when the call carries it
// (matched), else 0, and the stamps of its wait's start and its match. A Recv event with
// a flow holds its message's Match at its end, which the merge writes (trace.MatchName):
// a receive records one event. A Later call reads the clock once, at its match; one that
// waits takes its start from the wait (polled.stamps).
func (o *observer) endRecv(c subcore.ObsCall, ctx uint16, label int, src, tag, n int, m recvMark) {
	if c.On() {
		o.recvOn(c, ctx, label, src, tag, n, m)
	}
}

func (o *observer) recvOn(c subcore.ObsCall, ctx uint16, label int, src, tag, n int, m recvMark) {
	end, flow := c.FinishAt(n, m.at), m.flow
	if o.Rec == nil {
		return
	}
	start := c.Started()
	if start == 0 {
		start = m.from
	}
	if start == 0 { // a call begun with Later that never waited
		start = end - 2*o.Span()
	}
	end = max(end, start+2*o.Span()) // long enough to hold its Match (trace.MatchName)
	o.batch.Put(trace.Recv, start, end, int64(n), flow, int32(src), int32(tag), o.labels[o.internal(ctx)][label])
}

// matched records the match of the message number flow on ctx from job rank src, of n
// bytes with tag, into receive r: a Match event of Obs.Span (so that the flow binds inside
// it) at that moment. A blocking receive call under observation (r.carry) takes the
// number instead, and records the Match at its own end (endRecv), which saves a clock
// read: the receive returns once it has the data. Where the timeline alone observes, an
// eager message's match reads that end now; a rendezvous read has only begun, and the
// receive reads its end once the read is done.
func (o *observer) matched(r *Request, flow uint64, ctx uint16, src, tag, n int) {
	if flow != 0 {
		if r.carry {
			r.flow = flow
			if o.Prof == nil && r.done { // a Later call (Obs.Later) whose data is in: its end is now
				r.obsAt = o.Stamp()
			}
			return
		}
		o.matchedOn(flow, ctx, src, tag, n)
	}
}

func (o *observer) matchedOn(flow uint64, ctx uint16, src, tag, n int) {
	t := o.Stamp()
	o.batch.Put(trace.Match, t, t+o.Span(), int64(n), flow, int32(src), int32(tag), o.labels[o.internal(ctx)][lIn])
}

// flushLocked stores the engine's batched events in the recorder: before a snapshot,
// and in a wait that goes round (untilLocked), so that recording costs the path from a
// message's arrival to the next send no atomic operation.
func (o *observer) flushLocked() {
	if o.batch != nil {
		o.batch.Flush()
	}
}

// flushDueLocked is flushLocked when the batch is Due: the engine calls it as a wait
// starts, so that a flush's atomic add is shared by many events. Events held meanwhile
// lie in the ring file (trace.Batch), and a hang report flushes them (hangDump).
func (o *observer) flushDueLocked() {
	if o.batch != nil && o.batch.Due() {
		o.batch.Flush()
	}
}

// alone returns the Obs where the timeline alone observes (Obs.Later's calls), else
// nil: the clock an observed Recv's wait reads as it starts (polled.stamps).
func (o *observer) alone() *subcore.Obs {
	if o.Obs == nil || o.Rec == nil || o.Prof != nil {
		return nil
	}
	return o.Obs
}

// waitEventLocked records a wait in call, from start (a Stamp) to now, on a request of
// context ctx whose peer is peer. A wait on an internal context (a collective's receive,
// a layer's) is named "call (internal)", apart from the program's own.
func (o *observer) waitEventLocked(start int64, ctx uint16, peer int, call string) {
	o.batch.Put(trace.Wait, start, o.Stamp(), 0, 0, int32(peer), -1, o.waitLabelLocked(call, !o.user(ctx)))
}

// ulfmEvent records the ULFM call of label (lRevoke, lAgree, lShrink) on a World of
// context ctx, from start (stamp's) to now, when the timeline is on.
func (o *observer) ulfmEvent(start int64, ctx uint16, label int) {
	if start != 0 {
		o.Event(trace.Call, start, -1, trace.NoPeer, o.labels[o.internal(ctx)][label])
	}
}

// barrierBegin starts observing a Barrier of w when w carries a user's calls: not a
// Sibling (userCtx) nor a World a layer marked internal (a window's), whose layer counts
// its own call.
func (o *observer) barrierBegin(w *World) subcore.ObsCall {
	if o.Obs == nil || !o.user(w.ctx) {
		return subcore.ObsCall{}
	}
	return o.Begin(prof.CallBarrier)
}

// barrierEnd records the Barrier c of w: a collective message of 0 bytes to each rank w
// addresses (the other group's ranks on an intercommunicator), as Open MPI's coll
// monitoring counts a barrier, and a Collective event named by its algorithm.
func (o *observer) barrierEnd(c subcore.ObsCall, w *World) {
	if !c.On() {
		return
	}
	n, label := w.Size(), lBarrier
	if w.IsInter() {
		n, label = w.RemoteSize(), lBarrierInter
	}
	for r := range n {
		if jr, _ := jobRank(w, r); jr != w.e.rank {
			o.Coll(nil, nil, jr, 0)
		}
	}
	c.End(trace.Collective, 0, trace.NoPeer, -1, o.labels[0][label])
}

// waitLabelLocked returns the label of a Wait event of call, on an internal context when
// inner: the last one's without a lookup, as waits repeat the same call.
func (o *observer) waitLabelLocked(call string, inner bool) uint16 {
	if call != o.lastWait || inner != o.waitInner || o.waitLabel == 0 {
		name := call
		if inner {
			name += " (internal)"
		}
		o.lastWait, o.waitInner, o.waitLabel = call, inner, o.Label(name)
	}
	return o.waitLabel
}

// stamp returns the observer's clock when the timeline is on, else 0.
func (o *observer) stamp() int64 {
	if o.Obs == nil || o.Rec == nil {
		return 0
	}
	return o.Stamp()
}

// Observe returns the rank's observer and the job ranks of w's peers (substrate.Observe).
func (s *subWorld) Observe() (*subcore.Obs, []int) {
	w := (*World)(s)
	if w.e.obs.Obs == nil {
		return nil, nil
	}
	if _, whole := w.k.(whole); whole {
		return w.e.obs.Obs, nil
	}
	return w.e.obs.Obs, w.g.ranks
}

// readObserve reads the observation's variables into cfg.
func readObserve(cfg *config, getenv func(string) string) error {
	cfg.profDir, cfg.traceFile = getenv(envProfile), getenv(envTrace)
	switch v := getenv(envSummary); v {
	case "", "0":
	case "1":
		cfg.summary = true
	default:
		return fmt.Errorf("%w: %s=%q: want 1 (print the profile's summary at Finalize) or 0", ErrConfig, envSummary, v)
	}
	cfg.traceEvents = defaultTraceEvents
	if v := getenv(envTraceEvents); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 16 || n > 1<<24 {
			return fmt.Errorf("%w: %s=%q: want the number of events each rank keeps, from 16 to %d", ErrConfig, envTraceEvents, v, 1<<24)
		}
		cfg.traceEvents = n
	}
	if v := getenv(pmi.EnvTraceRing); v != "" && cfg.traceFile != "" {
		fd, err := strconv.Atoi(v)
		if err != nil || fd < 3 {
			return fmt.Errorf("%w: %s=%q: want the descriptor golaunch passed (an integer >= 3)", ErrConfig, pmi.EnvTraceRing, v)
		}
		syscall.CloseOnExec(fd) // the rank's own children do not inherit it
		cfg.traceRing = os.NewFile(uintptr(fd), pmi.EnvTraceRing)
	}
	return nil
}

// waitStart starts a user's wait on requests of ctx for the profile; it observes nothing
// when the profile is off or ctx is internal. The timeline's Wait events come from the
// engine's blocking waits (hang.go).
func (o *observer) waitStart(ctx uint16) subcore.ObsCall {
	if o.Obs == nil {
		return subcore.ObsCall{}
	}
	return o.waitStartOn(ctx)
}

func (o *observer) waitStartOn(ctx uint16) subcore.ObsCall {
	if o.Prof == nil || !o.user(ctx) {
		return subcore.ObsCall{}
	}
	return o.Begin(prof.CallWait)
}

// waitEnd counts the wait waitStart began.
func (o *observer) waitEnd(c subcore.ObsCall) {
	if c.On() {
		c.Finish(0)
	}
}

// firstCtx returns the context of the first Request of rs, 0 if none.
func firstCtx(rs []*Request) uint16 {
	for _, r := range rs {
		if r != nil && r.e != nil {
			return r.ctx
		}
	}
	return 0
}

// TraceRegion marks a region named name until end is called: in the job's timeline
// (GORMA_TRACE) and in Go's execution trace.
func TraceRegion(ctx context.Context, w *World, name string) (end func()) {
	r := gotrace.StartRegion(ctx, name)
	o := w.e.obs.Obs
	if o == nil || o.Rec == nil {
		return r.End
	}
	start, label := o.Stamp(), o.Label(name)
	return func() {
		r.End()
		o.Event(trace.Region, start, -1, trace.NoPeer, label)
	}
}

// recvMark is what a blocking receive under observation learns in its wait: its
// message's flow number and the stamp of its match (observer.matched), and the stamp of
// its wait's start (polled.stamps); 0 where not read.
type recvMark struct {
	flow     uint64
	from, at int64
}
