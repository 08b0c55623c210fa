package shm

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/gorma-hpc/gorma/transport/verbs"
	"github.com/gorma-hpc/gorma/transport/verbs/arena"
)

// maxQueueDepth bounds MaxSendWR and MaxRecvWR.
const maxQueueDepth = 1 << 16

// sqe is a send work request in the send queue, with its progress.
type sqe struct {
	wr      verbs.SendWR
	seq     uint64 // post sequence: the slot accounting of MaxSendWR
	sent    int    // Send: payload bytes already in the peer's ring
	started bool   // Send: first fragment written; RDMAWriteWithImm: data written
	checked bool   // Local validated against LKey
}

// rqe is a posted receive.
type rqe struct {
	wrid  uint64
	local []byte
	lkey  uint64
}

// assembly is the receive that an inbound message is being written into.
type assembly struct {
	active bool
	r      rqe
	got    int
	status verbs.Status
}

// qp is a reliable-connected queue pair. Its mu guards the queues and state; the atomics
// above mu are what Poll reads without it.
type qp struct {
	dev      *device
	pd       *pd
	num      uint32
	scq, rcq *cq
	maxSend  int
	maxRecv  int
	rx       ring // our inbound ring, in our mapping; immutable
	rxRegs   [2]arena.Region
	ep       []byte // our endpoint bytes; immutable

	retired uint64        // send WRs released by polled completions (a sequence number); scq.mu
	queued  atomic.Int32  // 1 while the send queue holds work that waits
	rxPos   atomic.Uint64 // copy of rxp for Poll's peek
	waitPos atomic.Uint64 // 1 + the ring position whose whole message last ended a Wait (cq.waitStep)
	failed  atomic.Bool   // state is Err
	noticed atomic.Bool   // the peer's close (rx.senderState) has been handled

	mu           qlock
	state        verbs.QPState
	closed       bool
	posted       uint64 // sequence of the next send WR
	retiredCache uint64 // retired as last read (under scq.mu, from push or PostSend)
	sq           []sqe  // waiting send work, circular
	sqHead       int
	sqLen        int
	rq           []rqe // posted receives, circular
	rqHead       int
	rqLen        int
	rxp          uint64 // receiver position in rx
	rxPub        uint64 // rxp as last published in rx.head (see headLagDiv)
	rxPosted     uint64 // receives ever posted (published in rx.posted as the sender's credit)
	rxStarted    uint64 // receives an arriving message started (startRecvLocked)
	rxFenced     uint64 // rxPosted at the last creditFenceLocked
	asm          assembly
	direct       []verbs.WC // progressRecv: the polling caller's free completions
	ndirect      int        // completions written into direct
	tx           tx         // the peer's ring, once connected
	bellOwed     bool       // a record went into tx since the peer's doorbell last rang
	maxRec       uint64
	peer         *peer
	rmem         []byte       // the peer's arena in our mapping
	rtab         *arena.Table // the peer's key table in our mapping
	peerBell     doorbell
	peerPID      int32
	peerClaim    uint64 // the claim the peer QP writes into our ring when it connects to us
}

// CreateQP creates a queue pair in Reset, with its inbound ring allocated in the arena.
func (p *pd) CreateQP(attr verbs.QPAttr) (verbs.QP, error) {
	const op = "create qp"
	scq, ok1 := attr.SendCQ.(*cq)
	rcq, ok2 := attr.RecvCQ.(*cq)
	if !ok1 || !ok2 || scq == nil || rcq == nil || scq.dev != p.dev || rcq.dev != p.dev {
		return nil, opError(op, 0, verbs.ErrInvalid, "SendCQ and RecvCQ must be CQs of this shm device")
	}
	if scq.closed.Load() || rcq.closed.Load() {
		return nil, opError(op, 0, verbs.ErrClosed, "a completion queue of the QP was closed")
	}
	ms, mr := attr.MaxSendWR, attr.MaxRecvWR
	if ms == 0 {
		ms = verbs.DefaultMaxSendWR
	}
	if mr == 0 {
		mr = verbs.DefaultMaxRecvWR
	}
	if ms < 1 || ms > maxQueueDepth || mr < 1 || mr > maxQueueDepth {
		return nil, opError(op, 0, verbs.ErrInvalid, fmt.Sprintf("MaxSendWR %d and MaxRecvWR %d must be in [1, %d]", ms, mr, maxQueueDepth))
	}
	if err := p.checkOpen(op); err != nil {
		return nil, err
	}
	d := p.dev
	q := &qp{dev: d, pd: p, num: d.nextQPN.Add(1), scq: scq, rcq: rcq, maxSend: ms, maxRecv: mr,
		sq: make([]sqe, ms), rq: make([]rqe, mr)}
	if err := q.allocRing(defaultRingSlots); err != nil {
		return nil, err
	}
	if err := d.addQP(q); err != nil {
		q.freeRing()
		return nil, err
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		d.removeQP(q)
		q.freeRing()
		return nil, opError(op, 0, verbs.ErrClosed, "the protection domain was closed")
	}
	p.qps[q] = struct{}{}
	p.mu.Unlock()
	scq.attach(q)
	rcq.attach(q)
	return q, nil
}

