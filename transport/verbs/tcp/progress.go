package tcp

import (
	"encoding/binary"
	"errors"
	"net"
	"os"
	"syscall"
	"time"
	"unsafe"

	"github.com/gorma-hpc/gorma/transport/verbs"
	"github.com/gorma-hpc/gorma/transport/verbs/arena"
)

// qconn is a QP's live connection. Its reader goroutine (run) is the provider's progress
// engine for the QP (or, while a CQ waiter holds the reading role, that waiter: lead.go),
// in both roles:
//
//   - target: it executes the peer's requests against this device's memory (RDMA write,
//     read, fetch-add, cmp-swap, each behind a key table Pin/Unpin) and its posted
//     receives, and answers; the application never has to call in.
//   - initiator: it matches answers to the send queue, in order, and completes requests.
//
// Once the QP is in Err it refuses every request with RetryExcErr and ignores answers to
// flushed requests. It stops when the connection fails or is closed (QP.Close, device
// Close, a flush that had to abort writes, the peer dying or breaking the protocol). It
// then stops the writer goroutine, moves the QP to Err, flushes both queues and closes
// done.
type qconn struct {
	q    *qp
	d    *device
	c    *sock
	tx   *txq
	peer peerInfo
	done chan struct{}

	// Whoever holds the reading role (lead.go).
	rd        frameReader
	hdr       [hdrSize]byte
	leadFault *fault // why a leader stopped; the reader exits with it
	rdSeq     uint64 // the read whose sliced response is arriving
	rdGot     int    // bytes of it landed so far (0: none is)
	// refusing is set once this side has answered one of the peer's requests with an
	// error status. The peer's QP goes to Err when that answer arrives and completes the
	// requests it sent after the refused one with WRFlushErr, which says they did not
	// run: so they must not run here either, even though they are already on the wire.
	// Every later request is refused as in Err mode (its answer is stale at the peer).
	refusing bool
	// hold is how many more frames of the peer's requests may be read before an owed ack
	// must go (flushAck); set by a write with flagLater (see ackBatch).
	hold int

	// Reading role (lead.go): role is guarded by q.rcq.mu; bgFault is the reader's.
	role     int
	bgFault  *fault
	roleFD   int
	roleFile *os.File // nil: the connection never leads
	roleRaw  syscall.RawConn
	roleFn   func(uintptr) bool
	// Idle-role watch (watch.go), guarded like role: the connection's slot in the
	// device's watch page (-1: none yet), and whether the role eventfd was written since
	// the role was last left idle.
	wslot      int
	rolePosted bool
}

func newQconn(q *qp, c *net.TCPConn, peer peerInfo) (*qconn, error) {
	limit := 2*(q.maxSend+int(min(peer.maxSend, maxQueueDepth))+q.maxRecv) + 64
	s, err := newSock(c)
	if err != nil {
		return nil, err
	}
	s.spin = spinOf(q.d.cfg.Wait, q.d.cfg.Spin)
	tx := newTxq(s, q.d.tab, limit)
	cn := &qconn{q: q, d: q.d, c: s, tx: tx, peer: peer, done: make(chan struct{}), rd: newFrameReader(nil, s)}
	s.idle = func() bool { return cn.soleOnCQ() && othersIdle(&s.sched) }
	s.quiet = tx.quiet
	cn.initRole()
	return cn, nil
}

// soleOnCQ reports whether the connection is alone on its CQ. Only then does its reader
// spin (sock.spinIdle), as only then may a waiter lead it. A rank with several peers
// would spin a reader per process, and hosts that share cores (network-namespace hosts,
// containers) would then take each other's cores (scripts/netns-allreduce.sh with SIZES=8
// and PPH=1, 4 hosts of one rank on 2 cores, shows a small Allreduce slowing down).
func (cn *qconn) soleOnCQ() bool { return cn.q.rcq.solo.Load() == cn }

// fault ends the reader: first is the status of the next request flushed; drain asks to
// let queued answers reach the peer before the connection closes.
type fault struct {
	first verbs.Status
	drain bool
}

var (
	faultIO       = &fault{first: verbs.RetryExcErr}           // connection lost
	faultProtocol = &fault{first: verbs.RemOpErr, drain: true} // the peer broke the protocol
	faultAbort    = &fault{first: verbs.WRFlushErr}            // an error completion had to abort the connection
)

