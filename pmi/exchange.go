package pmi

import (
	"context"
	"fmt"
	"slices"
	"sync"
)

// AnyRank as the rank of a Get asks for the job's value of key, whichever rank put it:
// PMI-1's key-value space is job-wide, its get names no rank.
const AnyRank = -1

// Exchange is a job-wide put/fence/get store for Handlers whose ranks are all local (a
// one-host job, and tests), or for an agent of a job on several hosts, which learns from
// elsewhere when a round completes (Complete). Fence blocks until the current round
// completes: every rank not excluded (Exclude) has fenced in it, or Complete says the
// whole job has. Then every put of the round becomes visible to Get. Values are kept per rank (gorma's Get names the rank) and
// indexed by key for [AnyRank] (PMI-1's get does not): of the ranks that put a key in
// one round the lowest wins. A later round's put replaces an earlier round's. So every
// agent that merged the same rounds answers the same. It is safe for concurrent use.
type Exchange struct {
	size int

	mu      sync.Mutex
	pending map[int]map[string][]byte // this round's puts, by rank
	fenced  map[int]bool              // ranks fenced this round
	store   map[int]map[string][]byte // everything published by completed rounds
	owner   map[string]int            // key -> the rank whose value a Get of AnyRank returns
	gone    map[int]bool              // ranks excluded from every round (Exclude)
	rounds  int                       // rounds completed
	round   chan struct{}             // closed when the current round completes
	err     error
}

// NewExchange returns an Exchange for size ranks.
func NewExchange(size int) *Exchange {
	return &Exchange{
		size:    size,
		pending: make(map[int]map[string][]byte),
		fenced:  make(map[int]bool),
		store:   make(map[int]map[string][]byte),
		owner:   make(map[string]int),
		gone:    make(map[int]bool),
		round:   make(chan struct{}),
	}
}

// Fence records puts of rank and blocks until every rank not excluded fenced this round,
// ctx ends, or the exchange is failed.
func (x *Exchange) Fence(ctx context.Context, rank int, puts map[string][]byte) error {
	return x.FenceThen(ctx, rank, puts, nil)
}

// FenceThen is Fence that calls then (when not nil) once the fence is recorded, before
// it waits, with the number of the round the fence is in (counting from 1). An agent
// tells the submitter of the fence there, so that the round's completion (Complete)
// cannot come before the fence it counts. An error from then ends the fence with that
// error.
func (x *Exchange) FenceThen(ctx context.Context, rank int, puts map[string][]byte, then func(round int) error) error {
	x.mu.Lock()
	if x.err != nil {
		x.mu.Unlock()
		return x.err
	}
	if rank < 0 || rank >= x.size {
		x.mu.Unlock()
		return fmt.Errorf("pmi: fence by rank %d of a %d-rank job", rank, x.size)
	}
	if x.fenced[rank] {
		x.mu.Unlock()
		return fmt.Errorf("pmi: rank %d fenced twice in one round", rank)
	}
	if x.gone[rank] {
		x.mu.Unlock()
		return fmt.Errorf("pmi: rank %d fenced after it was reported failed", rank)
	}
	round, n := x.round, x.rounds+1 // before completeLocked, which may replace them
	x.addLocked(rank, puts)
	x.completeLocked()
	x.mu.Unlock()
	if then != nil {
		if err := then(n); err != nil {
			return err
		}
	}
	select {
	case <-round:
		x.mu.Lock()
		defer x.mu.Unlock()
		return x.err
	case <-ctx.Done():
		return fmt.Errorf("pmi: fence: %w (waiting for %d more ranks)", ctx.Err(), x.missing())
	}
}

func (x *Exchange) missing() int {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.missingLocked()
}

// missingLocked is how many ranks the current round still waits for: those neither
// fenced nor excluded.
func (x *Exchange) missingLocked() int {
	n := x.size - len(x.fenced)
	for r := range x.gone {
		if !x.fenced[r] {
			n--
		}
	}
	return n
}

func (x *Exchange) addLocked(rank int, puts map[string][]byte) {
	x.fenced[rank] = true
	if len(puts) > 0 {
		p := x.pending[rank]
		if p == nil {
			p = make(map[string][]byte, len(puts))
			x.pending[rank] = p
		}
		for k, v := range puts {
			p[k] = v
		}
	}
}

// completeLocked publishes the current round once no rank is missing from it. A round
// no rank fenced in stays open, whatever was excluded.
func (x *Exchange) completeLocked() {
	if len(x.fenced) == 0 || x.missingLocked() > 0 {
		return
	}
	x.publishLocked()
}

// publishLocked ends the current round: its puts become visible, and its fences return.
func (x *Exchange) publishLocked() {
	ranks := make([]int, 0, len(x.pending))
	for r := range x.pending {
		ranks = append(ranks, r)
	}
	slices.Sort(ranks)
	for _, r := range slices.Backward(ranks) { // the lowest rank's key last: it owns the key
		p := x.pending[r]
		s := x.store[r]
		if s == nil {
			x.store[r] = p // the round's map becomes the store's: pending is made anew below
		}
		for k, v := range p {
			if s != nil {
				s[k] = v
			}
			x.owner[k] = r
		}
	}
	x.pending = make(map[int]map[string][]byte)
	x.fenced = make(map[int]bool)
	x.rounds++
	close(x.round)
	x.round = make(chan struct{})
}