func (q *qp) allocRing(slots int) error {
	const op = "create qp"
	d := q.dev
	hdr, err := d.arena.AllocRaw(ringHdrSize)
	if err != nil {
		return opError(op, 0, err, "no arena memory for the QP's ring header")
	}
	data, err := d.arena.AllocRaw(slots * slotSize)
	if err != nil {
		d.arena.Free(hdr)
		return opError(op, 0, err, "no arena memory for the QP's inbound ring")
	}
	q.rxRegs = [2]arena.Region{hdr, data}
	q.rx = initRing(hdr.Bytes, data.Bytes, data.Zero, d.nonce, q.num)
	ep := endpoint{host: d.host, pid: d.pid, nonce: d.nonce, qpn: q.num, hdrOff: uint64(hdr.Off),
		dataOff: uint64(data.Off), slots: uint32(slots), liveOff: uint64(d.live.reg.Off), desc: d.desc}
	if q.ep, err = ep.appendBinary(nil); err != nil {
		q.freeRing()
		return opError(op, 0, err, "could not encode the endpoint")
	}
	return nil
}

func (q *qp) freeRing() {
	for _, r := range q.rxRegs {
		if r.Bytes != nil {
			q.dev.arena.Free(r)
		}
	}
}

func (q *qp) Num() uint32 { return q.num }

func (q *qp) State() verbs.QPState {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.state
}

// Endpoint returns a copy of the bytes a peer passes to ToRTR.
func (q *qp) Endpoint() []byte { return append([]byte(nil), q.ep...) }

func (q *qp) errorf(op string, err error, format string, args ...any) error {
	return opError(op, q.num, err, fmt.Sprintf(format, args...))
}

// ToInit moves the QP from Reset to Init.
func (q *qp) ToInit() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.transitionLocked("modify qp to Init", verbs.Init)
}

func (q *qp) transitionLocked(op string, next verbs.QPState) error {
	if q.closed {
		return q.errorf(op, verbs.ErrClosed, "the queue pair was closed")
	}
	if !q.state.CanTransition(next) {
		return q.errorf(op, verbs.ErrQPState, "cannot go from %v to %v", q.state, next)
	}
	q.state = next
	return nil
}

// ToRTR connects the QP to the QP whose endpoint bytes are remote. It maps the peer's
// arena (once per peer device), checks and claims the peer's inbound ring, and resolves
// everything the data path needs, so no lookup happens per request.
func (q *qp) ToRTR(ctx context.Context, remote []byte) error {
	const op = "modify qp to RTR"
	if err := ctx.Err(); err != nil {
		return err
	}
	ep, err := decodeEndpoint(remote)
	if err == nil {
		err = ep.checkHost(q.dev.host)
	}
	if err != nil {
		return q.errorf(op, verbs.ErrBadEndpoint, "%v", err)
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return q.errorf(op, verbs.ErrClosed, "the queue pair was closed")
	}
	if q.state != verbs.Init {
		return q.errorf(op, verbs.ErrQPState, "cannot go from %v to RTR (call ToInit first)", q.state)
	}
	p, err := q.dev.peers.acquire(&ep, q)
	if err != nil {
		// The cause (ESRCH, the ENOENT of a peer's /proc/PID/fd gone with its process)
		// stays in the chain for errors.Is.
		return opError(op, q.num, fmt.Errorf("%w: %w", verbs.ErrPeer, err), "")
	}
	r, err := p.ring(&ep)
	if err == nil && !r.claim.CompareAndSwap(0, claimOf(q.dev.nonce, q.num)) {
		err = fmt.Errorf("remote QP %d is closed or already connected to another QP", ep.qpn)
	} else if err == nil && r.ownerState.Load() != codeLive {
		r.senderState.Store(codeClosed) // we claimed the ring but will never write: let its owner reuse it
		err = fmt.Errorf("remote QP %d is closed", ep.qpn)
	}
	if err != nil {
		q.dev.peers.release(p, q)
		return q.errorf(op, verbs.ErrPeer, "%v", err)
	}
	q.peer, q.rmem, q.rtab, q.peerBell, q.peerPID = p, p.mem, p.tab, p.bell, ep.pid
	q.tx = tx{r: r}
	q.peerClaim = claimOf(ep.nonce, ep.qpn)
	q.maxRec = min(maxRecordSlots, r.slots/4)
	q.state = verbs.RTR
	return nil
}

// ToRTS moves the QP from RTR to RTS. The peer need not be in RTR yet: sends wait in its
// ring until it drains them.
func (q *qp) ToRTS(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.transitionLocked("modify qp to RTS", verbs.RTS)
}

// ToErr moves the QP to Err: outstanding work completes with WRFlushErr. As in
// InfiniBand the peer is not told; its next request on the connection fails with
// RetryExcErr.
func (q *qp) ToErr() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return q.errorf("modify qp to Err", verbs.ErrClosed, "the queue pair was closed")
	}
	q.failLocked(verbs.WRFlushErr, codeClosed)
	return nil
}

