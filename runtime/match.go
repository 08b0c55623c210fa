package runtime

import (
	"math/bits"

	"github.com/gorma-hpc/gorma/runtime/internal/matching"
)

// Matching (package matching holds the queues and the rule): posted receives wait in
// e.posted and probes in e.probes, in the order they were posted. Messages that arrived
// before a receive that takes them wait in e.ux, in the order they arrived. Messages from
// one peer arrive in the order they were sent (one QP, in order), which with the queues'
// first-match order gives MPI's non-overtaking rule. The message paths call Match and
// Remove, which the compiler inlines, rather than Take, which it does not.

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

	link matching.Link[uxMsg] // its place in e.ux
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

// incomingLocked handles an eager message or RTS from src: it goes to the first matching
// posted receive, or else to the unexpected queue (waking matching probes). payload is an
// eager message's payload, in a receive slot or fast box the caller reuses afterwards.
func (e *engine) incomingLocked(src int, h *header, payload []byte) {
	if e.discardFreedLocked(src, h) || (h.ctx == ctlCtx && e.markLocked(src, uint16(h.tag))) {
		return
	}
	if r := e.posted.Match(envelope(h.ctx, src, h.tag)); r != nil {
		e.posted.Remove(&r.link)
		if h.kind == msgEager {
			e.deliverEagerLocked(r, src, h.tag, payload)
		} else {
			e.startReadLocked(r, src, h.tag, h.cookie, h.rkey, h.off, h.length, offerRuns(h, payload))
		}
		return
	}
	var m *uxMsg
	switch {
	case h.kind == msgEager:
		m = e.uxMem.getWith(payload)
	case h.layout:
		m = e.uxMem.getWith(offerRuns(h, payload)) // a layout offer's runs, out of the slot
		m.cookie, m.rkey, m.off, m.length = h.cookie, h.rkey, h.off, h.length
	default:
		m = e.uxMem.get()
		m.cookie, m.rkey, m.off, m.length = h.cookie, h.rkey, h.off, h.length
	}
	m.src, m.ctx, m.tag, m.kind = src, h.ctx, h.tag, h.kind
	e.queueUxLocked(m)
}

// queueUxLocked queues unexpected message m and completes the probes it satisfies.
func (e *engine) queueUxLocked(m *uxMsg) {
	e.ux.Push(&m.link, m, m.env())
	if e.probes.Len() > 0 {
		e.wakeProbesLocked(m)
	}
}

// receiveLocked starts receive r: it takes the first matching unexpected message or is
// posted. It fails at once if it can only be satisfied by a failed peer.
func (e *engine) receiveLocked(r *Request) {
	want := r.want()
	if m := e.ux.Match(want); m != nil {
		e.ux.Remove(&m.link)
		e.takeUxLocked(r, m)
		return
	}
	if err := e.sourceFailedLocked(r); err != nil {
		e.completeLocked(r, err)
		return
	}
	if r.peer >= 0 && r.peer != e.rank && e.links.peers[r.peer] == nil {
		e.links.peerLocked(r.peer) // connect now: the sender finds it made, and a death is seen
	}
	e.posted.Push(&r.link, r, want)
}

// takeUxLocked receives unexpected message m, out of e.ux, into r, and takes m back.
func (e *engine) takeUxLocked(r *Request, m *uxMsg) {
	if m.kind == msgEager {
		e.deliverEagerLocked(r, m.src, m.tag, m.data)
	} else {
		e.startReadLocked(r, m.src, m.tag, m.cookie, m.rkey, m.off, m.length, m.data)
	}
	if m.sync != nil {
		e.completeLocked(m.sync, nil)
	}
	e.uxMem.put(m)
}

// elems is the number of whole elements of esize bytes in n bytes. Every Elem's size is a
// power of two, so a shift does it rather than an integer division on every receive's
// path (BenchmarkSoftware8B measures that path).
func elems(n, esize int) int { return n >> bits.TrailingZeros(uint(esize)) }

// deliverEagerLocked copies an eager payload into receive r and completes it.
func (e *engine) deliverEagerLocked(r *Request, src int, tag int32, payload []byte) {
	n := copy(r.buf, payload)
	r.status = Status{Source: src, Tag: int(tag), Bytes: n, Count: elems(n, r.esize)}
	var err error
	if n < len(payload) {
		err = truncated(len(payload), len(r.buf))
	}
	e.completeLocked(r, err)
}

// probeLocked starts probe r: it completes at once if a matching message is waiting, and
// otherwise waits in e.probes for one.
func (e *engine) probeLocked(r *Request) {
	want := r.want()
	if m := e.ux.Match(want); m != nil {
		r.status = Status{Source: m.src, Tag: int(m.tag), Bytes: m.size(), Count: m.size()}
		if r.mprobe {
			e.ux.Remove(&m.link)
			r.msg = m
		}
		e.completeLocked(r, nil)
		return
	}
	if err := e.sourceFailedLocked(r); err != nil {
		e.completeLocked(r, err)
		return
	}
	e.probes.Push(&r.link, r, want)
}

// wakeProbesLocked completes the probes that message m satisfies, in the order they
// were posted; an Mprobe among them takes m, and the probes after it do not see it.
func (e *engine) wakeProbesLocked(m *uxMsg) {
	env := m.env()
	for r := range e.probes.All() {
		if r.want().Takes(env) {
			e.probes.Remove(&r.link)
			r.status = Status{Source: m.src, Tag: int(m.tag), Bytes: m.size(), Count: m.size()}
			if r.mprobe {
				e.ux.Remove(&m.link)
				r.msg = m
				e.completeLocked(r, nil)
				return
			}
			e.completeLocked(r, nil)
		}
	}
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
