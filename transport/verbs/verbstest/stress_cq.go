package verbstest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/transport/verbs"
)

// rawCQ creates a CQ of depth on n that the case's waits do not poll: the case polls it
// itself. t's cleanup closes it.
func rawCQ(t testing.TB, n *node, name string, depth int) *cqBuf {
	t.Helper()
	cq, err := n.dev.CreateCQ(depth)
	if err != nil {
		t.Fatalf("%s: CreateCQ(%d): %v", n.name, depth, err)
	}
	t.Cleanup(func() { closeWithin(t, "close CQ "+name, ignoreErr(cq.Close)) })
	return &cqBuf{name: name, node: n, cq: cq}
}

// endOn creates a QP of n completing on c (in Reset); t's cleanup closes it.
func endOn(t testing.TB, n *node, c *cqBuf, o qpOpts) *end {
	t.Helper()
	qp, err := n.pd.CreateQP(verbs.QPAttr{SendCQ: c.cq, RecvCQ: c.cq, MaxSendWR: o.sendWR, MaxRecvWR: o.recvWR})
	if err != nil {
		t.Fatalf("%s: CreateQP: %v", n.name, err)
	}
	t.Cleanup(func() { closeWithin(t, "close QP on "+c.name, ignoreErr(qp.Close)) })
	return &end{node: n, cq: c, qp: qp}
}

// stressSharedCQDepth connects four QPs whose completions all go to one CQ, fills every
// queue, and lets the CQ take every completion before polling it once. Sized at exactly
// the sum of the QPs' MaxSendWR and MaxRecvWR (Exact), the CQ returns each completion
// once, in order per QP, with its data, and afterwards every send slot is free again.
// One entry smaller (Undersized), it does what Factory.CQOverflow says: keeps the excess
// in order (then behaves as Exact) or reports ErrCQOverrun on this and every later Poll,
// having returned the completions it held. Never a silent loss or a duplicate.
func stressSharedCQDepth(t *testing.T, f Factory) {
	t.Run("Exact", func(t *testing.T) { sharedCQDepth(t, f, false) })
	t.Run("Undersized", func(t *testing.T) {
		if f.CQOverflow == CQOverflowUnknown {
			t.Skip("Factory.CQOverflow does not say what the provider does with completions beyond a CQ's depth")
		}
		sharedCQDepth(t, f, true)
	})
}

// sharedCQ is SharedCQDepth's fixture: nqp QP pairs, A's all on one CQ.
type sharedCQ struct {
	cqa, cqb                *cqBuf
	qa, qb                  []*end
	srcA, dstB, rbufA, srcB *buffer
}

const (
	sharedQPs   = 4  // QP pairs
	sharedDepth = 8  // MaxSendWR and MaxRecvWR of each QP
	sharedMsg   = 64 // bytes per request
)

func sharedCQDepth(t *testing.T, f Factory, short bool) {
	if f.CQHeld == nil {
		t.Skip("Factory.CQHeld is nil: the case cannot tell when the CQ holds every completion")
	}
	e := newEnv(f)
	a, b := e.open(t, "A"), e.open(t, "B")
	needCaps(t, verbs.CapSend|verbs.CapRDMAWrite, a, b)
	full := sharedQPs * 2 * sharedDepth
	depth := full
	if short {
		depth--
	}
	overrun := short && f.CQOverflow == CQOverflowOverrun
	s := newSharedCQ(t, a, b, depth)
	s.fill(t)
	waitHeld(t, f, s.cqa.cq, full)
	wcs := make([]verbs.WC, 2*full)
	n, err := s.cqa.cq.Poll(wcs)
	if overrun {
		if !errors.Is(err, verbs.ErrCQOverrun) {
			t.Fatalf("undersized CQ: Poll = %d, %v; want ErrCQOverrun", n, err)
		}
		if n != depth {
			t.Fatalf("undersized CQ returned %d completions, want the %d it held", n, depth)
		}
		if _, err := s.cqa.cq.Poll(wcs); !errors.Is(err, verbs.ErrCQOverrun) {
			t.Fatalf("second Poll after overrun: %v, want ErrCQOverrun", err)
		}
	} else if err != nil || n != full {
		t.Fatalf("CQ of depth %d: Poll = %d, %v; want %d completions", depth, n, err, full)
	}
	s.check(t, wcs[:n])
	if !overrun {
		s.slotsFree(t)
	}
}

