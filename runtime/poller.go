package runtime

import (
	"context"
	"errors"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorma-hpc/gorma/internal/gosched"
	"github.com/gorma-hpc/gorma/runtime/internal/subcore"
	"github.com/gorma-hpc/gorma/transport/verbs"
	"golang.org/x/sys/unix"
)

// poller is the progress and waiting part: the poller role (progress.go), the
// goroutines parked on their requests, and how the role holder spins over the completion
// queues and fast boxes, sleeps, and is woken. The engine's wait loop calls it; it calls
// only the CQs and reads the peers' fast boxes. engine.mu guards active, waiters and
// quietWait; its own mu guards the single-CQ wait's context.
//
// It follows the rank's waiting rule (rule, hostfit.go's waitRule): GORMA_PROGRESS=spin
// polls for ever, hybrid polls for the rule's budget and then sleeps, block sleeps at
// once. How it sleeps depends on how many completion queues the rank uses:
//
//   - none (a world of one): on kickCh.
//   - one: in CQ.Wait. Anything else that must wake it (a peer failure reported by the
//     launcher, a self-send that completes its receive, its context ending) cancels
//     waitCtx, the context it waits with.
//   - two (shm and tcp): on kickCh; one relay goroutine per CQ sleeps in CQ.Wait and
//     kicks the poller when its CQ has completions.
type poller struct {
	mode verbs.WaitMode   // GORMA_PROGRESS
	rule *subcore.Waiting // the rank's waiting rule: the spin's budget, and whether it yields
	// providerSpins is true when the rank's only device is tcp, in hybrid mode: tcp's
	// CQ.Wait spins (its completions come from reader goroutines, which a spin in the
	// runtime would compete with), and the poller does not.
	providerSpins bool
	cqs           []verbs.CQ // the devices' CQs, indexed as links.devs; set at Init
	// boxes holds the connected peers that have a fast box in this rank (fastbox.go):
	// a copy-on-write list that peerReadyLocked extends under engine.mu, read without
	// it by the spin and the shm CQ's wait check.
	boxes atomic.Pointer[[]*peer]
	// queuers holds the connected peers whose QP may keep posted sends (peer.sq), for
	// heldLeft: copy-on-write as boxes; holding counts the peers with held sends.
	queuers atomic.Pointer[[]*peer]
	holding atomic.Int32
	relays  []*relay // one per CQ with two devices; set by engine.start

	// Waking: kick is safe from any goroutine, with or without engine.mu.
	kicked     atomic.Bool
	kickCh     chan struct{}
	mu         sync.Mutex
	waitCtx    context.Context // the single-CQ wait's context, canceled by kick
	waitCancel context.CancelFunc

	// The role and the parked goroutines, guarded by engine.mu.
	active    bool       // a goroutine holds the poller role
	waiters   []*Request // parked goroutines' requests, in parking order
	quietWait *Request   // Finalize's parked request, woken when nothing is outstanding

	// The role holder only.
	watched    context.Context // the user context whose end kicks
	watchStop  func() bool
	spinStart  time.Duration // subcore.Clock at the wait's start (hybrid mode)
	lastClock  time.Duration // subcore.Clock at the spin's last check (hybrid mode)
	spinBudget time.Duration // hybrid mode's spin in this wait (spinBudget)
	slept      bool          // this wait slept (hybrid mode), for rule.Done
	yieldAfter int           // the spin round from which this wait yields the processor (engine.yieldAfterLocked)
	spins      int
	wcs        [32]verbs.WC // what a poll found, handled under engine.mu
}

// init readies a zero poller for the given GORMA_PROGRESS. Its rule comes with the
// engine's (engine.setWaiting).
func (p *poller) init(mode verbs.WaitMode) {
	p.mode, p.kickCh = mode, make(chan struct{}, 1)
	p.waitCtx, p.waitCancel = context.WithCancel(context.Background())
}

// polled is what the poller's spin found outside engine.mu: n completions of CQ dev in
// wcs, or the error of its Poll; or fb: a fast box message can be handled. The spin fills
// the poller's variable through a pointer, field by field. A struct returned by value is
// built with narrow stores and copied with wide loads that span them, a failed store
// forward on every message (BenchmarkSoftware8B measures that path).
type polled struct {
	dev int
	n   int
	err error
	fb  bool
	// stamps, set by the caller, is the timeline's clock where it alone observes
	// (subcore.Obs.Later), else nil: the wait then reads it as it starts, into from
	// ("Stamps" below).
	stamps *subcore.Obs
	from   int64
}

