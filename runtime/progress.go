package runtime

import (
	"context"
	"slices"
)

// Progress. There is no progress goroutine: the goroutines that call the runtime drive
// it, so that a message costs no goroutine hand-off. At most one goroutine at a time is
// the poller (poller.active): it polls the completion queues and, when nothing is ready,
// waits on them outside mu (poller.wait). Every other goroutine that must wait parks on
// its request's wake channel; the poller completes their requests and wakes them, and
// when the poller's own request is done it hands the role to a parked goroutine
// (handoffLocked).
//
// The runtime spins itself (poller.spin), polling every device without mu: the poller
// role alone entitles it to CQ.Poll into poller.wcs, and it takes mu only to handle what
// it found. So an idle round costs no lock and a message is handled as soon as the poll
// sees it. Devices are opened in verbs.WaitBlock mode and used for sleeping only. The
// exception is a rank whose only device is tcp, in hybrid mode (poller.providerSpins).
// The runtime does not spin there, as tcp's completions come from reader goroutines that
// a spin in the runtime would compete with, and tcp's CQ.Wait, opened with
// verbs.WaitHybrid unless the host is oversubscribed, spins in the one place that helps.
// A wait on the only connection reads its socket itself (the provider's leader) and tries
// it without blocking for GORMA_SPIN before it sleeps. And that connection's reader
// goroutine tries its socket for GORMA_SPIN before it parks while nothing else of the
// rank runs, which serves passive-target requests of peers without a wake-up.
// `bin/golaunch -n 2 --transport tcp bin/pingpong --test latency` and `bin/golaunch -n 2
// --transport tcp bin/rmabench --test get_lat.lock` measure it.

// waitLocked blocks until r is done or ctx ends. It is called and returns with mu held.
func (e *engine) waitLocked(ctx context.Context, r *Request) error {
	return e.untilLocked(ctx, r, false, nil)
}

// untilLocked blocks until r is done (quiet false, set nil), until nothing this rank sent
// is outstanding (quiet true, for Finalize), or until a request of set is done (WaitAny),
// or ctx ends. In the last two cases r only serves for parking.
func (e *engine) untilLocked(ctx context.Context, r *Request, quiet bool, set []*Request) error {
	e.watch.startWaitLocked(r, waitName(r, quiet, set, e.finalizing))
	err := e.untilWaitingLocked(ctx, r, quiet, set)
	e.watch.endWaitLocked(r)
	return err
}

// untilWaitingLocked is untilLocked's loop, with r listed as waiting.
func (e *engine) untilWaitingLocked(ctx context.Context, r *Request, quiet bool, set []*Request) error {
	first := true
	for {
		if !e.poll.active && (quiet || !reached(r, set)) {
			e.progressLocked()
		}
		if reached(r, set) || (quiet && e.quietLocked()) {
			if !first {
				e.poll.waited()
			}
			return nil
		}
		if r.anyFail && r.kind == reqSend {
			if err := e.ft.collectiveSendFailedLocked(r); err != nil {
				return err
			}
		}
		if quiet && e.aborted != nil {
			return e.aborted
		}
		if quiet {
			e.links.flushSendsLocked()
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if e.poll.active {
			if o := e.obs.alone(); o != nil && r.carry && r.obsFrom == 0 {
				r.obsFrom = o.Stamp() // a parked wait's start (polled.stamps)
			}
			if quiet {
				e.poll.quietWait = r
			}
			watch(set, r)
			e.poll.parkLocked(ctx, r, &e.mu)
			unwatch(set, r)
			e.poll.quietWait = nil
			continue
		}
		if len(e.links.rxLater) > 0 {
			e.links.repostAllLocked()
		}
		if len(e.links.late) > 0 {
			e.spawn.installDevicesLocked() // grow.go
		}
		e.poll.active = true
		live := e.links.liveDevsLocked()
		if first {
			e.poll.spinBudget = spinBudget(e.poll.rule.Budget(), e.match.table.sendBytes, e.poll.rule.Oversub())
			e.poll.yieldAfter = e.yieldAfterLocked(r, quiet, set)
		}
		if !first {
			e.obs.flushLocked() // a wait that went round: its events go in before it waits again
		}
		e.mu.Unlock()
		var got polled
		if r.carry && r.obsFrom == 0 {
			got.stamps = e.obs.alone() // an observed Recv's start (observer.endRecv)
		}
		e.poll.wait(ctx, first, live, &got)
		first = false
		e.mu.Lock()
		if r.carry && r.obsFrom == 0 {
			r.obsFrom = got.from
		}
		if got.n > 0 || got.err != nil || got.fb {
			e.handlePolledLocked(&got)
		}
		e.poll.active = false
	}
}

// reached reports whether r is done, or with a set, whether one of set is.
func reached(r *Request, set []*Request) bool {
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
	for _, p := range e.links.peers {
		if p != nil && !p.quiet() {
			return false
		}
	}
	return e.match.idleLocked()
}

// progressLocked polls every completion queue until it is empty and handles what it
// found. The caller holds mu and no other goroutine is the poller.
func (e *engine) progressLocked() {
	e.drainFastboxesLocked()
	for _, d := range e.links.devs {
		if d.closed || d.broken {
			continue
		}
		for {
			n, err := d.cq.Poll(e.poll.wcs[:])
			if err != nil {
				e.deviceFailedLocked(d, err)
				break
			}
			for i := 0; i < n; i++ {
				e.handleLocked(&e.poll.wcs[i])
			}
			if n < len(e.poll.wcs) {
				break
			}
		}
	}
	e.polledLocked()
}

// polledLocked tells the relays that a poll pass happened, completes the held sends
// whose messages have left, and wakes Finalize's parked request if nothing is
// outstanding any more.
func (e *engine) polledLocked() {
	e.poll.polledPass()
	if len(e.links.holders) > 0 {
		e.releaseHeldLocked()
	}
	if r := e.poll.quietWait; r != nil && e.quietLocked() {
		select {
		case r.wake <- struct{}{}:
		default:
		}
	}
}

// handlePolledLocked handles what the poller's spin found.
func (e *engine) handlePolledLocked(got *polled) {
	if got.fb {
		e.drainFastboxesLocked()
		e.polledLocked()
		return
	}
	d := e.links.devs[got.dev]
	if got.err != nil {
		if !d.broken {
			e.deviceFailedLocked(d, got.err)
		}
	} else {
		for i := 0; i < got.n; i++ {
			e.handleLocked(&e.poll.wcs[i])
		}
	}
	e.polledLocked()
}

// yieldAfterLocked returns the spin round from which a wait for r (quiet and set as in
// untilLocked) yields the processor at every round (see the constants in poller.go).
func (e *engine) yieldAfterLocked(r *Request, quiet bool, set []*Request) int {
	if !e.waiting.Oversub() {
		return neverYield
	}
	if e.waiting.Sharing() {
		return 0 // the fold put this rank on the processors of the ranks it waits for
	}
	t := e.links.table()
	if !quiet && set == nil && (r.kind == reqSend || r.kind == reqRecv || r.kind == reqProbe) &&
		r.peer >= 0 && r.peer != e.rank && r.peer < len(t.cardOK) && t.cardOK[r.peer] {
		me, them := &t.cards[e.rank], &t.cards[r.peer]
		switch {
		case sameCPU(me, them):
			return 0
		case apartCPU(me, them):
			return neverYield
		}
	}
	return oversubYieldAfter
}
