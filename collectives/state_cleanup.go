package collectives

import (
	"context"
	"sync"
	"time"
	"weak"

	"github.com/gorma-hpc/gorma/collectives/internal/hostgroup"
	"github.com/gorma-hpc/gorma/runtime"
)

// Releasing the state of a World its program dropped.
//
// stateOf registers forget as a cleanup on each World that makes a collective call. It
// runs on the Go runtime's cleanup goroutine once the World is unreachable, which is after
// the World's last call has ended (call.end keeps the World reachable until then), so no
// call uses the state any more. It deletes the World's entry in states, clears lastState
// if it holds the state, and, if the state holds shared-memory scratch, starts release.
//
// What is not plain Go memory is the host groups' (internal/hostgroup): this rank's arena
// regions (registered with every device), and its Remotes of the peers' regions, which
// the rank's engine keeps in its table, mapped and pinned, until they are closed. The
// Remotes are closed at once: this rank will not touch the peers' regions again. This
// rank's own regions are not freed at once. A peer may still be reading them (the end of
// the last call, which a rank may still be copying out of this rank's buffers after this
// rank returned) and still maps and pins them until its own World is dropped, perhaps
// much later, in another process. An arena Free then waits (up to two seconds, with the
// arena locked) for the pins to drain and quarantines the memory for good if they do not.
// So a region is freed only once every peer has said that it let go of it:
//
//   - Each rank, releasing its state of a group, adds shmDetached to the sleepers word of
//     every peer's region it still maps. It does so after closing its mappings of the
//     peer's fresh big buffers and before closing its mapping of the region. The add is
//     an RDMA fetch-and-add through its Remote, which the runtime orders with Finalize's
//     unmapping under the engine's lock. A plain store through the mapping could hit an
//     unmapped page. setup zeroes that word in every new region before describing it to
//     peers; the waiters' counts in its low half always go back to zero, so the high half
//     counts the peers that let go.
//   - The owner frees its regions (the current one, one a failed setup left, and fresh big
//     buffers a failed call left) when its own state is dropped and the count has reached
//     the number of its peers. Every peer then mapped the current region (so it had closed
//     any older one first, as setup does) and has closed every mapping of this rank's
//     memory, or is about to (the Free waits for that last moment).
//   - Until then the state waits in the reaper's list, tried again after every release
//     and on a timer (reapFirst, doubling up to reapMax) while the list is not empty.
//
// A peer that never says so keeps the owner's regions allocated: one that failed a call
// (its mappings closed by hostgroup.Group.fail, not here), one that died, or one whose program
// keeps its World. Nothing is freed or unmapped once the World's job is finalized:
// Finalize closes every Remote and the device releases its arena as a whole, so release
// and the reaper then only forget the state. Requests and the point-to-point scratch are
// plain Go memory and go with the state.

// Bounds of the reaper's timer, and of a release's wait for its fetch-and-adds.
const (
	reapFirst  = time.Millisecond
	reapMax    = time.Second
	detachWait = 10 * time.Second
)

// stateEntry is the argument of a World's cleanup: its key in states and its state,
// neither of which reaches the World.
type stateEntry struct {
	key weak.Pointer[runtime.World]
	s   *state
}

// forget is the cleanup of a World that made collective calls (see above). It runs on the
// runtime's cleanup goroutine and does not block: release, which communicates, runs on a
// goroutine of its own.
func forget(e stateEntry) {
	e.s.track.Close()
	e.s.obs.DropBatch(e.s.bt)
	states.delete(e.key, e.s)
	lastState.CompareAndSwap(e.s, nil)
	if !e.s.comm.Finalized() {
		e.s.dropPush()
	}
	if len(e.s.groups()) > 0 {
		go release(e.s)
	}
}

// eachState calls f for s and then, depth first, its sub-groups' states.
func (s *state) eachState(f func(*state)) {
	f(s)
	if l := s.local; l != nil {
		for _, sub := range []*state{l.leaderS, l.hostS, l.laneS} {
			if sub != nil {
				sub.eachState(f)
			}
		}
	}
}

// groups returns the shared-memory groups of s and of its sub-groups.
func (s *state) groups() []*hostgroup.Group {
	var gs []*hostgroup.Group
	s.eachState(func(s *state) {
		if l := s.local; l != nil {
			for _, g := range []*hostgroup.Group{l.world, l.team, l.heads, l.onHost} {
				if g != nil {
					gs = append(gs, g)
				}
			}
		}
	})
	return gs
}

// release lets go of the peers' scratch of the dropped state s, then frees s's own when
// its peers have let go of it too, now or later (reap). It ends when the fetch-and-adds
// have completed, at most detachWait after it started.
func release(s *state) {
	if s.comm.Finalized() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), detachWait)
	defer cancel()
	for _, g := range s.groups() {
		g.Detach(ctx, s.comm)
	}
	reaper.mu.Lock()
	reaper.pending = append(reaper.pending, s)
	reaper.mu.Unlock()
	if reap() {
		reapLater()
	}
}

// reaper holds the dropped states whose own regions wait for their peers (release).
var reaper struct {
	mu      sync.Mutex
	pending []*state
	armed   bool          // a reapTick is scheduled
	delay   time.Duration // until the next reapTick
}

// reap tries to free the pending states' regions, and reports whether some still wait.
func reap() bool {
	reaper.mu.Lock()
	defer reaper.mu.Unlock()
	keep := reaper.pending[:0]
	for _, s := range reaper.pending {
		done := true
		for _, g := range s.groups() {
			done = g.FreeOwn(s.comm) && done
		}
		if !done {
			keep = append(keep, s)
		}
	}
	clear(reaper.pending[len(keep):])
	reaper.pending = keep
	return len(keep) > 0
}

// reapLater schedules reapTick unless it is scheduled already.
func reapLater() {
	reaper.mu.Lock()
	defer reaper.mu.Unlock()
	if !reaper.armed {
		reaper.armed, reaper.delay = true, reapFirst
		time.AfterFunc(reaper.delay, reapTick)
	}
}

// reapTick runs reap on the timer, and schedules itself again, later each time, while
// some state still waits; it stops when none does.
func reapTick() {
	reap()
	reaper.mu.Lock()
	defer reaper.mu.Unlock()
	if len(reaper.pending) == 0 {
		reaper.armed = false
		return
	}
	reaper.delay = min(2*reaper.delay, reapMax)
	time.AfterFunc(reaper.delay, reapTick)
}
