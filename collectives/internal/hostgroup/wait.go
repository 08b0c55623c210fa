package hostgroup

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/gorma-hpc/gorma/internal/futex"
	"github.com/gorma-hpc/gorma/internal/gosched"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/substrate"
)

// waiter is how a member waits for a peer's step: a bounded spin, then futex sleeps on
// the peer's bell (design.md, "Waiting"). initRegion sets it from the rank's waiting
// rule; a group over plain memory has no rule and spins spinCheck polls.
type waiter struct {
	rule    *substrate.Waiting // the rank's waiting rule: the spin's budget, and whether it yields
	oversub bool               // more ranks on this host than processors: yield while spinning (see yields)
	shared  bool               // other ranks' Worlds live in this process (substrate.SharesProcess)
}

// wait waits until member i of g has published step v.
func (w *waiter) wait(c Call, g *Group, i int, v uint64) error {
	b := g.mem[i]
	ctr := word(b, flagOff(v)+flagSeq)
	if atomic.LoadUint64(ctr) >= v {
		return nil
	}
	c.Flush(false) // while the peer is on its way
	// Each rank has a processor: a bare spin for the waiting rule's budget, so that the
	// publisher's store is seen one line transfer after it happens (see the type's
	// documentation). Oversubscribed: waitYield.
	var start time.Time // from the first check (most waits end before)
	if w.yields() {
		if w.rule != nil {
			w.rule.Budget() // ends a fold's hold that has run out: its spin reads no clock
		}
		if done, err := w.waitYield(c, g, i, ctr, v); done || err != nil {
			return err
		}
	} else if budget := w.budget(); budget > 0 {
		yield := w.rule != nil && w.rule.Yields()
		var first, last time.Duration // substrate.WaitClock at the first and the last check
		for n := 1; ; n++ {
			if atomic.LoadUint64(ctr) >= v {
				return nil
			}
			if n%spinCheck == 0 {
				if err := g.check(c, i); err != nil {
					return err
				}
				now := substrate.WaitClock()
				if first == 0 {
					first, start = now, time.Now()
				} else if w.rule != nil && w.rule.Spun(last, now) || now-first > budget {
					break
				}
				last = now
				if yield {
					gosched.Yield() // one P: the rank's other goroutines get a turn, no thread wakes
				}
			}
		}
	}
	if start.IsZero() {
		start = time.Now()
	}
	for d := sleepFirst; ; d = sleepMax {
		atomic.AddUint64(word(b, offSleep), 1)
		bell := uint32(atomic.LoadUint64(word(b, offBell)))
		if atomic.LoadUint64(ctr) >= v {
			atomic.AddUint64(word(b, offSleep), ^uint64(0))
			w.done(start)
			return nil
		}
		futex.Wait(word(b, offBell), bell, d)
		atomic.AddUint64(word(b, offSleep), ^uint64(0))
		if atomic.LoadUint64(ctr) >= v {
			w.done(start)
			return nil
		}
		if err := g.check(c, i); err != nil {
			return err
		}
		if d == sleepMax {
			gosched.Yield() // a long wait: the rank's other goroutines get a turn
		}
	}
}

// yields reports whether a wait yields while it spins: on an oversubscribed host, or
// while the rank's fold shares its processor (substrate.Waiting.Oversub).
func (w *waiter) yields() bool { return w.oversub || w.rule != nil && w.rule.Oversub() }

// budget is the spin's budget: the waiting rule's, or spinCheck polls' worth without one.
func (w *waiter) budget() time.Duration {
	if w.rule == nil {
		return time.Nanosecond // one check of the clock, after spinCheck polls
	}
	return w.rule.Budget()
}

// done tells the waiting rule, if any, that a wait that slept, from start, has ended.
func (w *waiter) done(start time.Time) {
	if w.rule != nil {
		w.rule.Done(time.Since(start), true)
	}
}

// check returns ctx's error or member i's failure.
func (g *Group) check(c Call, i int) error {
	c.Flush(true) // a wait this long has time for it
	if err := c.Context().Err(); err != nil {
		return err
	}
	if g.remotes == nil {
		return nil // a group over plain memory: its members do not fail
	}
	if err := g.remotes[i].Err(); err != nil {
		var pe *runtime.ProcError
		if errors.As(err, &pe) {
			return err
		}
		return fmt.Errorf("rank %d waiting for rank %d: %w", g.Ranks[g.Me], g.Ranks[i], err)
	}
	if c.World() != nil {
		return substrate.Broken(c.World()) // another member failed: the one waited for may have left
	}
	return nil
}
