package runtime

import "slices"

// Eager protocol: a message of at most the receiver's eager limit is copied into a
// registered send slot behind an 8-byte header and posted as one verbs Send, which lands in
// one of the receiver's pre-posted receive slots. The send completes when the copy is made
// (the caller may reuse its buffer at once). The slot is free again once the provider
// reports that Send, or a later signaled one, complete (most messages are posted
// unsignaled: see postMessage in peers.go). A message to this rank itself never touches the
// transport: it is copied into the matching posted receive, or into the unexpected queue.

// sendLocked starts send r: self, eager or rendezvous.
func (e *engine) sendLocked(r *Request) {
	if e.obs.Obs != nil {
		e.sendObservedLocked(r)
		return
	}
	e.postLocked(r)
}

// sendObservedLocked is sendLocked with observation on: the message is numbered and
// counted before it is posted, and its Send event recorded after (observe.go).
func (e *engine) sendObservedLocked(r *Request) {
	ctx, peer, tag, n := r.ctx, r.peer, r.tag, len(r.buf)
	t := e.obs.numberLocked(ctx, peer, n)
	e.postLocked(r)
	e.obs.sentLocked(t, ctx, peer, tag, n)
}

// postLocked is sendLocked once its message is numbered.
func (e *engine) postLocked(r *Request) {
	if r.peer == e.rank {
		e.sendSelfLocked(r)
		return
	}
	p := e.links.peerLocked(r.peer)
	if p.failed != nil {
		e.completeLocked(r, p.failed)
		return
	}
	if !p.ready {
		p.out.push(outOp{kind: opSend, r: r})
		r.outQueued = true
		return
	}
	if len(r.buf) > p.eagerMax || r.synchronous {
		e.rndv.offerLocked(p, r)
		return
	}
	if p.out.n == 0 && p.postFastLocked(r.ctx, r.tag, r.buf) {
		e.completeLocked(r, nil)
		return
	}
	if p.out.n == 0 && p.canSend() {
		e.postEagerLocked(p, r)
		return
	}
	p.out.push(outOp{kind: opEager, r: r})
	r.outQueued = true
}

// postEagerLocked copies r's message into a send slot, posts it and completes r.
func (e *engine) postEagerLocked(p *peer, r *Request) {
	i := p.takeSlot()
	b := p.txBuf(i)
	putHeader(b, msgEager, r.ctx, int32(r.tag))
	n := copy(b[hdrLen:], r.buf)
	p.qsent++
	if err := p.postMessage(i, hdrLen+n, false); err != nil {
		e.peerFailedLocked(p, err)
		e.completeLocked(r, p.failed)
		return
	}
	if p.sq != nil && p.sq.SendQueued() {
		e.holdLocked(p, r)
		return
	}
	e.completeLocked(r, nil)
}

// Held sends. A provider may keep a posted Send in its send queue until the peer posts a
// receive or makes room (shm), and move it on only in this rank's later Poll and Wait
// calls. Such a message has not left: if its send completed, the rank could stop calling
// the runtime (return from its work, wait for the receiver by other means) and the
// receiver would wait for it for ever. So an eager send whose message the provider
// keeps completes only once the provider's queue is empty (releaseHeldLocked, after
// every poll pass), and until then its Send, Wait or Test drives this rank's progress.
// The poller's spin and the CQ's wait check (heldLeft) end a wait when a queue has
// emptied: the receiver rings this rank's doorbell when it posts the receive or makes
// the room the provider waits for.

// sendQueuer is a QP that reports whether posted sends wait in its send queue (shm).
type sendQueuer interface{ SendQueued() bool }

// holdLocked makes eager send r, whose message p's QP keeps, wait for it to leave.
func (e *engine) holdLocked(p *peer, r *Request) {
	if len(p.held) == 0 {
		p.holding.Store(true)
		e.links.holders = append(e.links.holders, p)
		e.poll.holding.Add(1)
	}
	p.held = append(p.held, r)
}

