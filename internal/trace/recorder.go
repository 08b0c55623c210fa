package trace

import (
	"cmp"
	"errors"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"
)

// MaxLabels is the most labels a Recorder holds; Label indexes them with a uint16.
const MaxLabels = 1 << 16

// ErrLabels is returned by Recorder.Label when the table is full.
var ErrLabels = errors.New("trace: label table full")

// slot is one place of the ring. state says who holds it: bits 2 and up are the index
// of the event it holds plus one (0: never written), bit 0 is set while a writer fills
// it and bit 1 while Snapshot copies it.
type slot struct {
	state atomic.Uint64
	ev    Event
}

const (
	writing = 1
	reading = 2
	busy    = writing | reading
)

// Recorder is one rank's flight recorder: a ring of the last Capacity events.
//
// Record may be called from any number of goroutines at once and never blocks: it
// claims the next index with one atomic add and fills the slot that index maps to, after
// one compare-and-swap on the slot's state. A slot another goroutine holds at that
// moment (a writer of an index one lap ahead or behind, or Snapshot) is not waited
// for: the event is counted as lost. Label, Snapshot, Stamp and Now may also be called from
// any goroutine.
//
// The ring lies on the heap (NewRecorder) or in a ring file (MapRecorder), which another
// process reads once this one has ended (ReadRing).
type Recorder struct {
	rank  int
	clock *Clock // events' stamps; its origin's wall-clock reading goes into the dump
	mask  uint64
	slots []slot
	next  atomic.Uint64 // events recorded so far: the index the next Record claims
	lost  atomic.Uint64 // events Record could not store
	file  *ringFile     // the ring file that holds slots, or nil

	mu     sync.Mutex
	labels []string
	index  map[string]uint16
}

// NewRecorder returns the recorder of rank, which keeps the last capacity events
// (rounded up to a power of two, at least 2).
func NewRecorder(rank, capacity int) *Recorder {
	return newRecorder(rank, make([]slot, slotsFor(capacity)), NewClock())
}

// slotsFor returns the ring's size for capacity events: a power of two, at least 2.
func slotsFor(capacity int) int {
	n := 2
	for n < capacity {
		n <<= 1
	}
	return n
}

// newRecorder returns the recorder of rank over slots, whose length is a power of two.
func newRecorder(rank int, slots []slot, c *Clock) *Recorder {
	r := &Recorder{rank: rank, clock: c, mask: uint64(len(slots) - 1), slots: slots, index: make(map[string]uint16)}
	r.touch()
	return r
}

// touch writes to every page of the ring, so that the kernel maps them at set-up rather than
// on the first lap, where each page's fault would land inside a recorded call.
func (r *Recorder) touch() {
	step := max(os.Getpagesize()/int(unsafe.Sizeof(slot{})), 1)
	for i := 0; i < len(r.slots); i += step {
		r.slots[i].state.Store(0)
	}
}

// Clock returns the recorder's clock.
func (r *Recorder) Clock() *Clock { return r.clock }

// Capacity returns how many events the ring keeps.
func (r *Recorder) Capacity() int { return len(r.slots) }

// Stamp reads the recorder's clock for an event's Start or End (Clock.Stamp).
func (r *Recorder) Stamp() int64 { return r.clock.Stamp() }

// Now returns nanoseconds of the monotonic clock since the recorder was made: the
// scale of a Snapshot's times.
func (r *Recorder) Now() int64 { return r.clock.Now() }

// Label returns the index of name in the recorder's table, adding it if new. It takes a
// lock and may allocate: call it when the runtime sets up (an algorithm's name at
// selection, a call's name at Init), not per call.
func (r *Recorder) Label(name string) (uint16, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if i, ok := r.index[name]; ok {
		return i, nil
	}
	if len(r.labels) >= MaxLabels {
		return 0, ErrLabels
	}
	i := uint16(len(r.labels))
	r.labels = append(r.labels, name)
	r.index[name] = i
	if r.file != nil {
		r.file.addLabel(int(i), name)
	}
	return i, nil
}

