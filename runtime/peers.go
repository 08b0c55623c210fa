package runtime

import (
	"fmt"
	"sync/atomic"

	"github.com/gorma-hpc/gorma/transport/verbs"
)

// peer is the connection to one other rank: a QP of one device, its set-up, its eager
// slots, its fast boxes and its held sends. All fields are guarded by engine.mu, but for
// dev, qp and the fast boxes, which are set once under it, before the connection's set-up
// (cm.go) uses them outside it.
type peer struct {
	rank   int
	host   string
	card   card
	dev    *device  // nil until the QP is made (makeQPLocked)
	qp     verbs.QP // nil until the QP is made
	cma    bool     // cross-memory reads reach the peer (verbs.CapCMA, and the kernel allows them)
	failed *ProcError

	peerSetup
	eagerSlots
	out outQueue // operations waiting for a send slot or queue entry, in order

	// Fast boxes (fastbox.go): fin is the box p writes into (in our arena), fout p's box
	// for our messages (in our mapping of p's arena). qsent and qrecv count the matchable
	// messages (eager, RTS) posted to p and handled from p through the queue pair.
	fin   fbIn
	fout  fbOut
	qsent uint64
	qrecv uint64

	heldSends
}

// peerSetup is a peer's connection set-up (cm.go). Until ready, sends wait in the peer's
// out queue (as opSend) and its QP posts nothing (sqFree is 0). readyCh is closed once
// ready or failed (wakeLocked).
type peerSetup struct {
	ready     bool
	dialing   bool // this rank asked the peer to connect
	accepting bool // this rank connects for the peer's request
	readyCh   chan struct{}
	woken     bool
	myEP      []byte // this rank's endpoint value for the peer (encodeEP)
}

// eagerSlots are a peer's registered send and receive slots (eager messages, RTS, FIN)
// and its send queue entries.
type eagerSlots struct {
	eagerMax int // largest eager payload the peer accepts
	txMR     verbs.MR
	rxMR     verbs.MR
	txSize   int // bytes per send slot
	rxSize   int // bytes per receive slot
	slots    int
	txFree   []uint32 // free send slots
	txPend   []uint32 // posted send slots in post order, circular (len slots)
	txHead   int
	txN      int
	unsig    int // messages posted unsignaled since the last signaled one
	sigEvery int // every sigEvery-th message is posted signaled
	sqFree   int // send queue entries not in use
	maxSend  int
	rxLater  []uint32 // receive slots handled but not yet posted again (repostLaterLocked)
	inLater  bool     // the peer is in links.rxLater

	swr verbs.SendWR // reused for every post: providers do not retain it
	rwr verbs.RecvWR
}

// heldSends are a peer's held eager sends (eager.go): sq is the QP when its provider may
// keep posted sends waiting for this rank's progress (nil otherwise). Held are the eager
// sends whose messages it keeps, in post order. Holding is len(held) > 0, read without
// engine.mu.
type heldSends struct {
	sq      sendQueuer
	held    []*Request
	holding atomic.Bool
}

// WRIDs name what a completion belongs to: kind in the top byte, the peer's rank in the
// next three, and a slot or request table index in the low four.
const (
	wrTx   = 1 // a send slot (eager message, RTS or FIN)
	wrRx   = 2 // a receive slot
	wrRead = 3 // an RDMA read of a rendezvous receive (index: table slot)
)

// maxJobRanks bounds a job's ranks: a WRID holds a rank in three bytes.
const maxJobRanks = 1 << 24

func wrid(kind uint64, rank int, idx uint32) uint64 {
	return kind<<56 | uint64(rank)<<32 | uint64(idx)
}

func splitWRID(id uint64) (kind uint64, rank int, idx uint32) {
	return id >> 56, int(id >> 32 & 0xffffff), uint32(id)
}

