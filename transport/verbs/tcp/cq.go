package tcp

import (
	"context"
	"os"
	"reflect"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/gorma-hpc/gorma/transport/verbs"
)

// maxCQDepth bounds CreateCQ's depth.
const maxCQDepth = 1 << 22

// wakeTokens bounds how many blocked waiters one push wakes directly; a woken waiter that
// finds more waiters and completions passes a token on.
const wakeTokens = 16

// spinYield is how many polls of the spin loop pass between yields of the processor (and
// checks of the clock and ctx). Yielding on every poll would hammer the scheduler's
// global run queue lock and slow down the very goroutines that produce completions.
const spinYield = 256

// cqe is a queued completion. rel is how many send queue slots of q its polling releases
// (the request itself plus the unsignaled requests that completed before it).
type cqe struct {
	wc  verbs.WC
	q   *qp
	rel int32
}

// cq is a completion queue: a bounded ring filled by connection reader goroutines and by
// posting goroutines (flushes), drained by Poll; waiters park on an eventfd or a channel
// (see Wait).
//
// Concurrency: all methods are safe for concurrent use. push is called with the QP's mu
// held (lock order qp.mu → cq.mu). A full ring does not block its producers: the
// completion is dropped, the CQ is marked overrun and every later Poll reports
// ErrCQOverrun, as a CQ overrun is fatal in libibverbs. Size the CQ for the sum of its
// QPs' MaxSendWR and MaxRecvWR.
type cq struct {
	d     *device
	avail atomic.Int32 // completions in the ring, for spinning without the lock
	shut  atomic.Bool  // closed or overrun: Poll must look at the ring

	mu      sync.Mutex
	ring    []cqe
	head, n int
	overrun bool
	closed  bool
	waiters int
	wake    chan struct{} // tokens for blocked waiters: a push sends one per waiter (up to its capacity)
	done    chan struct{} // closed by Close

	// The first blocked waiter parks in the network poller on an eventfd instead of on
	// wake. A reader goroutine that pushes a completion writes the eventfd; when it next
	// parks, its own thread finds the waiter ready in its non-blocking poll and runs it,
	// with no thread wake-up. A channel hand-off would wake an idle P's thread (a futex
	// round trip, and a spinning thread competing for the cores), which costs more than
	// the rest of a loopback round trip. efd < 0 if eventfds are unavailable.
	efd      int
	ef       *os.File
	efRaw    syscall.RawConn
	efFn     func(fd uintptr) bool
	efBusy   bool // a waiter is parked on ef
	efPosted bool // the eventfd was written since the waiter last looked
	efStop   bool // the waiter's ctx is done
	// watched is the last cancellable context of a waiter: its AfterFunc (kick) stays
	// registered until another context comes, so waiting repeatedly with one context
	// registers once and allocates nothing.
	watched     context.Context
	watchedStop func() bool

	// Leader/follower reading (lead.go).
	conns      int         // connections whose QPs complete here
	sole       *qconn      // the only one, if it may lead (its QP's scq and rcq are this CQ)
	offer      *qconn      // its reader offered the role to the eventfd waiter
	leading    *qconn      // a waiter reads it
	ldKicked   bool        // the leader's read deadline was set to wake it
	leaderBusy atomic.Bool // the leader is handling a frame: its pushes need no kick
	// solo mirrors sole for readers outside mu (the reader goroutine's spin gate).
	solo atomic.Pointer[qconn]
}

func newCQ(d *device, depth int) *cq {
	c := &cq{d: d, ring: make([]cqe, depth), wake: make(chan struct{}, wakeTokens), done: make(chan struct{}), efd: -1}
	if fd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC); err == nil {
		c.efd, c.ef = fd, os.NewFile(uintptr(fd), "tcp-cq-eventfd")
		if c.efRaw, err = c.ef.SyscallConn(); err != nil {
			c.ef.Close()
			c.efd, c.ef = -1, nil
		}
		c.efFn = c.efReady
	}
	return c
}

var eventOne = [8]byte{1}

// signalLocked makes the eventfd readable (again), once per look of the waiter. The
// waiter never reads the counter: every write is a new edge for the poller, and 2^64
// writes are out of reach.
func (c *cq) signalLocked() {
	if c.efBusy && !c.efPosted && !c.closed {
		c.efPosted = true
		unix.Write(c.efd, eventOne[:])
	}
}

