package window

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/gorma-hpc/gorma/internal/futex"
	"github.com/gorma-hpc/gorma/internal/gosched"
	"github.com/gorma-hpc/gorma/runtime/substrate"
)

// Waiting for a word of shared memory (a lock word, an accumulate word, a fence or PSCW
// counter) to change.
//
// A wait follows the rank's waiting rule (substrate.WaitRule). It spins for the rule's
// budget, then sleeps. Its first quickPolls polls read only the word: most waits of a
// Fence or a PSCW epoch end within them, and they read no clock. Each poll that misses
// executes PAUSE (spinPause): the core leaves the loop without the pipeline flush that a
// changed line costs a bare load loop, and the peer that writes the line gets it sooner
// (`bin/golaunch -n 2 --bind-to core bin/rmabench --test fence,put_lat.pscw`). An
// oversubscribed host's polls do not pause: a pause there delays the yield that hands
// the processor to the rank waited for (`bin/golaunch -n 4 bin/rmabench --test fence`).
//
//   - While it spins it yields to the Go scheduler every goschedEvery polls, and only
//     where the rule says that wakes no thread (one P, or an oversubscribed host). A
//     Gosched costs the scheduler's locks and a look at its timers: at every poll they
//     would be most of a short wait, and the spin would see the word change late
//     (`bin/golaunch -n 2 bin/rmabench --test fence,put_lat.pscw`).
//   - On an oversubscribed host (more ranks than processors) each miss also gives the
//     processor away (futex.Yield, sched_yield), for at least yieldFor: the rank waited
//     for may be the one that needs the core. Open MPI's progress does the same when it
//     knows it oversubscribes (mpi_yield_when_idle).
//   - It then sleeps on a doorbell: a shared futex word in the metadata of the rank whose
//     word it waits for (waitOn). A peer that changes a word others may wait for bumps
//     that rank's doorbell and wakes its sleepers (ring). The order (sleepers, then
//     doorbell, then the condition; and at the peer: the word, then sleepers) makes a
//     lost wake-up impossible with Go's sequentially consistent atomics. A Fence's
//     counts are release stores: it puts a full fence (fullFence) between them and its
//     rings.
//   - A word changed through a transport (a peer on another host, or over tcp) is changed
//     by this rank's own transport, which rings the bell for it
//     (substrate.Region.OnRemoteAtomic on the metadata region). A word of a rank reached
//     only through a transport has no doorbell here: the wait sleeps from sleepMin,
//     doubling up to sleepMax, between polls. Go's timers round sleeps below a
//     millisecond up when the thread must block, so this phase reacts in about a
//     millisecond.
//
// A wait that slept tells the rule how long it lasted. Doorbell sleeps are bounded by
// sleepMax too.
//
// The word may change only when this rank's transport serves a peer's request (a remote
// atomic over tcp). While it spins, the wait serves such requests itself if nobody else
// reads their connection (substrate.PollPeers: over tcp, a connection whose reading the
// last completion wait took over and left idle), so that a request is served as soon as
// it lands. Before it sleeps, it hands that reading back to the connection's own
// goroutine (ServePeers), so that peers are served while it sleeps.
//
// Every pollCheck polls, and around each sleep, both check ctx and the liveness of the
// peers involved: nothing waits forever on a dead peer or an ended context. The spin's
// end is looked for every clockCheck polls, as a poll that serves a connection costs a
// system call.
const (
	sleepMin   = 5 * time.Microsecond
	pollCheck  = 256
	clockCheck = 16
	// yieldFor is the shortest spin of an oversubscribed wait, which gives the processor
	// away at every miss. A peer that has not changed the word within it is computing or
	// waits for a processor that sched_yield did not hand it: the scheduler may answer a
	// yield with the yielding rank itself. Sleeping on the doorbell then frees the core
	// for whichever rank can run (`scripts/compare-rmahalo.sh`, pscw against
	// gorma-block, at 4 ranks on 2 cores).
	yieldFor = 50 * time.Microsecond
	// goschedEvery is how many polls a spin makes between yields to the rank's other
	// goroutines (the runtime poller's spinYield).
	goschedEvery = 64
	// quickPolls is how many polls a wait makes before it reads the rule and the clock:
	// most waits of an epoch's synchronization end within them.
	quickPolls = 64
)

// sleepMax bounds one sleep. A variable only so that a test can make a lost wake-up
// hang instead of costing a millisecond; set before any window is used.
var sleepMax = time.Millisecond

