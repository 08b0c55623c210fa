package trace

// BatchLen is how many events a Batch holds before Add flushes it.
const BatchLen = 8

// Batch holds one owner's events on their way into a Recorder. Add costs a few plain
// stores; Flush claims the indices of every held event with one atomic add and stores
// them. An owner flushes when it is about to be idle (before it blocks or spins), so
// that recording stays off the path between a message's arrival and the next send.
//
// A Batch is not safe for concurrent use: its owner serializes every call, typically
// under a lock it holds. Events it holds are not in the recorder's Snapshot until the
// next Flush; their indices follow the order of flushes, not of Adds across owners.
type Batch struct {
	r   *Recorder
	n   int
	evs [BatchLen]Event
}

// NewBatch returns an empty batch that flushes into r.
func NewBatch(r *Recorder) *Batch { return &Batch{r: r} }

// Add returns the place of the next event, which the caller fills before its next call
// of the batch. A full batch is flushed first.
func (b *Batch) Add() *Event {
	if b.n == len(b.evs) {
		b.Flush()
	}
	e := &b.evs[b.n]
	b.n++
	return e
}

// Len returns how many events the batch holds.
func (b *Batch) Len() int { return b.n }

// Flush stores the held events in the recorder, in the order they were added.
func (b *Batch) Flush() {
	if b.n == 0 {
		return
	}
	n := uint64(b.n)
	i := b.r.next.Add(n) - n
	for k := range b.n {
		b.r.store(i+uint64(k), b.evs[k])
	}
	b.n = 0
}
