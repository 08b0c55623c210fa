package shm

import (
	"context"
	"errors"
	"runtime"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gorma-hpc/gorma/internal/futex"
	"github.com/gorma-hpc/gorma/transport/verbs"
)

// Waiting. Every device has a doorbell in its arena header: a sequence word (the futex
// word) and a count of sleepers. Peers reach it through their mapping of the arena.
//
// A sleeper registers (waiters++), reads seq, re-checks for work, and sleeps in FUTEX_WAIT
// on seq unless seq changed. Whoever makes work available to a device (a sender that
// delivered into one of its rings, a receiver that freed ring space the device waits for, a
// local completion, a peer's death or close) publishes the work first and then rings the
// bell. If waiters is non-zero it bumps seq and issues FUTEX_WAKE. With all operations
// sequentially consistent, either the ringer sees the sleeper registered (and wakes it), or
// the sleeper's re-check sees the work. Records are published with release stores
// (publish), so ring fences before it loads waiters, which restores that order. Nobody
// asleep means no store to seq and no system call: ringing costs a fence and one load of a
// read-mostly word. A QP's NotifyPeer (the runtime's fast boxes) rings without the fence
// (ringUnfenced); a sleeper stays registered for its whole wait, and its first sleep is
// short, which covers the order the fence would have kept.
//
// The futex is a shared (not process-private) futex on the memfd mapping (package
// futex), so it works across processes and across two mappings of one segment in one
// process.

const (
	// spinGoschedEvery is how many polls a spinning waiter makes between yields to other
	// goroutines (runtime.Gosched). A Gosched takes the scheduler's run queue lock and may
	// wake an idle P: yielding often puts lock2, unlock2, casgstatus and wakep high in a
	// send ping-pong's profile, and a message landing during a Gosched waits for it.
	// Every 256 polls (a few microseconds) keeps them out of the way (`bin/verbsperf
	// --provider shm --test send_lat` measures it); Go's asynchronous preemption bounds
	// what other goroutines wait for a spinning one in any case.
	spinGoschedEvery = 256
	// spinYieldEvery is how many polls a spinning waiter makes between checks of its
	// budget or, in WaitSpin, sched_yield calls, so that spinning ranks on fewer cores than
	// ranks still let the others run.
	spinYieldEvery = 256
)

// maxSleep bounds one futex sleep, so that context cancellation (which rings no bell)
// is honoured within it. A sleeper wakes at most 100 times a second for this. It is a
// variable only so that tests can make a lost wake-up hang rather than cost 10 ms; it
// is set before any device opens and never changed while one is open.
var maxSleep = 10 * time.Millisecond

// firstSleep bounds a wait's first futex sleep: a peer's unfenced ring (ringUnfenced)
// may miss a sleeper that registers just as it publishes, but not one registered longer.
const firstSleep = 50 * time.Microsecond

// doorbell is a device's pair of doorbell words, in some process's mapping.
type doorbell struct {
	seq, waiters *atomic.Uint32
}

// ring wakes the doorbell's sleepers, if there are any. Call it after publishing work. It
// fences first, so that work published with a release store (publish) is visible before
// the waiters count is read: the sleeper's protocol needs that store-load order.
func (d doorbell) ring() {
	fence()
	d.ringAfterAdd()
}

// ringAfterAdd is ring for a caller whose last publication was a sequentially consistent
// atomic read-modify-write (an Add). That already orders it before the load of waiters
// (on amd64 a locked instruction is a full barrier), so the fence is left out.
func (d doorbell) ringAfterAdd() {
	if d.waiters == nil || d.waiters.Load() == 0 {
		return
	}
	d.seq.Add(1)
	futex.Wake(d.seq, futex.All)
}

// ringUnfenced is ring without the fence, for work whose waiters re-check it within
// firstSleep of registering (block). Without the fence the load of waiters may pass the
// store that published the work, and a sleeper that registers just then may miss both
// the work and the wake. Its first sleep is short and it stays registered after it, so
// the work is seen at its end, and every later ring sees it registered.
func (d doorbell) ringUnfenced() {
	d.ringAfterAdd()
}

// sleep waits on seq while it still holds val, for at most d.
func (d doorbell) sleep(val uint32, dur time.Duration) {
	futex.Wait(d.seq, val, dur)
}