// initPeer gives p (its rank, card and host set) its QP to p.rank on d, carves its slots
// and posts its receives. The QP is left in Init, ready for connect.
func initPeer(p *peer, d *device, eagerMine, eagerTheirs, slots int) error {
	p.dev, p.slots, p.maxSend = d, slots, 2*slots
	p.eagerMax = eagerTheirs
	p.txSize = (hdrLen + max(eagerTheirs, rtsLen) + 63) &^ 63
	p.rxSize = (hdrLen + max(eagerMine, rtsLen) + 63) &^ 63
	rank := p.rank
	var err error
	p.qp, err = d.pd.CreateQP(verbs.QPAttr{SendCQ: d.cq, RecvCQ: d.cq, MaxSendWR: p.maxSend, MaxRecvWR: slots})
	if err == nil {
		p.sq, _ = p.qp.(sendQueuer)
		err = p.qp.ToInit()
	}
	if err == nil {
		p.txMR, err = d.pd.AllocMR(slots*p.txSize, verbs.LocalWrite)
	}
	if err == nil {
		p.rxMR, err = d.pd.AllocMR(slots*p.rxSize, verbs.LocalWrite)
	}
	if err != nil {
		return fmt.Errorf("%w: %s connection to rank %d: %w", ErrTransport, d.name, rank, err)
	}
	p.sqFree = p.maxSend
	p.rxLater = make([]uint32, 0, slots)
	p.txFree = make([]uint32, 0, slots)
	p.txPend = make([]uint32, slots)
	p.sigEvery = max(1, slots/4)
	for i := slots - 1; i >= 0; i-- {
		p.txFree = append(p.txFree, uint32(i))
	}
	for i := 0; i < slots; i++ {
		if err := p.postRecv(uint32(i)); err != nil {
			return fmt.Errorf("%w: %s connection to rank %d: post receive: %w", ErrTransport, d.name, rank, err)
		}
	}
	return nil
}

func (s *eagerSlots) txBuf(i uint32) []byte {
	b := s.txMR.Bytes()
	return b[int(i)*s.txSize : int(i+1)*s.txSize]
}

func (s *eagerSlots) rxBuf(i uint32) []byte {
	b := s.rxMR.Bytes()
	return b[int(i)*s.rxSize : int(i+1)*s.rxSize]
}

func (p *peer) postRecv(i uint32) error {
	p.rwr = verbs.RecvWR{WRID: wrid(wrRx, p.rank, i), Local: p.rxBuf(i), LKey: p.rxMR.LKey()}
	return p.qp.PostRecv(&p.rwr)
}

// Receive slots are posted again in batches, off the critical path of a message. A
// handled slot waits in p.rxLater until the poller is about to wait (repostAllLocked, in
// untilLocked), or until half of the peer's slots wait, so that a rank that only polls
// (Test, Iprobe) still returns its peer's credits. The peer therefore always has at least
// half of the slots to send into while this rank drains its messages.

// repostLaterLocked records that receive slot idx of p is free for reposting.
func (l *links) repostLaterLocked(p *peer, idx uint32) {
	p.rxLater = append(p.rxLater, idx)
	if len(p.rxLater) >= max(p.slots/2, 1) {
		l.repostLocked(p)
		return
	}
	if !p.inLater {
		p.inLater = true
		l.rxLater = append(l.rxLater, p)
	}
}

// repostLocked posts p's waiting receive slots.
func (l *links) repostLocked(p *peer) {
	for _, i := range p.rxLater {
		if p.failed != nil {
			break
		}
		if err := p.postRecv(i); err != nil {
			l.hooks.failed(p, err)
		}
	}
	p.rxLater = p.rxLater[:0]
}

// repostAllLocked posts every waiting receive slot.
func (l *links) repostAllLocked() {
	for i, p := range l.rxLater {
		l.repostLocked(p)
		p.inLater = false
		l.rxLater[i] = nil
	}
	l.rxLater = l.rxLater[:0]
}

// canSend reports whether a message (which needs a send slot) can be posted now.
func (s *eagerSlots) canSend() bool { return len(s.txFree) > 0 && s.sqFree > 0 }

// takeSlot returns a free send slot. canSend must have been true.
func (s *eagerSlots) takeSlot() uint32 {
	n := len(s.txFree) - 1
	i := s.txFree[n]
	s.txFree = s.txFree[:n]
	return i
}

// Send completions. Messages (eager, RTS, FIN) are posted unsignaled but for every
// sigEvery-th, as verbs allows. The completion of a signaled Send means every Send posted
// before it on the QP is complete too, so it frees its own slot and the slots of the
// unsignaled messages before it (txDone). That spares the provider a completion per
// message (on shm: a locked push and pop, and a fence). At most sigEvery-1 slots (a
// quarter) wait for a later signaled message; Finalize, which waits until nothing is
// outstanding, posts a signaled msgNop to a peer whose last messages went unsignaled
// (flushSendsLocked).

