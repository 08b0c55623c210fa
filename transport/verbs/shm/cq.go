package shm

import (
	"math/bits"
	"sync"
	"sync/atomic"

	"github.com/gorma-hpc/gorma/transport/verbs"
)

// cqe is a completion with what Poll needs to release send queue slots.
type cqe struct {
	wc   verbs.WC
	qp   *qp
	seq  uint64 // post sequence of a send completion
	send bool
}

// cq is a completion queue of fixed depth.
//
// Completions go into a ring of depth entries. What a CQ must hold is bounded anyway. A
// send completion keeps its send queue slot until it is polled, and a receive completion
// used up a posted receive, so a CQ never holds more than the MaxSendWR and MaxRecvWR of
// its QPs together. When those add up to more than depth (the CQ is undersized) the excess
// goes to an overflow list, allocated then and only then, rather than being lost or
// failing the QP. Poll returns ring entries before overflow entries and nothing enters the
// ring while the overflow is non-empty, so order is kept.
type cq struct {
	dev   *device
	depth int

	pollers atomic.Int32 // Wait calls that may sleep (block), for Close
	closed  atomic.Bool
	qps     atomic.Pointer[[]*qp] // QPs whose progress Poll drives (copy on write)

	listMu sync.Mutex // serializes updates of qps

	// waitCheck, when set (SetWaitCheck), is a further condition that ends Wait: work the
	// CQ's owner polls itself, outside the CQ, in memory that peers write through their
	// mappings (the runtime's fast boxes). Peers announce such work with QP.NotifyPeer.
	waitCheck atomic.Pointer[func() bool]

	// avail counts the completions in ring and overflow (written under mu: an atomic add
	// by push, a release store by pop, publish32), so that Poll and Wait find an empty CQ
	// without taking mu. A sleeper's re-check is ordered after push's add by the add
	// itself (doorbell.ringAfterAdd).
	avail atomic.Int32

	mu       qlock // also guards qp.retired of the QPs whose SendCQ this is
	ring     []cqe // power-of-two capacity >= depth
	mask     int
	head     int
	n        int
	overflow []cqe
}

func newCQ(d *device, depth int) *cq {
	size := 1 << bits.Len(uint(depth-1))
	c := &cq{dev: d, depth: depth, ring: make([]cqe, size), mask: size - 1}
	c.qps.Store(&[]*qp{})
	return c
}

// push adds a completion. Callers hold the QP's mu, which keeps each QP's completions in
// order. A send completion also refreshes the QP's cached count of retired requests.
func (c *cq) push(e cqe) {
	p := c.reserve()
	*p = e
	c.commit(p)
}

// reserve locks c and returns the entry of the next completion, for the caller to fill
// and hand to commit. Callers hold the QP's mu, as for push. Filling the entry in place,
// field by field, saves push's copy of a completion built on the stack, whose wide loads
// of the narrow stores just made there stall (a failed store forward).
func (c *cq) reserve() *cqe {
	c.mu.Lock()
	if c.n < c.depth && len(c.overflow) == 0 {
		e := &c.ring[(c.head+c.n)&c.mask]
		c.n++
		return e
	}
	c.overflow = append(c.overflow, cqe{})
	return &c.overflow[len(c.overflow)-1]
}

// commit publishes the completion e that reserve returned, unlocks c and wakes sleepers.
func (c *cq) commit(e *cqe) {
	// A full atomic add, not publish32's release store: it also orders the entry before
	// ringAfterAdd's load of the sleepers count, which saves ring's separate fence.
	c.avail.Add(1)
	if e.send {
		e.qp.retiredCache = e.qp.retired
	}
	c.mu.Unlock()
	c.dev.bell.ringAfterAdd()
}

// ready reports whether a completion can be polled.
func (c *cq) ready() bool {
	return c.avail.Load() > 0
}

// SetWaitCheck makes Wait also return (nil) when check reports true. check is called by the
// goroutines in Wait, without any lock of the provider, after each progress pass and in a
// sleeper's re-check before it sleeps. It must be cheap, must not block, and must be safe to
// call concurrently with anything its owner does. Work it looks for must be published before
// the publisher calls NotifyPeer on its QP to this device (which rings the doorbell), so
// that a sleeper either sees the work or is woken. A nil check removes it.
func (c *cq) SetWaitCheck(check func() bool) {
	if check == nil {
		c.waitCheck.Store(nil)
		return
	}
	c.waitCheck.Store(&check)
}

