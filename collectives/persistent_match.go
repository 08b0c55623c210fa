package collectives

import (
	"context"
	"fmt"
	goruntime "runtime"
	"sync"

	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/substrate"
)

// Matching persistent calls by the order of their Init calls (MPI-4).
//
// A World's persistent Requests run on a Dup of it, made by its first Init call (so at
// the same point of every rank's program). Their messages never match those of the
// World's blocking and nonblocking calls, which are numbered in the order they are made.
// Each Request gets its number among the World's Init calls (id) and a state of its own
// on that Dup, with its own queue, worker, scratch and tag sequence. Its k-th Start tags
// its messages (id<<16 + k) and numbers itself id<<12 | k&0xfff in hang reports and
// GORMA_CHECK=1's comparison, the same at every rank whatever the order of the Starts.
// Calls of different Requests progress at once, each on its own worker, so Starts made
// in different orders at different ranks complete (collectives/design.md).

// persistentSet is a World's persistent Requests: the Dup they run on and how many were
// made.
type persistentSet struct {
	mu   sync.Mutex
	comm *runtime.World // the Dup, made by the first Init; nil before
	err  error          // the Dup's error: every later Init fails with it
	made uint32         // Init calls made on the World
}

// Bits of a persistent call's numbers below its Request's id: in its message tags
// (starts before the tags of the next Request's begin) and in its call number (starts
// shown in hang reports; GORMA_CHECK=1's tags keep 25 bits of it).
const (
	persistentTagShift = 16
	persistentSeqShift = 12
)

// newPersistent returns the inactive persistent Request of the collective name on w
// that run makes, with its number among w's Init calls and its own state on w's Dup for
// persistent calls. An Init that cannot have them (nil or freed World, no context left
// for the Dup) returns a Request whose every Start finishes with that error.
func newPersistent(w *runtime.World, name string, run func(ctx context.Context) error) *Request {
	r := newRequest(w, name, true, run)
	if r.initErr != nil {
		return r
	}
	s, _ := stateOf(w) // newRequest made it
	comm, id, err := s.pers.next(w, s.comm)
	if err != nil {
		r.initErr = fmt.Errorf("collectives: %s: rank %d making the World's persistent calls' Dup: %w", name, s.rank, err)
		return r
	}
	own := &state{comm: comm, rank: s.rank, size: s.size, force: s.force, cfgErr: s.cfgErr,
		track: substrate.NewTrack(comm), seq: id << persistentTagShift, obs: s.obs, internal: s.internal, ln: s.obs.NewLocal(), bt: s.obs.NewBatch(), members: s.members}
	r.own, r.id, r.q, r.track = own, id, &own.q, own.track
	r.cleanup = goruntime.AddCleanup(r, retireLater, own)
	return r
}

// next returns the World that w's persistent calls run on (a Dup of comm, w's
// collectives' World, made on first use and freed with w) and the number of this Init
// call among w's, from 1.
func (p *persistentSet) next(w, comm *runtime.World) (*runtime.World, uint32, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.comm == nil && p.err == nil {
		d, err := comm.Dup()
		if err == nil {
			err = substrate.OnFree(w, func() { _ = d.Free() })
		}
		p.comm, p.err = d, err
	}
	if p.err != nil {
		return nil, 0, p.err
	}
	p.made++
	return p.comm, p.made, nil
}

// retire lets go of the state of a persistent Request that was freed: its hang-report
// Track and its scratch, as forget does for a World's state. But releasing the
// shared-memory groups before it returns (their regions are freed once every peer has
// let go of them too: reap).
func retire(s *state) {
	s.track.Close()
	s.obs.DropBatch(s.bt)
	if !s.comm.Finalized() {
		s.dropPush()
	}
	if len(s.groups()) > 0 {
		release(s)
	}
}

// retireLater is the cleanup of a persistent Request dropped unfreed: retire, on a
// goroutine of its own, as the cleanup goroutine must not wait on peers.
func retireLater(s *state) { go retire(s) }