// postMessage sends the first n bytes of send slot i, signaled if signal or if sigEvery
// messages went unsignaled.
func (p *peer) postMessage(i uint32, n int, signal bool) error {
	var flags verbs.SendFlags
	if p.unsig++; signal || p.unsig >= p.sigEvery {
		flags, p.unsig = verbs.Signaled, 0
	}
	p.swr = verbs.SendWR{WRID: wrid(wrTx, p.rank, i), Op: verbs.OpSend, Flags: flags,
		Local: p.txBuf(i)[:n], LKey: p.txMR.LKey()}
	p.sqFree--
	p.txPend[(p.txHead+p.txN)%len(p.txPend)] = i
	p.txN++
	return p.qp.PostSend(&p.swr)
}

// txDone handles the completion of the signaled message in send slot idx: that slot and
// those of every message posted before it are free again.
func (s *eagerSlots) txDone(idx uint32) {
	for s.txN > 0 {
		i := s.txPend[s.txHead]
		s.txHead = (s.txHead + 1) % len(s.txPend)
		s.txN--
		s.txFree = append(s.txFree, i)
		s.sqFree++
		if i == idx {
			return
		}
	}
}

// quiet reports whether nothing this rank sent to p is outstanding.
func (p *peer) quiet() bool {
	return p.failed != nil || (p.out.n == 0 && (!p.ready || p.sqFree == p.maxSend))
}

// wakeLocked closes readyCh, once: the peer is ready or failed.
func (p *peerSetup) wakeLocked() {
	if !p.woken && p.readyCh != nil {
		p.woken = true
		close(p.readyCh)
	}
}

// outOp is an operation waiting in a peer's out queue.
type outOp struct {
	kind   uint8 // opEager, opRTS, opFIN, opRead, opSend
	r      *Request
	cookie uint64 // opFIN
	msg    uint8  // opFIN: the message kind (msgFIN, msgCancel, msgWithdrawn)
	chunk  int    // opRead: index of the chunk
}

const (
	opEager = iota + 1
	opRTS
	opFIN
	opRead
	opSend // a send queued before the connection was up: eager or RTS, decided when it goes
)

// outQueue is a FIFO ring of outOps that grows when full.
type outQueue struct {
	ops  []outOp
	head int
	n    int
}

func (q *outQueue) push(op outOp) {
	if q.n == len(q.ops) {
		grown := make([]outOp, max(8, 2*len(q.ops)))
		for i := 0; i < q.n; i++ {
			grown[i] = q.ops[(q.head+i)%len(q.ops)]
		}
		q.ops, q.head = grown, 0
	}
	q.ops[(q.head+q.n)%len(q.ops)] = op
	q.n++
}

func (q *outQueue) front() *outOp { return &q.ops[q.head] }

// filter keeps, in their order, the operations for which keep returns true.
func (q *outQueue) filter(keep func(op *outOp) bool) {
	for range q.n {
		op := *q.front()
		q.pop()
		if keep(&op) {
			q.push(op)
		}
	}
}

// at returns the i-th queued operation (0 is the front).
func (q *outQueue) at(i int) *outOp { return &q.ops[(q.head+i)%len(q.ops)] }

func (q *outQueue) pop() {
	q.ops[q.head] = outOp{}
	q.head = (q.head + 1) % len(q.ops)
	q.n--
}

// queueFINLocked sends FIN with cookie to p, now or when a slot frees.
func (l *links) queueFINLocked(p *peer, cookie uint64) {
	if p.failed != nil {
		return
	}
	if p.out.n == 0 && p.canSend() {
		l.postFINLocked(p, cookie)
		return
	}
	p.out.push(outOp{kind: opFIN, cookie: cookie, msg: msgFIN})
}

// flushSendsLocked posts a signaled no-op to every peer whose last messages went
// unsignaled, so that their completion, and so quietLocked, follows (see postMessage). A
// peer with queued operations or no free slot gets it on a later call.
func (l *links) flushSendsLocked() {
	for _, p := range l.peers {
		if p == nil || p.unsig == 0 || p.failed != nil || p.out.n > 0 || !p.canSend() {
			continue
		}
		i := p.takeSlot()
		putHeader(p.txBuf(i), msgNop, 0, 0)
		if err := p.postMessage(i, hdrLen, true); err != nil {
			l.hooks.failed(p, err)
		}
	}
}

func (l *links) postFINLocked(p *peer, cookie uint64) { l.postCookieLocked(p, msgFIN, cookie) }

// postCookieLocked posts a message of one cookie (putFIN's kinds) to p.
func (l *links) postCookieLocked(p *peer, kind uint8, cookie uint64) {
	i := p.takeSlot()
	putFIN(p.txBuf(i), kind, cookie)
	if err := p.postMessage(i, finLen, false); err != nil {
		l.hooks.failed(p, err)
	}
}
