package runtime

import (
	"context"
	"errors"
	"math"
	goruntime "runtime"
	"slices"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gorma-hpc/gorma/transport/verbs"
)

// Progress. There is no progress goroutine: the goroutines that call the runtime drive
// it, so that a message costs no goroutine hand-off. At most one goroutine at a time is
// the poller (engine.polling): it polls the completion queues and, when nothing is ready,
// waits on them outside mu (block). Every other goroutine that must wait parks on its
// request's wake channel; the poller completes their requests and wakes them, and when the
// poller's own request is done it hands the role to a parked goroutine (handoffLocked).
//
// GORMA_PROGRESS decides whether the poller spins: spin polls for ever, hybrid polls for
// GORMA_SPIN (default 50us) and then sleeps, block sleeps at once. The runtime spins
// itself (spin), polling every device without mu: the poller role alone entitles it to
// CQ.Poll into e.wcs, and it takes mu only to handle what it found, so an idle round
// costs no lock and a message is handled as soon as the poll sees it. Devices are opened
// in verbs.WaitBlock mode and
// used for sleeping only. The exception is a rank whose only device is tcp, in hybrid
// mode (providerSpins): the runtime does not spin there, as tcp's completions come from
// reader goroutines that a spin in the runtime would compete with (measured: 45 us half
// round trip against 65-90 us), and tcp's CQ.Wait, opened with verbs.WaitHybrid unless
// the host is oversubscribed, spins in the one place that helps: a wait on the only
// connection reads its socket itself (the provider's leader) and tries it without
// blocking for GORMA_SPIN before it sleeps (8-byte half round trip 6 us against 16-18);
// and that connection's reader goroutine tries its socket for GORMA_SPIN before it parks
// while nothing else of the rank runs, which serves passive-target requests of peers without a
// wake-up (8-byte RDMA read 9.6-10.4 us against 22.5-34.2).
// How the poller sleeps depends on
// how many devices (completion queues) the rank uses:
//
//   - none (a world of one): on kickCh.
//   - one: in CQ.Wait. Anything else that must wake it (a peer failure reported by the
//     launcher, a self-send that completes its receive, its context ending) cancels
//     waitCtx, the context it waits with.
//   - two (shm and tcp): on kickCh; one relay goroutine per CQ sleeps in CQ.Wait and
//     kicks the poller when its CQ has completions.

// waitLocked blocks until r is done or ctx ends. It is called and returns with mu held.
func (e *engine) waitLocked(ctx context.Context, r *Request) error {
	return e.untilLocked(ctx, r, false, nil)
}