// wait waits, without engine.mu, until progress may be possible: a completion, a kick,
// or the end of ctx. While the poller spins (GORMA_PROGRESS=spin, or hybrid within its
// budget) it polls the CQs in live (a bit set of cqs indexes) and records in got what it
// found (in wcs); got starts zero. first is true on the first wait of a call.
func (p *poller) wait(ctx context.Context, first bool, live uint64, got *polled) {
	if p.kicked.Load() && p.kicked.Swap(false) { // Load first: no locked op when not kicked
		return
	}
	if got.stamps != nil {
		got.from = got.stamps.Stamp()
	}
	if p.spinning(first) && p.spin(ctx, live, got) {
		return
	}
	p.sleep(ctx)
}

// sleep blocks until the poller is kicked, a CQ has completions (one CQ) or ctx ends.
func (p *poller) sleep(ctx context.Context) {
	p.slept = true
	if len(p.cqs) != 1 {
		select {
		case <-p.kickCh:
		case <-ctx.Done():
		}
		return
	}
	p.watch(ctx)
	p.mu.Lock()
	wctx := p.waitCtx
	p.mu.Unlock()
	p.cqs[0].Wait(wctx) // errors (closed) show up in the next Poll
	if wctx.Err() != nil {
		p.mu.Lock()
		if p.waitCtx.Err() != nil {
			p.waitCtx, p.waitCancel = context.WithCancel(context.Background())
		}
		p.mu.Unlock()
	}
}

// spinning reports whether the poller spins rather than sleeps, starting the spin budget
// on the first wait of a call.
func (p *poller) spinning(first bool) bool {
	if p.mode == verbs.WaitBlock || p.providerSpins {
		return false
	}
	if first {
		p.spins, p.slept = 0, false
		if p.mode == verbs.WaitHybrid {
			p.spinStart = subcore.Clock()
			p.lastClock = p.spinStart
		}
	}
	return p.mode == verbs.WaitSpin || subcore.Clock()-p.spinStart < p.spinBudget
}

// spun reads the clock of a hybrid spin that has not been yielding the processor: false
// once its budget is spent, or once the waiting rule finds that the processor was taken
// from the spin (subcore.Waiting.Spun).
func (p *poller) spun() bool {
	now := subcore.Clock()
	prev := p.lastClock
	p.lastClock = now
	if p.spins < p.yieldAfter && p.rule.Spun(prev, now) {
		return false
	}
	return now-p.spinStart < p.spinBudget
}

// Spinning: the poller polls the completion queues itself, outside engine.mu (the role
// gives it wcs), and takes engine.mu only when a poll found something, so an idle round
// costs no lock. A round first looks into the fast boxes (one load per peer). The
// completion queues, whose poll costs several times the boxes' loads, only every
// cqPollEvery rounds (and at every round when the rank has no fast boxes, or once the
// rounds yield the processor: each of those may last another rank's time slice). A
// queue-pair message thus waits for at most cqPollEvery-1 rounds of box loads. Every
// spinYield rounds the spin checks its context and, in hybrid mode, its budget. Then it
// also yields to the rank's other goroutines (runtime.Gosched), but only where the
// waiting rule allows it (subcore.Waiting.Yields: one P, or an oversubscribed host).
// With more Ps, a Gosched wakes an idle P's thread: a context switch on a processor that
// a peer rank needs. The rank's other goroutines then run on the other P. `go test
// -bench PingPong8B ./runtime` and `bin/golaunch -n 2 bin/pingpong --test latency`
// measure cqPollEvery.
//
// A round that finds nothing ends with PAUSE (spinPause), unless the host is
// oversubscribed, where it would only delay the yield. A bare load loop runs many rounds
// ahead of its loads; when the box's line changes, the core throws that work away, and
// the cost then depends on where the loop's code happens to lie. With the pause, the
// latency no longer moves with unrelated changes to the binary, and a message is seen
// no later (`bin/golaunch -n 2 bin/pingpong --test latency --min-size 8 --max-size 8`,
// built with and without it; window/wait.go pauses its polls for the same reason).
//
// Stamps: where the timeline alone observes, the wait of a blocking receive reads the
// clock as it starts, with the engine's mu free (polled.stamps), and the receive takes
// its start from there. A read of its own before it waits would lie just before the
// engine's unlock, whose locked instruction waits for the read to finish.
// `scripts/compare-observe.sh` measures what the timeline costs.
//
// When this host's ranks outnumber its processors (LocalSize > HostCPUs), a spinning
// wait may hold the very processor the rank it waits for needs. It then gives the
// processor away (sched_yield, as Open MPI's yield_when_idle does) at every round from
// round yieldAfter on (engine.yieldAfterLocked):
//   - at once when it waits for one peer bound to this rank's own processor (the cards'
//     cpu: golaunch --bind-to core deals oversubscribed ranks to the cores in turn);
//   - never when that peer never competes for this processor (bound to another one, or
//     on another host): the wait spins its budget and sleeps, as with a core per rank;
//   - after oversubYieldAfter rounds (longer than a round trip between two running
//     ranks) when the peer is not known or the wait is for any source or several
//     requests.
//
// `bin/golaunch -n 4 bin/pingpong --pairs --test latency` on a host with half as many
// cores measures it (with --bind-to none, the unbound case). The yield is a raw system
// call, unannounced to the Go scheduler, for the reason the collectives' osYield gives.
const (
	cqPollEvery       = 4
	spinYield         = 64
	oversubYieldAfter = 256
	neverYield        = math.MaxInt
)

