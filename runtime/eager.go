package runtime

// Eager protocol: a message of at most the receiver's eager limit is copied into a
// registered send slot behind an 8-byte header and posted as one verbs Send, which lands
// in one of the receiver's pre-posted receive slots. The send completes when the copy is
// made (the caller may reuse its buffer at once); the slot is free again once the
// provider reports that Send, or a later signaled one, complete (most messages are posted
// unsignaled: see postMessage in peers.go). A message to this rank itself never touches the
// transport: it is copied into the matching posted receive, or into the unexpected queue.

// sendLocked starts send r: self, eager or rendezvous.
func (e *engine) sendLocked(r *Request) {
	if r.peer == e.rank {
		e.sendSelfLocked(r)
		return
	}
	p := e.peerLocked(r.peer)
	if p.failed != nil {
		e.completeLocked(r, p.failed)
		return
	}
	if !p.ready {
		p.out.push(outOp{kind: opSend, r: r})
		r.outQueued = true
		return
	}
	if len(r.buf) > p.eagerMax || r.sync {
		e.offerLocked(p, r)
		return
	}
	if p.out.n == 0 && e.postFastLocked(p, r.ctx, r.tag, r.buf) {
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
	e.completeLocked(r, nil)
}

// sendSelfLocked delivers a message from this rank to itself. A synchronous send whose
// message waits unexpected completes when a receive takes it (uxMsg.sync).
func (e *engine) sendSelfLocked(r *Request) {
	tag := int32(r.tag)
	if rr := e.posted.Match(envelope(r.ctx, e.rank, tag)); rr != nil {
		e.posted.Remove(&rr.link)
		e.deliverEagerLocked(rr, e.rank, tag, r.buf)
	} else {
		m := e.uxMem.getWith(r.buf)
		m.src, m.ctx, m.tag, m.kind = e.rank, r.ctx, tag, msgEager
		if r.sync {
			m.sync = r
			e.queueUxLocked(m)
			e.kickLocked()
			return
		}
		e.queueUxLocked(m)
	}
	e.completeLocked(r, nil)
	e.kickLocked() // the poller may be waiting for the receive or probe just completed
}

// queueFINLocked sends FIN with cookie to p, now or when a slot frees.
func (e *engine) queueFINLocked(p *peer, cookie uint64) {
	if p.failed != nil {
		return
	}
	if p.out.n == 0 && p.canSend() {
		e.postFINLocked(p, cookie)
		return
	}
	p.out.push(outOp{kind: opFIN, cookie: cookie, msg: msgFIN})
}

// flushSendsLocked posts a signaled no-op to every peer whose last messages went
// unsignaled, so that their completion, and so quietLocked, follows (see postMessage). A
// peer with queued operations or no free slot gets it on a later call.
func (e *engine) flushSendsLocked() {
	for _, p := range e.peers {
		if p == nil || p.unsig == 0 || p.failed != nil || p.out.n > 0 || !p.canSend() {
			continue
		}
		i := p.takeSlot()
		putHeader(p.txBuf(i), msgNop, 0, 0)
		if err := p.postMessage(i, hdrLen, true); err != nil {
			e.peerFailedLocked(p, err)
		}
	}
}

func (e *engine) postFINLocked(p *peer, cookie uint64) { e.postCookieLocked(p, msgFIN, cookie) }

// postCookieLocked posts a message of one cookie (putFIN's kinds) to p.
func (e *engine) postCookieLocked(p *peer, kind uint8, cookie uint64) {
	i := p.takeSlot()
	putFIN(p.txBuf(i), kind, cookie)
	if err := p.postMessage(i, finLen, false); err != nil {
		e.peerFailedLocked(p, err)
	}
}

// pumpLocked posts the operations waiting in p's out queue, in order, as far as send
// slots and send queue entries allow.
func (e *engine) pumpLocked(p *peer) {
	for p.out.n > 0 && p.failed == nil {
		op := p.out.front()
		r := op.r
		if r != nil && r.canceled {
			p.out.pop()
			r.outQueued = false
			if r.cancelled {
				r.status = Status{Cancelled: true}
				e.completeLocked(r, nil)
			} else {
				e.completeLocked(r, errCanceled)
			}
			continue
		}
		if op.kind == opRead {
			if p.sqFree == 0 {
				return
			}
			chunk := op.chunk
			p.out.pop()
			e.postReadLocked(p, r, chunk)
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
			case len(r.buf) > p.eagerMax || r.sync:
				if e.exposeLocked(p, r) {
					e.postRTSLocked(p, r)
				}
			case e.postFastLocked(p, r.ctx, r.tag, r.buf):
				e.completeLocked(r, nil)
			default:
				e.postEagerLocked(p, r)
			}
		case opEager:
			r.outQueued = false
			e.postEagerLocked(p, r)
		case opRTS:
			r.outQueued = false
			e.postRTSLocked(p, r)
		case opFIN:
			e.postCookieLocked(p, msg, cookie)
		}
	}
}
