package runtime

import (
	"math/bits"

	"github.com/gorma-hpc/gorma/runtime/internal/matching"
)

// matcher owns the engine's matching and request state: the posted receives, the
// waiting probes, the unexpected messages and their pool, the rendezvous table, the
// engine's pooled Requests. The engine's message paths (match.go,
// p2p.go, rndv.go, cancel.go, completion.go, progress.go) call it. It calls down only,
// to package matching and to a rendezvous send's registration, never into the engine: a
// method that finds a request to complete returns it, and the engine completes it.
//
// It has no lock of its own: the engine's mu guards it, and every method runs with mu
// held (the Locked suffix). The engine's other parts read its queues under mu too.
type matcher struct {
	posted    reqQueue   // receives waiting for a message
	probes    reqQueue   // probes waiting for a message
	ux        uxQueue    // messages waiting for a receive, in arrival order
	uxMem     uxPool     // unexpected messages and their payloads, for reuse
	table     reqTable   // requests in a rendezvous, by cookie
	pool      []*Request // the engine's own requests, for reuse
	completed uint64     // requests completed (hang.go)
}

type (
	reqQueue = matching.Posted[Request]
	uxQueue  = matching.Unexpected[uxMsg]
)

// uxMsg is a message that arrived before a matching receive was posted: an eager payload
// (copied out of the receive slot, which is reposted at once) or a rendezvous offer.
type uxMsg struct {
	src  int
	ctx  uint16
	tag  int32
	kind uint8  // msgEager or msgRTS
	data []byte // msgEager: the payload; msgRTS: a layout offer's runs, or nil
	// msgRTS
	cookie, rkey, off, length uint64
	// sync is the synchronous send to this rank itself that sent it, completed when a
	// receive takes the message.
	sync *Request
	flow uint64 // its flow number, 0 when the timeline is off (observe.go)

	link matching.Link[uxMsg] // its place in the unexpected queue
}

func (m *uxMsg) size() int {
	if m.kind == msgRTS {
		return int(m.length)
	}
	return len(m.data)
}

func (m *uxMsg) env() matching.Envelope { return envelope(m.ctx, m.src, m.tag) }

// envelope is the matching.Envelope of a message of (ctx, src, tag).
func envelope(ctx uint16, src int, tag int32) matching.Envelope {
	return matching.Envelope{Ctx: ctx, Src: src, Tag: tag}
}

// newRequestLocked returns a pooled request of e for a blocking call.
func (m *matcher) newRequestLocked(e *engine, kind reqKind) *Request {
	var r *Request
	if n := len(m.pool); n > 0 {
		r = m.pool[n-1]
		m.pool = m.pool[:n-1]
	} else {
		r = &Request{e: e, pooled: true}
	}
	r.kind = kind
	r.truncTo = -1
	return r
}

// recycleLocked returns a pooled request to the pool once nothing refers to it.
func (m *matcher) recycleLocked(r *Request) {
	if !r.pooled {
		return
	}
	e, wake := r.e, r.wake
	*r = Request{e: e, pooled: true, waiter: waiter{wake: wake}}
	if len(m.pool) < maxPooledRequests {
		m.pool = append(m.pool, r)
	}
}

const maxPooledRequests = 64

// completeLocked finishes r with err: it releases r's rendezvous slot and registration,
// wakes its waiters, recycles a detached r and completes an Isendrecv whose last part r
// is. r must not be done yet.
func (m *matcher) completeLocked(r *Request, err error) {
	if err != nil && r.err == nil {
		r.err = err
	}
	r.done = true
	m.completed++
	if r.inTable {
		m.table.release(r)
	}
	switch {
	case r.mr == nil:
	case r.mrOwned:
		r.mr.Dereg()
	case r.mrCache != nil:
		r.mrCache.Put(r.mr)
	}
	r.mr, r.mrCache = nil, nil
	if r.finish == nil && r.pers == nil && !r.pooled && !r.freed {
		publish(&r.quick, 1) // after what quickReport reads
	}
	if r.parked {
		select {
		case r.wake <- struct{}{}:
		default:
		}
	}
	for _, w := range r.watchers {
		select {
		case w.wake <- struct{}{}:
		default:
		}
	}
	if r.detached {
		m.recycleLocked(r)
	}
	if r.parent != nil {
		m.partDoneLocked(r.parent)
	}
}

