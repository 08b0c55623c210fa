package window

import (
	"context"
	goruntime "runtime"
	"sync/atomic"
	"time"

	"github.com/gorma-hpc/gorma/internal/futex"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/substrate"
)

// Waiting for a word of shared memory (a lock word, a fence or PSCW counter) to change.
//
// Both follow the rank's waiting rule (substrate.WaitRule): they spin for its budget,
// yielding to the Go scheduler at each poll only where the rule says that wakes no
// thread (one P, or an oversubscribed host), and a wait that slept tells the rule how
// long it lasted.
//
// pollUntil serves words that no one can wake this rank for (another rank's lock word):
// it spins, then sleeps between polls, from sleepMin doubling up to sleepMax. Go's
// timers round sleeps below a millisecond up when the thread must block, so this phase
// reacts in about a millisecond.
//
// waitOwn serves conditions on this rank's own metadata: it spins the same way, then
// sleeps on the doorbell word (a shared futex) after announcing itself in the sleepers
// word. A peer that changes a word this rank waits for, and sees a sleeper, bumps the
// doorbell and wakes it (ring). The order (sleepers, then doorbell, then the condition;
// and at the peer: the word, then sleepers) makes a lost wake-up impossible with Go's
// sequentially consistent atomics. A peer reached through a transport (on another host,
// or over tcp) changes a word by a remote atomic, which this rank's own transport
// executes (tcp: its connection goroutine plays the NIC). The transport then rings the
// bell for it (substrate.Region.OnRemoteAtomic on the metadata region, set at allocation),
// after the word changed, which keeps the same order. Sleeps are bounded by sleepMax all
// the same, for the words no one rings for (pollUntil's).
//
// The word may change only when this rank's transport serves a peer's request (a remote
// atomic over tcp). While it spins, the wait serves such requests itself if nobody else
// reads their connection (substrate.PollPeers: over tcp, a connection whose reading
// the last completion wait took over and left idle), so that a request is served as soon
// as it lands. Before it sleeps, it hands that reading back to the connection's own
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

// pollUntil returns nil once ready reports true, or the error of ctx or of check. rt is
// the window's World, whose transports must keep serving peers meanwhile.
func pollUntil(ctx context.Context, at blocked, rt *runtime.World, ready func() bool, check func() error) error {
	return wait(ctx, at, rt, nil, ready, check)
}

// waitOwn is pollUntil for a condition on own, this rank's metadata words, sleeping on
// its doorbell.
func waitOwn(ctx context.Context, at blocked, rt *runtime.World, own []uint64, ready func() bool, check func() error) error {
	return wait(ctx, at, rt, own, ready, check)
}

func wait(ctx context.Context, at blocked, rt *runtime.World, own []uint64, ready func() bool, check func() error) error {
	if ready() {
		return nil
	}
	marked := false
	defer func() {
		if marked {
			at.t.End()
		}
	}()
	rule := substrate.WaitRule(rt)
	budget, yield := rule.Budget(), rule.Yields()
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
			// atomic on own, a Get of ours before it completes). A tcp connection whose
			// reading the last completion wait took over goes back to its goroutine now,
			// not a tick later.
			substrate.ServePeers(rt)
		}
		switch {
		case sleep == 0:
			if !substrate.PollPeers(rt) && (yield || rule.Oversub) {
				goruntime.Gosched()
			}
		case own != nil:
			if sleepOwn(own, ready) {
				return nil
			}
		default:
			time.Sleep(sleep)
			sleep = min(2*sleep, sleepMax)
		}
	}
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

// sleepOwn sleeps on own's doorbell until rung (or sleepMax), and reports whether ready
// held before it slept.
func sleepOwn(own []uint64, ready func() bool) bool {
	atomic.AddUint64(&own[mSleep], 1)
	defer atomic.AddUint64(&own[mSleep], ^uint64(0))
	bell := uint32(atomic.LoadUint64(&own[mBell]))
	if ready() {
		return true
	}
	futex.Wait(&own[mBell], bell, sleepMax)
	return false
}

// ring wakes the sleepers of the rank whose mapped metadata is mw, after a word they may
// wait for was changed. One atomic load when nobody sleeps.
func ring(mw []uint64) {
	if atomic.LoadUint64(&mw[mSleep]) == 0 {
		return
	}
	atomic.AddUint64(&mw[mBell], 1)
	futex.Wake(&mw[mBell], futex.All)
}
