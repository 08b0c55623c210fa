package runtime

import "testing"

// TestMatcherProbes checks that a message completes the probes it satisfies in the order
// they were posted, and that an Mprobe among them takes it from those after it.
func TestMatcherProbes(t *testing.T) {
	var m matcher
	probe := func(src int, mprobe bool) *Request {
		r := &Request{kind: reqProbe, ctx: 4, peer: src, tag: AnyTag}
		r.mprobe = mprobe
		m.probes.Push(&r.link, r, r.want())
		return r
	}
	other, first, mp, after := probe(2, false), probe(1, false), probe(AnySource, true), probe(1, false)
	u := &uxMsg{src: 1, ctx: 4, tag: 9, kind: msgEager, data: make([]byte, 5)}
	m.ux.Push(&u.link, u, u.env())

	if r := m.nextProbeLocked(u); r != first || r.status.Source != 1 || r.status.Tag != 9 || r.status.Bytes != 5 {
		t.Fatalf("first probe satisfied: %p %+v, want %p", r, r.status, first)
	}
	if r := m.nextProbeLocked(u); r != mp || r.msg != u || u.link.Queued() {
		t.Fatalf("second probe satisfied: %p (msg %p, still queued %v), want the Mprobe taking the message", r, r.msg, u.link.Queued())
	}
	if !other.link.Queued() || !after.link.Queued() || m.probes.Len() != 2 {
		t.Fatalf("probes left: %d, want the one of another source and the one after the Mprobe", m.probes.Len())
	}
	if m.ux.Len() != 0 {
		t.Fatalf("unexpected queue holds %d messages after the Mprobe took its only one", m.ux.Len())
	}
}

// TestMatcherAnswered checks which FIN and withdrawal answers find their send.
func TestMatcherAnswered(t *testing.T) {
	var m matcher
	r := &Request{kind: reqSend, peer: 1, buf: make([]byte, 100)}
	m.table.add(r)
	c := r.cookie()
	cases := []struct {
		name        string
		src         int
		kind        uint8
		cookie      uint64
		outQueued   bool
		cancelAsked bool
		want        bool
	}{
		{"FIN", 1, msgFIN, c, false, false, true},
		{"FIN from another rank", 2, msgFIN, c, false, false, false},
		{"FIN with a stale cookie", 1, msgFIN, c + 1<<32, false, false, false},
		{"FIN of an offer not sent yet", 1, msgFIN, c, true, false, false},
		{"withdrawal not asked for", 1, msgWithdrawn, c, false, false, false},
		{"withdrawal asked for", 1, msgWithdrawn, c, false, true, true},
	}
	for _, tc := range cases {
		r.outQueued, r.cancelAsked, r.status = tc.outQueued, tc.cancelAsked, Status{}
		got := m.answeredLocked(tc.src, tc.kind, tc.cookie)
		if (got == r) != tc.want {
			t.Errorf("%s: found %p, want found %v", tc.name, got, tc.want)
		}
		if got != nil && r.status.Cancelled != (tc.kind == msgWithdrawn) {
			t.Errorf("%s: Status.Cancelled %v", tc.name, r.status.Cancelled)
		}
	}
	if m.table.sends != 1 || m.table.sendBytes != 100 {
		t.Fatalf("table counts %d sends of %d bytes, want 1 of 100", m.table.sends, m.table.sendBytes)
	}
	m.completeLocked(r, nil)
	if !r.done || r.inTable || !m.idleLocked() || m.table.sends != 0 || m.completed != 1 {
		t.Fatalf("after completion: done %v, in table %v, idle %v, sends %d, completed %d", r.done, r.inTable, m.idleLocked(), m.table.sends, m.completed)
	}
}

// TestMatcherReads checks that a rendezvous receive is returned once, at its last read.
func TestMatcherReads(t *testing.T) {
	var m matcher
	r := &Request{kind: reqRecv}
	m.table.add(r)
	r.reads = 3
	for i := 1; i <= 3; i++ {
		got := m.readDoneLocked(r.slot)
		if (got != nil) != (i == 3) {
			t.Fatalf("read %d of 3: got %p", i, got)
		}
	}
	if m.readDoneLocked(r.slot+1) != nil {
		t.Fatal("a read of an unused slot found a request")
	}
}

// TestMatcherPool checks that a recycled request keeps its engine and wake channel only,
// and that a part's completion completes its Isendrecv once both parts are done.
func TestMatcherPool(t *testing.T) {
	var m matcher
	e := new(engine)
	r := m.newRequestLocked(e, reqRecv)
	if r.e != e || !r.pooled || r.truncTo != -1 {
		t.Fatalf("new request: engine %p pooled %v truncTo %d", r.e, r.pooled, r.truncTo)
	}
	r.wake = make(chan struct{}, 1)
	r.tag, r.done = 7, true
	m.recycleLocked(r)
	if len(m.pool) != 1 || r.e != e || r.wake == nil || r.tag != 0 || r.done {
		t.Fatalf("recycled request: pool %d, engine %p, wake %v, tag %d, done %v", len(m.pool), r.e, r.wake != nil, r.tag, r.done)
	}
	if m.newRequestLocked(e, reqSend) != r || len(m.pool) != 0 {
		t.Fatal("the pool did not hand back the recycled request")
	}

	pair := &Request{kind: reqPair}
	recv, send := &Request{kind: reqRecv}, &Request{kind: reqSend}
	recv.parent, send.parent = pair, pair
	pair.parts = [2]*Request{recv, send}
	recv.status = Status{Source: 3, Tag: 5}
	m.completeLocked(recv, nil)
	if pair.done {
		t.Fatal("the Isendrecv completed with its send outstanding")
	}
	m.completeLocked(send, ErrTruncated)
	if !pair.done || pair.status.Source != 3 || pair.err != ErrTruncated {
		t.Fatalf("the Isendrecv: done %v, %+v, %v", pair.done, pair.status, pair.err)
	}
}