// newSharedCQ connects sharedQPs QP pairs between a and b; A's complete on one CQ of
// depth, B's on another, deep enough.
func newSharedCQ(t *testing.T, a, b *node, depth int) *sharedCQ {
	const size = sharedQPs * sharedDepth * sharedMsg
	s := &sharedCQ{cqa: rawCQ(t, a, "A.shared", depth), cqb: rawCQ(t, b, "B.shared", 1<<10)}
	s.srcA = a.alloc(t, arenaMem, size, verbs.AccessAll)
	s.dstB = b.alloc(t, arenaMem, size, verbs.AccessAll)
	s.rbufA = a.alloc(t, arenaMem, size, verbs.AccessAll)
	s.srcB = b.alloc(t, arenaMem, size, verbs.AccessAll)
	fill(s.srcA.b, 3)
	fill(s.srcB.b, 101)
	clear(s.rbufA.b)
	for range sharedQPs {
		o := qpOpts{sendWR: sharedDepth, recvWR: sharedDepth}
		x, y := endOn(t, a, s.cqa, o), endOn(t, b, s.cqb, o)
		connect(t, x, y)
		s.qa, s.qb = append(s.qa, x), append(s.qb, y)
	}
	return s
}

// fill fills every queue of A (MaxRecvWR receives, MaxSendWR signaled writes to B) and
// has B send MaxRecvWR messages to each QP of A, and waits for B's completions.
func (s *sharedCQ) fill(t *testing.T) {
	for q, x := range s.qa {
		for i := range sharedDepth {
			k := q*sharedDepth + i
			postRecv(t, x, verbs.RecvWR{WRID: uint64(1000 + k), Local: s.rbufA.b[k*sharedMsg : (k+1)*sharedMsg], LKey: s.rbufA.lkey()})
			post(t, x, verbs.SendWR{WRID: uint64(k), Op: verbs.OpRDMAWrite, Flags: verbs.Signaled,
				Local: s.srcA.b[k*sharedMsg : (k+1)*sharedMsg], LKey: s.srcA.lkey(),
				Remote: verbs.RemoteAddr{RKey: s.dstB.rkey(), Offset: uint64(k * sharedMsg)}})
		}
	}
	for q, y := range s.qb {
		for i := range sharedDepth {
			k := q*sharedDepth + i
			post(t, y, verbs.SendWR{WRID: uint64(k), Op: verbs.OpSend, Flags: verbs.Signaled,
				Local: s.srcB.b[k*sharedMsg : (k+1)*sharedMsg], LKey: s.srcB.lkey()})
		}
	}
	if _, err := collectOnly(s.cqb, sharedQPs*sharedDepth); err != nil {
		t.Fatalf("B: %v", err)
	}
}

// waitHeld waits until cq holds full completions, or has overrun, before anything polls
// it. Poll with no room drives the progress of providers that progress in Poll and takes
// nothing.
func waitHeld(t *testing.T, f Factory, cq verbs.CQ, full int) {
	deadline := time.Now().Add(waitTimeout)
	for {
		_, _ = cq.Poll(nil)
		held, over := f.CQHeld(cq)
		if held == full || over {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("A's CQ holds %d of %d completions (overrun %v) after %v", held, full, over, waitTimeout)
		}
		time.Sleep(time.Millisecond)
	}
}

// check checks A's completions: each once, successful, in order per QP, receives with
// their data; and that every write landed.
func (s *sharedCQ) check(t *testing.T, wcs []verbs.WC) {
	const msg = sharedMsg
	seen := map[uint64]bool{}
	lastSend, lastRecv := map[uint32]uint64{}, map[uint32]uint64{}
	for _, wc := range wcs {
		if seen[wc.WRID] || wc.Status != verbs.Success {
			t.Fatalf("completion %s (seen before: %v)", fmtWC(wc), seen[wc.WRID])
		}
		seen[wc.WRID] = true
		last, k := lastSend, int(wc.WRID)
		if wc.Op == verbs.WCRecv {
			last, k = lastRecv, k-1000
			if wc.ByteLen != msg || !bytes.Equal(s.rbufA.b[k*msg:(k+1)*msg], s.srcB.b[k*msg:(k+1)*msg]) {
				t.Fatalf("receive %d: %d bytes, data differs", k, wc.ByteLen)
			}
		}
		if p, ok := last[wc.QPN]; ok && wc.WRID <= p {
			t.Fatalf("qp %d: wrid %d completed after %d", wc.QPN, wc.WRID, p)
		}
		last[wc.QPN] = wc.WRID
	}
	checkBytes(t, "RDMA write data at the target", s.dstB.b, s.srcA.b)
}

