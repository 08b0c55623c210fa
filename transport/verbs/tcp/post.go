package tcp

import (
	"github.com/gorma-hpc/gorma/transport/verbs"
)

// PostSend queues wr and, when the connection, credits and fences allow, writes its frame
// at once (a non-blocking write from the caller's goroutine; see txq). It never blocks on
// the network. A Send for which the peer has no receive posted waits in the send queue,
// counted against MaxSendWR, until the peer grants a credit.
func (q *qp) PostSend(wr *verbs.SendWR) error {
	bad, err := q.checkSend(wr)
	if err != nil {
		return err
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return newErr("post send", q.num, verbs.ErrClosed, "the QP is closed")
	}
	switch q.state {
	case verbs.Reset, verbs.Init, verbs.RTR:
		return q.errState("post send", "PostSend needs RTS")
	}
	if int(q.outstanding.Load()) >= q.maxSend {
		return newErr("post send", q.num, verbs.ErrQueueFull,
			"%d send requests outstanding (MaxSendWR); poll completions, and signal periodically when posting unsignaled requests", q.maxSend)
	}
	q.outstanding.Add(1)
	q.sq[q.sqTail%uint64(len(q.sq))] = sqe{wrid: wr.WRID, op: wr.Op, flags: wr.Flags, local: wr.Local,
		remote: wr.Remote, imm: wr.Imm, compareAdd: wr.CompareAdd, swap: wr.Swap, bad: bad}
	q.sqTail++
	if q.state == verbs.Err {
		if q.flushableLocked() {
			q.flushLocked()
		} // else the exiting reader flushes it, in order
		return nil
	}
	q.pumpLocked()
	return nil
}

// checkSend validates wr without touching the QP's state. Malformed requests are call
// errors; a Local that is not within the MR its LKey names (or that MR lacks LocalWrite for
// a result) is accepted and completes with the returned LocProtErr, as in libibverbs.
func (q *qp) checkSend(wr *verbs.SendWR) (verbs.Status, error) {
	if wr == nil {
		return 0, newErr("post send", q.num, verbs.ErrInvalid, "nil work request")
	}
	if wr.Op > verbs.OpSendWithImm {
		return 0, newErr("post send", q.num, verbs.ErrInvalid, "unknown opcode %d", wr.Op)
	}
	if len(wr.Local) > MaxMessageSize {
		return 0, newErr("post send", q.num, verbs.ErrInvalid, "%d bytes exceed the tcp provider's %d-byte message limit; split the transfer",
			len(wr.Local), MaxMessageSize)
	}
	if wr.Op.IsAtomic() && len(wr.Local) != 8 {
		return 0, newErr("post send", q.num, verbs.ErrInvalid, "%v needs an 8-byte Local for the old value, got %d bytes", wr.Op, len(wr.Local))
	}
	if wr.LKey == 0 {
		if len(wr.Local) > 0 && (wr.Op == verbs.OpSend || wr.Op == verbs.OpSendWithImm) {
			return 0, newErr("post send", q.num, verbs.ErrInvalid, "a %v needs a registered Local (LKey 0 is only for RDMA and atomics)", wr.Op)
		}
		return verbs.Success, nil
	}
	sink := wr.Op == verbs.OpRDMARead || wr.Op.IsAtomic()
	if !q.d.localOK(wr.LKey, wr.Local, sink) {
		return verbs.LocProtErr, nil
	}
	return verbs.Success, nil
}

// localOK reports whether local lies within the live MR named by lkey, with LocalWrite if
// the provider writes it.
func (d *device) localOK(lkey uint64, local []byte, sink bool) bool {
	m := d.lookupMR(lkey)
	if m == nil {
		return false
	}
	if _, ok := verbs.SliceOffset(m.buf, local); !ok {
		return false
	}
	return !sink || m.access.Has(verbs.LocalWrite)
}

// pumpLocked writes queued requests while the connection, credits and fences allow.
func (q *qp) pumpLocked() {
	n := uint64(len(q.sq))
	for q.sqSent < q.sqTail && q.cn != nil && q.state == verbs.RTS {
		e := &q.sq[q.sqSent%n]
		if e.bad != verbs.Success {
			if q.sqHead < q.sqSent {
				return // earlier requests complete first; the reader pumps again
			}
			q.completeHeadLocked(e.bad, 0)
			q.failLocked(verbs.WRFlushErr)
			return
		}
		credit := e.needsCredit() && !q.peerGone
		if credit && q.credits == 0 {
			return
		}
		if e.flags&verbs.Fence != 0 && q.fenceWait > 0 {
			return
		}
		if credit {
			q.credits--
		}
		if e.readOrAtomic() {
			q.fenceWait++
		}
		pay := q.encodeLocked(e, q.sqSent)
		q.sqSent++
		if q.cn.tx.send(&q.hdr, pay, 0) != nil {
			return // the connection broke; its reader flushes the queue
		}
	}
}