// failFromReaderLocked moves the QP to Err after an error completion of the reader's own.
// If the flush had to abort the connection, the reader must stop at once: answers still
// in its buffer must not complete later requests after the error.
func (q *qp) failFromReaderLocked() *fault {
	if q.failLocked(verbs.WRFlushErr) != nil {
		return faultAbort
	}
	return nil
}

// run is the reader goroutine.
func (cn *qconn) run() {
	f := cn.loop()
	if f.drain {
		cn.tx.drain(time.Second)
	}
	cn.tx.shutdown()
	cn.unregister()
	q := cn.q
	q.mu.Lock()
	q.setErrLocked(f.first)
	q.cn = nil
	q.exiting = false
	q.flushLocked()
	q.mu.Unlock()
	close(cn.done)
}

func (cn *qconn) loop() *fault {
	for {
		if cn.rd.buffered() < hdrSize {
			if cn.flushAck() != nil {
				return faultIO
			}
			if cn.yieldRole() { // back from a leader
				if f := cn.bgFault; f != nil {
					return f
				}
				continue
			}
		}
		wait := cn.rd.buffered() < hdrSize
		if wait {
			cn.parked(true) // the watcher may see the socket fill with nobody polling
		}
		h, err := cn.rd.header()
		if wait {
			cn.parked(false)
		}
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				cn.c.SetReadDeadline(time.Time{}) // a leader's stale kick
				continue
			}
			if errors.Is(err, errBadFrame) {
				return faultProtocol
			}
			return faultIO
		}
		if f := cn.frame(&h); f != nil {
			return f
		}
	}
}

// frame handles one frame whose header was read: its credits, its piggybacked ack (which
// comes before the frame), then the frame itself.
func (cn *qconn) frame(h *header) *fault {
	if cn.hold > 0 && (h.op.isRequest() || h.op == opCredit) {
		if cn.hold--; cn.hold == 0 && cn.flushAck() != nil { // the ackBatch-th frame: the held ack goes
			return faultIO
		}
	}
	if h.credits != 0 {
		cn.q.addCredits(h.credits)
	}
	if h.flags&flagAck != 0 {
		if f := cn.q.ackThrough(h.ack); f != nil {
			return f
		}
	}
	if h.op.isRequest() && (cn.refusing || cn.q.errd.Load()) {
		return cn.refuse(h)
	}
	return cn.dispatch(h)
}

func (cn *qconn) dispatch(h *header) *fault {
	switch h.op {
	case opSend:
		return cn.serveSend(h)
	case opWrite:
		return cn.serveWrite(h)
	case opRead:
		return cn.serveRead(h)
	case opFetchAdd, opCmpSwap:
		return cn.serveAtomic(h)
	case opAck:
		return cn.onAck(h)
	case opReadResp:
		return cn.onReadResp(h)
	case opAtomicResp:
		return cn.onAtomicResp(h)
	case opDisconnect:
		q := cn.q
		q.mu.Lock()
		q.peerGone = true
		q.pumpLocked()
		q.mu.Unlock()
	}
	return nil
}

// refuse answers a request that arrived while the QP is in Err.
func (cn *qconn) refuse(h *header) *fault {
	if h.op == opSend || h.op == opWrite {
		if f := cn.skip(h.payloadLen); f != nil {
			return f
		}
	}
	return cn.nak(h, verbs.RetryExcErr)
}

// respond sends an answer frame, carrying any owed ack (or after it, for an opAck).
func (cn *qconn) respond(h *header, pay []byte, pin uint64) *fault {
	if h.status != verbs.Success {
		cn.refusing = true // see qconn.refusing
	}
	q := cn.q
	q.mu.Lock()
	var err error
	if h.op == opAck {
		err = cn.flushAckLocked()
	}
	h.credits = q.takeGrantLocked()
	q.takeAckLocked(h)
	h.put(&cn.hdr)
	q.mu.Unlock()
	if err == nil {
		err = cn.tx.send(&cn.hdr, pay, pin)
	} else if pin != 0 {
		cn.d.tab.Unpin(pin)
	}
	if err != nil {
		return faultIO
	}
	return nil
}

// ack records that the peer's request seq succeeded (see lead.go on acks).
func (cn *qconn) ack(seq uint64) {
	q := cn.q
	q.mu.Lock()
	q.ackOwed, q.ackSeq = true, seq
	q.mu.Unlock()
}