// slotsFree checks that polling released every send slot: each QP of A takes MaxSendWR
// more requests at once, and they complete.
func (s *sharedCQ) slotsFree(t *testing.T) {
	for q, x := range s.qa {
		for i := range sharedDepth {
			wr := verbs.SendWR{WRID: uint64(5000 + i), Op: verbs.OpRDMAWrite, Flags: verbs.Signaled,
				Local: s.srcA.b[:8], LKey: s.srcA.lkey(), Remote: verbs.RemoteAddr{RKey: s.dstB.rkey()}}
			if err := x.qp.PostSend(&wr); err != nil {
				t.Fatalf("qp %d post %d after draining: %v", q, i, err)
			}
		}
	}
	more, err := collectOnly(s.cqa, sharedQPs*sharedDepth)
	if err != nil {
		t.Fatalf("A after draining: %v", err)
	}
	for _, wc := range more {
		if wc.Status != verbs.Success {
			t.Fatalf("write after draining: %s", fmtWC(wc))
		}
	}
}

// stressRoleHandoffCancel runs four goroutines in CQ.Wait and Poll on the CQ of one
// connection (on tcp the reading role moves between them and the connection's reader),
// with contexts cancelled at random points, while the peer streams RDMA writes with
// immediate. Every completion must be polled exactly once and every write land; the case
// ends with CQ.Close racing the waiters, which must all return.
func stressRoleHandoffCancel(t *testing.T, f Factory) {
	const waiters = 4
	e := newEnv(f)
	a, b := e.open(t, "A"), e.open(t, "B")
	needCaps(t, verbs.CapRDMAWrite, a, b)
	x, y := e.link(t, a, b, qpOpts{sendWR: 32, recvWR: handoffRecvs})
	h := &handoff{x: x, seen: make(map[uint32]int), errc: make(chan error, 16), stop: make(chan struct{})}
	dst := a.alloc(t, arenaMem, 8*handoffMsgs, verbs.AccessAll)
	src := b.alloc(t, arenaMem, 8*handoffMsgs, verbs.AccessAll)
	for i := range handoffMsgs {
		put64(src.b[8*i:], uint64(i)+1)
	}
	for ; h.posted < handoffRecvs; h.posted++ {
		postRecv(t, x, verbs.RecvWR{WRID: uint64(h.posted)})
	}
	var stopOnce sync.Once
	defer stopOnce.Do(func() { close(h.stop) }) // a failed case's waiters end at cleanup's Close
	var wg sync.WaitGroup
	for w := range waiters {
		wg.Go(func() { h.waiter(w) })
	}
	streamWithImm(t, y, src, dst)
	h.awaitAll(t, y)
	stopOnce.Do(func() { close(h.stop) })
	e.closeCQ(t, x.cq) // races the waiters, which must all return
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(waitTimeout):
		t.Fatal("waiters hang after CQ.Close")
	}
	select {
	case err := <-h.errc:
		t.Fatal(err)
	default:
	}
	for imm, k := range h.seen {
		if k != 1 || imm >= handoffMsgs {
			t.Fatalf("immediate %d polled %d times", imm, k)
		}
	}
	for i := range handoffMsgs {
		if got := get64(dst.b[8*i:]); got != uint64(i)+1 {
			t.Fatalf("write %d did not land: %d", i, got)
		}
	}
}

const (
	handoffMsgs  = 400 // writes with immediate
	handoffRecvs = 64  // MaxRecvWR of the receiving QP
)

// handoff is the receiving side of RoleHandoffCancel.
type handoff struct {
	x    *end
	errc chan error
	stop chan struct{}

	mu     sync.Mutex
	seen   map[uint32]int // polls of each immediate
	posted int            // receives posted
}

func (h *handoff) report(err error) {
	select {
	case h.errc <- err:
	default:
	}
}

