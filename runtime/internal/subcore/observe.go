package subcore

import (
	"os"
	"slices"
	"sync"
	"time"

	"github.com/gorma-hpc/gorma/internal/prof"
	"github.com/gorma-hpc/gorma/internal/trace"
)

// Obs is what a rank observes of its own calls: the communication profile's counters
// (GORMA_PROFILE, GORMA_SUMMARY) and the timeline's flight recorder (GORMA_TRACE). The
// runtime makes one per rank at Init when either is on; a nil *Obs observes nothing, and
// each of its methods is then one nil check.
//
// Peers are job ranks (Init's World). Every method may be called from any goroutine at
// once, except that a prof.Local's counts (BeginLocked, and Coll with a Local) follow its
// owner's rule. None takes a lock on the hot path or allocates, except Label on a name it
// has not seen and a Local's first count of a kind.
type Obs struct {
	Prof    *prof.Counters  // nil when the profile is off
	Rec     *trace.Recorder // nil when the timeline is off
	clock   *trace.Clock    // the recorder's, or one of its own when Rec is nil
	span    int64           // Span's stamps
	kinds   [prof.NumCalls]uint16
	mu      sync.Mutex
	named   sync.Map       // string -> uint16: Label's cache
	locals  []*prof.Local  // NewLocal's, guarded by mu
	batches []*trace.Batch // NewBatch's not yet dropped, guarded by mu
}

// NewObs returns the observer of job rank rank of size ranks: counters when profile is
// true, a recorder of events events when events > 0. It returns nil when both are off.
// With ring not nil the recorder's memory is that file (trace.MapRecorder), which the
// launcher reads after the process ends; when it cannot be, the recorder is on the heap
// and the error says why.
func NewObs(rank, size int, profile bool, events int, ring *os.File) (*Obs, error) {
	if !profile && events <= 0 {
		return nil, nil
	}
	o := &Obs{}
	if profile {
		o.Prof = prof.New(rank, size)
	}
	var err error
	if events > 0 {
		if ring != nil {
			o.Rec, err = trace.MapRecorder(rank, events, ring)
		}
		if o.Rec == nil {
			o.Rec = trace.NewRecorder(rank, events)
		}
		o.clock = o.Rec.Clock()
		for k := range o.kinds {
			o.kinds[k], _ = o.Rec.Label(prof.CallKind(k).String())
		}
	} else {
		o.clock = trace.NewClock()
	}
	o.span = max(o.clock.Span(minSpan), 1)
	return o, err
}

// minSpan is the least length of an event that a flow binds inside (trace.Merge binds a
// flow inside an event only when it is long enough), with a margin for the rate that
// converts stamps at Snapshot, which differs a little from the one Span uses.
const minSpan = 3 * time.Nanosecond

// Span is the least length of such an event in stamps: a Send or Match event lasts at
// least that long.
func (o *Obs) Span() int64 { return o.span }

// Stamp reads the observer's clock (trace.Clock.Stamp): an event's Start or End, or a
// call's start. It never returns 0, which callers keep for "not read".
func (o *Obs) Stamp() int64 { return max(o.clock.Stamp(), 1) }

