package matching

import "iter"

// Wildcards a receive's Envelope may name.
const (
	AnySource = -1
	AnyTag    = -1
)

// Envelope is what a message carries, or what a receive asks for (where Src may be
// AnySource and Tag AnyTag).
type Envelope struct {
	Src int
	Tag int32
	Ctx uint16
}

// Takes reports whether a receive asking for want takes a message carrying m: the same
// context, and the same source and tag unless want names a wildcard.
func (want Envelope) Takes(m Envelope) bool {
	return want.Ctx == m.Ctx && (want.Src == AnySource || want.Src == m.Src) &&
		(want.Tag == AnyTag || want.Tag == m.Tag)
}

// Link is an item's place in a queue: embed one in the item's type for each queue it can
// wait in at a time. The zero Link is not queued; a Link must not be copied while queued.
type Link[T any] struct {
	env        Envelope
	item       *T
	next, prev *Link[T]
	queued     bool
}

// Queued reports whether l is in a queue.
func (l *Link[T]) Queued() bool { return l.queued }

// list is the FIFO both queues are made of.
type list[T any] struct {
	head, tail *Link[T]
	n          int
}

// Len is the number of items queued.
func (q *list[T]) Len() int { return q.n }

func (q *list[T]) push(l *Link[T], item *T, env Envelope) {
	if l.queued {
		panic("matching: Push of a queued Link")
	}
	l.env, l.item = env, item
	l.prev, l.next, l.queued = q.tail, nil, true
	if q.tail != nil {
		q.tail.next = l
	} else {
		q.head = l
	}
	q.tail = l
	q.n++
}

// Remove takes l out of the queue and reports whether it was queued. l must be in q or
// in no queue.
func (q *list[T]) Remove(l *Link[T]) bool {
	if !l.queued {
		return false
	}
	if l.prev != nil {
		l.prev.next = l.next
	} else {
		q.head = l.next
	}
	if l.next != nil {
		l.next.prev = l.prev
	} else {
		q.tail = l.prev
	}
	l.next, l.prev, l.item, l.queued = nil, nil, nil, false
	q.n--
	return true
}

// take removes l, if not nil, and returns its item.
func (q *list[T]) take(l *Link[T]) *T {
	if l == nil {
		return nil
	}
	item := l.item
	q.Remove(l)
	return item
}

// All yields the queued items in order. The loop may Remove the item it was given (and
// only that one).
func (q *list[T]) All() iter.Seq[*T] {
	return func(yield func(*T) bool) {
		for l := q.head; l != nil; {
			next := l.next
			if !yield(l.item) {
				return
			}
			l = next
		}
	}
}

// Posted is the queue of posted receives (and probes): each item waits with the Envelope
// it asks for. The zero Posted is empty.
type Posted[T any] struct{ list[T] }

// Push appends item, asking for want, through its Link l.
func (q *Posted[T]) Push(l *Link[T], item *T, want Envelope) { q.push(l, item, want) }

// Match returns the first item that takes a message carrying m, or nil.
func (q *Posted[T]) Match(m Envelope) *T {
	for l := q.head; l != nil; l = l.next {
		if l.env.Takes(m) {
			return l.item
		}
	}
	return nil
}

// Take removes and returns the first item that takes a message carrying m, or nil.
func (q *Posted[T]) Take(m Envelope) *T {
	l := q.head
	for l != nil && !l.env.Takes(m) {
		l = l.next
	}
	return q.take(l)
}

// Unexpected is the queue of messages that arrived before a receive took them: each item
// waits with the Envelope it carries. The zero Unexpected is empty.
type Unexpected[T any] struct{ list[T] }

// Push appends item, carrying m, through its Link l.
func (q *Unexpected[T]) Push(l *Link[T], item *T, m Envelope) { q.push(l, item, m) }

// Match returns the first item that a receive asking for want takes, or nil.
func (q *Unexpected[T]) Match(want Envelope) *T {
	for l := q.head; l != nil; l = l.next {
		if want.Takes(l.env) {
			return l.item
		}
	}
	return nil
}

// Take removes and returns the first item that a receive asking for want takes, or nil.
func (q *Unexpected[T]) Take(want Envelope) *T {
	l := q.head
	for l != nil && !want.Takes(l.env) {
		l = l.next
	}
	return q.take(l)
}
