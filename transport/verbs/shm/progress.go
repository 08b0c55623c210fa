package shm

import (
	"github.com/gorma-hpc/gorma/transport/verbs"
)

// Send work runs in post order. PostSend executes a request at once when nothing waits
// ahead of it: an RDMA read, write or atomic is a copy or a CPU atomic on the peer's
// mapped arena, and a Send is written into the peer's ring. A request that cannot finish
// (no receive posted at the peer yet, or no room in its ring) stays in the send queue,
// and every later request queues behind it; the sender's later PostSend, Poll and Wait
// calls resume it. Nothing here blocks.

// PostSend posts a send work request; see verbs.QP.
func (q *qp) PostSend(wr *verbs.SendWR) error {
	const op = "post send"
	if err := q.checkSendWR(wr); err != nil {
		return err
	}
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return q.errorf(op, verbs.ErrClosed, "the queue pair was closed")
	}
	if q.state != verbs.RTS && q.state != verbs.Err {
		st := q.state
		q.mu.Unlock()
		return q.errorf(op, verbs.ErrQPState, "queue pair is in %v; sends need RTS (connect it first)", st)
	}
	if q.posted-q.retiredCache >= uint64(q.maxSend) && q.outstandingLocked() >= q.maxSend {
		q.mu.Unlock()
		return q.errorf(op, verbs.ErrQueueFull, "%d send requests outstanding (MaxSendWR); poll completions, and signal at least one request in every MaxSendWR", q.maxSend)
	}
	if q.sqLen > 0 {
		q.progressSendLocked() // make room in the order the requests were posted
	}
	e := &q.sq[wrap(q.sqHead+q.sqLen, q.maxSend)]
	// Field by field: *e = sqe{...} builds the entry on the stack first, and copying that
	// back reads lines the same instructions just wrote in overlapping pieces (a failed
	// store forward at every send).
	e.wr = *wr
	e.seq, e.sent, e.started, e.checked = q.posted, 0, false, false
	q.posted++
	switch {
	case q.state == verbs.Err:
		q.completeSendLocked(e, verbs.WRFlushErr)
	case q.sqLen > 0:
		q.sqLen++
	default:
		if done, st := q.stepLocked(e); done {
			q.finishLocked(e, st)
		} else {
			q.sqLen++
			q.queued.Store(1)
		}
	}
	q.ringPeerLocked()
	q.mu.Unlock()
	return nil
}

// outstandingLocked counts the send requests whose slots are not yet released, reading
// the retired count that Poll maintains under the send CQ's lock.
func (q *qp) outstandingLocked() int {
	q.scq.mu.Lock()
	q.retiredCache = q.retired
	q.scq.mu.Unlock()
	return int(q.posted - q.retiredCache)
}

func (q *qp) checkSendWR(wr *verbs.SendWR) error {
	const op = "post send"
	switch {
	case wr == nil:
		return q.errorf(op, verbs.ErrInvalid, "nil work request")
	case wr.Op > verbs.OpSendWithImm:
		return q.errorf(op, verbs.ErrInvalid, "unknown opcode %d", wr.Op)
	case wr.Op.IsAtomic() && len(wr.Local) != 8:
		return q.errorf(op, verbs.ErrInvalid, "%v needs an 8-byte Local for the original value, got %d bytes", wr.Op, len(wr.Local))
	case (wr.Op == verbs.OpSend || wr.Op == verbs.OpSendWithImm) && len(wr.Local) > 1<<32-1:
		return q.errorf(op, verbs.ErrInvalid, "message of %d bytes is longer than 4 GiB", len(wr.Local))
	}
	return nil
}

