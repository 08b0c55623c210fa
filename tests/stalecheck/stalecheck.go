package stalecheck

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/gorma-hpc/gorma/collectives"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/window"
)

// Options shape a run. Zero values take the defaults.
type Options struct {
	Rounds   int   // operations per rank (default 300)
	Elems    int   // counters per rank (default 2048: 4 pages of 4 KiB)
	Hot      int   // the elements the operations pick from, per rank (default 24: reuse)
	Seed     int64 // per-rank streams derive from it (default 1)
	PageSize int   // window page size (default 4096)
	NoCache  bool
}

// Result are one rank's counts.
type Result struct {
	Ops, Gets, StaleReads int
	Cache                 window.CacheStats
}

const tagNote = 7

// note says: element Elem of rank Rank is at least Min (a write that made it so has
// completed).
type note [3]int64

// Run runs the checker at this rank: collective over w. It returns an error naming the
// first stale read or lost increment, with the counts.
func Run(ctx context.Context, w *runtime.World, o Options) (Result, error) {
	if o.Rounds == 0 {
		o.Rounds = 300
	}
	if o.Elems == 0 {
		o.Elems = 2048
	}
	if o.Hot == 0 {
		o.Hot = 24
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
	if o.PageSize == 0 {
		o.PageSize = 4096
	}
	opts := []window.Option{window.PageSize(o.PageSize)}
	if o.NoCache {
		opts = append(opts, window.NoCache())
	}
	win, err := window.Allocate[int64](ctx, w, o.Elems, opts...)
	if err != nil {
		return Result{}, err
	}
	me, size := w.Rank(), w.Size()
	rng := rand.New(rand.NewPCG(uint64(o.Seed), uint64(me)))
	hot := make([]int, o.Hot)
	for i := range hot {
		hot[i] = (i * 97 * 8) % o.Elems // spread over the pages
	}
	bound := make([][]int64, size) // what this rank knows of each element
	for r := range bound {
		bound[r] = make([]int64, o.Elems)
	}
	incs := make([][]int64, size) // increments this rank made, by rank and element
	for r := range incs {
		incs[r] = make([]int64, o.Elems)
	}
	var res Result
	var first error
	stale := func(r, e int, got int64, how string) {
		if got < bound[r][e] {
			res.StaleReads++
			if first == nil {
				first = fmt.Errorf("rank %d: stale read (%s) of rank %d element %d: %d, but %d is known complete", me, how, r, e, got, bound[r][e])
			}
		}
		bound[r][e] = max(bound[r][e], got)
	}
	notes := make([]note, 0, 16)
	nbuf := make([]int64, 3)
	recvNotes := func() error {
		for {
			ok, _, err := runtime.Iprobe(w, runtime.AnySource, tagNote)
			if err != nil || !ok {
				return err
			}
			if _, err := runtime.Recv(ctx, w, nbuf, runtime.AnySource, tagNote); err != nil {
				return err
			}
			r, e := int(nbuf[0]), int(nbuf[1])
			bound[r][e] = max(bound[r][e], nbuf[2])
		}
	}
	one := make([]int64, 1)
	sum := collectives.Sum[int64]()
	for k := 0; k < o.Rounds && first == nil; k++ {
		if err := recvNotes(); err != nil {
			return res, err
		}
		t := rng.IntN(size)
		e := hot[rng.IntN(len(hot))]
		res.Ops++
		switch c := rng.IntN(10); {
		case c < 5: // a read under a shared lock
			if err := win.Lock(ctx, window.Shared, t, 0); err != nil {
				return res, err
			}
			if err := win.Get(one, t, e); err != nil {
				return res, err
			}
			if err := win.Unlock(ctx, t); err != nil {
				return res, err
			}
			res.Gets++
			stale(t, e, one[0], "get")
		case c < 7: // increment: Get + Put under the exclusive lock
			if t == me {
				// own element: a store to Local, published by Sync (owner store)
				if err := win.Lock(ctx, window.Exclusive, me, 0); err != nil {
					return res, err
				}
				win.Local()[e]++
				incs[me][e]++
				v := win.Local()[e]
				if err := win.Unlock(ctx, me); err != nil { // Unlock of self publishes
					return res, err
				}
				stale(t, e, v, "own")
				notes = append(notes, note{int64(t), int64(e), v})
				break
			}
			if err := win.Lock(ctx, window.Exclusive, t, 0); err != nil {
				return res, err
			}
			if err := win.Get(one, t, e); err != nil {
				return res, err
			}
			if err := win.Flush(ctx, t); err != nil {
				return res, err
			}
			res.Gets++
			stale(t, e, one[0], "locked get")
			one[0]++
			v := one[0]
			if err := win.Put(one, t, e); err != nil {
				return res, err
			}
			if err := win.Unlock(ctx, t); err != nil {
				return res, err
			}
			incs[t][e]++
			bound[t][e] = max(bound[t][e], v)
			notes = append(notes, note{int64(t), int64(e), v})
		default: // Accumulate 1 (atomic with the locked increments: both take the target's words)
			if err := win.Lock(ctx, window.Shared, t, 0); err != nil {
				return res, err
			}
			old := int64(0)
			if err := win.FetchAndOp(1, &old, t, e, sum); err != nil {
				return res, err
			}
			if err := win.Unlock(ctx, t); err != nil {
				return res, err
			}
			incs[t][e]++
			stale(t, e, old, "fetch-and-op")
			bound[t][e] = max(bound[t][e], old+1)
			notes = append(notes, note{int64(t), int64(e), old + 1})
		}
		// Tell a random rank what completed (a message after Unlock returned).
		if len(notes) > 0 && size > 1 {
			to := rng.IntN(size)
			if to != me {
				n := notes[len(notes)-1]
				if err := runtime.Send(ctx, w, n[:], to, tagNote); err != nil {
					return res, err
				}
			}
			notes = notes[:0]
		}
	}
	if err := runtime.Barrier(ctx, w); err != nil {
		return res, err
	}
	if err := recvNotes(); err != nil {
		return res, err
	}
	// Count the increments: every rank's total per element, summed at every rank.
	if err := win.Fence(ctx, 0); err != nil {
		return res, err
	}
	res.Cache = win.CacheStats()
	if err := checkTotals(ctx, w, win.Local(), incs); err != nil && first == nil {
		first = err
	}
	if err := win.Fence(ctx, window.NoSucceed); err != nil {
		return res, err
	}
	if err := win.Free(ctx); err != nil {
		return res, err
	}
	if first != nil {
		return res, first
	}
	return res, nil
}

// checkTotals sends every rank the increments this rank made to its elements and checks
// that this rank's elements equal the sum of everyone's increments (no lost update).
func checkTotals(ctx context.Context, w *runtime.World, local []int64, incs [][]int64) error {
	me, size := w.Rank(), w.Size()
	var reqs []*runtime.Request
	for r := range size {
		if r == me {
			continue
		}
		q, err := runtime.Isend(w, incs[r], r, tagNote+1)
		if err != nil {
			return err
		}
		reqs = append(reqs, q)
	}
	total := append([]int64(nil), incs[me]...)
	buf := make([]int64, len(total))
	for r := range size {
		if r == me {
			continue
		}
		if _, err := runtime.Recv(ctx, w, buf, r, tagNote+1); err != nil {
			return err
		}
		for i, v := range buf {
			total[i] += v
		}
	}
	for _, q := range reqs {
		if _, err := q.Wait(ctx); err != nil {
			return err
		}
	}
	for i, v := range local {
		if v != total[i] {
			return fmt.Errorf("rank %d: element %d is %d after %d increments: an update was lost", me, i, v, total[i])
		}
	}
	return nil
}