// Close destroys the QP: outstanding work completes with WRFlushErr, the peer is told,
// and the ring's memory is reused once the peer can no longer write into it.
func (q *qp) Close() error {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return nil
	}
	q.failLocked(verbs.WRFlushErr, codeClosed)
	q.closed = true
	p := q.peer
	if p != nil {
		// Unlike ToErr, closing tells the peer at once, so that its receives and waits
		// on this connection end instead of hanging.
		q.tx.r.senderState.Store(codeClosed)
		q.peerBell.ring()
	}
	q.mu.Unlock()

	q.scq.detach(q)
	q.rcq.detach(q)
	if p != nil {
		q.dev.peers.release(p, q)
	}
	q.pd.mu.Lock()
	delete(q.pd.qps, q)
	q.pd.mu.Unlock()
	q.dev.removeQP(q)
	z := zombie{r: q.rx, regs: q.rxRegs, p: p}
	if p != nil {
		z.peerRing, z.claim = &q.tx.r, q.peerClaim
	}
	q.dev.retireRing(z)
	return nil
}

// failLocked moves the QP to Err. The first waiting send request completes with first,
// the others and every posted receive with WRFlushErr. code is published in our ring's
// header, where the peer's next request finds it.
func (q *qp) failLocked(first verbs.Status, code peerCode) {
	if q.state != verbs.Err {
		q.state = verbs.Err
		q.failed.Store(true)
		q.rx.ownerState.Store(code)
	}
	for q.sqLen > 0 {
		e := &q.sq[q.sqHead]
		q.sqHead = wrap(q.sqHead+1, q.maxSend)
		q.sqLen--
		q.completeSendLocked(e, first)
		first = verbs.WRFlushErr
	}
	q.queued.Store(0)
	if q.asm.active {
		q.flushRecvLocked(q.asm.r.wrid)
		q.asm = assembly{}
	}
	for q.rqLen > 0 {
		r := &q.rq[q.rqHead]
		q.rqHead = wrap(q.rqHead+1, q.maxRecv)
		q.rqLen--
		q.flushRecvLocked(r.wrid)
		r.local = nil
	}
}

// peerGone handles the peer's close, announced in our ring's header.
func (q *qp) peerGone() {
	q.mu.Lock()
	q.noticed.Store(true)
	q.peerDownLocked(statusOf(q.rx.senderState.Load()))
	q.mu.Unlock()
}

// peerLost handles the death of the peer process.
func (q *qp) peerLost() {
	q.mu.Lock()
	q.peerDownLocked(verbs.RetryExcErr)
	q.mu.Unlock()
}

// peerDownLocked fails the QP if it has work that can now never finish: its first waiting
// request completes with st, the rest and every receive with WRFlushErr. A QP with nothing
// outstanding stays as it is, as in InfiniBand, where a dead peer goes unnoticed until
// the next request: that request fails with st (stepLocked checks the peer), and so does
// the next receive (PostRecv checks too).
func (q *qp) peerDownLocked(st verbs.Status) {
	if q.state != verbs.Err && !q.closed && (q.sqLen > 0 || q.rqLen > 0 || q.asm.active) {
		q.failLocked(st, codeClosed)
	}
}

// peerClosedLocked reports whether the peer has closed or died.
func (q *qp) peerClosedLocked() bool {
	return q.peer != nil && (q.peer.gone() || q.rx.senderState.Load() != codeLive)
}

// statusOf is the status of the request that finds the peer in state code.
func statusOf(code peerCode) verbs.Status {
	if code == codeRemOp {
		return verbs.RemOpErr
	}
	return verbs.RetryExcErr
}

func (q *qp) flushRecvLocked(wrid uint64) {
	q.rcq.push(cqe{wc: verbs.WC{WRID: wrid, Status: verbs.WRFlushErr, Op: verbs.WCRecv, QPN: q.num}})
}

// NotifyPeer rings the doorbell of the connected peer's device, waking its sleeping CQ
// waiters so that they re-check: for work the caller published in the peer's memory
// through a Mapping, which the peer's CQ finds with the check of SetWaitCheck. Call it
// after publishing the work. It does not fence (ringUnfenced: a waiter re-checks within
// firstSleep of registering) and makes no system call unless the peer sleeps. Before
// the QP is connected it does nothing. Safe for concurrent use.
func (q *qp) NotifyPeer() {
	if q.peerBell.waiters == nil {
		return
	}
	q.peerBell.ringUnfenced()
}

// wrap returns i, an index at most one lap past a circular queue of n entries, within
// it: a compare, where i % n divides (tens of cycles on a send's path).
func wrap(i, n int) int {
	if i >= n {
		i -= n
	}
	return i
}

// claimOf is the value a sender QP writes into the claim word of the ring it connects to.
func claimOf(nonce uint64, qpn uint32) uint64 { return nonce&^0xffffffff | uint64(qpn) }