// waitReady reports whether Wait may return: a completion can be polled, or the wait
// check holds.
func (c *cq) waitReady() bool {
	if c.ready() {
		return true
	}
	f := c.waitCheck.Load()
	return f != nil && (*f)()
}

// Poll moves up to len(wcs) completions into wcs. If ready completions do not fill wcs it
// drives the progress of the CQ's QPs and looks again.
func (c *cq) Poll(wcs []verbs.WC) (int, error) {
	if c.closed.Load() {
		return 0, opError("poll cq", 0, verbs.ErrClosed, "the completion queue was closed")
	}
	n := c.pop(wcs)
	if n == len(wcs) && n > 0 {
		return n, nil
	}
	// No registration in pollers: two atomic adds were most of an empty Poll (a spinning
	// waiter's loop). A Poll that races the device's Close reads inert memory (Close
	// retires the arena rather than unmapping it), and a QP's state, checked under its
	// lock, stops anything more.
	if did, direct := c.progress(wcs[n:]); did {
		n += direct
		n += c.pop(wcs[n:])
	}
	return n, nil
}

func (c *cq) pop(wcs []verbs.WC) int {
	if len(wcs) == 0 || c.avail.Load() == 0 {
		return 0
	}
	c.mu.Lock()
	k := 0
	for ; k < len(wcs) && c.n > 0; k++ {
		e := &c.ring[c.head]
		wcs[k] = e.wc
		if e.send {
			e.qp.retired = e.seq + 1
		}
		e.qp = nil
		c.head = (c.head + 1) & c.mask
		c.n--
	}
	if k < len(wcs) && len(c.overflow) > 0 {
		m := 0
		for ; k < len(wcs) && m < len(c.overflow); k, m = k+1, m+1 {
			e := &c.overflow[m]
			wcs[k] = e.wc
			if e.send {
				e.qp.retired = e.seq + 1
			}
		}
		rest := copy(c.overflow, c.overflow[m:])
		clear(c.overflow[rest:])
		c.overflow = c.overflow[:rest]
	}
	publish32(&c.avail, c.avail.Load()-int32(k))
	c.mu.Unlock()
	return k
}

// progress drives the QPs attached to this CQ: queued send work, inbound rings, and
// notices from peers. It takes a QP's lock only when that QP has something to do, and
// reports whether it did anything. Receive completions go straight into direct (Poll's
// free part of its slice) while the CQ holds nothing, which keeps every QP's completions
// in order and saves the push and pop of the common case; direct is how many it wrote.
func (c *cq) progress(direct []verbs.WC) (did bool, n int) {
	for _, q := range *c.qps.Load() {
		if q.queued.Load() != 0 && q.scq == c {
			q.progressSend()
			did = true
		}
		if q.rcq == c && q.rx.ready(q.rxPos.Load()) {
			n += q.progressRecv(direct[n:])
			did = true
		}
		if q.rx.senderState.Load() != codeLive && !q.noticed.Load() {
			q.peerGone()
			did = true
		}
	}
	return did, n
}

func (c *cq) attach(q *qp) {
	c.listMu.Lock()
	defer c.listMu.Unlock()
	old := *c.qps.Load()
	for _, x := range old {
		if x == q {
			return
		}
	}
	next := append(append(make([]*qp, 0, len(old)+1), old...), q)
	c.qps.Store(&next)
}

func (c *cq) detach(q *qp) {
	c.listMu.Lock()
	defer c.listMu.Unlock()
	old := *c.qps.Load()
	next := make([]*qp, 0, len(old))
	for _, x := range old {
		if x != q {
			next = append(next, x)
		}
	}
	c.qps.Store(&next)
}

// Close destroys the CQ. Waiters return ErrClosed; completions of QPs still attached to it
// are dropped.
func (c *cq) Close() error {
	if c.closed.Load() {
		return nil
	}
	c.shutdown()
	c.dev.removeCQ(c)
	return nil
}

// shutdown marks the CQ closed, wakes its sleeping waiters and waits for them to leave. A
// Poll, or a Wait that has not gone to sleep, that passed its closed check may still read
// the arena's rings for a moment; the device's Close retires the arena (inert memory)
// rather than unmapping it under one.
func (c *cq) shutdown() {
	c.closed.Store(true)
	c.dev.bell.seq.Add(1)
	c.dev.bell.ring()
	shutdownWait(&c.pollers)
}