// partDoneLocked completes Isendrecv r once both its parts have completed.
func (m *matcher) partDoneLocked(r *Request) {
	recv, send := r.parts[0], r.parts[1]
	if r.done || recv == nil || send == nil || !recv.done || !send.done {
		return
	}
	r.status = recv.status
	err := recv.err
	if err == nil {
		err = send.err
	}
	m.completeLocked(r, err)
}

// abandonLocked gives up waiting for blocking send r: a send still in its peer's out
// queue is dropped when it reaches the front; a rendezvous offer stays until FIN or
// failure. Either way r is recycled when it completes.
func (m *matcher) abandonLocked(r *Request) {
	if r.done {
		m.recycleLocked(r)
		return
	}
	r.detached = true
	if r.outQueued {
		r.dropped = true
	}
}

// unexpectedLocked returns a new unexpected message for the eager message or RTS of
// header h from src; payload is an eager message's payload, copied.
func (m *matcher) unexpectedLocked(src int, h *header, payload []byte) *uxMsg {
	var u *uxMsg
	switch {
	case h.kind == msgEager:
		u = m.uxMem.getWith(payload)
	case h.layout:
		u = m.uxMem.getWith(offerRuns(h, payload)) // a layout offer's runs, out of the slot
		u.cookie, u.rkey, u.off, u.length = h.cookie, h.rkey, h.off, h.length
	default:
		u = m.uxMem.get()
		u.cookie, u.rkey, u.off, u.length = h.cookie, h.rkey, h.off, h.length
	}
	u.src, u.ctx, u.tag, u.kind = src, h.ctx, h.tag, h.kind
	return u
}

// probeStatus is the Status a probe reports of message u: lengths in bytes.
func probeStatus(u *uxMsg) Status {
	return Status{Source: u.src, Tag: int(u.tag), Bytes: u.size(), Count: u.size()}
}

// probeNowLocked reports whether probe r finds a waiting message; if so it sets r's
// Status, and an Mprobe takes the message.
func (m *matcher) probeNowLocked(r *Request) bool {
	u := m.ux.Match(r.want())
	if u == nil {
		return false
	}
	r.status = probeStatus(u)
	if r.mprobe {
		m.ux.Remove(&u.link)
		r.msg = u
	}
	return true
}

// nextProbeLocked returns the first waiting probe that message u satisfies, out of the
// probe queue and its Status set, or nil. An Mprobe takes u out of the unexpected queue.
func (m *matcher) nextProbeLocked(u *uxMsg) *Request {
	env := u.env()
	for r := range m.probes.All() {
		if r.want().Takes(env) {
			m.probes.Remove(&r.link)
			r.status = probeStatus(u)
			if r.mprobe {
				m.ux.Remove(&u.link)
				r.msg = u
			}
			return r
		}
	}
	return nil
}

// withdrawOfferLocked drops src's rendezvous offer cookie if it is still unexpected, and
// reports whether it was.
func (m *matcher) withdrawOfferLocked(src int, cookie uint64) bool {
	for u := range m.ux.All() {
		if u.kind == msgRTS && u.src == src && u.cookie == cookie {
			m.ux.Remove(&u.link)
			m.uxMem.put(u)
			return true
		}
	}
	return false
}

// withdrawSyncLocked drops the unexpected message of r, a synchronous send to this rank
// itself, and reports whether it was still unexpected.
func (m *matcher) withdrawSyncLocked(r *Request) bool {
	for u := range m.ux.All() {
		if u.sync == r {
			m.ux.Remove(&u.link)
			m.uxMem.put(u)
			return true
		}
	}
	return false
}

// answeredLocked returns the rendezvous send to src of cookie that FIN (kind msgFIN) or
// a withdrawal (msgWithdrawn, Status.Cancelled set) answers, or nil if src offered no
// such send or may not answer it so.
func (m *matcher) answeredLocked(src int, kind uint8, cookie uint64) *Request {
	r := m.table.lookup(cookie)
	if r == nil || r.kind != reqSend || r.peer != src {
		return nil
	}
	if kind == msgWithdrawn {
		if !r.cancelAsked {
			return nil
		}
		r.status = Status{Cancelled: true}
	} else if r.outQueued {
		return nil
	}
	return r
}