// flushAck sends the owed ack as a frame of its own: the role holder is about to block.
// While a hold runs (the peer's last writes promised more requests behind them) the ack
// waits for them instead; see ackBatch.
func (cn *qconn) flushAck() error {
	if cn.hold > 0 {
		return nil
	}
	return cn.flushHeld()
}

// flushHeld sends the owed ack even during a hold, and ends the hold: the role holder
// leaves the role, and nobody may read the promised requests for a while.
func (cn *qconn) flushHeld() error {
	cn.hold = 0
	q := cn.q
	q.mu.Lock()
	defer q.mu.Unlock()
	return cn.flushAckLocked()
}

func (cn *qconn) flushAckLocked() error {
	q := cn.q
	if !q.ackOwed {
		return nil
	}
	q.ackOwed = false
	h := header{op: opAck, seq: q.ackSeq, credits: q.takeGrantLocked()}
	h.put(&q.hdr)
	return cn.tx.send(&q.hdr, nil, 0)
}

// takeAckLocked attaches the owed ack to h when its opcode can carry one.
func (q *qp) takeAckLocked(h *header) {
	if !q.ackOwed || h.op == opCmpSwap || h.op == opAck {
		return
	}
	h.flags |= flagAck
	h.ack = q.ackSeq
	q.ackOwed = false
}

// nak answers request h with an error status: an ack for reads and atomics would be
// ambiguous, so each kind gets its own answer opcode.
func (cn *qconn) nak(h *header, st verbs.Status) *fault {
	op := opAck
	switch h.op {
	case opRead:
		op = opReadResp
	case opFetchAdd, opCmpSwap:
		op = opAtomicResp
	}
	return cn.respond(&header{op: op, seq: h.seq, status: st}, nil, 0)
}

// payload reads the next len(dst) payload bytes into dst, first flushing a pending ack
// if the read may block.
func (cn *qconn) payload(dst []byte) *fault {
	if cn.rd.buffered() < len(dst) && cn.flushAck() != nil {
		return faultIO
	}
	if cn.rd.readFull(dst) != nil {
		return faultIO
	}
	return nil
}

func (cn *qconn) skip(n uint32) *fault {
	if cn.rd.buffered() < int(n) && cn.flushAck() != nil {
		return faultIO
	}
	if cn.rd.discard(int(n)) != nil {
		return faultIO
	}
	return nil
}

// target validates and pins an access of n bytes at off in the MR of key and returns its
// memory. On failure nothing is pinned and the status is RemAccessErr.
func (d *device) target(key, off, n uint64, want verbs.Access) ([]byte, verbs.Status) {
	tg, ok := d.tab.Pin(key, off, n, want)
	if !ok {
		return nil, verbs.RemAccessErr
	}
	var mem []byte
	switch tg.Kind {
	case arena.KindArena:
		start, seg := tg.Base+off, uint64(len(d.seg))
		if start >= tg.Base && start <= seg && n <= seg-start {
			mem = d.seg[start : start+n : start+n]
		}
	case arena.KindUser:
		if m := d.lookupMR(key); m != nil && m.user && off <= uint64(len(m.buf)) && n <= uint64(len(m.buf))-off {
			mem = m.buf[off : off+n : off+n]
		}
	}
	if mem == nil {
		d.tab.Unpin(key)
		return nil, verbs.RemAccessErr
	}
	return mem, verbs.Success
}

// claimRecv takes a credit and marks the reader busy with the oldest posted receive,
// which an arriving Send (or write with immediate) fills. The peer sends those only with
// a credit, so a receive is there unless the QP has gone to Err meanwhile.
func (cn *qconn) claimRecv() (rqe, bool) {
	q := cn.q
	q.mu.Lock()
	defer q.mu.Unlock()
	q.consumed++
	if q.rqHead == q.rqTail || q.state == verbs.Err {
		return rqe{}, false
	}
	q.busy = true
	return q.rq[q.rqHead%uint64(len(q.rq))], true
}

// release clears busy and completes the claimed receive with st and op, unless op is 0
// (WCSend, never a receive's) and st Success: then the receive stays posted. A successful
// completion makes the request's ack owed first, so that a reply posted as soon as the
// completion is polled carries it.
func (cn *qconn) release(st verbs.Status, op verbs.WCOpcode, n int, h *header) {
	q := cn.q
	q.mu.Lock()
	q.busy = false
	if op != 0 && st == verbs.Success {
		q.ackOwed, q.ackSeq = true, h.seq
	}
	if op != 0 || st != verbs.Success {
		q.completeRecvLocked(st, op, n, h.imm, h.flags&flagImm != 0)
	}
	q.mu.Unlock()
}