// releaseHeldLocked completes the held sends of every peer whose QP keeps no send any
// more, or that failed.
func (e *engine) releaseHeldLocked() {
	for i := len(e.links.holders) - 1; i >= 0; i-- {
		switch p := e.links.holders[i]; {
		case p.failed != nil:
			e.releasePeerLocked(p, p.failed)
		case !p.sq.SendQueued():
			e.releasePeerLocked(p, nil)
		}
	}
}

// releasePeerLocked completes p's held sends with err, if it has any.
func (e *engine) releasePeerLocked(p *peer, err error) {
	if len(p.held) == 0 {
		return
	}
	for _, r := range p.held {
		e.completeLocked(r, err)
	}
	clear(p.held)
	p.held = p.held[:0]
	p.holding.Store(false)
	e.poll.holding.Add(-1)
	i := slices.Index(e.links.holders, p)
	e.links.holders = slices.Delete(e.links.holders, i, i+1)
}

// failHeldLocked completes every held send with err (abort, finalize).
func (e *engine) failHeldLocked(err error) {
	for len(e.links.holders) > 0 {
		e.releasePeerLocked(e.links.holders[len(e.links.holders)-1], err)
	}
}

// sendSelfLocked delivers a message from this rank to itself. A synchronous send whose
// message waits unexpected completes when a receive takes it (uxMsg.sync).
func (e *engine) sendSelfLocked(r *Request) {
	tag := int32(r.tag)
	flow := e.obs.arrivedLocked(e.rank)
	if rr := e.match.posted.Match(envelope(r.ctx, e.rank, tag)); rr != nil {
		e.match.posted.Remove(&rr.link)
		e.completeLocked(rr, rr.deliver(e.rank, tag, r.buf))
		e.obs.matched(rr, flow, r.ctx, e.rank, int(tag), len(r.buf))
	} else {
		m := e.match.uxMem.getWith(r.buf)
		m.src, m.ctx, m.tag, m.kind, m.flow = e.rank, r.ctx, tag, msgEager, flow
		if r.synchronous {
			m.sync = r
			e.queueUxLocked(m)
			e.poll.kickLocked()
			return
		}
		e.queueUxLocked(m)
	}
	e.completeLocked(r, nil)
	e.poll.kickLocked() // the poller may be waiting for the receive or probe just completed
}

// pumpLocked posts the operations waiting in p's out queue, in order, as far as send
// slots and send queue entries allow.
func (e *engine) pumpLocked(p *peer) {
	for p.out.n > 0 && p.failed == nil {
		op := p.out.front()
		r := op.r
		if r != nil && r.dropped {
			p.out.pop()
			r.outQueued = false
			if r.cancelled {
				r.status = Status{Cancelled: true}
				e.completeLocked(r, nil)
			} else {
				e.completeLocked(r, errDropped)
			}
			continue
		}
		if op.kind == opRead {
			if p.sqFree == 0 {
				return
			}
			chunk := op.chunk
			p.out.pop()
			e.rndv.postReadLocked(p, r, chunk)
			continue
		}
		if !p.canSend() {
			return
		}
		kind, cookie, msg := op.kind, op.cookie, op.msg
		p.out.pop()
		switch kind {
		case opSend:
			// Nothing sent before r waits any more: it may take the fast box.
			r.outQueued = false
			switch {
			case len(r.buf) > p.eagerMax || r.synchronous:
				if e.rndv.exposeLocked(p, r) {
					e.rndv.postRTSLocked(p, r)
				}
			case p.postFastLocked(r.ctx, r.tag, r.buf):
				e.completeLocked(r, nil)
			default:
				e.postEagerLocked(p, r)
			}
		case opEager:
			r.outQueued = false
			e.postEagerLocked(p, r)
		case opRTS:
			r.outQueued = false
			e.rndv.postRTSLocked(p, r)
		case opFIN:
			e.links.postCookieLocked(p, msg, cookie)
		}
	}
}