// readDoneLocked counts the completion of one RDMA read of the receive in table slot idx,
// and returns that receive once its last read completed, else nil.
func (m *matcher) readDoneLocked(idx uint32) *Request {
	if int(idx) >= len(m.table.slots) {
		return nil
	}
	r := m.table.slots[idx]
	if r == nil || r.kind != reqRecv || r.done {
		return nil
	}
	r.reads--
	if r.reads > 0 {
		return nil
	}
	return r
}

// idleLocked reports whether no request is in a rendezvous.
func (m *matcher) idleLocked() bool { return len(m.table.free) == len(m.table.slots) }

// reqTable holds requests in a rendezvous, found by the cookie carried in RTS and FIN, or
// by the WRID of an RDMA read. A cookie is slot | generation<<32, so a stale or forged
// cookie finds nothing.
type reqTable struct {
	slots     []*Request
	gens      []uint32
	free      []uint32
	sends     int // send requests in the table (awaiting FIN)
	sendBytes int // their bytes
}

func (t *reqTable) add(r *Request) {
	var i uint32
	if n := len(t.free); n > 0 {
		i = t.free[n-1]
		t.free = t.free[:n-1]
	} else {
		i = uint32(len(t.slots))
		t.slots = append(t.slots, nil)
		t.gens = append(t.gens, 0)
	}
	t.gens[i]++
	t.slots[i] = r
	r.slot, r.gen, r.inTable = i, t.gens[i], true
	if r.kind == reqSend {
		t.sends++
		t.sendBytes += len(r.buf)
	}
}

func (t *reqTable) release(r *Request) {
	t.slots[r.slot] = nil
	t.free = append(t.free, r.slot)
	r.inTable = false
	if r.kind == reqSend {
		t.sends--
		t.sendBytes -= len(r.buf)
	}
}

func (r *Request) cookie() uint64 { return uint64(r.slot) | uint64(r.gen)<<32 }

// lookup returns the request of cookie, or nil.
func (t *reqTable) lookup(cookie uint64) *Request {
	i := uint32(cookie)
	if int(i) >= len(t.slots) || t.gens[i] != uint32(cookie>>32) {
		return nil
	}
	return t.slots[i]
}

// uxPool keeps unexpected messages and their eager payloads for reuse, so that a steady
// stream of unexpected messages allocates nothing. Guarded by the engine's mu.
type uxPool struct {
	free []*uxMsg
	bufs bufPool
}

const maxPooledUx = 256

// get returns a zero message.
func (p *uxPool) get() *uxMsg {
	if n := len(p.free); n > 0 {
		m := p.free[n-1]
		p.free = p.free[:n-1]
		return m
	}
	return new(uxMsg)
}

// getWith returns a zero eager message holding a copy of payload.
func (p *uxPool) getWith(payload []byte) *uxMsg {
	m := p.get()
	m.data = p.bufs.get(len(payload))
	copy(m.data, payload)
	return m
}

// put takes back m, which no queue holds any more, and its payload.
func (p *uxPool) put(m *uxMsg) {
	if m.data != nil {
		p.bufs.put(m.data)
	}
	*m = uxMsg{}
	if len(p.free) < maxPooledUx {
		p.free = append(p.free, m)
	}
}

// bufPool keeps the buffers of unexpected eager payloads for reuse, by power-of-two size
// class.
type bufPool struct {
	free [bufClasses][][]byte
}

const (
	bufMinShift = 6  // 64 bytes
	bufClasses  = 21 // up to 64 MiB
	bufKeep     = 32 // buffers kept per class
)

func bufClass(n int) int {
	if n <= 1<<bufMinShift {
		return 0
	}
	return bits.Len(uint(n-1)) - bufMinShift
}

func (p *bufPool) get(n int) []byte {
	c := bufClass(n)
	if c >= bufClasses {
		return make([]byte, n)
	}
	if k := len(p.free[c]); k > 0 {
		b := p.free[c][k-1]
		p.free[c] = p.free[c][:k-1]
		return b[:n]
	}
	return make([]byte, n, 1<<(c+bufMinShift))
}

func (p *bufPool) put(b []byte) {
	c := bufClass(cap(b))
	if c >= bufClasses || cap(b) != 1<<(c+bufMinShift) || len(p.free[c]) >= bufKeep {
		return
	}
	p.free[c] = append(p.free[c], b[:0])
}
