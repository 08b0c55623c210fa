package main

import (
	"context"
	"fmt"
	"slices"

	"github.com/gorma-hpc/gorma/collectives"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/window"
)

// accumulateAll: every rank accumulates rank+1 (int64) and (rank+1)/2 (float64, exact in
// binary) into the same blk elements of rank 0, o.rounds times, flushing every other
// round; the sums are exact.
func accumulateAll(ctx context.Context, w *runtime.World, o opts) error {
	me, size := w.Rank(), w.Size()
	iw, err := window.Allocate[int64](ctx, w, blk)
	if err != nil {
		return err
	}
	fw, err := window.Allocate[float64](ctx, w, blk)
	if err != nil {
		return err
	}
	isrc, fsrc := make([]int64, blk), make([]float64, blk)
	for i := range isrc {
		isrc[i], fsrc[i] = int64(me+1), float64(me+1)/2
	}
	if err := iw.LockAll(ctx, 0); err != nil {
		return err
	}
	if err := fw.LockAll(ctx, 0); err != nil {
		return err
	}
	for k := range o.rounds {
		if err := iw.Accumulate(isrc, 0, 0, collectives.Sum[int64]()); err != nil {
			return err
		}
		if err := fw.Accumulate(fsrc, 0, 0, collectives.Sum[float64]()); err != nil {
			return err
		}
		if k%2 == 1 {
			if err := iw.Flush(ctx, 0); err != nil {
				return err
			}
		}
	}
	if err := iw.UnlockAll(ctx); err != nil {
		return err
	}
	if err := fw.UnlockAll(ctx); err != nil {
		return err
	}
	if err := runtime.Barrier(ctx, w); err != nil {
		return err
	}
	total := int64(o.rounds * size * (size + 1) / 2)
	want := make([]int64, blk)
	for i := range want {
		want[i] = total
	}
	if err := expectAt(ctx, iw, 0, 0, want); err != nil {
		return fmt.Errorf("int64 sums: %w", err)
	}
	got, fwant := make([]float64, blk), make([]float64, blk)
	for i := range fwant {
		fwant[i] = float64(total) / 2
	}
	if err := fw.Lock(ctx, window.Shared, 0, 0); err != nil {
		return err
	}
	if err := fw.Get(got, 0, 0); err != nil {
		return err
	}
	if err := fw.Unlock(ctx, 0); err != nil {
		return err
	}
	if err := equal("float64 sums at rank 0", got, fwant); err != nil {
		return err
	}
	if err := iw.Free(ctx); err != nil {
		return err
	}
	return fw.Free(ctx)
}

// fopAcc: even ranks FetchAndOp(sum, 1), odd ranks Accumulate(sum, 1), on one counter at
// rank 0, o.rounds times each. The final count is exact, and the values fetched (gathered
// at every rank) are all different, each below the final count, and increasing per rank.
func fopAcc(ctx context.Context, w *runtime.World, o opts) error {
	me, size := w.Rank(), w.Size()
	win, err := window.Allocate[int64](ctx, w, 1)
	if err != nil {
		return err
	}
	fetched := make([]int64, o.rounds)
	if err := win.LockAll(ctx, 0); err != nil {
		return err
	}
	one := []int64{1}
	for k := range o.rounds {
		if me%2 == 0 {
			err = win.FetchAndOp(1, &fetched[k], 0, 0, collectives.Sum[int64]())
		} else {
			fetched[k] = -1
			err = win.Accumulate(one, 0, 0, collectives.Sum[int64]())
		}
		if err == nil {
			err = win.Flush(ctx, 0)
		}
		if err != nil {
			return err
		}
		if k > 0 && me%2 == 0 && fetched[k] <= fetched[k-1] {
			return fmt.Errorf("FetchAndOp %d fetched %d after %d: the counter went back", k, fetched[k], fetched[k-1])
		}
	}
	if err := win.UnlockAll(ctx); err != nil {
		return err
	}
	all, err := gatherInt64(ctx, w, fetched)
	if err != nil {
		return err
	}
	total := int64(size * o.rounds)
	var seen []int64
	for _, v := range all {
		if v >= 0 {
			if v >= total {
				return fmt.Errorf("a FetchAndOp fetched %d, beyond the final count %d", v, total)
			}
			seen = append(seen, v)
		}
	}
	slices.Sort(seen)
	for i := 1; i < len(seen); i++ {
		if seen[i] == seen[i-1] {
			return fmt.Errorf("two FetchAndOps fetched %d: not atomic", seen[i])
		}
	}
	if err := expectAt(ctx, win, 0, 0, []int64{total}); err != nil {
		return err
	}
	return win.Free(ctx)
}

