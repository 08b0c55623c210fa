package subcore

import (
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
// once; none takes a lock on the hot path or allocates, except Label on a name it has not
// seen.
type Obs struct {
	Prof  *prof.Counters  // nil when the profile is off
	Rec   *trace.Recorder // nil when the timeline is off
	base  time.Time       // the clock of Begin when Rec is nil
	kinds [prof.NumCalls]uint16
	mu    sync.Mutex
	named sync.Map // string -> uint16: Label's cache
}

// NewObs returns the observer of job rank rank of size ranks: counters when profile is
// true, a recorder of events events when events > 0. It returns nil when both are off.
func NewObs(rank, size int, profile bool, events int) *Obs {
	if !profile && events <= 0 {
		return nil
	}
	o := &Obs{base: time.Now()}
	if profile {
		o.Prof = prof.New(rank, size)
	}
	if events > 0 {
		o.Rec = trace.NewRecorder(rank, events)
		for k := range o.kinds {
			o.kinds[k], _ = o.Rec.Label(prof.CallKind(k).String())
		}
	}
	return o
}

// Now reads the observer's clock: the recorder's, or nanoseconds since NewObs.
func (o *Obs) Now() int64 {
	if o.Rec != nil {
		return o.Rec.Now()
	}
	return int64(time.Since(o.base))
}

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

// ObsCall is one call under observation, from Begin to End. It is a value.
type ObsCall struct {
	o     *Obs
	k     prof.CallKind
	start int64
}

// Begin starts observing a call of kind k. On a nil Obs it reads no clock.
func (o *Obs) Begin(k prof.CallKind) ObsCall {
	if o == nil {
		return ObsCall{}
	}
	return ObsCall{o: o, k: k, start: o.Now()}
}

// Started returns the clock's reading at Begin.
func (c ObsCall) Started() int64 { return c.start }

// On reports whether c observes anything.
func (c ObsCall) On() bool { return c.o != nil }

// End ends the call: it counts one call of its kind with n bytes and its time in the
// profile, and records an event of kind tk in the timeline with peer (a job rank or
// trace.NoPeer), tag (-1 for none) and label (0: the kind's name). A tk of 0 records no
// event.
func (c ObsCall) End(tk trace.Kind, n int, peer, tag int, label uint16) {
	o := c.o
	if o == nil {
		return
	}
	end := o.Now()
	o.Prof.Call(c.k, n, time.Duration(end-c.start))
	if o.Rec != nil && tk != 0 {
		if label == 0 {
			label = o.kinds[c.k]
		}
		o.Rec.Record(trace.Event{Kind: tk, Start: c.start, End: end, Bytes: int64(n),
			Peer: int32(peer), Tag: int32(tag), Label: label})
	}
}

// Event records one event of kind tk from start to now in the timeline (not in the
// profile): an epoch, a wait, a region.
func (o *Obs) Event(tk trace.Kind, start int64, n int, peer int, label uint16) {
	if o == nil || o.Rec == nil {
		return
	}
	o.Rec.Record(trace.Event{Kind: tk, Start: start, End: o.Now(), Bytes: int64(n),
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

// Coll counts n bytes of one collective call's data for rank r of a World whose job
// ranks are members (nil for Init's World), as Open MPI's coll monitoring counts them.
func (o *Obs) Coll(members []int, r, n int) {
	if o != nil && o.Prof != nil {
		o.Prof.Coll(job(members, r), n)
	}
}

// CollAll is Coll of n bytes for every rank of the World but me (size ranks).
func (o *Obs) CollAll(members []int, me, size, n int) {
	if o == nil || o.Prof == nil {
		return
	}
	for r := range size {
		if r != me {
			o.Prof.Coll(job(members, r), n)
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

// Job returns the job rank of rank r of a World whose job ranks are members, for the
// Peer of a timeline event.
func (o *Obs) Job(members []int, r int) int { return job(members, r) }
