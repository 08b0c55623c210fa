package main

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/window"
)

// lockCounter: every rank increments a counter at rank 0 o.rounds times with Get, Flush
// and Put under Lock(Exclusive): the final count is exact only if the lock excludes.
func lockCounter(ctx context.Context, w *runtime.World, o opts) error {
	win, err := window.Allocate[int64](ctx, w, 1)
	if err != nil {
		return err
	}
	v := []int64{0}
	for range o.rounds {
		if err := win.Lock(ctx, window.Exclusive, 0, 0); err != nil {
			return err
		}
		if err := win.Get(v, 0, 0); err != nil {
			return err
		}
		if err := win.Flush(ctx, 0); err != nil {
			return err
		}
		v[0]++
		if err := win.Put(v, 0, 0); err != nil {
			return err
		}
		if err := win.Unlock(ctx, 0); err != nil {
			return err
		}
	}
	if err := runtime.Barrier(ctx, w); err != nil {
		return err
	}
	if err := expectAt(ctx, win, 0, 0, []int64{int64(w.Size() * o.rounds)}); err != nil {
		return err
	}
	return win.Free(ctx)
}

// expectAt reads want's length of elements at rank's disp under a shared lock and compares.
func expectAt(ctx context.Context, win *window.Win[int64], rank, disp int, want []int64) error {
	got := make([]int64, len(want))
	if err := win.Lock(ctx, window.Shared, rank, 0); err != nil {
		return err
	}
	if err := win.Get(got, rank, disp); err != nil {
		return err
	}
	if err := win.Unlock(ctx, rank); err != nil {
		return err
	}
	return equal(fmt.Sprintf("rank %d at %d", rank, disp), got, want)
}

// equal returns an error naming the first element where got and want differ.
func equal[T comparable](what string, got, want []T) error {
	for i := range want {
		if got[i] != want[i] {
			return fmt.Errorf("%s: element %d is %v, want %v", what, i, got[i], want[i])
		}
	}
	return nil
}

const blk = 16

// fenceAllToAll: in each round every rank puts a block into its slot of every rank's
// window, a Fence completes them, every rank checks every slot. Then every rank Gets a
// slot of its successor and checks it after the next Fence.
func fenceAllToAll(ctx context.Context, w *runtime.World, o opts) error {
	me, size := w.Rank(), w.Size()
	win, err := window.Allocate[int64](ctx, w, size*blk)
	if err != nil {
		return err
	}
	src, got, want := make([]int64, blk), make([]int64, blk), make([]int64, blk)
	for k := range min(o.rounds, 20) {
		if err := win.Fence(ctx, 0); err != nil {
			return err
		}
		for i := range src {
			src[i] = pattern(me, i, k)
		}
		for t := range size {
			if err := win.Put(src, t, me*blk); err != nil {
				return err
			}
		}
		if err := win.Fence(ctx, 0); err != nil {
			return err
		}
		loc := win.Local()
		for r := range size {
			for i := range want {
				want[i] = pattern(r, i, k)
			}
			if err := equal(fmt.Sprintf("round %d, slot of rank %d", k, r), loc[r*blk:(r+1)*blk], want); err != nil {
				return err
			}
		}
		next, third := (me+1)%size, (me+2)%size
		if err := win.Get(got, next, third*blk); err != nil {
			return err
		}
		if err := win.Fence(ctx, window.NoPut); err != nil {
			return err
		}
		for i := range want {
			want[i] = pattern(third, i, k)
		}
		if err := equal(fmt.Sprintf("round %d, Get of rank %d's slot %d", k, next, third), got, want); err != nil {
			return err
		}
	}
	if err := win.Fence(ctx, window.NoSucceed); err != nil {
		return err
	}
	return win.Free(ctx)
}

// passive: rank 0 stores a pattern, then computes for o.busy without calling the runtime;
// the other ranks Lock(Shared)+Get+Unlock its memory three times each, check the values
// and send the time their Gets completed. Rank 0 checks that every origin completed before
// it finished computing: passive-target operations need no code of the target.
func passive(ctx context.Context, w *runtime.World, o opts) error {
	const n, gets, tag = 64, 3, 91
	win, err := window.Allocate[int64](ctx, w, n)
	if err != nil {
		return err
	}
	want := make([]int64, n)
	for i := range want {
		want[i] = pattern(0, i, 7)
	}
	if w.Rank() == 0 {
		copy(win.Local(), want)
		if err := win.Sync(ctx); err != nil {
			return err
		}
	}
	if err := runtime.Barrier(ctx, w); err != nil {
		return err
	}
	if w.Rank() == 0 {
		sink.Store(spin(o.busy))
		finished := time.Now()
		done := []int64{0}
		for r := 1; r < w.Size(); r++ {
			if _, err := runtime.Recv(ctx, w, done, r, tag); err != nil {
				return err
			}
			if t := time.Unix(0, done[0]); !t.Before(finished) {
				return fmt.Errorf("rank %d's Lock+Get+Unlock completed %v after rank 0 finished computing for %v: the target's code had to run",
					r, t.Sub(finished), o.busy)
			}
		}
		return win.Free(ctx)
	}
	got := make([]int64, n)
	for range gets {
		clear(got)
		if err := win.Lock(ctx, window.Shared, 0, 0); err != nil {
			return err
		}
		if err := win.Get(got, 0, 0); err != nil {
			return err
		}
		if err := win.Unlock(ctx, 0); err != nil {
			return err
		}
		if err := equal("Get from the computing rank 0", got, want); err != nil {
			return err
		}
	}
	if err := runtime.Send(ctx, w, []int64{time.Now().UnixNano()}, 0, tag); err != nil {
		return err
	}
	return win.Free(ctx)
}

// sink keeps spin's result alive.
var sink atomic.Uint64

// spin computes for d without calling the runtime (time.Now is a vDSO read).
func spin(d time.Duration) uint64 {
	end := time.Now().Add(d)
	x := uint64(1)
	for time.Now().Before(end) {
		for range 1000 {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
	return x
}