// Last returns the index of the last event the ring holds and its end, in nanoseconds
// since the recorder was made, without a Snapshot; ok is false when it holds none. It
// looks back over at most a ring's length of indexes, past events being written or lost.
func (r *Recorder) Last() (seq uint64, end int64, ok bool) {
	next := r.next.Load()
	for i := next; i > 0 && next-i < uint64(len(r.slots)); i-- {
		s := r.slot(i - 1)
		st := s.state.Load()
		if st&busy != 0 || st>>2 != i || !s.state.CompareAndSwap(st, st|reading) {
			continue
		}
		end = s.ev.End
		s.state.Store(st)
		return i - 1, r.clock.Exact()(end), true
	}
	return 0, 0, false
}

// Labels returns the label table so far.
func (r *Recorder) Labels() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.labels...)
}

// batchArea returns a place for a batch's events in the ring file, or nil: no ring file,
// or no place left in it.
func (r *Recorder) batchArea() *batchArea {
	if r.file == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.file.area()
}

// releaseArea gives a batch's place in the ring file back. It holds no event.
func (r *Recorder) releaseArea(a *batchArea) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.file.free = append(r.file.free, a)
}

// Record stores e, overwriting the oldest event when the ring is full. It takes no lock
// and allocates nothing.
func (r *Recorder) Record(e Event) {
	i := r.next.Add(1) - 1
	r.storeRun(i, []uint64{r.slot(i).state.Load()}, []Event{e})
}

// slot returns the slot of index i.
func (r *Recorder) slot(i uint64) *slot { return &r.slots[i&r.mask] }

// storeRun fills the slots of indexes i, i+1, ... with evs, given st, their states read
// before. An event whose slot another goroutine holds is counted lost. A flush stores
// its events in one call, which reads each through a pointer: a call per event, with
// the event copied as its argument, costs more (BenchmarkRoundTrip).
func (r *Recorder) storeRun(i uint64, st []uint64, evs []Event) {
	for k := range evs {
		j := i + uint64(k)
		s := r.slot(j)
		if st[k]&busy != 0 || st[k]>>2 > j || !s.state.CompareAndSwap(st[k], (j+1)<<2|writing) {
			r.lost.Add(1)
			continue
		}
		// Field by field: e was just built, often by narrow stores, which a copy of wide
		// words would read back with a failed store forward (Batch.Put).
		e := &evs[k]
		s.ev.Start, s.ev.End, s.ev.Bytes, s.ev.Flow = e.Start, e.End, e.Bytes, e.Flow
		s.ev.Peer, s.ev.Tag, s.ev.Label, s.ev.Kind = e.Peer, e.Tag, e.Label, e.Kind
		publish(&s.state, (j+1)<<2) // a release store: the fields are seen before it
	}
}

// Recorded returns how many events Record was given, and how many of them it could not
// store because another goroutine held their slot.
// It reads lost before total, so that every lost event it counts is among total.
func (r *Recorder) Recorded() (total, lost uint64) {
	lost = r.lost.Load()
	return r.next.Load(), lost
}

// Snapshot returns the events the ring holds, oldest first, with the labels and the
// counts, their stamps converted to nanoseconds since the recorder was made
// (Clock.Exact). It may run while other goroutines record: a slot being written is left
// out, and a Record that meets a slot Snapshot is copying loses its event.
func (r *Recorder) Snapshot() Dump {
	d := Dump{Rank: r.rank, Origin: r.clock.Origin().UnixNano()}
	ns := r.clock.Exact()
	if r.file != nil {
		r.file.setScale(r.clock.rateNow()) // for a reader on another host (ReadRing)
	}
	type held struct {
		i  uint64
		ev Event
	}
	got := make([]held, 0, len(r.slots))
	for k := range r.slots {
		s := &r.slots[k]
		st := s.state.Load()
		if st == 0 || st&busy != 0 || !s.state.CompareAndSwap(st, st|reading) {
			continue
		}
		got = append(got, held{st>>2 - 1, s.ev})
		s.state.Store(st)
	}
	d.Total, d.Lost = r.Recorded()
	slices.SortFunc(got, func(a, b held) int { return cmp.Compare(a.i, b.i) })
	d.Events = make([]Event, len(got))
	d.Seqs = make([]uint64, len(got))
	for k, h := range got {
		h.ev.Start, h.ev.End = ns(h.ev.Start), ns(h.ev.End)
		d.Events[k] = h.ev
		d.Seqs[k] = h.i
	}
	r.mu.Lock()
	d.Labels = append([]string(nil), r.labels...)
	r.mu.Unlock()
	return d
}