// serveSend places a Send in the oldest posted receive.
func (cn *qconn) serveSend(h *header) *fault {
	r, ok := cn.claimRecv()
	if !ok {
		return cn.refuse(h)
	}
	n := int(h.payloadLen)
	if n > len(r.local) {
		f := cn.skip(h.payloadLen)
		if f == nil {
			f = cn.nak(h, verbs.RemInvReqErr)
		}
		q := cn.q
		q.mu.Lock()
		defer q.mu.Unlock()
		q.busy = false
		if f != nil {
			return f // the exiting reader flushes the receive
		}
		// The error completion and the move to Err are one step for observers.
		q.completeRecvLocked(verbs.LocLenErr, verbs.WCRecv, n, h.imm, h.flags&flagImm != 0)
		return q.failFromReaderLocked()
	}
	f := cn.payload(r.local[:n])
	if f != nil {
		cn.release(verbs.Success, 0, 0, h) // the exiting reader flushes the receive
		return f
	}
	cn.release(verbs.Success, verbs.WCRecv, n, h)
	return nil
}

// serveWrite lands an RDMA write (with immediate: and consumes a receive).
func (cn *qconn) serveWrite(h *header) *fault {
	imm := h.flags&flagImm != 0
	if imm {
		if _, ok := cn.claimRecv(); !ok {
			return cn.refuse(h)
		}
		cn.release(verbs.Success, 0, 0, h) // nothing is copied into the receive's buffer
	}
	mem, st := cn.d.target(h.rkey, h.offset, uint64(h.payloadLen), verbs.RemoteWrite)
	if st != verbs.Success {
		if f := cn.skip(h.payloadLen); f != nil {
			return f
		}
		return cn.nak(h, st)
	}
	f := cn.payload(mem)
	cn.d.tab.Unpin(h.rkey)
	if f != nil {
		return f
	}
	if !imm {
		if h.flags&flagLater == 0 {
			cn.hold = 0
		} else if cn.hold == 0 {
			cn.hold = ackBatch - 1
		}
		cn.ack(h.seq)
		return nil
	}
	q := cn.q
	q.mu.Lock()
	q.ackOwed, q.ackSeq = true, h.seq                // before the completion
	if q.state != verbs.Err && q.rqHead < q.rqTail { // unless a flush took it meanwhile
		q.completeRecvLocked(verbs.Success, verbs.WCRecvRDMAWithImm, int(h.payloadLen), h.imm, true)
	}
	q.mu.Unlock()
	return nil
}

// serveRead answers an RDMA read straight from target memory, which stays pinned until
// the answer is written.
func (cn *qconn) serveRead(h *header) *fault {
	mem, st := cn.d.target(h.rkey, h.offset, uint64(h.length), verbs.RemoteRead)
	if st != verbs.Success {
		return cn.nak(h, st)
	}
	return cn.respond(&header{op: opReadResp, seq: h.seq, payloadLen: h.length}, mem, h.rkey)
}

// serveAtomic runs a fetch-add or compare-and-swap with CPU atomics on the target word,
// so it is atomic with respect to local atomics and to the shm provider's on the same
// memory, and then calls Config.OnRemoteAtomic.
func (cn *qconn) serveAtomic(h *header) *fault {
	mem, st := cn.d.target(h.rkey, h.offset, 8, verbs.RemoteAtomic)
	var old uint64
	if st == verbs.Success {
		p := unsafe.Pointer(unsafe.SliceData(mem))
		if uintptr(p)%8 != 0 {
			st = verbs.RemInvReqErr
		} else if w := (*uint64)(p); h.op == opFetchAdd {
			old = dmaAdd64(w, h.compareAdd)
		} else {
			for {
				old = dmaLoad64(w)
				if old != h.compareAdd || dmaCas64(w, old, h.swap) {
					break
				}
			}
		}
		cn.d.tab.Unpin(h.rkey)
	}
	f := cn.respond(&header{op: opAtomicResp, seq: h.seq, status: st, compareAdd: old}, nil, 0)
	if hook := cn.d.cfg.OnRemoteAtomic; hook != nil && st == verbs.Success {
		hook(h.rkey, h.offset) // after the answer is queued: the initiator does not wait for it
	}
	return f
}

