package trace

// BatchLen is how many events a Batch holds before Add flushes it.
const BatchLen = 16

// Batch holds one owner's events on their way into a Recorder. Add costs a few plain
// stores; Flush claims the indices of every held event with one atomic add and stores
// them. An owner flushes when it is about to be idle (before it blocks or spins), so
// that recording stays off the path between a message's arrival and the next send.
// Under a ring file (MapRecorder) the held events lie in the file too, so that ReadRing
// finds them after a crash.
//
// A Batch is not safe for concurrent use: its owner serializes every call, typically
// under a lock it holds. Events it holds are not in the recorder's Snapshot until the
// next Flush; their indices follow the order of flushes, not of Adds across owners.
type Batch struct {
	r   *Recorder
	a   *batchArea // the held events: in the ring file, or own
	own batchArea
}

// NewBatch returns an empty batch that flushes into r. Close gives back its place in
// r's ring file.
func NewBatch(r *Recorder) *Batch {
	b := &Batch{r: r}
	if b.a = r.batchArea(); b.a == nil {
		b.a = &b.own
	}
	return b
}

// Add returns the place of the next event, which the caller fills before its next call
// of the batch. A full batch is flushed first.
func (b *Batch) Add() *Event {
	a := b.a
	if a.n == BatchLen {
		b.Flush()
	}
	e := &a.evs[a.n]
	a.n++
	return e
}

// Put adds the event of kind k with the given fields (Event's). It stores each field in
// its place: an Event built first and then copied is read back as wide words over the
// narrow stores that built it, which stalls the processor (a failed store forward). It
// counts the event after its fields, so that a ring file never holds half of it.
func (b *Batch) Put(k Kind, start, end, bytes int64, flow uint64, peer, tag int32, label uint16) {
	a := b.a
	if a.n == BatchLen {
		b.Flush()
	}
	e := &a.evs[a.n]
	e.Start, e.End, e.Bytes, e.Flow = start, end, bytes, flow
	e.Peer, e.Tag, e.Label, e.Kind = peer, tag, label, k
	a.n++
}

// Due reports whether the batch holds half of BatchLen events or more: an owner that
// waits only briefly flushes then, so that each flush's fixed cost (its atomic add waits
// for the owner's pending stores to drain) is shared by many events, and Add rarely
// finds the batch full on the path of a call.
func (b *Batch) Due() bool { return b.a.n >= BatchLen/2 }

// Len returns how many events the batch holds.
func (b *Batch) Len() int { return int(b.a.n) }

// Flush stores the held events in the recorder, in the order they were added.
func (b *Batch) Flush() {
	a := b.a
	n := a.n
	if n == 0 {
		return
	}
	i := b.r.next.Add(n) - n
	// Read every slot's state first: the reads of slots not in cache overlap, where each
	// compare-and-swap in store would wait for its slot's line before the next read.
	var st [BatchLen]uint64
	for k := range n {
		st[k] = b.r.slot(i + k).state.Load()
	}
	b.r.storeRun(i, st[:n], a.evs[:n])
	a.n = 0 // after the stores: a crash between leaves both copies, which ReadRing joins
}

// Close flushes the batch and gives its place in the ring file back. Its owner records
// no more into it.
func (b *Batch) Close() {
	b.Flush()
	if b.a != &b.own {
		b.r.releaseArea(b.a)
		b.a = &b.own
	}
}
