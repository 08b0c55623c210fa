package matching

import "testing"

func TestTakes(t *testing.T) {
	msg := Envelope{Ctx: 4, Src: 2, Tag: 7}
	for _, tc := range []struct {
		name string
		want Envelope
		ok   bool
	}{
		{"exact", Envelope{Ctx: 4, Src: 2, Tag: 7}, true},
		{"any source", Envelope{Ctx: 4, Src: AnySource, Tag: 7}, true},
		{"any tag", Envelope{Ctx: 4, Src: 2, Tag: AnyTag}, true},
		{"both wildcards", Envelope{Ctx: 4, Src: AnySource, Tag: AnyTag}, true},
		{"other context", Envelope{Ctx: 5, Src: 2, Tag: 7}, false},
		{"wildcards, other context", Envelope{Ctx: 0, Src: AnySource, Tag: AnyTag}, false},
		{"other source", Envelope{Ctx: 4, Src: 3, Tag: 7}, false},
		{"other tag", Envelope{Ctx: 4, Src: 2, Tag: 8}, false},
		{"any source, other tag", Envelope{Ctx: 4, Src: AnySource, Tag: 0}, false},
		{"any tag, other source", Envelope{Ctx: 4, Src: 0, Tag: AnyTag}, false},
	} {
		if got := tc.want.Takes(msg); got != tc.ok {
			t.Errorf("%s: %+v.Takes(%+v) = %v, want %v", tc.name, tc.want, msg, got, tc.ok)
		}
	}
}

type item struct {
	id   int
	link Link[item]
}

// TestQueues runs short sequences through both queues: the first match wins, in queue
// order, and Take removes exactly that item.
func TestQueues(t *testing.T) {
	env := func(src int, tag int32) Envelope { return Envelope{Ctx: 1, Src: src, Tag: tag} }
	for _, tc := range []struct {
		name    string
		posted  []Envelope // receives, in posting order
		arrive  []Envelope // messages, in arrival order
		takenBy []int      // per message: index of the receive that takes it, -1 none
		left    []int      // receives still posted at the end
	}{
		{"in order", []Envelope{env(0, 1), env(0, 2)}, []Envelope{env(0, 1), env(0, 2)}, []int{0, 1}, nil},
		{"first posted wins", []Envelope{env(AnySource, 1), env(0, 1)}, []Envelope{env(0, 1)}, []int{0}, []int{1}},
		{"skips non-matching", []Envelope{env(1, 1), env(0, AnyTag)}, []Envelope{env(0, 5)}, []int{1}, []int{0}},
		{"no match", []Envelope{env(1, 1)}, []Envelope{env(0, 1), {Ctx: 2, Src: 1, Tag: 1}}, []int{-1, -1}, []int{0}},
		{"wildcards take in posting order", []Envelope{env(AnySource, AnyTag), env(AnySource, AnyTag)}, []Envelope{env(3, 9), env(2, 8)}, []int{0, 1}, nil},
	} {
		var q Posted[item]
		recvs := make([]item, len(tc.posted))
		for i := range recvs {
			recvs[i].id = i
			q.Push(&recvs[i].link, &recvs[i], tc.posted[i])
		}
		for i, m := range tc.arrive {
			got := -1
			if r := q.Take(m); r != nil {
				got = r.id
			}
			if got != tc.takenBy[i] {
				t.Errorf("%s: message %d taken by %d, want %d", tc.name, i, got, tc.takenBy[i])
			}
		}
		var left []int
		for r := range q.All() {
			left = append(left, r.id)
		}
		if !equal(left, tc.left) || q.Len() != len(tc.left) {
			t.Errorf("%s: left %v (Len %d), want %v", tc.name, left, q.Len(), tc.left)
		}

		// The same sequence the other way round: the messages wait, the receives come.
		var ux Unexpected[item]
		msgs := make([]item, len(tc.arrive))
		for i := range msgs {
			msgs[i].id = i
			ux.Push(&msgs[i].link, &msgs[i], tc.arrive[i])
		}
		for i, want := range tc.posted {
			if m := ux.Match(want); m != ux.Take(want) {
				t.Errorf("%s: receive %d: Match and Take disagree", tc.name, i)
			}
		}
	}
}

func TestRemove(t *testing.T) {
	var q Unexpected[item]
	its := make([]item, 4)
	for i := range its {
		its[i].id = i
		q.Push(&its[i].link, &its[i], Envelope{Src: i})
	}
	for _, i := range []int{2, 0, 3} {
		if !q.Remove(&its[i].link) || its[i].link.Queued() {
			t.Fatalf("Remove(%d) failed", i)
		}
	}
	if q.Remove(&its[0].link) {
		t.Fatal("second Remove reported a queued item")
	}
	if m := q.Take(Envelope{Src: AnySource, Tag: AnyTag}); m == nil || m.id != 1 || q.Len() != 0 {
		t.Fatalf("Take after removals: %v, Len %d", m, q.Len())
	}
	q.Push(&its[0].link, &its[0], Envelope{}) // a removed Link can be queued again
	for m := range q.All() {
		q.Remove(&m.link) // removing the yielded item inside the loop is allowed
	}
	if q.Len() != 0 {
		t.Fatalf("Len %d after removing all", q.Len())
	}
}

func TestPushQueuedPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("no panic")
		}
	}()
	var q Posted[item]
	var it item
	q.Push(&it.link, &it, Envelope{})
	q.Push(&it.link, &it, Envelope{})
}

func equal(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
