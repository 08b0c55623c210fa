package runtime

import "math/bits"

// Matching (package matching holds the queues and the rule, the matcher holds the
// queues): posted receives and probes wait in the order they were posted. Messages that
// arrived before a receive that takes them wait in the unexpected queue, in the order
// they arrived. Messages from
// one peer arrive in the order they were sent (one QP, in order), which with the queues'
// first-match order gives MPI's non-overtaking rule. The message paths call Match and
// Remove, which the compiler inlines, rather than Take, which it does not.

// incomingLocked handles an eager message or RTS from src: it goes to the first matching
// posted receive, or else to the unexpected queue (waking matching probes). payload is an
// eager message's payload, in a receive slot or fast box the caller reuses afterwards.
func (e *engine) incomingLocked(src int, h *header, payload []byte) {
	flow := e.obs.arrivedLocked(src) // every message the sender numbered, taken or not
	if e.discardFreedLocked(src, h) || (h.ctx == ctlCtx && e.markLocked(src, uint16(h.tag))) {
		return
	}
	if h.ctx == ftCtx {
		if h.kind == msgEager {
			e.ft.incomingLocked(src, uint16(h.tag), payload)
		}
		return
	}
	if r := e.match.posted.Match(envelope(h.ctx, src, h.tag)); r != nil {
		e.match.posted.Remove(&r.link)
		if h.kind == msgEager {
			e.completeLocked(r, r.deliver(src, h.tag, payload))
			e.obs.matched(r, flow, h.ctx, src, int(h.tag), len(payload))
		} else {
			e.rndv.startReadLocked(r, src, h.tag, h.cookie, h.rkey, h.off, h.length, offerRuns(h, payload))
			e.obs.matched(r, flow, h.ctx, src, int(h.tag), int(h.length))
		}
		return
	}
	u := e.match.unexpectedLocked(src, h, payload)
	u.flow = flow
	e.queueUxLocked(u)
}

// queueUxLocked queues unexpected message u and completes the probes it satisfies, in the
// order they were posted, until an Mprobe among them takes u.
func (e *engine) queueUxLocked(u *uxMsg) {
	e.match.ux.Push(&u.link, u, u.env())
	for e.match.probes.Len() > 0 && u.link.Queued() {
		r := e.match.nextProbeLocked(u)
		if r == nil {
			return
		}
		e.completeLocked(r, nil)
	}
}

// receiveLocked starts receive r: it takes the first matching unexpected message or is
// posted. It fails at once if it can only be satisfied by a failed peer.
func (e *engine) receiveLocked(r *Request) {
	want := r.want()
	if m := e.match.ux.Match(want); m != nil {
		e.match.ux.Remove(&m.link)
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
	e.match.posted.Push(&r.link, r, want)
}

// takeUxLocked receives unexpected message m, out of e.match.ux, into r, and takes m back.
func (e *engine) takeUxLocked(r *Request, m *uxMsg) {
	if m.kind == msgEager {
		e.completeLocked(r, r.deliver(m.src, m.tag, m.data))
		e.obs.matched(r, m.flow, m.ctx, m.src, int(m.tag), len(m.data))
	} else {
		e.rndv.startReadLocked(r, m.src, m.tag, m.cookie, m.rkey, m.off, m.length, m.data)
		e.obs.matched(r, m.flow, m.ctx, m.src, int(m.tag), int(m.length))
	}
	if m.sync != nil {
		e.completeLocked(m.sync, nil)
	}
	e.match.uxMem.put(m)
}

// elems is the number of whole elements of esize bytes in n bytes. Every Elem's size is a
// power of two, so a shift does it rather than an integer division on every receive's
// path (BenchmarkSoftware8B measures that path).
func elems(n, esize int) int { return n >> bits.TrailingZeros(uint(esize)) }

// deliver copies an eager payload from src with tag into receive r, sets its Status
// and returns ErrTruncated if the payload did not fit.
func (r *Request) deliver(src int, tag int32, payload []byte) error {
	n := copy(r.buf, payload)
	r.status = Status{Source: src, Tag: int(tag), Bytes: n, Count: elems(n, r.esize)}
	if n < len(payload) {
		return r.truncated(len(payload))
	}
	return nil
}

// probeLocked starts probe r: it completes at once if a matching message is waiting, and
// otherwise waits in the probe queue for one.
func (e *engine) probeLocked(r *Request) {
	if e.match.probeNowLocked(r) {
		e.completeLocked(r, nil)
		return
	}
	if err := e.sourceFailedLocked(r); err != nil {
		e.completeLocked(r, err)
		return
	}
	e.match.probes.Push(&r.link, r, r.want())
}