// blocked names the call a wait serves in hang reports: the wait marks it under way on
// its Track only once it stops spinning, so that a short wait costs nothing.
type blocked struct {
	t    *substrate.Track
	call string
	seq  uint64             // the call's number among the World's collective calls, 0 for none
	sig  *substrate.CallSig // the collective call's signature, nil for none
}

// waitOn returns nil once ready reports true, or the error of ctx or of check. The
// window's World (comm) must keep serving peers meanwhile. bell is the mapped
// metadata of the rank whose word ready reads, whose doorbell the word's writers ring
// (this rank's own, or a mapped target's); nil for a rank reached only through a
// transport.
func (h *house[T]) waitOn(ctx context.Context, at blocked, bell []uint64, ready func() bool, check func() error) error {
	rt, rule := h.comm, h.commRef.rule
	if quickPoll(ready, rule.Oversub()) {
		return nil
	}
	marked, asleep := false, false
	defer func() {
		if marked {
			at.t.End()
		}
		if asleep {
			atomic.AddUint64(&bell[mSleep], ^uint64(0))
		}
	}()
	budget, yield := rule.Budget(), rule.Yields()
	if rule.Oversub() {
		budget = max(budget, yieldFor)
	}
	start := substrate.WaitClock()
	last := start
	sleep := time.Duration(0)
	for i := 1; ; i++ {
		if ready() {
			if sleep > 0 {
				rule.Done(substrate.WaitClock()-start, true)
			}
			return nil
		}
		if i%pollCheck == 0 || sleep > 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
			if check != nil {
				if err := check(); err != nil {
					return err
				}
			}
		}
		if sleep == 0 && i%clockCheck == 0 && spent(rule, start, &last, budget) {
			sleep = sleepMin
			if at.t != nil {
				if at.sig != nil {
					at.t.BeginSig(at.sig, at.seq)
				} else {
					at.t.BeginAt(at.call, at.seq)
				}
				marked = true
			}
			// The peer we wait for may need this rank's transport to serve it (its remote
			// atomic on our words, a Get of ours before it completes). A tcp connection
			// whose reading the last completion wait took over goes back to its goroutine
			// now, not a tick later.
			substrate.ServePeers(rt)
		}
		switch {
		case sleep == 0:
			if !rule.Oversub() {
				spinPause()
			}
			if substrate.PollPeers(rt) {
				break
			}
			if rule.Oversub() {
				futex.Yield()
			}
			if (yield || rule.Oversub()) && i%goschedEvery == 0 {
				gosched.Yield()
			}
		case bell != nil:
			if !asleep { // a sleeper from now until the wait returns (sleepOn)
				atomic.AddUint64(&bell[mSleep], 1)
				asleep = true
			}
			if sleepOn(bell, ready) {
				return nil
			}
		default:
			time.Sleep(sleep)
			sleep = min(2*sleep, sleepMax)
		}
	}
}

// quickPoll polls ready quickPolls times and reports whether it held. Between misses it
// executes PAUSE, unless the host is oversubscribed: there the rank waited for may need
// this rank's processor, and the pauses would only delay the yield that gives it.
func quickPoll(ready func() bool, oversub bool) bool {
	for range quickPolls {
		if ready() {
			return true
		}
		if !oversub {
			spinPause()
		}
	}
	return false
}

// spent reads the clock of a spin that started at start and last read it at *last: true
// once budget is spent, or once the waiting rule finds that the processor was taken from
// the spin (substrate.Waiting.Spun).
func spent(rule *substrate.Waiting, start time.Duration, last *time.Duration, budget time.Duration) bool {
	now := substrate.WaitClock()
	stolen := rule.Spun(*last, now)
	*last = now
	return stolen || now-start > budget
}

// sleepOn sleeps on the doorbell of the metadata mw until rung (or sleepMax), and
// reports whether ready held before it slept. The caller counts itself in mw's sleepers
// first, and stays counted until its wait ends, so that no ring between two sleeps is
// lost.
func sleepOn(mw []uint64, ready func() bool) bool {
	bell := uint32(atomic.LoadUint64(&mw[mBell]))
	if ready() {
		return true
	}
	futex.Wait(&mw[mBell], bell, sleepMax)
	return false
}

// ring wakes the sleepers of the rank whose mapped metadata is mw, after a word they may
// wait for was changed. One atomic load when nobody sleeps. The change must come before
// that load in a total order: an atomic store or read-modify-write, or a release store
// followed by fullFence.
func ring(mw []uint64) {
	if atomic.LoadUint64(&mw[mSleep]) == 0 {
		return
	}
	atomic.AddUint64(&mw[mBell], 1)
	futex.Wake(&mw[mBell], futex.All)
}