// spin polls the CQs in live until one has completions or fails (true, with what it
// found in got, which starts zero), the poller is kicked or ctx ends (true, nothing
// found), or the hybrid budget is spent (false: sleep).
func (p *poller) spin(ctx context.Context, live uint64, got *polled) bool {
	mode := p.mode
	for {
		boxes := p.boxList()
		if len(boxes) > 0 && boxesReady(boxes) {
			got.fb = true
			return true
		}
		if len(boxes) == 0 || p.spins%cqPollEvery == 0 || p.spins >= p.yieldAfter {
			for i, cq := range p.cqs {
				if live&(1<<i) == 0 {
					continue
				}
				if n, err := cq.Poll(p.wcs[:]); n > 0 || err != nil {
					got.dev, got.n, got.err = i, n, err
					return true
				}
			}
			if p.heldLeft() {
				return true // held sends left in that Poll: completing them takes mu
			}
		}
		if p.kicked.Load() && p.kicked.Swap(false) {
			return true
		}
		p.spins++
		if !p.rule.Oversub() {
			spinPause() // see "Spinning" above
		}
		// A yielding round may last a time slice of another rank. Its checks come at
		// every round, so that hybrid mode goes to sleep (and is woken when the message
		// comes) once its budget is spent rather than up to spinYield slices later.
		yielding := p.spins >= p.yieldAfter
		if yielding {
			unix.RawSyscall(unix.SYS_SCHED_YIELD, 0, 0, 0)
		} else if p.spins%spinYield != 0 {
			continue
		}
		if ctx.Err() != nil {
			return true
		}
		if mode == verbs.WaitHybrid && !p.spun() {
			return false
		}
		if p.spins%spinYield != 0 || !p.rule.Yields() {
			continue
		}
		gosched.Yield()
	}
}

// waited tells the rule how the role holder's wait went, once it ended (hybrid mode).
func (p *poller) waited() {
	if p.slept && p.mode == verbs.WaitHybrid {
		p.rule.Done(subcore.Clock()-p.spinStart, true)
	}
}

// Hybrid mode spins for GORMA_SPIN before it sleeps, and longer while this rank's
// rendezvous sends are being read. Their FIN comes once the receiver has copied the
// bytes, which for large messages takes longer than the default spin, and a sender asleep
// by then pays a futex wake-up per message. The extension assumes at least rndvSpinRate
// bytes per second, stops at maxRndvSpin, and applies only when this host's ranks do not
// outnumber its processors. `bin/golaunch -n 2 bin/pingpong --test latency --min-size 1M`
// measures it.
const (
	rndvSpinRate = 4 << 30 // bytes per second
	maxRndvSpin  = time.Millisecond
)

// spinBudget is how long hybrid mode spins in a wait that starts with sendBytes of
// rendezvous sends awaiting FIN, on a host whose ranks outnumber its processors or not.
func spinBudget(spin time.Duration, sendBytes int, oversubscribed bool) time.Duration {
	if sendBytes > 0 && !oversubscribed && spin < subcore.SpinForever-maxRndvSpin {
		spin += min(time.Duration(sendBytes)*time.Second/rndvSpinRate, maxRndvSpin)
	}
	return spin
}

// watch makes the end of ctx kick the poller, registering once per distinct context so
// that waiting repeatedly with one context allocates nothing. The role holder only.
func (p *poller) watch(ctx context.Context) {
	if ctx == p.watched || ctx.Done() == nil {
		return
	}
	if p.watchStop != nil {
		p.watchStop()
	}
	p.watched = ctx
	p.watchStop = context.AfterFunc(ctx, p.kick)
}

// unwatch drops the last context the poller watched. Only while no goroutine holds the
// role.
func (p *poller) unwatch() {
	if p.watchStop != nil {
		p.watchStop()
		p.watchStop, p.watched = nil, nil
	}
}

// kick wakes the poller (or the next one) so that it looks at the engine's state again.
// Safe from any goroutine, with or without engine.mu.
func (p *poller) kick() {
	p.kicked.Store(true)
	select {
	case p.kickCh <- struct{}{}:
	default:
	}
	p.mu.Lock()
	if p.waitCancel != nil {
		p.waitCancel()
	}
	p.mu.Unlock()
}

