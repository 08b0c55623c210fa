package tcp

import (
	"context"
	"net"
	"sync"
	"sync/atomic"

	"github.com/gorma-hpc/gorma/transport/verbs"
)

// qp is a reliable-connected queue pair over one TCP connection.
//
// Connection: both sides call ToRTR with the other's endpoint. The side with the smaller
// (device id, qpn) dials in ToRTR (honouring its ctx) and is connected when ToRTR returns.
// The other side accepts: its device's handshake goroutine binds the inbound connection to
// this QP by the QPN in the handshake (parking it while the QP is still in Init), and
// ToRTS waits (honouring ctx) until that connection is up. A connection is only ever bound
// after the handshake authenticated it and checked that it comes from the peer QP named in
// ToRTR.
//
// Err: a QP that enters Err itself (ToErr, an error completion) flushes its queues at
// once and keeps its connection in "Err mode". It answers every later request of the peer
// with RetryExcErr, as an InfiniBand QP in Error drops them and the requester's retries
// run out, so the peer's QP fails only once it asks for something. A QP whose connection
// is lost (EOF, reset, timeout, a broken protocol) enters Err from its reader, which
// flushes with RetryExcErr for the oldest request.
//
// Concurrency: all methods are safe for concurrent use; mu guards the state and both
// queues. Requests on the wire are completed by the connection's reader goroutine, or
// flushed under mu. The reader marks busy while it copies a payload into a request's or
// receive's buffer. A flush that finds it busy (or finds frames of requests still queued
// for writing) does not wait for the network. It closes the connection and lets the
// exiting reader flush, so a buffer is never touched after its completion and no flush
// hangs on a stalled peer. Lock order: qp.mu → cq.mu, qp.mu → txq.mu.
type qp struct {
	d           *device
	pd          *pd
	num         uint32
	scq, rcq    *cq
	maxSend     int
	maxRecv     int
	ep          []byte       // our endpoint bytes
	outstanding atomic.Int32 // send requests posted and not yet released by a polled completion

	mu         sync.Mutex
	state      verbs.QPState
	closed     bool
	remote     endpoint
	hasRemote  bool
	dialCancel context.CancelFunc // non-nil while ToRTR dials
	parked     *parked            // inbound connection waiting for ToRTR or its final answer
	cn         *qconn             // the live connection; nil before and after
	up         chan struct{}      // closed when cn is attached
	dead       chan struct{}      // closed when the QP enters Err
	flushFirst verbs.Status       // status of the next request flushed (RetryExcErr after a lost connection)
	busy       bool               // the reader is filling a request's or receive's buffer
	peerGone   bool               // the peer's QP is in Err: send without credits, to be refused
	discSent   bool               // our disconnect notice is sent
	exiting    bool               // the connection was closed; its reader flushes as it exits
	errd       atomic.Bool        // state == Err, for the reader's per-frame check

	// Send queue: a ring of maxSend entries; [sqHead, sqSent) are on the wire, [sqSent,
	// sqTail) wait for credits, a fence, or the connection. An entry's index on the wire
	// (its seq) is its position counter.
	sq        []sqe
	sqHead    uint64
	sqSent    uint64
	sqTail    uint64
	credits   uint32 // Sends (and writes with immediate) the peer has receives for
	fenceWait int    // reads and atomics on the wire
	unsigDone int32  // unsignaled requests completed since the last pushed send completion

	// Receive queue: [rqHead, rqTail) are posted. granted counts receives advertised to
	// the peer, consumed the Sends (and writes with immediate) that arrived.
	rq        []rqe
	rqHead    uint64
	rqTail    uint64
	granted   uint64
	consumed  uint64
	ungranted uint32

	// Cumulative ack owed to the peer for its Sends and writes: set by the role holder,
	// taken by the next frame sent (flagAck) or flushed before the role holder blocks.
	ackOwed bool
	ackSeq  uint64

	hdr [hdrSize]byte // frame header scratch, guarded by mu
}

// sqe is a send work request as queued: a copy of the caller's SendWR.
type sqe struct {
	wrid       uint64
	op         verbs.Opcode
	flags      verbs.SendFlags
	local      []byte
	remote     verbs.RemoteAddr
	imm        uint32
	compareAdd uint64
	swap       uint64
	bad        verbs.Status // LocProtErr: never sent, completes with this status in order
}

func (e *sqe) needsCredit() bool {
	return e.op == verbs.OpSend || e.op == verbs.OpSendWithImm || e.op == verbs.OpRDMAWriteWithImm
}