// Wait blocks until a completion can be polled (or the check set with SetWaitCheck
// holds), ctx is done or the CQ is closed. It drives progress while it waits (as Poll
// does) and does not consume the completion.
//
// Only a Wait that goes to sleep registers in pollers (for Close to wait for): until then
// it reads the rings as Poll does, which a racing Close leaves readable (Device.Close
// retires the arena). A Wait that ends at once costs no atomic read-modify-write.
func (c *cq) Wait(ctx context.Context) error {
	if err := c.waitStep(ctx); err != errNotYet {
		return err
	}
	switch c.dev.cfg.Wait {
	case verbs.WaitSpin:
		return c.spin(ctx, -1)
	case verbs.WaitBlock:
		return c.block(ctx)
	}
	if err := c.spin(ctx, c.dev.cfg.Spin); err != errNotYet {
		return err
	}
	return c.block(ctx)
}

// errNotYet is waitStep's "keep waiting"; it never leaves the package.
var errNotYet = errors.New("shm: not yet")

// waitStep makes progress once and reports nil when a completion can be polled, an error
// when the wait must end, and errNotYet otherwise.
func (c *cq) waitStep(ctx context.Context) error {
	if c.closed.Load() {
		return opError("wait cq", 0, verbs.ErrClosed, "the completion queue was closed")
	}
	if c.ready() || c.wholeWaiting() {
		return nil
	}
	c.progress(nil)
	if c.waitReady() {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return errNotYet
}

// wholeWaiting reports whether a QP of this CQ has a whole message at its ring's head that
// no earlier Wait reported. The caller's next Poll drains it straight into its slice (the
// sender's credit promised a posted receive). So Wait ends now rather than drain it into
// the CQ's ring for Poll to take out again (a push and a pop: two lock round trips and an
// atomic add on a ping-pong's path). Each record ends at most one Wait this way: if a Poll
// did not take it (the QP is in error, say), later Waits drain and check as usual.
func (c *cq) wholeWaiting() bool {
	for _, q := range *c.qps.Load() {
		if q.rcq != c {
			continue
		}
		pos := q.rxPos.Load()
		if q.rx.wholeAt(pos) && q.waitPos.Load() != pos+1 {
			publish(&q.waitPos, pos+1) // a racing Wait that also ends costs one empty Poll
			return true
		}
	}
	return false
}

// spin polls for budget (forever if negative), yielding now and then between polls.
func (c *cq) spin(ctx context.Context, budget time.Duration) error {
	var deadline time.Time
	if budget >= 0 {
		deadline = time.Now().Add(budget)
	}
	for i := 1; ; i++ {
		if err := c.waitStep(ctx); err != errNotYet {
			return err
		}
		if i%spinGoschedEvery != 0 {
			continue
		}
		runtime.Gosched()
		if i%spinYieldEvery == 0 {
			if budget < 0 {
				unix.Syscall(unix.SYS_SCHED_YIELD, 0, 0, 0)
			} else if time.Now().After(deadline) {
				return errNotYet
			}
		}
	}
}

// block sleeps on the device's doorbell until woken, re-checking after each wake-up.
//
// It makes progress first as no sleeper (waitStep), then registers once for the rest of
// the wait. Progress pushes completions and every push rings the bell, which finds a
// registered caller: registered first, it would wake itself with a system call on every
// message it finds at once. Registered, it pays that once, when the wait ends. Its first
// sleep is short (firstSleep), for a peer's unfenced ring that missed it as it
// registered (ringUnfenced); it stays registered after, so no later ring misses it.
func (c *cq) block(ctx context.Context) error {
	c.pollers.Add(1)
	defer c.pollers.Add(-1)
	bell := c.dev.bell
	if err := c.waitStep(ctx); err != errNotYet {
		return err
	}
	bell.waiters.Add(1)
	defer bell.waiters.Add(^uint32(0))
	for dur := firstSleep; ; dur = maxSleep {
		val := bell.seq.Load()
		if err := c.waitStep(ctx); err != errNotYet {
			return err
		}
		if dl, ok := ctx.Deadline(); ok {
			dur = max(min(dur, time.Until(dl)), time.Microsecond)
		}
		bell.sleep(val, dur)
	}
}