// kick wakes the eventfd waiter or the leader: its ctx is done.
func (c *cq) kick() {
	c.mu.Lock()
	c.efStop = true
	c.signalLocked()
	if c.leading != nil {
		c.kickLeaderLocked()
	}
	c.mu.Unlock()
}

// efReady is the eventfd waiter's RawConn callback: it reports whether to stop waiting,
// without a system call.
func (c *cq) efReady(uintptr) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.efPosted = false
	return c.n > 0 || c.closed || c.efStop || c.offer != nil
}

// push queues a completion. Called with q.mu held.
func (c *cq) push(wc verbs.WC, q *qp, rel int32) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	if c.n == len(c.ring) {
		c.overrun = true
		c.shut.Store(true)
		c.mu.Unlock()
		return
	}
	e := &c.ring[(c.head+c.n)%len(c.ring)]
	e.wc, e.q, e.rel = wc, q, rel
	c.n++
	c.avail.Store(int32(c.n))
	c.wakeLocked(1)
	if c.leading != nil && !c.leaderBusy.Load() {
		c.kickLeaderLocked() // pushed by another goroutine while the leader may be parked
	}
	c.mu.Unlock()
}

// wakeLocked wakes up to n blocked waiters, without blocking or allocating. Tokens left
// over after a waiter gave up only cause a spurious wake-up and re-check.
func (c *cq) wakeLocked(n int) {
	if c.efBusy {
		c.signalLocked()
		n--
	}
	for i := 0; i < min(n, c.waiters); i++ {
		select {
		case c.wake <- struct{}{}:
		default:
			return
		}
	}
}

// Poll moves up to len(wcs) completions into wcs. It never blocks and never allocates.
func (c *cq) Poll(wcs []verbs.WC) (int, error) {
	if len(wcs) == 0 || (c.avail.Load() == 0 && !c.shut.Load()) {
		return 0, nil
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return 0, &verbs.Error{Op: "poll cq", Provider: providerName, Err: verbs.ErrClosed}
	}
	k := min(len(wcs), c.n)
	for i := range k {
		e := &c.ring[c.head]
		wcs[i] = e.wc
		if e.q != nil && e.rel > 0 {
			e.q.outstanding.Add(-e.rel)
		}
		*e = cqe{}
		c.head = (c.head + 1) % len(c.ring)
	}
	c.n -= k
	c.avail.Store(int32(c.n))
	overrun := c.overrun
	c.mu.Unlock()
	if overrun {
		return k, &verbs.Error{Op: "poll cq", Provider: providerName, Err: verbs.ErrCQOverrun,
			Detail: "completions were dropped because the CQ was full; create it with a depth of at least the sum of its QPs' MaxSendWR and MaxRecvWR"}
	}
	return k, nil
}

// Wait blocks until a completion can be polled, ctx is done or the CQ is closed. It
// honours the device's Config.Wait: WaitSpin polls (yielding the processor); WaitBlock
// and WaitHybrid block at once (on the eventfd or the wake channel).
//
// WaitHybrid does not spin on the ring here, whatever Config.Spin says. A completion
// produced by a reader goroutine of this process would only be delayed by a waiter
// holding the core (and the P) that the reader, and on one host the peer's process, need.
// On 2 cores such a spin makes a short read slower than blocking at once (`bin/verbsperf
// --provider tcp --test read_lat` measures it). A waiter that leads (lead.go) is the
// reader itself, and it does spin: it tries the socket without blocking for Config.Spin
// before it blocks in ppoll (sock.spinRead), unless the connection has frames queued to
// send. So does the connection's reader goroutine while the rest of the process is idle,
// as it is with its waiters blocked (sock.spinIdle).
func (c *cq) Wait(ctx context.Context) error {
	if c.avail.Load() > 0 {
		return nil
	}
	if c.d.cfg.Wait == verbs.WaitSpin {
		return c.spin(ctx)
	}
	return c.block(ctx)
}

// spin polls avail until it is non-zero, ctx is done or the CQ closes. It yields the
// processor every spinYield polls, so goroutines of this P (a connection's reader, say)
// still run.
func (c *cq) spin(ctx context.Context) error {
	for i := 1; ; i++ {
		if c.avail.Load() > 0 {
			return nil
		}
		if i%spinYield == 0 {
			if err := c.checkDone(ctx); err != nil {
				return err
			}
			runtime.Gosched()
		}
	}
}

func (c *cq) checkDone(ctx context.Context) error {
	select {
	case <-c.done:
		return &verbs.Error{Op: "wait cq", Provider: providerName, Err: verbs.ErrClosed}
	case <-ctx.Done():
		return &verbs.Error{Op: "wait cq", Provider: providerName, Err: ctx.Err()}
	default:
		return nil
	}
}