func (e *sqe) readOrAtomic() bool { return e.op == verbs.OpRDMARead || e.op.IsAtomic() }

// rqe is a posted receive.
type rqe struct {
	wrid  uint64
	local []byte
}

// parked is an authenticated inbound connection not yet bound to the QP.
type parked struct {
	c     *net.TCPConn
	peer  peerInfo
	ready bool // the final handshake answer is written; frames may flow
}

func newQP(p *pd, scq, rcq *cq, maxSend, maxRecv int) *qp {
	q := &qp{d: p.d, pd: p, scq: scq, rcq: rcq, maxSend: maxSend, maxRecv: maxRecv,
		sq: make([]sqe, maxSend), rq: make([]rqe, maxRecv),
		up: make(chan struct{}), dead: make(chan struct{}), flushFirst: verbs.WRFlushErr}
	return q
}

func (q *qp) Num() uint32 { return q.num }

func (q *qp) State() verbs.QPState {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.state
}

// Endpoint returns this QP's endpoint bytes (a copy).
func (q *qp) Endpoint() []byte { return append([]byte(nil), q.ep...) }

func (q *qp) errState(op string, want string) error {
	return newErr(op, q.num, verbs.ErrQPState, "QP is in %v; %s", q.state, want)
}

func (q *qp) ToInit() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return newErr("to init", q.num, verbs.ErrClosed, "the QP is closed")
	}
	if q.state != verbs.Reset {
		return q.errState("to init", "ToInit needs Reset")
	}
	q.state = verbs.Init
	return nil
}

// ToRTR records the peer and, on the dialing side, connects and authenticates.
func (q *qp) ToRTR(ctx context.Context, remote []byte) error {
	ep, err := decodeEndpoint(remote)
	if err != nil {
		err.(*verbs.Error).QPN = q.num
		return err
	}
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return newErr("to rtr", q.num, verbs.ErrClosed, "the QP is closed")
	}
	if q.state != verbs.Init || q.hasRemote {
		defer q.mu.Unlock()
		return q.errState("to rtr", "ToRTR needs Init and is called once")
	}
	if ep.devID == q.d.id && ep.qpn == q.num {
		q.mu.Unlock()
		return newErr("to rtr", q.num, verbs.ErrInvalid, "connecting a QP to itself; connect two QPs")
	}
	dials := dialsTo(q.d.id, q.num, ep.devID, ep.qpn)
	if dials && !q.d.hasSecret() {
		q.mu.Unlock()
		return newErr("to rtr", q.num, verbs.ErrInvalid,
			"the device was opened with tcp.Options.DeferSecret and its secret is not set yet; call SetSecret before connecting")
	}
	q.remote, q.hasRemote = ep, true
	if !dials {
		q.state = verbs.RTR
		q.matchParkedLocked()
		q.mu.Unlock()
		return nil
	}
	dctx, cancel := context.WithCancel(ctx)
	q.dialCancel = cancel
	q.mu.Unlock()

	c, peer, err := q.d.dial(dctx, q, ep)
	cancel()

	q.mu.Lock()
	defer q.mu.Unlock()
	q.dialCancel = nil
	if err == nil && q.state != verbs.Init {
		c.Close()
		err = q.errState("to rtr", "the QP left Init while connecting")
	}
	if err != nil {
		if q.state == verbs.Init {
			q.hasRemote = false // ToRTR may be retried
		}
		return err
	}
	q.state = verbs.RTR
	q.attachLocked(c, peer)
	return nil
}

// ToRTS waits until the connection is up, then moves to RTS.
func (q *qp) ToRTS(ctx context.Context) error {
	q.mu.Lock()
	if q.state != verbs.RTR {
		defer q.mu.Unlock()
		return q.errState("to rts", "ToRTS needs RTR")
	}
	up, dead := q.up, q.dead
	q.mu.Unlock()
	select {
	case <-up:
	case <-dead:
	case <-ctx.Done():
		return wrapErr("to rts", q.num, ctx.Err(),
			"the peer QP never connected; did it call ToRTR with this QP's endpoint, with the same tcp.Options.Secret?")
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.state != verbs.RTR || q.cn == nil {
		return q.errState("to rts", "the connection failed before RTS")
	}
	q.state = verbs.RTS
	q.pumpLocked()
	return nil
}

// ToErr moves the QP to Err. Outstanding work completes with WRFlushErr before it returns.
func (q *qp) ToErr() error {
	q.mu.Lock()
	cn := q.failLocked(verbs.WRFlushErr)
	q.mu.Unlock()
	if cn != nil {
		<-cn.done
	}
	return nil
}

// Close moves the QP to Err (flushing its work), closes its connection, waits for the
// connection's goroutines and forgets the QP.
func (q *qp) Close() error {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return nil
	}
	q.closed = true
	q.failLocked(verbs.WRFlushErr)
	cn := q.cn
	if cn != nil {
		cn.wakeIdle()
		cn.c.Close()
	}
	q.mu.Unlock()
	if cn != nil {
		<-cn.done
	}
	q.d.forgetQP(q)
	q.pd.forget(nil, q)
	return nil
}