// relay sleeps on one device's CQ for a poller that serves two devices.
type relay struct {
	cq     verbs.CQ
	polled chan struct{} // a poll pass happened since the relay last kicked
}

// runRelay kicks the poller whenever rl's CQ has completions, waiting after each kick for
// a poll pass, until stop ends or the CQ closes.
func (p *poller) runRelay(rl *relay, stop context.Context) {
	for {
		err := rl.cq.Wait(stop)
		if stop.Err() != nil || errors.Is(err, verbs.ErrClosed) {
			return
		}
		if err != nil {
			time.Sleep(time.Millisecond) // a transient error: do not spin on it
			continue
		}
		p.kick()
		select {
		case <-rl.polled:
		case <-stop.Done():
			return
		}
	}
}

// polledPass tells the relays that a poll pass happened.
func (p *poller) polledPass() {
	for _, rl := range p.relays {
		select {
		case rl.polled <- struct{}{}:
		default:
		}
	}
}

// heldLeft reports whether a peer with held sends (eager.go) has a QP that keeps no send
// any more. It takes no lock: the spin and the shm CQ's wait check call it.
func (p *poller) heldLeft() bool {
	if p.holding.Load() == 0 {
		return false
	}
	if l := p.queuers.Load(); l != nil {
		for _, q := range *l {
			if q.holding.Load() && !q.sq.SendQueued() {
				return true
			}
		}
	}
	return false
}

// addQueuer adds peer q, whose QP may keep posted sends, to those heldLeft reads. The
// caller holds engine.mu, which serializes writers.
func (p *poller) addQueuer(q *peer) {
	var next []*peer
	if l := p.queuers.Load(); l != nil {
		next = append(next, *l...)
	}
	next = append(next, q)
	p.queuers.Store(&next)
}

// boxList returns the peers whose fast boxes the poller reads.
func (p *poller) boxList() []*peer {
	if b := p.boxes.Load(); b != nil {
		return *b
	}
	return nil
}

// addBox adds peer q's fast box to those the poller reads. The caller holds engine.mu,
// which serializes writers.
func (p *poller) addBox(q *peer) {
	next := append(append([]*peer(nil), p.boxList()...), q)
	p.boxes.Store(&next)
}

// addPeer gives the poller connected peer q's fast box and send queue, if it has them.
// The caller holds engine.mu.
func (p *poller) addPeer(q *peer) {
	if q.fin.box != nil {
		p.addBox(q)
	}
	if q.sq != nil {
		p.addQueuer(q)
	}
}

// fastboxReady reports whether some peer's box holds a message that can be handled now.
// It takes no lock: the shm CQ's wait check calls it.
func (p *poller) fastboxReady() bool { return boxesReady(p.boxList()) }

// waitCheck is the shm CQ's wait check: a fast box message can be handled, or held sends
// have left (eager.go). It takes no lock.
func (p *poller) waitCheck() bool { return p.fastboxReady() || p.heldLeft() }

// kickLocked kicks the poller if a goroutine holds the role: call it after completing a
// request outside a poll pass (the poller's own request may be among them). The caller
// holds engine.mu.
func (p *poller) kickLocked() {
	if p.active {
		p.kick()
	}
}

// handoffLocked wakes a parked goroutine to take over polling, if nobody polls. Call it,
// with engine.mu held, whenever a waiting goroutine stops waiting.
func (p *poller) handoffLocked() {
	if p.active || len(p.waiters) == 0 {
		return
	}
	select {
	case p.waiters[0].wake <- struct{}{}:
	default:
	}
}

// parkLocked waits, without mu (engine.mu, held on call and on return), until r's waiter
// is woken (r completed, or the poller left) or ctx ends.
//
// Several goroutines may wait for one Request: they share its wake channel, which holds
// one token, so completeLocked wakes only one of them. A goroutine that leaves while
// others still wait for a completed r passes the wake-up on, and r.parked stays true
// until the last one has left; otherwise the others would sleep until their context
// ends, or for ever (TestStressWaitOneRequestFromManyGoroutines).
func (p *poller) parkLocked(ctx context.Context, r *Request, mu *engineLock) {
	if r.wake == nil {
		r.wake = make(chan struct{}, 1)
	}
	r.parked = true
	p.waiters = append(p.waiters, r)
	mu.Unlock()
	select {
	case <-r.wake:
	case <-ctx.Done():
	}
	mu.Lock()
	if i := slices.Index(p.waiters, r); i >= 0 {
		p.waiters = slices.Delete(p.waiters, i, i+1)
	}
	r.parked = slices.Contains(p.waiters, r)
	select {
	case <-r.wake:
	default:
	}
	if r.parked && r.done {
		r.wake <- struct{}{} // drained just above: never blocks
	}
}
