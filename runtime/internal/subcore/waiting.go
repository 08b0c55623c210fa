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
//
// A hook set by SetFold learns when a hold starts and when it ends (the runtime's fold: runtime/design.md, "Folding away from other work").
type Waiting struct {
	oversub   atomic.Bool   // Oversub
	sharing   atomic.Bool   // Sharing
	yield     atomic.Bool   // Yields
	fold      func(Hold)    // SetFold
	joins     func() bool   // SetFold
	checked   atomic.Int64  // the Clock reading of joins' last call
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
	// FoldCheck is how often a spin asks SetFold's joins: each call reads the affinities
	// of the rank's siblings.
	FoldCheck = time.Millisecond
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
	// In a fold (Sharing) the rank yields its processor to the siblings that share it:
	// a gap is their turn, not a theft, and renews no hold. At the hold's end the fold
	// asks /proc/stat whether other work is still there (Rehold).
	stolen := now-prev >= StealGap && !w.sharing.Load()
	if stolen || w.joins != nil && w.joinCheck(now) {
		h := BusyHold
		last := time.Duration(w.hold.Load())
		if until := time.Duration(w.busyUntil.Load()); last > 0 && now <= until+last {
			h = min(2*last, BusyHoldMax)
		}
		w.hold.Store(int64(h))
		w.busyUntil.Store(int64(now + h))
		w.budget.Store(int64(w.min))
		first := w.busy.CompareAndSwap(false, true)
		switch {
		case w.fold == nil:
		case stolen && first:
			w.fold(HoldTheft)
		case !stolen:
			w.fold(HoldJoin) // a hold starts, or one under way goes on in another fold
		}
		return true
	}
	w.expire(now)
	return false
}

// joinCheck asks the joins hook, at most once per FoldCheck of spinning, whether the rank
// must join a fold.
func (w *Waiting) joinCheck(now time.Duration) bool {
	last := w.checked.Load()
	if int64(now)-last < int64(FoldCheck) || !w.checked.CompareAndSwap(last, int64(now)) {
		return false
	}
	return w.joins()
}

// expire ends a hold that ended before now.
func (w *Waiting) expire(now time.Duration) {
	if w.busy.Load() && int64(now) > w.busyUntil.Load() && w.busy.CompareAndSwap(true, false) && w.fold != nil {
		w.fold(HoldEnd)
	}
}

// Rehold starts another hold at once, twice as long as the last one (up to
// BusyHoldMax), without telling SetFold's hook: the rank stays as it is, busy.
func (w *Waiting) Rehold() {
	h := min(2*time.Duration(w.hold.Load()), BusyHoldMax)
	h = max(h, BusyHold)
	w.hold.Store(int64(h))
	w.busyUntil.Store(int64(Clock() + h))
	w.budget.Store(int64(w.min))
	w.busy.Store(true)
}

// Busy reports whether a spin of the rank lost its processor within BusyHold.
func (w *Waiting) Busy() bool { return w.busy.Load() }

// Hold is what SetFold's hook learns.
type Hold int

const (
	HoldEnd   Hold = iota // the hold has run out: Busy is false
	HoldTheft             // a spin lost its processor: a hold starts
	HoldJoin              // joins said to join a fold: a hold starts, or goes on
)

// SetFold makes fold learn when a hold starts and when it ends. A spin also asks joins,
// at most once per FoldCheck of spinning, whether the rank must join another rank's
// fold. A true answer starts a hold, as a theft does, or renews the one under way, and
// fold learns it (HoldJoin). Both run on the waiting goroutine and must not block.
// Before the rule is in use.
func (w *Waiting) SetFold(fold func(Hold), joins func() bool) { w.fold, w.joins = fold, joins }

// Oversub reports whether the rank's processors are taken by more ranks than they are:
// a poll that misses then gives the processor away (sched_yield), so that the rank it
// waits for runs. It holds from Init on a host whose ranks outnumber its processors, and
// while a fold shares a processor between ranks.
func (w *Waiting) Oversub() bool { return w.oversub.Load() }

// Sharing reports whether the rank's threads run on the processors of the ranks it waits
// for (a fold): a wait for one of them gives the processor away at once.
func (w *Waiting) Sharing() bool { return w.sharing.Load() }

// SetSharing changes Sharing.
func (w *Waiting) SetSharing(s bool) { w.sharing.Store(s) }

// SetOversub changes Oversub.
func (w *Waiting) SetOversub(o bool) { w.oversub.Store(o) }

// SpinForever is a spin that never sleeps (GORMA_PROGRESS=spin).
const SpinForever = time.Duration(math.MaxInt64)

// NewWaiting returns a rule whose spin adapts between lo and hi (lo == hi: fixed),
// starting at hi.
func NewWaiting(lo, hi time.Duration, oversub, yield bool) *Waiting {
	w := &Waiting{max: hi, min: min(lo, hi)}
	w.oversub.Store(oversub)
	w.budget.Store(int64(hi))
	w.yield.Store(yield)
	return w
}

// Adapts reports whether the rule's budget adapts (NewWaiting's lo < hi): only such a
// rule sees thefts.
func (w *Waiting) Adapts() bool { return w.max != w.min }

// Yields reports whether a spin may yield to the Go scheduler (runtime.Gosched): true
// when that wakes no other thread, as the rank runs on one P, or when its host is
// oversubscribed and its spins give the processor away anyway. Otherwise a spin never
// yields to the Go scheduler. A Gosched puts the goroutine on the global run queue and
// wakes an idle P's thread, which looks for work on a processor that a peer rank needs.
func (w *Waiting) Yields() bool { return w.yield.Load() }

// SetYields changes Yields, when the rank's GOMAXPROCS changes.
func (w *Waiting) SetYields(y bool) { w.yield.Store(y) }

// Budget returns how long a wait that starts now polls before it sleeps. It ends a hold
// that has run out, though no spin has read the clock since.
func (w *Waiting) Budget() time.Duration {
	if w.busy.Load() {
		if w.expire(Clock()); w.busy.Load() {
			return w.min
		}
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