// PostRecv posts a receive; see verbs.QP.
func (q *qp) PostRecv(wr *verbs.RecvWR) error {
	const op = "post recv"
	if wr == nil {
		return q.errorf(op, verbs.ErrInvalid, "nil work request")
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	switch {
	case q.closed:
		return q.errorf(op, verbs.ErrClosed, "the queue pair was closed")
	case q.state == verbs.Reset:
		return q.errorf(op, verbs.ErrQPState, "queue pair is in Reset; call ToInit first")
	case q.state == verbs.Err:
		q.flushRecvLocked(wr.WRID)
		return nil
	case q.rqLen >= q.maxRecv:
		return q.errorf(op, verbs.ErrQueueFull, "%d receives posted (MaxRecvWR)", q.maxRecv)
	}
	if q.peerClosedLocked() {
		q.failLocked(verbs.RetryExcErr, codeClosed)
		q.flushRecvLocked(wr.WRID)
		return nil
	}
	r := &q.rq[wrap(q.rqHead+q.rqLen, q.maxRecv)]
	r.wrid, r.local, r.lkey = wr.WRID, wr.Local, wr.LKey
	q.rqLen++
	q.rxPosted++
	publish(q.rx.posted, q.rxPosted) // a credit for the sender
	if q.rxStarted >= q.rxFenced {
		q.creditFenceLocked() // the sender may wait for this credit
	}
	return nil
}

// creditFenceLocked makes the credits published so far visible and wakes the sender if
// it announced in txWait that it waits for one.
//
// The sender's side of that handshake is credit: it stores txWait with a full barrier and
// then reads posted. Ours is to publish posted, fence, and read txWait: either the sender
// sees the credit or we see txWait. The fence is needed only where the sender may have
// used up every credit it could have seen, so PostRecv and drainLocked call this only
// then, and a receiver with receives to spare publishes them with a release store alone.
// rxFenced is rxPosted as of the last call; the sender's credit count, read after our
// fence, is at least that. Hence a sender can wait for a credit only once it has started
// rxFenced messages. The receiver counts the messages it has started in rxStarted. It
// calls this in whichever comes last of the two events that leave such a sender waiting
// in vain. One is the PostRecv after it started the message that used the last credit
// (rxStarted >= rxFenced there). The other is the drain that started that message after
// later credits were published (rxStarted >= rxFenced and rxPosted > rxStarted there).
func (q *qp) creditFenceLocked() {
	fence()
	if q.peer == nil {
		return // no sender to wake yet: stay due until the QP is connected
	}
	q.rxFenced = q.rxPosted
	if q.rx.txWait.Load() != 0 && q.rx.txWait.Swap(0) != 0 {
		q.peerBell.ringAfterAdd() // the sender waits for a credit (or room); the swap fenced
	}
}

// progressSend resumes waiting send work; Poll and Wait call it.
func (q *qp) progressSend() {
	q.mu.Lock()
	q.progressSendLocked()
	q.ringPeerLocked()
	q.mu.Unlock()
}

// ringPeerLocked rings the peer's doorbell if a record went into its ring since the last
// ring. The send path defers its rings to here (or to completeSendLocked, whose commit
// already made the fence that ring needs), once a post or a progress pass is done.
func (q *qp) ringPeerLocked() {
	if q.bellOwed {
		q.bellOwed = false
		q.peerBell.ring()
	}
}

func (q *qp) progressSendLocked() {
	for q.sqLen > 0 && q.state != verbs.Err {
		e := &q.sq[q.sqHead]
		done, st := q.stepLocked(e)
		if !done {
			break
		}
		q.sqHead = wrap(q.sqHead+1, q.maxSend)
		q.sqLen--
		q.finishLocked(e, st)
	}
	if q.sqLen == 0 {
		q.queued.Store(0)
	}
}

// stepLocked runs e as far as it can. done reports whether it finished, with status st.
func (q *qp) stepLocked(e *sqe) (done bool, st verbs.Status) {
	if q.tx.corrupt {
		return true, verbs.RemOpErr
	}
	if code := q.tx.r.ownerState.Load(); code != codeLive {
		return true, statusOf(code)
	}
	if q.peer.gone() {
		q.dev.peers.noticeDeath(q.peer)
		return true, verbs.RetryExcErr
	}
	switch e.wr.Op {
	case verbs.OpSend, verbs.OpSendWithImm:
		return q.execSend(e)
	case verbs.OpRDMAWrite:
		if !q.localOK(e.wr.Local, e.wr.LKey, 0) {
			return true, verbs.LocProtErr
		}
		return true, q.rdmaWrite(&e.wr)
	case verbs.OpRDMAWriteWithImm:
		return q.execWriteImm(e)
	case verbs.OpRDMARead:
		if !q.localOK(e.wr.Local, e.wr.LKey, verbs.LocalWrite) {
			return true, verbs.LocProtErr
		}
		return true, q.rdmaRead(&e.wr)
	default: // atomics; checkSendWR refused anything else
		if !q.localOK(e.wr.Local, e.wr.LKey, verbs.LocalWrite) {
			return true, verbs.LocProtErr
		}
		return true, q.atomic(&e.wr)
	}
}

// finishLocked completes a finished request; an error moves the QP to Err.
func (q *qp) finishLocked(e *sqe, st verbs.Status) {
	q.completeSendLocked(e, st)
	if st != verbs.Success {
		code := codeClosed
		if st == verbs.RemOpErr {
			code = codeRemOp
		}
		q.failLocked(verbs.WRFlushErr, code)
	}
}

// completeSendLocked pushes e's completion if it is signaled or failed, and drops the
// request's reference to Local.
func (q *qp) completeSendLocked(e *sqe, st verbs.Status) {
	if st != verbs.Success || e.wr.Flags&verbs.Signaled != 0 {
		var n uint32
		if st == verbs.Success {
			n = uint32(len(e.wr.Local))
		}
		c := q.scq.reserve()
		c.wc.WRID, c.wc.Status, c.wc.Op, c.wc.QPN, c.wc.ByteLen = e.wr.WRID, st, verbs.WCOpcodeOf(e.wr.Op), q.num, n
		c.wc.Imm, c.wc.HasImm = 0, false
		c.qp, c.seq, c.send = q, e.seq, true
		q.scq.commit(c)
		if q.bellOwed {
			// commit's atomic add orders the record before the load of the peer's
			// sleepers count, as ring's fence would.
			q.bellOwed = false
			q.peerBell.ringAfterAdd()
		}
	}
	e.wr.Local = nil
}

// execSend streams a Send into the peer's ring, as many fragments as fit.
func (q *qp) execSend(e *sqe) (bool, verbs.Status) {
	buf := e.wr.Local
	if !e.checked {
		if len(buf) > 0 && (e.wr.LKey == 0 || !q.localOK(buf, e.wr.LKey, 0)) {
			return true, verbs.LocProtErr
		}
		e.checked = true
	}
	if !e.started {
		if !q.tx.credit() {
			return false, 0 // no receive posted at the peer yet
		}
	}
	typ := uint8(recSend)
	if e.wr.Op == verbs.OpSendWithImm {
		typ = recSendImm
	}
	for {
		rem := len(buf) - e.sent
		want := min(recSlots(rem), q.maxRec)
		n := q.tx.space(want)
		if n == 0 {
			if q.tx.corrupt {
				return true, verbs.RemOpErr
			}
			return false, 0
		}
		p := min(rem, int(n<<slotShift)-recHdrSize)
		kind := typ
		if !e.started {
			kind |= recFirst
		}
		if p == rem {
			kind |= recLast
		}
		q.tx.put(kind, recSlots(p), buf[e.sent:e.sent+p], uint32(p), e.wr.Imm)
		q.bellOwed = true
		if !e.started {
			q.tx.msgs++
		}
		e.started, e.sent = true, e.sent+p
		if kind&recLast != 0 {
			return true, verbs.Success
		}
	}
}

// execWriteImm writes the data, then sends the immediate through the ring.
func (q *qp) execWriteImm(e *sqe) (bool, verbs.Status) {
	if !e.started {
		if !q.localOK(e.wr.Local, e.wr.LKey, 0) {
			return true, verbs.LocProtErr
		}
		if !q.tx.credit() {
			return false, 0 // the immediate needs a receive at the peer
		}
		if st := q.rdmaWrite(&e.wr); st != verbs.Success {
			return true, st
		}
		q.tx.msgs++
		e.started = true
	}
	if q.tx.space(1) == 0 {
		if q.tx.corrupt {
			return true, verbs.RemOpErr
		}
		return false, 0
	}
	q.tx.put(recWriteImm|recFirst|recLast, 1, nil, uint32(len(e.wr.Local)), e.wr.Imm)
	q.bellOwed = true
	return true, verbs.Success
}

// progressRecv drains the inbound ring; Poll and Wait call it when a record is there. It
// returns how many receive completions it wrote into direct (see cq.progress).
func (q *qp) progressRecv(direct []verbs.WC) int {
	q.mu.Lock()
	q.direct, q.ndirect = direct, 0
	q.drainLocked()
	n := q.ndirect
	q.direct, q.ndirect = nil, 0
	q.mu.Unlock()
	return n
}

// drainLocked moves records from the inbound ring into posted receives, in order. A
// message whose first fragment finds no posted receive stays in the ring (credits make
// that rare: the sender starts a message only against a posted receive).
func (q *qp) drainLocked() {
	if q.state != verbs.RTR && q.state != verbs.RTS {
		return
	}
	pos := q.rxp
	var fail verbs.Status // set when a receive completed with an error, or the sender misbehaved
	var rec record
	for fail == verbs.Success {
		ok, bad := q.rx.peek(pos, &rec)
		if !ok {
			break
		}
		first, last := rec.kind&recFirst != 0, rec.kind&recLast != 0
		if bad || first == q.asm.active {
			fail = verbs.RemOpErr
			break
		}
		if first && q.rqLen == 0 {
			break
		}
		if first {
			q.startRecvLocked()
		}
		q.addFragmentLocked(&rec)
		q.rx.consume(pos, rec.n)
		pos += rec.n
		if last {
			fail = q.finishRecvLocked(&rec)
		}
	}
	if pos != q.rxp {
		q.rxp = pos
		publish(&q.rxPos, pos)
		credit := q.rxStarted >= q.rxFenced && q.rxPosted > q.rxStarted
		if pos-q.rxPub >= q.rx.slots/headLagDiv {
			q.rxPub = pos
			publish(q.rx.head, pos)
			credit = true // the head before txWait: the sender stores txWait, then reads head
		}
		if credit {
			q.creditFenceLocked()
		}
	}
	if fail != verbs.Success {
		q.failLocked(verbs.WRFlushErr, codeRemOp)
	}
}

// startRecvLocked takes the next posted receive for an arriving message.
func (q *qp) startRecvLocked() {
	// Field by field: a struct copy through the stack costs a failed store forward.
	r, a := &q.rq[q.rqHead], &q.asm
	a.active, a.got, a.status = true, 0, verbs.Success
	a.r.wrid, a.r.local, a.r.lkey = r.wrid, r.local, r.lkey
	r.local = nil
	q.rqHead = wrap(q.rqHead+1, q.maxRecv)
	q.rqLen--
	q.rxStarted++
	if len(a.r.local) > 0 && (a.r.lkey == 0 || !q.localOK(a.r.local, a.r.lkey, verbs.LocalWrite)) {
		a.status = verbs.LocProtErr
	}
}

// addFragmentLocked copies a fragment into the receive being assembled. A message longer
// than the receive buffer fills it and completes with LocLenErr.
func (q *qp) addFragmentLocked(rec *record) {
	a := &q.asm
	if rec.kind&recTypeMask == recWriteImm {
		a.got = int(rec.length) // the data went by RDMA write; the receive buffer is untouched
		return
	}
	if a.status == verbs.Success && a.got+len(rec.payload) > len(a.r.local) {
		a.status = verbs.LocLenErr
	}
	if a.status != verbs.LocProtErr && a.got < len(a.r.local) {
		copy(a.r.local[a.got:], rec.payload)
	}
	a.got += len(rec.payload)
}

// finishRecvLocked completes the assembled receive and returns its status.
func (q *qp) finishRecvLocked(rec *record) verbs.Status {
	a := &q.asm
	st := a.status
	// Nothing of this QP waits in the CQ (its completions enter under q.mu, which we
	// hold): hand the completion to the polling caller without push and pop. It is
	// written in place, field by field, as in PostSend.
	var tmp cqe
	wc := &tmp.wc
	direct := q.ndirect < len(q.direct) && q.rcq.avail.Load() == 0
	if direct {
		wc = &q.direct[q.ndirect]
		q.ndirect++
	}
	wc.WRID, wc.Status, wc.Op, wc.QPN, wc.ByteLen = a.r.wrid, st, verbs.WCRecv, q.num, uint32(a.got)
	wc.Imm, wc.HasImm = 0, false
	switch rec.kind & recTypeMask {
	case recWriteImm:
		wc.Op, wc.Imm, wc.HasImm = verbs.WCRecvRDMAWithImm, rec.imm, true
	case recSendImm:
		wc.Imm, wc.HasImm = rec.imm, true
	}
	a.active, a.r.local, a.got, a.status = false, nil, 0, verbs.Success
	if !direct {
		tmp.qp = q
		q.rcq.push(tmp)
	}
	return st
}