// answerLocked classifies an answer for request seq: stale (its request was flushed),
// the oldest request on the wire (returned), or a protocol violation.
func (q *qp) answerLocked(seq uint64) (e *sqe, stale, ok bool) {
	if seq < q.sqHead {
		return nil, true, true
	}
	if seq != q.sqHead || q.sqHead >= q.sqSent {
		return nil, false, false
	}
	return &q.sq[q.sqHead%uint64(len(q.sq))], false, true
}

// onAck completes requests acknowledged by the target.
func (cn *qconn) onAck(h *header) *fault {
	q := cn.q
	q.mu.Lock()
	defer q.mu.Unlock()
	if h.seq < q.sqHead {
		return nil // answers requests that were flushed
	}
	if h.status != verbs.Success {
		e, _, ok := q.answerLocked(h.seq)
		if !ok || e.readOrAtomic() {
			return faultProtocol
		}
		q.completeHeadLocked(h.status, 0)
		return q.failFromReaderLocked()
	}
	return q.ackThroughLocked(h.seq)
}

// ackThrough completes requests acknowledged by an ack piggybacked on a frame.
func (q *qp) ackThrough(seq uint64) *fault {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.ackThroughLocked(seq)
}

// ackThroughLocked completes the Sends and writes through seq, which succeeded.
func (q *qp) ackThroughLocked(seq uint64) *fault {
	if seq < q.sqHead {
		return nil // answers requests that were flushed
	}
	if seq >= q.sqSent {
		return faultProtocol
	}
	for q.sqHead <= seq {
		e := &q.sq[q.sqHead%uint64(len(q.sq))]
		if e.readOrAtomic() {
			return faultProtocol
		}
		q.completeHeadLocked(verbs.Success, uint32(len(e.local)))
	}
	q.pumpLocked() // a request refused locally may be next
	return nil
}

// onReadResp lands read data in the request's Local and completes it. A long read's
// data comes in slices (flagMore on all but the last; see streamReq), landed in turn:
// rdSeq and rdGot say how much of which read has arrived.
func (cn *qconn) onReadResp(h *header) *fault {
	q := cn.q
	more := h.flags&flagMore != 0
	q.mu.Lock()
	e, stale, ok := q.answerLocked(h.seq)
	if stale {
		q.mu.Unlock()
		return cn.skip(h.payloadLen)
	}
	got := 0
	if cn.rdGot > 0 && cn.rdSeq == h.seq {
		got = cn.rdGot
	}
	n := int(h.payloadLen)
	if !ok || e.op != verbs.OpRDMARead || h.status != verbs.Success && got > 0 ||
		h.status == verbs.Success && (n > len(e.local)-got || !more && got+n != len(e.local)) {
		q.mu.Unlock()
		return faultProtocol
	}
	local, total := e.local[got:got+n], len(e.local)
	q.busy = true
	q.mu.Unlock()
	var f *fault
	if h.status == verbs.Success {
		f = cn.payload(local)
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.busy = false
	if f != nil {
		return f
	}
	if more {
		cn.rdSeq, cn.rdGot = h.seq, got+n
		return nil
	}
	cn.rdGot = 0
	return q.finishLocked(h.status, uint32(total))
}

// onAtomicResp stores the old value in the request's Local and completes it.
func (cn *qconn) onAtomicResp(h *header) *fault {
	q := cn.q
	q.mu.Lock()
	defer q.mu.Unlock()
	e, stale, ok := q.answerLocked(h.seq)
	if stale {
		return nil
	}
	if !ok || !e.op.IsAtomic() {
		return faultProtocol
	}
	if h.status == verbs.Success {
		binary.NativeEndian.PutUint64(e.local, h.compareAdd)
	}
	return q.finishLocked(h.status, 8)
}

// finishLocked completes a read or atomic at the head; an error moves the QP to Err, a
// success may release fenced requests.
func (q *qp) finishLocked(st verbs.Status, n uint32) *fault {
	if st != verbs.Success {
		q.completeHeadLocked(st, 0)
		return q.failFromReaderLocked()
	}
	q.completeHeadLocked(verbs.Success, n)
	q.pumpLocked()
	return nil
}