// casMutex: a mutex at element 0 of rank 0 (0 free, rank+1 held), taken and released by
// CompareAndSwap, guards a counter at element 1 that every rank increments o.rounds times
// with Get + Flush + Put + Flush inside one LockAll epoch. The count is exact, and every
// release finds the mutex still held by the releasing rank.
func casMutex(ctx context.Context, w *runtime.World, o opts) error {
	me, size := w.Rank(), w.Size()
	win, err := window.Allocate[int64](ctx, w, 2)
	if err != nil {
		return err
	}
	if err := win.LockAll(ctx, 0); err != nil {
		return err
	}
	mine, v := int64(me+1), []int64{0}
	var res int64
	for k := range o.rounds {
		for spins := 0; ; spins++ {
			if err := win.CompareAndSwap(mine, 0, &res, 0, 0); err != nil {
				return err
			}
			if err := win.Flush(ctx, 0); err != nil {
				return err
			}
			if res == 0 {
				break
			}
			if res < 1 || res > int64(size) || res == mine {
				return fmt.Errorf("round %d: the mutex holds %d (want 0 or another rank's id)", k, res)
			}
		}
		if err := win.Get(v, 0, 1); err != nil {
			return err
		}
		if err := win.Flush(ctx, 0); err != nil {
			return err
		}
		v[0]++
		if err := win.Put(v, 0, 1); err != nil {
			return err
		}
		if err := win.Flush(ctx, 0); err != nil {
			return err
		}
		if err := win.CompareAndSwap(0, mine, &res, 0, 0); err != nil {
			return err
		}
		if err := win.Flush(ctx, 0); err != nil {
			return err
		}
		if res != mine {
			return fmt.Errorf("round %d: releasing, the mutex held %d instead of this rank's %d", k, res, mine)
		}
	}
	if err := win.UnlockAll(ctx); err != nil {
		return err
	}
	if err := runtime.Barrier(ctx, w); err != nil {
		return err
	}
	if err := expectAt(ctx, win, 0, 0, []int64{0, int64(size * o.rounds)}); err != nil {
		return err
	}
	return win.Free(ctx)
}

// requests: in one LockAll epoch each rank Rputs a block into its successor (only it writes
// there) and Rgets it back, Raccumulates 1 into a counter at rank 0, and after a barrier
// RgetAccumulates 1 into it. Each fetch sees every Raccumulate and is distinct, the total is 2
// per rank.
func requests(ctx context.Context, w *runtime.World, o opts) error {
	me, size := w.Rank(), w.Size()
	next := (me + 1) % size
	win, err := window.Allocate[int64](ctx, w, blk+1)
	if err != nil {
		return err
	}
	if err := win.LockAll(ctx, 0); err != nil {
		return err
	}
	src, got := make([]int64, blk), make([]int64, blk)
	for k := range min(o.rounds, 20) {
		for i := range src {
			src[i] = pattern(me, i, k)
		}
		r, err := win.Rput(src, next, 0)
		if err != nil {
			return err
		}
		if err := r.Wait(ctx); err != nil {
			return err
		}
		clear(got)
		if r, err = win.Rget(got, next, 0); err != nil {
			return err
		}
		if err := r.Wait(ctx); err != nil {
			return err
		}
		if err := equal(fmt.Sprintf("round %d: Rget of the block this rank Rput to rank %d", k, next), got, src); err != nil {
			return err
		}
	}
	one := []int64{1}
	r, err := win.Raccumulate(one, 0, blk, collectives.Sum[int64]())
	if err != nil {
		return err
	}
	if err := r.Wait(ctx); err != nil {
		return err
	}
	if err := runtime.Barrier(ctx, w); err != nil {
		return err
	}
	old := []int64{-1}
	if r, err = win.RgetAccumulate(one, old, 0, blk, collectives.Sum[int64]()); err != nil {
		return err
	}
	if err := r.Wait(ctx); err != nil {
		return err
	}
	if old[0] < int64(size) || old[0] >= int64(2*size) {
		return fmt.Errorf("RgetAccumulate fetched %d: want %d Raccumulates seen and at most %d RgetAccumulates", old[0], size, size-1)
	}
	if err := win.UnlockAll(ctx); err != nil {
		return err
	}
	all, err := gatherInt64(ctx, w, old)
	if err != nil {
		return err
	}
	slices.Sort(all)
	for i := 1; i < len(all); i++ {
		if all[i] == all[i-1] {
			return fmt.Errorf("two RgetAccumulates fetched %d: not atomic", all[i])
		}
	}
	if err := expectAt(ctx, win, 0, blk, []int64{int64(2 * size)}); err != nil {
		return err
	}
	return win.Free(ctx)
}