// Label returns the timeline's label of name ("Allreduce ring"), 0 when the timeline is
// off or its table is full. A name seen before costs a map lookup.
func (o *Obs) Label(name string) uint16 {
	if o == nil || o.Rec == nil {
		return 0
	}
	if v, ok := o.named.Load(name); ok {
		return v.(uint16)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	l, err := o.Rec.Label(name)
	if err != nil {
		return 0
	}
	o.named.Store(name, l)
	return l
}

// Kind returns the timeline's label of call kind k.
func (o *Obs) Kind(k prof.CallKind) uint16 { return o.kinds[k] }

// ObsCall is one call under observation, from Begin to End. It is a value of four
// words, which the compiler keeps in registers.
type ObsCall struct {
	o     *Obs
	local *prof.Local // BeginLocked's counts, else nil: the Obs's
	start int64       // the stamp at Begin; 0 when the call is not timed
	m     callMeta
}

// callMeta is what an ObsCall knows of its call.
type callMeta struct {
	k       uint8 // its prof.CallKind
	weight  uint8 // the weight of its time in the profile (prof.Counters.Begin)
	counted bool  // the profile counts it (Begin, not Track)
	later   bool  // its start is read at Start, or at its end when it never waits (Later)
}

// Begin starts observing a call of kind k, which the profile counts. It reads the clock
// when the timeline is on or the profile times this call (prof.Counters.Begin: calls
// beyond the first of their kind are timed in a sample). On a nil Obs it does nothing.
func (o *Obs) Begin(k prof.CallKind) ObsCall {
	if o == nil {
		return ObsCall{}
	}
	return o.begin(nil, k, o.Prof.Begin(k))
}

// BeginLocked is Begin counting in l (prof.Local), with plain adds. The caller holds what
// guards l from Begin to the call's Finish or End.
func (o *Obs) BeginLocked(l *prof.Local, k prof.CallKind) ObsCall {
	if o == nil {
		return ObsCall{}
	}
	return o.begin(l, k, l.Begin(k))
}

func (o *Obs) begin(l *prof.Local, k prof.CallKind, weight int64) ObsCall {
	var start int64
	if o.Rec != nil {
		weight = 1 // every call is timed for its event: the profile's time is exact
	}
	if weight != 0 {
		start = o.Stamp()
	}
	return ObsCall{o, l, start, callMeta{k: uint8(k), weight: uint8(weight), counted: true}}
}

// Track starts observing a call of kind k for the timeline only: the profile does not
// count it (a layer's own traffic). It reads no clock when the timeline is off.
func (o *Obs) Track(k prof.CallKind) ObsCall {
	if o == nil || o.Rec == nil {
		return ObsCall{}
	}
	return ObsCall{o, nil, o.Stamp(), callMeta{k: uint8(k)}}
}

// Later starts observing a call of kind k for the timeline alone, where the profile is
// off, without reading the clock: the call's start is read at Start, which the caller
// calls before the call waits, or is a reading its wait took. A call that never waits
// (an eager send, a receive whose message was there, a nonblocking call) is an event at
// its end, Span long: the work before it, under a microsecond, is left out. So the path
// from a message's arrival to the reply reads the clock once, at the receive's end
// (FinishAt). The profile does not count the
// call: where it is on, Later returns Track's, timed from now; use Begin there instead.
// Where the timeline is off, Later observes nothing.
func (o *Obs) Later(k prof.CallKind) ObsCall {
	switch {
	case o == nil || o.Rec == nil:
		return ObsCall{}
	case o.Prof != nil:
		return o.Track(k)
	}
	return ObsCall{o: o, m: callMeta{k: uint8(k), later: true}}
}

// Start reads the clock for the start of a call begun with Later, once; it returns any
// other call as it is.
func (c ObsCall) Start() ObsCall {
	if c.m.later && c.start == 0 {
		c.start = c.o.Stamp()
	}
	return c
}

// Started returns the clock's reading at Begin, or at Start for a call begun with Later;
// 0 when the call is not timed or not yet started.
func (c ObsCall) Started() int64 { return c.start }

// On reports whether c observes anything.
func (c ObsCall) On() bool { return c.o != nil }

// Finish ends the call in the profile: it adds n bytes and, when the call is timed, its
// time. It returns the stamp at the end, 0 when the call is not timed.
func (c ObsCall) Finish(n int) int64 {
	if c.m.later {
		return c.o.Stamp()
	}
	if c.start == 0 {
		if c.m.counted {
			c.count(n, 0)
		}
		return 0
	}
	end := c.o.Stamp()
	if c.m.counted && (c.local != nil || c.o.Prof != nil) {
		c.count(n, time.Duration(c.o.clock.Nanos(end-c.start)))
	}
	return end
}

// FinishAt is Finish for a call begun with Later whose end was read already: at, a
// Stamp, when not 0 (a receive reads it as it takes its message). Any other call
// ignores at.
func (c ObsCall) FinishAt(n int, at int64) int64 {
	if c.m.later && at != 0 {
		return at
	}
	return c.Finish(n)
}

// count adds the call's n bytes and time d to its counts.
func (c ObsCall) count(n int, d time.Duration) {
	switch {
	case c.local != nil:
		c.local.End(prof.CallKind(c.m.k), n, d, int64(c.m.weight))
	default:
		c.o.Prof.End(prof.CallKind(c.m.k), n, d, int64(c.m.weight))
	}
}

// EndIn is End with the event added to b (NewBatch), whose owner is the caller; with b
// nil the event goes into the recorder at once.
func (c ObsCall) EndIn(b *trace.Batch, tk trace.Kind, n int, peer, tag int, label uint16) {
	o := c.o
	if o == nil {
		return
	}
	end := c.Finish(n)
	if o.Rec == nil || tk == 0 {
		return
	}
	if label == 0 {
		label = o.kinds[c.m.k]
	}
	if b != nil {
		b.Put(tk, c.start, end, int64(n), 0, int32(peer), int32(tag), label)
		return
	}
	o.Rec.Record(trace.Event{Kind: tk, Start: c.start, End: end, Bytes: int64(n),
		Peer: int32(peer), Tag: int32(tag), Label: label})
}

// End ends the call: Finish, and an event of kind tk in the timeline with peer (a job
// rank or trace.NoPeer), tag (-1 for none) and label (0: the kind's name). A tk of 0
// records no event.
func (c ObsCall) End(tk trace.Kind, n int, peer, tag int, label uint16) {
	c.EndIn(nil, tk, n, peer, tag, label)
}

// Event records one event of kind tk from start (a Stamp) to now in the timeline (not in the
// profile): an epoch, a wait, a region.
func (o *Obs) Event(tk trace.Kind, start int64, n int, peer int, label uint16) {
	if o == nil || o.Rec == nil {
		return
	}
	o.Rec.Record(trace.Event{Kind: tk, Start: start, End: o.Stamp(), Bytes: int64(n),
		Peer: int32(peer), Tag: -1, Label: label})
}

// job returns the job rank of rank r of a World whose members are members (nil: the
// job's own ranks).
func job(members []int, r int) int {
	if members == nil {
		return r
	}
	return members[r]
}

// NewLocal returns counts for an owner that serializes its own calls (prof.Local), nil
// when the profile is off. Fold adds them into the profile.
func (o *Obs) NewLocal() *prof.Local {
	if o == nil || o.Prof == nil {
		return nil
	}
	l := o.Prof.NewLocal()
	o.mu.Lock()
	o.locals = append(o.locals, l)
	o.mu.Unlock()
	return l
}

// Fold adds the counts of every Local NewLocal made into the profile. Call it once their
// owners count no more (Finalize), after what orders their last counts before it.
func (o *Obs) Fold() {
	if o == nil || o.Prof == nil {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, l := range o.locals {
		o.Prof.Fold(l)
	}
}

// NewBatch returns a batch of events for an owner that serializes its own calls
// (trace.Batch), nil when the timeline is off. The owner flushes it before it waits;
// FlushBatches and DropBatch store what it holds when the owner is done.
func (o *Obs) NewBatch() *trace.Batch {
	if o == nil || o.Rec == nil {
		return nil
	}
	b := trace.NewBatch(o.Rec)
	o.mu.Lock()
	o.batches = append(o.batches, b)
	o.mu.Unlock()
	return b
}

// FlushBatches stores the events that every batch from NewBatch holds. Call it once their
// owners record no more (Finalize), after what orders their last events before it.
func (o *Obs) FlushBatches() {
	if o == nil {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, b := range o.batches {
		b.Flush()
	}
}

// DropBatch stores the events b holds and forgets it (trace.Batch.Close): its owner
// records no more (the state of a World that is gone). A nil b is ignored.
func (o *Obs) DropBatch(b *trace.Batch) {
	if o == nil || b == nil {
		return
	}
	o.mu.Lock()
	if i := slices.Index(o.batches, b); i >= 0 {
		o.batches = slices.Delete(o.batches, i, i+1)
	}
	o.mu.Unlock()
	b.Close() // FlushBatches no longer sees it; its recorder's lock is taken alone
}

// Profile returns the profile so far (prof.Counters.Snapshot) after Fold. A test calls
// it from the goroutine that made the calls it counts, between them.
func (o *Obs) Profile() *prof.Rank {
	o.Fold()
	return o.Prof.Snapshot()
}

// Timeline returns the timeline so far (trace.Recorder.Snapshot) after FlushBatches. A
// test calls it from the goroutine that made the calls it records, between them.
func (o *Obs) Timeline() trace.Dump {
	o.FlushBatches()
	return o.Rec.Snapshot()
}

// Coll counts n bytes of one collective call's data for rank r of a World whose job
// ranks are members (nil for Init's World), as Open MPI's coll monitoring counts them:
// in l (NewLocal) when it is not nil, else in the profile.
func (o *Obs) Coll(l *prof.Local, members []int, r, n int) {
	switch {
	case l != nil:
		l.Coll(job(members, r), n)
	case o != nil && o.Prof != nil:
		o.Prof.Coll(job(members, r), n)
	}
}

// CollAll is Coll of n bytes for every rank of the World but me (size ranks).
func (o *Obs) CollAll(l *prof.Local, members []int, me, size, n int) {
	if o == nil || o.Prof == nil {
		return
	}
	for r := range size {
		if r != me {
			o.Coll(l, members, r, n)
		}
	}
}

// PutTo counts an RMA operation that sends n bytes to target rank r (Put, Accumulate).
func (o *Obs) PutTo(members []int, r, n int) {
	if o != nil && o.Prof != nil {
		o.Prof.PutTo(job(members, r), n)
	}
}

// GetFrom counts an RMA operation that brings n bytes from target rank r (Get).
func (o *Obs) GetFrom(members []int, r, n int) {
	if o != nil && o.Prof != nil {
		o.Prof.GetFrom(job(members, r), n)
	}
}