// waiter w waits on the CQ, with a context cancelled at a random point half of the time,
// polls up to 1+w completions, records their immediates and reposts receives, until
// stop or the CQ's Close.
func (h *handoff) waiter(w int) {
	rng := rand.New(rand.NewPCG(uint64(w), 1))
	wcs := make([]verbs.WC, 1+w)
	for {
		select {
		case <-h.stop:
			return
		default:
		}
		ctx, cancel := context.WithCancel(context.Background())
		if rng.IntN(2) == 0 {
			time.AfterFunc(time.Duration(rng.IntN(200))*time.Microsecond, cancel)
		}
		err := h.x.cq.cq.Wait(ctx)
		cancel()
		if errors.Is(err, verbs.ErrClosed) {
			return
		}
		if err != nil && !errors.Is(err, context.Canceled) {
			h.report(fmt.Errorf("waiter %d: %v", w, err))
			return
		}
		n, err := h.x.cq.cq.Poll(wcs)
		if err != nil {
			if !errors.Is(err, verbs.ErrClosed) {
				h.report(fmt.Errorf("waiter %d: poll: %v", w, err))
			}
			return
		}
		h.mu.Lock()
		for _, wc := range wcs[:n] {
			if wc.Status != verbs.Success || wc.Op != verbs.WCRecvRDMAWithImm || !wc.HasImm {
				h.report(fmt.Errorf("completion %s", fmtWC(wc)))
			}
			h.seen[wc.Imm]++
			if h.posted < handoffMsgs {
				if err := h.x.qp.PostRecv(&verbs.RecvWR{WRID: uint64(h.posted)}); err != nil {
					h.report(fmt.Errorf("repost: %v", err))
				}
				h.posted++
			}
		}
		h.mu.Unlock()
	}
}

// streamWithImm writes each 8-byte word of src to dst with immediate i through y, taking
// one completion whenever the send queue is full (the provider holds writes back while
// the receiver has no receive posted).
func streamWithImm(t *testing.T, y *end, src, dst *buffer) {
	for i := range handoffMsgs {
		wr := verbs.SendWR{WRID: uint64(i), Op: verbs.OpRDMAWriteWithImm, Imm: uint32(i), Flags: verbs.Signaled,
			Local: src.b[8*i : 8*i+8], LKey: src.lkey(), Remote: verbs.RemoteAddr{RKey: dst.rkey(), Offset: uint64(8 * i)}}
		for {
			err := y.qp.PostSend(&wr)
			if err == nil {
				break
			}
			if !errors.Is(err, verbs.ErrQueueFull) {
				t.Fatalf("sender: %v", err)
			}
			if wc, err := awaitOne(y.cq.cq, waitTimeout); err != nil || wc.Status != verbs.Success {
				t.Fatalf("sender: %s %v", fmtWC(wc), err)
			}
		}
	}
}

// awaitAll waits until every immediate was polled, polling the sender y's CQ meanwhile:
// on providers that progress in Poll (shm), that is what resumes the writes held back for
// want of receives.
func (h *handoff) awaitAll(t *testing.T, y *end) {
	deadline := time.Now().Add(waitTimeout)
	for {
		h.mu.Lock()
		n := len(h.seen)
		h.mu.Unlock()
		if n == handoffMsgs {
			return
		}
		y.cq.pump()
		if err := y.cq.pollErr(); err != nil {
			t.Fatalf("sender: %v", err)
		}
		for _, wc := range y.cq.take(y.cq.count()) {
			if wc.Status != verbs.Success {
				t.Fatalf("sender: %s", fmtWC(wc))
			}
		}
		select {
		case err := <-h.errc:
			t.Fatal(err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d immediates polled", n, handoffMsgs)
		}
		time.Sleep(time.Millisecond)
	}
}

// awaitOne waits up to d for one completion on c, polling it with a one-element slice and
// blocking in Wait, for loops that must take completions one at a time.
func awaitOne(c verbs.CQ, d time.Duration) (verbs.WC, error) {
	var wc [1]verbs.WC
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	for {
		n, err := c.Poll(wc[:])
		if err != nil {
			return verbs.WC{}, err
		}
		if n == 1 {
			return wc[0], nil
		}
		if err := c.Wait(ctx); err != nil {
			return verbs.WC{}, fmt.Errorf("no completion: %w", err)
		}
	}
}