// block sleeps until a push, ctx or Close: reading the sole connection itself when its
// role is idle (lead.go), else on the eventfd if no other waiter has it, else on the wake
// channel.
func (c *cq) block(ctx context.Context) error {
	c.mu.Lock()
	for c.n == 0 && !c.closed && ctx.Err() == nil {
		if cn := c.idleLeadLocked(); cn != nil {
			again, err := c.lead(ctx, cn)
			if !again {
				return err
			}
			c.mu.Lock()
			continue
		}
		if !c.efBusy && c.leading == nil && c.ef != nil {
			cn, err := c.blockFD(ctx)
			if cn == nil {
				return err
			}
			c.mu.Lock()
			if again, err := c.lead(ctx, cn); !again {
				return err
			}
			c.mu.Lock()
			continue
		}
		break
	}
	c.waiters++
	defer func() {
		c.waiters--
		if c.n > 0 {
			c.wakeLocked(c.n) // pass the wake-up on to waiters that may not have had one
		}
		c.mu.Unlock()
	}()
	for {
		if c.n > 0 {
			return nil
		}
		if c.closed {
			return &verbs.Error{Op: "wait cq", Provider: providerName, Err: verbs.ErrClosed}
		}
		c.mu.Unlock()
		var err error
		select {
		case <-c.wake:
		case <-c.done:
		case <-ctx.Done():
			err = &verbs.Error{Op: "wait cq", Provider: providerName, Err: ctx.Err()}
		}
		c.mu.Lock()
		if err != nil && c.n == 0 {
			return err
		}
	}
}

// blockFD waits for the eventfd to become readable. Called with mu held; returns with it
// released. If the connection's reader offered its role meanwhile and nothing is ready
// yet, it returns that connection for the caller to lead (with mu released).
func (c *cq) blockFD(ctx context.Context) (*qconn, error) {
	c.efBusy, c.efStop = true, false
	stop := c.watchLocked(ctx)
	c.mu.Unlock()
	var err error
	var lead *qconn
	for {
		if ctx.Err() == nil { // checked after efStop was reset: a kick cannot be missed
			err = c.efRaw.Read(c.efFn)
		}
		c.mu.Lock()
		switch {
		case c.n > 0:
			err = nil
		case c.closed || err != nil:
			err = &verbs.Error{Op: "wait cq", Provider: providerName, Err: verbs.ErrClosed}
		case ctx.Err() != nil:
			err = &verbs.Error{Op: "wait cq", Provider: providerName, Err: ctx.Err()}
		case c.offer != nil:
			lead = c.takeOfferLocked()
		default:
			c.efStop = false // a kick for an earlier wait
			c.mu.Unlock()
			continue
		}
		break
	}
	c.efBusy = false
	if cn := c.takeOfferLocked(); cn != nil {
		c.releaseLocked(cn, false) // offered, but not needed: back to the reader
	}
	if c.n > 0 {
		c.wakeLocked(c.n) // completions are there for the other waiters too
	}
	c.mu.Unlock()
	if stop != nil {
		stop()
	}
	return lead, err
}

// watchLocked makes ctx's end kick the eventfd waiter. It returns a stop function the
// caller must call after the wait, or nil when the registration is kept for reuse.
func (c *cq) watchLocked(ctx context.Context) func() bool {
	if ctx.Done() == nil || ctx == c.watched {
		return nil // watched holds only comparable contexts, so == cannot panic
	}
	if c.watchedStop != nil {
		c.watchedStop()
		c.watched, c.watchedStop = nil, nil
	}
	stop := context.AfterFunc(ctx, c.kick)
	if !reflect.TypeOf(ctx).Comparable() {
		return stop
	}
	c.watched, c.watchedStop = ctx, stop
	return nil
}

// Close destroys the CQ: pending completions are dropped and waiters wake with ErrClosed.
func (c *cq) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.shut.Store(true)
	clear(c.ring)
	c.n = 0
	close(c.done)
	if c.leading != nil {
		c.kickLeaderLocked()
	}
	if c.watchedStop != nil {
		c.watchedStop()
		c.watched, c.watchedStop = nil, nil
	}
	c.mu.Unlock()
	if c.ef != nil {
		c.ef.Close() // wakes a waiter parked on it, and waits until it is out
	}
	c.d.forgetCQ(c)
	return nil
}
