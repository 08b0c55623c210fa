package subcore

import (
	"math"
	"sync/atomic"
	"time"
)

// Waiting is a rank's waiting rule: how a goroutine that waits for a peer spins, shares
// the processor and sleeps. The runtime's poller follows it, and so do the layers that
// wait on shared memory (collectives' flags, windows' words). runtime/design.md ("The
// waiting rule") states it. One Waiting serves every wait of the rank; its methods are
// safe from any goroutine.
//
// A wait polls for up to Budget, then sleeps until woken. On a host whose ranks fit its
// processors the budget starts at the full spin and adapts in two ways:
//   - Done: a rank whose waits keep outlasting the full spin (a peer that computes)
//     spins less, and spins the full budget again once waits that slept end within it.
//   - Spun: a spin that finds its processor was taken from it (a gap of StealGap
//     between two clock reads with only polls between them) ends at once, and the rank
//     is busy for a hold from then: its budget is the floor. The machine then runs
//     more threads than it has processors, and a spinning rank holds one that the rank
//     it waits for needs. The hold starts at BusyHold and doubles, up to BusyHoldMax,
//     for each theft within a hold of the last one's end. After it the budget grows
//     back from the floor as Done doubles it, not at once.
type Waiting struct {
	// Oversub is true when the host's ranks outnumber its processors. A poll that misses
	// then gives the processor away (sched_yield), so that the rank it waits for runs.
	Oversub bool

	yield     atomic.Bool   // Yields
	max, min  time.Duration // Budget's bounds; max == min: fixed
	budget    atomic.Int64  // the current spin, in nanoseconds
	busy      atomic.Bool   // a spin lost its processor before busyUntil
	busyUntil atomic.Int64  // a Clock reading
	hold      atomic.Int64  // the last hold, in nanoseconds
}

// StealGap, BusyHold and BusyHoldMax: a spin whose clock jumps by StealGap between two
// reads lost its processor; the rank then spins at its floor for BusyHold, and up to
// BusyHoldMax while thefts keep coming. A run of polls between two reads takes
// microseconds, and the kernel takes a processor for a time slice (most of a millisecond
// or more).
const (
	StealGap    = 500 * time.Microsecond
	BusyHold    = 25 * time.Millisecond
	BusyHoldMax = time.Second
)

// epoch is Clock's origin.
var epoch = time.Now()

// Clock returns a monotonic reading for Spun.
func Clock() time.Duration { return time.Since(epoch) }

// Spun tells the rule that a spin polled from clock reading prev to now, and reports
// whether it must end: the gap shows that it lost its processor. The rank is then busy
// for a hold (see Waiting), and its budget drops to the floor. A fixed rule ignores it.
func (w *Waiting) Spun(prev, now time.Duration) bool {
	if w.max == w.min {
		return false
	}
	if now-prev >= StealGap {
		h := BusyHold
		last := time.Duration(w.hold.Load())
		if until := time.Duration(w.busyUntil.Load()); last > 0 && now <= until+last {
			h = min(2*last, BusyHoldMax)
		}
		w.hold.Store(int64(h))
		w.busyUntil.Store(int64(now + h))
		w.budget.Store(int64(w.min))
		if !w.busy.Load() {
			w.busy.Store(true)
		}
		return true
	}
	if w.busy.Load() && int64(now) > w.busyUntil.Load() {
		w.busy.Store(false)
	}
	return false
}

// Busy reports whether a spin of the rank lost its processor within BusyHold.
func (w *Waiting) Busy() bool { return w.busy.Load() }

// SpinForever is a spin that never sleeps (GORMA_PROGRESS=spin).
const SpinForever = time.Duration(math.MaxInt64)

// NewWaiting returns a rule whose spin adapts between lo and hi (lo == hi: fixed),
// starting at hi.
func NewWaiting(lo, hi time.Duration, oversub, yield bool) *Waiting {
	w := &Waiting{Oversub: oversub, max: hi, min: min(lo, hi)}
	w.budget.Store(int64(hi))
	w.yield.Store(yield)
	return w
}

// Yields reports whether a spin may yield to the Go scheduler (runtime.Gosched): true
// when that wakes no other thread, as the rank runs on one P, or when its host is
// oversubscribed and its spins give the processor away anyway. Otherwise a spin never
// yields to the Go scheduler. A Gosched puts the goroutine on the global run queue and
// wakes an idle P's thread, which looks for work on a processor that a peer rank needs.
func (w *Waiting) Yields() bool { return w.yield.Load() }

// SetYields changes Yields, when the rank's GOMAXPROCS changes.
func (w *Waiting) SetYields(y bool) { w.yield.Store(y) }

// Budget returns how long a wait that starts now polls before it sleeps.
func (w *Waiting) Budget() time.Duration {
	if w.busy.Load() {
		return w.min
	}
	return time.Duration(w.budget.Load())
}

// Done tells the rule how a wait that spun went: it lasted d in all, and slept or not.
// A wait that slept although it ended within the full spin would have ended spinning:
// the budget doubles. A wait that outlasted the full spin found a peer that was not
// about to come: the budget halves. A wait that ended in its spin, or one of a busy
// rank, changes nothing.
func (w *Waiting) Done(d time.Duration, slept bool) {
	if w.max == w.min || !slept || w.busy.Load() {
		return
	}
	b := time.Duration(w.budget.Load())
	n := Adapt(b, d, w.min, w.max)
	if n != b {
		w.budget.Store(int64(n))
	}
}

// Adapt returns the spin budget after a wait that slept with budget b and lasted d in
// all, with the budget bounded by lo and hi (see Done).
func Adapt(b, d, lo, hi time.Duration) time.Duration {
	if d <= hi {
		return min(2*b, hi)
	}
	return max(b/2, lo)
}

// processRanks counts the ranks whose devices are open in this process: more than one in
// an in-process job (runtimetest), whose ranks share the process's Go processors.
var processRanks atomic.Int32

// AddProcessRank counts a rank of this process in (1) or out (-1).
func AddProcessRank(d int32) { processRanks.Add(d) }

// SharedProcess reports whether more than one rank is open in this process.
func SharedProcess() bool { return processRanks.Load() > 1 }