// setErrLocked moves the QP to Err; the next request flushed gets first.
func (q *qp) setErrLocked(first verbs.Status) {
	if q.state != verbs.Err {
		q.state = verbs.Err
		q.flushFirst = first
		q.errd.Store(true)
		close(q.dead)
	}
}

// failLocked moves the QP to Err and flushes its queues; the connection stays up in Err
// mode. If the reader is copying into a buffer of the queues, or frames of requests on the
// wire are still queued for writing (they reference the requests' buffers), it closes the
// connection instead and returns it. Its reader flushes once it and the writer have
// stopped, and the caller (unless it is the reader) may wait for cn.done without mu.
func (q *qp) failLocked(first verbs.Status) *qconn {
	q.setErrLocked(first)
	if q.dialCancel != nil {
		q.dialCancel()
	}
	if q.parked != nil {
		q.parked.c.Close()
		q.parked = nil
	}
	cn := q.cn
	if cn == nil {
		q.flushLocked()
		return nil
	}
	if q.exiting {
		return cn
	}
	if q.busy || q.sqHead < q.sqSent && !cn.tx.idle() {
		q.exiting = true
		cn.wakeIdle()
		cn.c.Close()
		return cn
	}
	q.flushLocked()
	if !q.discSent {
		q.discSent = true
		h := header{op: opDisconnect}
		q.takeAckLocked(&h)
		h.put(&q.hdr)
		cn.tx.send(&q.hdr, nil, 0)
	}
	return nil
}

// flushableLocked reports whether work posted in Err may be flushed by the poster: not
// while an exiting reader still has to flush the requests before it.
func (q *qp) flushableLocked() bool { return !q.exiting }

// admit parks an authenticated inbound connection from the peer described by ch.
func (q *qp) admit(c *net.TCPConn, ch *clientHello) (hsStatus, uint32) {
	q.mu.Lock()
	defer q.mu.Unlock()
	switch {
	case q.closed, q.cn != nil, q.parked != nil, q.state != verbs.Init && q.state != verbs.RTR:
		return hsBusy, 0
	case dialsTo(q.d.id, q.num, ch.devID, ch.qpn):
		return hsBusy, 0 // this side dials; a peer dialing us is confused
	case q.hasRemote && (q.remote.devID != ch.devID || q.remote.qpn != ch.qpn):
		return hsMismatch, 0
	}
	q.parked = &parked{c: c, peer: peerInfo{devID: ch.devID, qpn: ch.qpn, maxSend: ch.maxSend}}
	return hsOK, uint32(q.maxSend)
}

// promote is called by the handshake goroutine once the final answer to an admitted
// connection is written (ok) or failed. It reports whether the QP kept c.
func (q *qp) promote(c *net.TCPConn, ok bool) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.parked == nil || q.parked.c != c {
		return false // dropped meanwhile (ToErr, Close)
	}
	if !ok {
		q.parked = nil
		return false
	}
	q.parked.ready = true
	q.matchParkedLocked()
	return true
}

// matchParkedLocked binds a ready parked connection once the QP is in RTR and knows its
// peer; a connection from another peer is closed.
func (q *qp) matchParkedLocked() {
	p := q.parked
	if p == nil || !p.ready || q.state != verbs.RTR || !q.hasRemote {
		return
	}
	q.parked = nil
	if p.peer.devID != q.remote.devID || p.peer.qpn != q.remote.qpn {
		p.c.Close()
		return
	}
	q.attachLocked(p.c, p.peer)
}

// attachLocked makes c the QP's connection and starts its goroutines.
func (q *qp) attachLocked(c *net.TCPConn, peer peerInfo) {
	cn, err := newQconn(q, c, peer)
	if err != nil {
		c.Close()
		q.setErrLocked(verbs.RetryExcErr)
		q.flushLocked()
		return
	}
	q.cn = cn
	cn.register()
	close(q.up)
	go cn.tx.run()
	go cn.run()
	if q.ungranted > 0 {
		q.sendCreditLocked()
	}
}