// untilLocked blocks until r is done (quiet false, set nil), until nothing this rank sent
// is outstanding (quiet true, for Finalize), or until a request of set is done (WaitAny),
// or ctx ends. In the last two cases r only serves for parking.
func (e *engine) untilLocked(ctx context.Context, r *Request, quiet bool, set []*Request) error {
	first := true
	for {
		if !e.polling && (quiet || !e.reachedLocked(r, set)) {
			e.progressLocked()
		}
		if e.reachedLocked(r, set) || (quiet && e.quietLocked()) {
			return nil
		}
		if quiet && e.aborted != nil {
			return e.aborted
		}
		if quiet {
			e.flushSendsLocked()
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if e.polling {
			if quiet {
				e.quietWait = r
			}
			watch(set, r)
			e.parkLocked(ctx, r)
			unwatch(set, r)
			e.quietWait = nil
			continue
		}
		if len(e.rxLater) > 0 {
			e.repostAllLocked()
		}
		e.polling = true
		live := e.liveDevsLocked()
		if first {
			e.spinBudget = e.spinBudgetLocked()
			e.yieldAfter = e.yieldAfterLocked(r, quiet, set)
		}
		e.mu.Unlock()
		var got polled
		e.block(ctx, first, live, &got)
		first = false
		e.mu.Lock()
		if got.n > 0 || got.err != nil || got.fb {
			e.handlePolledLocked(&got)
		}
		e.polling = false
	}
}

// reachedLocked reports whether r is done, or with a set, whether one of set is.
func (e *engine) reachedLocked(r *Request, set []*Request) bool {
	if set != nil {
		return doneIndex(set) >= 0
	}
	return r.done
}

// doneIndex returns the index of the first completed request of set, or -1.
func doneIndex(set []*Request) int {
	for i, x := range set {
		if x != nil && x.done {
			return i
		}
	}
	return -1
}

// watch makes the completion of every request of set wake tok's parked goroutine, and
// unwatch undoes it. The caller holds mu.
func watch(set []*Request, tok *Request) {
	for _, x := range set {
		if x != nil {
			x.watchers = append(x.watchers, tok)
		}
	}
}

func unwatch(set []*Request, tok *Request) {
	for _, x := range set {
		if x == nil {
			continue
		}
		if i := slices.Index(x.watchers, tok); i >= 0 {
			x.watchers = slices.Delete(x.watchers, i, i+1)
		}
	}
}

// quietLocked reports whether nothing this rank sent is outstanding: no queued or
// unacknowledged message, no rendezvous awaiting FIN or being read.
func (e *engine) quietLocked() bool {
	for _, p := range e.peers {
		if p != nil && !p.quiet() {
			return false
		}
	}
	return len(e.table.free) == len(e.table.slots)
}

// handoffLocked wakes a parked goroutine to take over polling, if nobody polls. Call it
// whenever a waiting goroutine stops waiting.
func (e *engine) handoffLocked() {
	if e.polling || len(e.waiters) == 0 {
		return
	}
	select {
	case e.waiters[0].wake <- struct{}{}:
	default:
	}
}

// parkLocked waits, without mu, until r's waiter is woken (r completed, or the poller
// left) or ctx ends.
//
// Several goroutines may wait for one Request: they share its wake channel, which holds
// one token, so completeLocked wakes only one of them. A goroutine that leaves while
// others still wait for a completed r passes the wake-up on, and r.waiting stays true
// until the last one has left. (Without that, the others slept until their context
// ended, or for ever: TestStressWaitOneRequestFromManyGoroutines.)
func (e *engine) parkLocked(ctx context.Context, r *Request) {
	if r.wake == nil {
		r.wake = make(chan struct{}, 1)
	}
	r.waiting = true
	e.waiters = append(e.waiters, r)
	e.mu.Unlock()
	select {
	case <-r.wake:
	case <-ctx.Done():
	}
	e.mu.Lock()
	if i := slices.Index(e.waiters, r); i >= 0 {
		e.waiters = slices.Delete(e.waiters, i, i+1)
	}
	r.waiting = slices.Contains(e.waiters, r)
	select {
	case <-r.wake:
	default:
	}
	if r.waiting && r.done {
		r.wake <- struct{}{} // drained just above: never blocks
	}
}

// progressLocked polls every completion queue until it is empty and handles what it
// found. The caller holds mu and no other goroutine is the poller.
func (e *engine) progressLocked() {
	e.drainFastboxesLocked()
	for _, d := range e.devs {
		if d.closed || d.broken {
			continue
		}
		for {
			n, err := d.cq.Poll(e.wcs[:])
			if err != nil {
				e.deviceFailedLocked(d, err)
				break
			}
			for i := 0; i < n; i++ {
				e.handleLocked(&e.wcs[i])
			}
			if n < len(e.wcs) {
				break
			}
		}
	}
	e.polledLocked()
}

// polledLocked tells the relays that a poll pass happened and wakes Finalize's parked
// request if nothing is outstanding any more.
func (e *engine) polledLocked() {
	for _, rl := range e.relays {
		select {
		case rl.polled <- struct{}{}:
		default:
		}
	}
	if r := e.quietWait; r != nil && e.quietLocked() {
		select {
		case r.wake <- struct{}{}:
		default:
		}
	}
}

// polled is what the poller's spin found outside mu: n completions of device dev in
// e.wcs, or the error of its Poll; or fb: a fast box message can be handled. The spin
// fills the poller's variable through a pointer, field by field: returned by value, it
// was built with narrow stores and copied at once with 16-byte loads that spanned them,
// a failed store forward on every message (as the twelfth session found in the shm
// provider; docs/benchmarks.md, twenty-first session).
type polled struct {
	dev int
	n   int
	err error
	fb  bool
}

// liveDevsLocked returns the devices the poller may poll, as a bit set of e.devs indexes,
// so that the spin outside mu reads no field that mu guards.
func (e *engine) liveDevsLocked() uint64 {
	var live uint64
	for i, d := range e.devs {
		if !d.closed && !d.broken && i < 64 {
			live |= 1 << i
		}
	}
	return live
}

// handlePolledLocked handles what the poller's spin found.
func (e *engine) handlePolledLocked(got *polled) {
	if got.fb {
		e.drainFastboxesLocked()
		e.polledLocked()
		return
	}
	d := e.devs[got.dev]
	if got.err != nil {
		if !d.broken {
			e.deviceFailedLocked(d, got.err)
		}
	} else {
		for i := 0; i < got.n; i++ {
			e.handleLocked(&e.wcs[i])
		}
	}
	e.polledLocked()
}

// Spinning: the poller polls the completion queues itself, outside mu (the poller role
// gives it e.wcs), and takes mu only when a poll found something: an idle round on shm
// costs a few tens of nanoseconds and no lock. A round first looks into the fast boxes
// (fastbox.go: one load per peer); the completion queues, whose poll costs several times
// the boxes' loads, only every cqPollEvery rounds (and at every round when the rank has no
// fast boxes, or once the rounds yield the processor: each of those may last another
// rank's time slice). A round that ends in a poll of the queues is what a box message that lands
// during it waits for, so the boxes are seen sooner, and a queue-pair message waits for at
// most cqPollEvery-1 rounds of box loads. It yields to other goroutines every spinYield rounds
// (and checks its context and, in hybrid mode, its budget then) and, in spin mode, the
// processor to other processes every sysYield rounds, so that ranks outnumbering cores
// still progress. (Measured without gain: polling the completion queues only every few
// rounds, in the machine's slow state, where it made no difference, unlike in the fast
// one (see cqPollEvery); yielding to goroutines only every 100 us, although each Gosched
// wakes an idle thread of the Go scheduler: neither latency nor context switches changed,
// nor did leaving Gosched out in the fast state.)
//
// When this host's ranks outnumber its processors (LocalSize > HostCPUs), a spinning
// wait may hold the very processor the rank it waits for needs. It then gives the
// processor away (sched_yield, as Open MPI's yield_when_idle does) at every round from
// round yieldAfter on (yieldAfterLocked):
//   - at once when it waits for one peer bound to this rank's own processor (the cards'
//     cpu: golaunch binds oversubscribed ranks to the cores in turn);
//   - never when that peer never competes for this processor (bound to another one, or
//     on another host): the wait spins its budget and sleeps, as with a core per rank;
//   - after oversubYieldAfter rounds (a few microseconds, longer than a round trip
//     between two running ranks) when the peer is not known or the wait is for any
//     source or several requests.
//
// 4 ranks on 2 cores, two pairs ping-ponging 8 bytes, half round trip in us:
//
//	                                        pair on two cores   pair on one core
//	no yield (before)                       0.4-0.9             56
//	yield after 256 rounds                  0.8-1.4             18-23
//	yield at every round                    5.0-6.2             5.6-6.4
//	by the peer's processor (now)           0.4-2.1             6.0-6.5
//
// Unbound, the kernel sometimes keeps a pair on one core for the whole run (0.4-86 us
// from run to run). The yield is a raw system call, unannounced to the Go scheduler, for
// the reason the collectives' osYield gives.
//
// cqPollEvery: in the machine's fast speed state (flag floor 0.07 us), 8-byte ping-pong
// half round trips over fast boxes, paired with the queues polled at every round, were
// 3.5% and 4.5% shorter in two sets (medians of 111 and 81 pairs) and the same in a third
// (0.999, 90 pairs): a gain at the edge of the noise, and no loss.
const (
	cqPollEvery       = 4
	spinYield         = 64
	sysYield          = 1024
	oversubYieldAfter = 256
	neverYield        = math.MaxInt
)

// yieldAfterLocked returns the spin round from which a wait for r (quiet and set as in
// untilLocked) yields the processor at every round; see above.
func (e *engine) yieldAfterLocked(r *Request, quiet bool, set []*Request) int {
	if e.localSize <= e.ncpu {
		return neverYield
	}
	if !quiet && set == nil && (r.kind == reqSend || r.kind == reqRecv || r.kind == reqProbe) &&
		r.peer >= 0 && r.peer < len(e.peers) && e.peers[r.peer] != nil {
		me, them := &e.cards[e.rank], &e.peers[r.peer].card
		switch {
		case sameCPU(me, them):
			return 0
		case apartCPU(me, them):
			return neverYield
		}
	}
	return oversubYieldAfter
}

// block waits, without mu, until progress may be possible: a completion, a kick, or the
// end of ctx. While the poller spins (GORMA_PROGRESS=spin, or hybrid within its budget)
// it polls the devices in live and records in got what it found (in e.wcs); got starts
// zero. first is true on the first wait of a call.
func (e *engine) block(ctx context.Context, first bool, live uint64, got *polled) {
	if e.kicked.Load() && e.kicked.Swap(false) { // Load first: no locked op when not kicked
		return
	}
	if e.spinMode(first) && e.spin(ctx, live, got) {
		return
	}
	switch len(e.devs) {
	case 0:
		select {
		case <-e.kickCh:
		case <-ctx.Done():
		}
	case 1:
		e.watch(ctx)
		e.kickMu.Lock()
		wctx := e.waitCtx
		e.kickMu.Unlock()
		e.devs[0].cq.Wait(wctx) // errors (closed) show up in the next Poll
		if wctx.Err() != nil {
			e.kickMu.Lock()
			if e.waitCtx.Err() != nil {
				e.waitCtx, e.waitCancel = context.WithCancel(context.Background())
			}
			e.kickMu.Unlock()
		}
	default:
		select {
		case <-e.kickCh:
		case <-ctx.Done():
		}
	}
}

// spinMode reports whether the poller spins rather than sleeps, starting the spin budget
// on the first wait of a call. Poller only.
func (e *engine) spinMode(first bool) bool {
	mode := e.cfg.progress
	if mode == verbs.WaitBlock || e.providerSpins {
		return false
	}
	if first {
		e.spins = 0
		if mode == verbs.WaitHybrid {
			e.spinStart = time.Now()
		}
	}
	return mode == verbs.WaitSpin || time.Since(e.spinStart) < e.spinBudget
}

// Hybrid mode spins for GORMA_SPIN before it sleeps, and longer while this rank's
// rendezvous sends are being read: their FIN comes once the receiver has copied the bytes,
// which takes longer than the default spin for large messages (1 MiB: about 70 us), and a
// sender asleep by then costs a futex wake-up (about 17 us) per message (measured: 1 MiB
// half round trips of 80-100 us against Open MPI's 70-75 us, whose ranks always spin).
// The extension assumes at least rndvSpinRate bytes per second, stops at maxRndvSpin, and
// applies only when this host's ranks do not outnumber its processors.
const (
	rndvSpinRate = 4 << 30 // bytes per second
	maxRndvSpin  = time.Millisecond
)

// spinBudgetLocked is how long hybrid mode spins in the wait that starts now.
func (e *engine) spinBudgetLocked() time.Duration {
	b := e.cfg.spin
	if e.table.sendBytes > 0 && e.localSize <= e.ncpu {
		b += min(time.Duration(e.table.sendBytes)*time.Second/rndvSpinRate, maxRndvSpin)
	}
	return b
}

// spin polls the devices in live until one has completions or fails (ok, with what it
// found in got, which starts zero), the poller is kicked or ctx ends (ok, nothing found),
// or the hybrid budget is spent (not ok: sleep). Poller only, without mu.
func (e *engine) spin(ctx context.Context, live uint64, got *polled) bool {
	mode := e.cfg.progress
	for {
		if len(e.fbPeers) > 0 && e.fastboxReady() {
			got.fb = true
			return true
		}
		if len(e.fbPeers) == 0 || e.spins%cqPollEvery == 0 || e.spins >= e.yieldAfter {
			for i, d := range e.devs {
				if live&(1<<i) == 0 {
					continue
				}
				if n, err := d.cq.Poll(e.wcs[:]); n > 0 || err != nil {
					got.dev, got.n, got.err = i, n, err
					return true
				}
			}
		}
		if e.kicked.Load() && e.kicked.Swap(false) {
			return true
		}
		e.spins++
		// A yielding round may last a time slice of another rank: its checks come at
		// every round, so that hybrid mode goes to sleep (and is woken when the message
		// comes) once its budget is spent rather than up to spinYield slices later.
		yielding := e.spins >= e.yieldAfter
		if yielding {
			unix.RawSyscall(unix.SYS_SCHED_YIELD, 0, 0, 0)
		} else if e.spins%spinYield != 0 {
			continue
		}
		if ctx.Err() != nil {
			return true
		}
		if mode == verbs.WaitHybrid && time.Since(e.spinStart) >= e.spinBudget {
			return false
		}
		if e.spins%spinYield != 0 {
			continue
		}
		goruntime.Gosched()
		if mode == verbs.WaitSpin && e.spins%sysYield == 0 && !yielding {
			unix.Syscall(unix.SYS_SCHED_YIELD, 0, 0, 0)
		}
	}
}

// watch makes the end of ctx kick the poller, registering once per distinct context so
// that waiting repeatedly with one context allocates nothing. Poller only.
func (e *engine) watch(ctx context.Context) {
	if ctx == e.watched || ctx.Done() == nil {
		return
	}
	if e.watchStop != nil {
		e.watchStop()
	}
	e.watched = ctx
	e.watchStop = context.AfterFunc(ctx, e.kick)
}

// kick wakes the poller (or the next one) so that it looks at the engine's state again.
// Safe from any goroutine, with or without mu.
func (e *engine) kick() {
	e.kicked.Store(true)
	select {
	case e.kickCh <- struct{}{}:
	default:
	}
	e.kickMu.Lock()
	if e.waitCancel != nil {
		e.waitCancel()
	}
	e.kickMu.Unlock()
}

// kickLocked kicks the poller if there is one: call it after completing a request outside
// progressLocked (the poller's own request may be among them).
func (e *engine) kickLocked() {
	if e.polling {
		e.kick()
	}
}

// relay sleeps on one device's CQ for a poller that serves two devices.
type relay struct {
	cq     verbs.CQ
	polled chan struct{} // a poll pass happened since the relay last kicked
}

func (e *engine) runRelay(rl *relay) {
	defer e.bg.Done()
	for {
		err := rl.cq.Wait(e.stop)
		if e.stop.Err() != nil || errors.Is(err, verbs.ErrClosed) {
			return
		}
		if err != nil {
			time.Sleep(time.Millisecond) // a transient error: do not spin on it
			continue
		}
		e.kick()
		select {
		case <-rl.polled:
		case <-e.stop.Done():
			return
		}
	}
}