// Merge adds the puts of ranks fenced elsewhere (another host) to the current round, as
// if those ranks had fenced here; the round completes once none is missing. The Exchange
// keeps the maps of puts: the caller must not change them afterwards.
func (x *Exchange) Merge(puts map[int]map[string][]byte) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.err != nil {
		return
	}
	x.mergeLocked(puts)
	x.completeLocked()
}

// mergeLocked adds the puts of ranks fenced elsewhere. A rank with no puts of its own
// this round keeps its map from puts, not a copy.
func (x *Exchange) mergeLocked(puts map[int]map[string][]byte) {
	for r, p := range puts {
		if r < 0 || r >= x.size || x.fenced[r] {
			continue
		}
		if _, ok := x.pending[r]; ok || len(p) == 0 {
			x.addLocked(r, p)
			continue
		}
		x.fenced[r] = true
		x.pending[r] = p
	}
}

// Complete ends round, the job's round-th (counting from 1), whatever fenced here: every
// rank of the job fenced in it, elsewhere or here. puts are the round's values that other
// hosts gathered (ranks fenced here keep their own). A round completed already (here,
// by its count) is not completed again, and a later round number makes this Exchange
// count as having completed every round before it (an agent that joined the job late).
// The Exchange keeps the maps of puts: the caller must not change them afterwards.
func (x *Exchange) Complete(round int, puts map[int]map[string][]byte) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.err != nil || round <= x.rounds {
		return
	}
	x.mergeLocked(puts)
	x.rounds = round - 1
	x.publishLocked()
}

// Rounds returns the number of rounds completed.
func (x *Exchange) Rounds() int {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.rounds
}

// Held returns the values of ranks as of the end of round: those of completed rounds
// and, when round is the current one, this round's puts so far. The owner of ranks
// answers another host's question with it. ok is false when round is neither completed
// nor current.
func (x *Exchange) Held(ranks []int, round int) (puts map[int]map[string][]byte, ok bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if round > x.rounds+1 {
		return nil, false
	}
	puts = make(map[int]map[string][]byte, len(ranks))
	for _, r := range ranks {
		p := make(map[string][]byte, len(x.store[r])+len(x.pending[r]))
		for k, v := range x.store[r] {
			p[k] = v
		}
		if round == x.rounds+1 {
			for k, v := range x.pending[r] {
				p[k] = v
			}
		}
		puts[r] = p
	}
	return puts, true
}

// Exclude takes rank out of the current round and every later one: they complete without
// it (it failed, and the job goes on: golaunch --ft). A round waiting only for rank
// completes now. Puts rank published in completed rounds stay readable, and so do those
// of a round it fenced in before it failed. A later Fence by rank fails. Excluding a rank
// twice does nothing.
func (x *Exchange) Exclude(rank int) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if rank < 0 || rank >= x.size || x.gone[rank] || x.err != nil {
		return
	}
	x.gone[rank] = true
	x.completeLocked()
}

// Grow makes the job size ranks (never fewer than it has): ranks spawned into the job
// (Spawner) take part in later rounds.
func (x *Exchange) Grow(size int) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.size = max(x.size, size)
}

// Publish adds puts of ranks to the store at once, outside any round, as a completed
// round would: the cards of ranks spawned into the job, which fenced with their group
// only. A key's owner for AnyRank stays the lowest rank that put it.
func (x *Exchange) Publish(puts map[int]map[string][]byte) {
	x.mu.Lock()
	defer x.mu.Unlock()
	for r, p := range puts {
		s := x.store[r]
		if s == nil {
			s = make(map[string][]byte, len(p))
			x.store[r] = s
		}
		for k, v := range p {
			s[k] = v
			if o, ok := x.owner[k]; !ok || r < o {
				x.owner[k] = r
			}
		}
	}
}

// Snapshot returns a copy of the tables of everything completed rounds and Publish
// stored, by rank (the values are shared: nothing writes into them): what an agent that
// joins the job later needs to answer its ranks' Gets (Publish).
func (x *Exchange) Snapshot() map[int]map[string][]byte {
	x.mu.Lock()
	defer x.mu.Unlock()
	out := make(map[int]map[string][]byte, len(x.store))
	for r, s := range x.store {
		c := make(map[string][]byte, len(s))
		for k, v := range s {
			c[k] = v
		}
		out[r] = c
	}
	return out
}

// Get returns a value from the last completed round, put by rank, or by any rank for
// [AnyRank].
func (x *Exchange) Get(rank int, key string) ([]byte, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if rank == AnyRank {
		r, ok := x.owner[key]
		if !ok {
			return nil, fmt.Errorf("%w: key %q (no rank put it, or not fenced yet)", ErrNotFound, key)
		}
		rank = r
	}
	v, ok := x.store[rank][key]
	if !ok {
		return nil, fmt.Errorf("%w: rank %d key %q (not put, or not fenced yet)", ErrNotFound, rank, key)
	}
	return v, nil
}

// Fail makes current and later Fences return err (the job is aborting).
func (x *Exchange) Fail(err error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.err != nil {
		return
	}
	x.err = fmt.Errorf("%w: %v", ErrAborted, err)
	close(x.round)
	x.round = make(chan struct{})
}