// encodeLocked writes the request frame header of e into q.hdr and returns its payload.
func (q *qp) encodeLocked(e *sqe, seq uint64) []byte {
	h := header{seq: seq, rkey: e.remote.RKey, offset: e.remote.Offset, credits: q.takeGrantLocked()}
	var pay []byte
	switch e.op {
	case verbs.OpSend, verbs.OpSendWithImm:
		h.op, h.rkey, h.offset, pay = opSend, 0, 0, e.local
		if e.op == verbs.OpSendWithImm {
			h.flags, h.imm = flagImm, e.imm
		}
	case verbs.OpRDMAWrite, verbs.OpRDMAWriteWithImm:
		h.op, pay = opWrite, e.local
		if e.op == verbs.OpRDMAWriteWithImm {
			h.flags, h.imm = flagImm, e.imm
		}
	case verbs.OpRDMARead:
		h.op, h.length = opRead, uint32(len(e.local))
	case verbs.OpAtomicFetchAdd:
		h.op, h.compareAdd = opFetchAdd, e.compareAdd
	case verbs.OpAtomicCmpSwap:
		h.op, h.compareAdd, h.swap = opCmpSwap, e.compareAdd, e.swap
	}
	h.payloadLen = uint32(len(pay))
	q.takeAckLocked(&h)
	h.put(&q.hdr)
	return pay
}

// completeHeadLocked completes the oldest send request with st. A successful unsignaled
// request produces no completion; its slot is released with the next pushed one.
func (q *qp) completeHeadLocked(st verbs.Status, byteLen uint32) {
	e := &q.sq[q.sqHead%uint64(len(q.sq))]
	if q.sqHead < q.sqSent && e.readOrAtomic() {
		q.fenceWait--
	}
	q.sqHead++
	if q.sqSent < q.sqHead {
		q.sqSent = q.sqHead
	}
	wc := verbs.WC{WRID: e.wrid, Status: st, Op: verbs.WCOpcodeOf(e.op), QPN: q.num, ByteLen: byteLen}
	signaled := e.flags&verbs.Signaled != 0
	*e = sqe{}
	if st == verbs.Success && !signaled {
		q.unsigDone++
		return
	}
	rel := q.unsigDone + 1
	q.unsigDone = 0
	q.scq.push(wc, q, rel)
}

// completeRecvLocked completes the oldest posted receive.
func (q *qp) completeRecvLocked(st verbs.Status, op verbs.WCOpcode, n int, imm uint32, hasImm bool) {
	e := &q.rq[q.rqHead%uint64(len(q.rq))]
	q.rqHead++
	wc := verbs.WC{WRID: e.wrid, Status: st, Op: op, QPN: q.num, ByteLen: uint32(n), Imm: imm, HasImm: hasImm}
	*e = rqe{}
	q.rcq.push(wc, nil, 0)
}

// flushLocked completes every queued request and receive: the first request with
// flushFirst (RetryExcErr when the connection was lost), the rest with WRFlushErr.
func (q *qp) flushLocked() {
	for q.sqHead < q.sqTail {
		st := q.flushFirst
		q.flushFirst = verbs.WRFlushErr
		q.completeHeadLocked(st, 0)
	}
	for q.rqHead < q.rqTail {
		q.completeRecvLocked(verbs.WRFlushErr, verbs.WCRecv, 0, 0, false)
	}
}

// PostRecv posts a receive and grants the peer a credit for it: at once if the peer has
// none left, else with the next frame this side sends.
func (q *qp) PostRecv(wr *verbs.RecvWR) error {
	if wr == nil {
		return newErr("post recv", q.num, verbs.ErrInvalid, "nil work request")
	}
	if wr.LKey != 0 || len(wr.Local) > 0 {
		if wr.LKey == 0 {
			return newErr("post recv", q.num, verbs.ErrInvalid, "a receive buffer needs the LKey of its MR")
		}
		if !q.d.localOK(wr.LKey, wr.Local, true) {
			return newErr("post recv", q.num, verbs.ErrInvalid,
				"Local (%d bytes) is not within a live MR of LKey %#x with LocalWrite", len(wr.Local), wr.LKey)
		}
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return newErr("post recv", q.num, verbs.ErrClosed, "the QP is closed")
	}
	if q.state == verbs.Reset {
		return q.errState("post recv", "PostRecv needs Init, RTR or RTS")
	}
	if q.rqTail-q.rqHead >= uint64(q.maxRecv) {
		return newErr("post recv", q.num, verbs.ErrQueueFull, "%d receives posted (MaxRecvWR)", q.maxRecv)
	}
	q.rq[q.rqTail%uint64(len(q.rq))] = rqe{wrid: wr.WRID, local: wr.Local}
	q.rqTail++
	if q.state == verbs.Err {
		if q.flushableLocked() {
			q.flushLocked()
		}
		return nil
	}
	q.ungranted++
	if q.cn != nil && q.granted == q.consumed {
		q.sendCreditLocked()
	}
	return nil
}

// takeGrantLocked returns the receives not yet advertised and counts them as advertised.
func (q *qp) takeGrantLocked() uint32 {
	g := q.ungranted
	q.ungranted = 0
	q.granted += uint64(g)
	return g
}

// sendCreditLocked sends a credit-only frame.
func (q *qp) sendCreditLocked() {
	h := header{op: opCredit, credits: q.takeGrantLocked()}
	q.takeAckLocked(&h)
	h.put(&q.hdr)
	q.cn.tx.send(&q.hdr, nil, 0) // an error means the reader is about to flush everything
}

// addCredits records receives the peer granted and sends what they unblock.
func (q *qp) addCredits(n uint32) {
	q.mu.Lock()
	q.credits += n
	q.pumpLocked()
	q.mu.Unlock()
}
