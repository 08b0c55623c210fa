package runtime

// Free and Cancel (MPI_Request_free, MPI_Cancel, MPI_Test_cancelled).

// Free releases r (MPI_Request_free): its operation goes on and completes, and its outcome
// is dropped. A freed send's buffer belongs to the runtime until the message has gone. Any
// later call with r fails with ErrInvalid, except IsendWith or IrecvWith once it has
// completed. A persistent Request cannot be started again.
func (r *Request) Free() error {
	if err := r.check(); err != nil {
		return withOp("free", err)
	}
	e := r.e
	e.mu.Lock()
	defer e.mu.Unlock()
	if r.parked || len(r.watchers) > 0 {
		return withOp("free", invalidf("a goroutine is waiting for the Request"))
	}
	r.freed = true
	r.quick.Store(0)
	if r.done {
		r.pers = nil // reusable by IsendWith and IrecvWith from now on
	}
	return nil
}

// Cancel asks to withdraw r's operation (MPI_Cancel); Wait or Test then completes r, and
// Status.Cancelled reports whether it was withdrawn (MPI_Test_cancelled). A receive is
// withdrawn until a message matches it. A send is withdrawn while it waits, unsent, for its
// connection or a send slot; a rendezvous offer that has left is withdrawn if its receiver
// has not matched it yet (a message each way); an eager message that has left is not. An
// Isendrecv cancels its two parts. Cancel on a completed Request does nothing.
func (r *Request) Cancel() error {
	if err := r.check(); err != nil {
		return withOp("cancel", err)
	}
	e := r.e
	e.mu.Lock()
	defer e.mu.Unlock()
	e.cancelLocked(r)
	return nil
}

func (e *engine) cancelLocked(r *Request) {
	if r.done {
		return
	}
	switch r.kind {
	case reqRecv:
		if r.link.Queued() {
			e.match.posted.Remove(&r.link)
			r.status = Status{Cancelled: true}
			e.completeLocked(r, nil)
		}
	case reqSend:
		switch {
		case r.outQueued:
			r.dropped, r.cancelled = true, true
			if p := e.links.peers[r.peer]; p != nil && p.ready {
				e.pumpLocked(p)
			}
		case r.inTable && !r.cancelAsked && r.peer != e.rank:
			// An offer that has left: the receiver withdraws it unless it has matched
			// it (withdrawOfferLocked), and answers msgWithdrawn or, as usual, FIN.
			if p := e.links.peers[r.peer]; p != nil && p.failed == nil {
				r.cancelAsked = true
				e.queueCookieLocked(p, msgCancel, r.cookie())
			}
		case r.peer == e.rank:
			if e.match.withdrawSyncLocked(r) {
				r.status = Status{Cancelled: true}
				e.completeLocked(r, nil)
			}
		}
	case reqPair:
		for _, p := range r.parts {
			if p != nil {
				e.cancelLocked(p)
			}
		}
	}
}

// queueCookieLocked posts, or queues behind p's waiting operations, a message of one
// cookie (putFIN's kinds).
func (e *engine) queueCookieLocked(p *peer, kind uint8, cookie uint64) {
	if p.out.n == 0 && p.canSend() {
		e.links.postCookieLocked(p, kind, cookie)
		return
	}
	p.out.push(outOp{kind: opFIN, cookie: cookie, msg: kind})
}
