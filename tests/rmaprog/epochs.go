package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/window"
)

// pscwRing: in each round every rank exposes its memory to its predecessor (Post), opens
// an access epoch to its successor (Start), puts a block there, and closes both epochs
// (Complete, Wait), then checks the block its predecessor put. Then a star: rank 0
// exposes to all, every other rank puts into its own slot of rank 0's memory.
func pscwRing(ctx context.Context, w *runtime.World, o opts) error {
	me, size := w.Rank(), w.Size()
	next, prev := (me+1)%size, (me+size-1)%size
	win, err := window.Allocate[int64](ctx, w, size*blk)
	if err != nil {
		return err
	}
	src, want := make([]int64, blk), make([]int64, blk)
	for k := range min(o.rounds, 20) {
		for i := range src {
			src[i], want[i] = pattern(me, i, k), pattern(prev, i, k)
		}
		if err := win.Post(ctx, []int{prev}, 0); err != nil {
			return err
		}
		if err := win.Start(ctx, []int{next}, 0); err != nil {
			return err
		}
		if err := win.Put(src, next, 0); err != nil {
			return err
		}
		if err := win.Complete(ctx); err != nil {
			return err
		}
		if err := win.Wait(ctx); err != nil {
			return err
		}
		if err := equal(fmt.Sprintf("ring round %d: block from rank %d", k, prev), win.Local()[:blk], want); err != nil {
			return err
		}
	}
	// The star.
	if me == 0 {
		others := make([]int, 0, size-1)
		for r := 1; r < size; r++ {
			others = append(others, r)
		}
		if err := win.Post(ctx, others, 0); err != nil {
			return err
		}
		if err := win.Wait(ctx); err != nil {
			return err
		}
		for r := 1; r < size; r++ {
			for i := range want {
				want[i] = pattern(r, i, 99)
			}
			if err := equal(fmt.Sprintf("star: slot of rank %d", r), win.Local()[r*blk:(r+1)*blk], want); err != nil {
				return err
			}
		}
	} else {
		for i := range src {
			src[i] = pattern(me, i, 99)
		}
		if err := win.Start(ctx, []int{0}, 0); err != nil {
			return err
		}
		if err := win.Put(src, 0, me*blk); err != nil {
			return err
		}
		if err := win.Complete(ctx); err != nil {
			return err
		}
	}
	return win.Free(ctx)
}

// dynamic: every rank attaches two buffers to a dynamic window and tells the others
// their bases. In Fence epochs every rank puts into both buffers of its successor and
// gets one back. Then every rank detaches its first buffer, and an access to it from its
// predecessor must fail while the second buffer still works.
func dynamic(ctx context.Context, w *runtime.World, o opts) error {
	me, size := w.Rank(), w.Size()
	next, prev := (me+1)%size, (me+size-1)%size
	win, err := window.CreateDynamic[int64](ctx, w)
	if err != nil {
		return err
	}
	bufs := [2][]int64{make([]int64, blk), make([]int64, 2*blk)}
	var bases [2]int64
	for j, b := range bufs {
		base, err := win.Attach(ctx, b)
		if err != nil {
			return err
		}
		bases[j] = int64(base)
	}
	all, err := gatherInt64(ctx, w, bases[:])
	if err != nil {
		return err
	}
	nb := all[2*next : 2*next+2] // the successor's bases
	src, got, want := make([]int64, blk), make([]int64, blk), make([]int64, blk)
	for k := range min(o.rounds, 10) {
		for i := range src {
			src[i], want[i] = pattern(me, i, k), pattern(prev, i, k)
		}
		if err := win.Fence(ctx, 0); err != nil {
			return err
		}
		if err := win.Put(src, next, int(nb[0])); err != nil {
			return err
		}
		if err := win.Put(src, next, int(nb[1])+blk); err != nil {
			return err
		}
		if err := win.Fence(ctx, 0); err != nil {
			return err
		}
		if err := equal(fmt.Sprintf("round %d: first buffer", k), bufs[0], want); err != nil {
			return err
		}
		if err := equal(fmt.Sprintf("round %d: second buffer", k), bufs[1][blk:], want); err != nil {
			return err
		}
		if err := win.Get(got, next, int(nb[1])+blk); err != nil {
			return err
		}
		if err := win.Fence(ctx, window.NoSucceed); err != nil {
			return err
		}
		if err := equal(fmt.Sprintf("round %d: Get from rank %d's second buffer", k, next), got, src); err != nil {
			return err
		}
	}
	if err := win.Detach(ctx, int(bases[0])); err != nil {
		return err
	}
	if err := runtime.Barrier(ctx, w); err != nil {
		return err
	}
	if err := win.Lock(ctx, window.Shared, next, 0); err != nil {
		return err
	}
	perr := win.Put(src, next, int(nb[0]))
	if perr == nil {
		perr = win.Flush(ctx, next)
	}
	if perr == nil {
		return fmt.Errorf("a Put to rank %d's detached buffer succeeded", next)
	}
	if !errors.Is(perr, window.ErrRange) {
		return fmt.Errorf("a Put to rank %d's detached buffer: %w (want ErrRange)", next, perr)
	}
	if err := win.Get(got, next, int(nb[1])+blk); err != nil {
		return fmt.Errorf("a Get from the still attached buffer after the other's Detach: %w", err)
	}
	if err := win.Unlock(ctx, next); err != nil {
		return err
	}
	if err := equal("Get from the still attached buffer after the other's Detach", got, src); err != nil {
		return err
	}
	if err := runtime.Barrier(ctx, w); err != nil {
		return err
	}
	return win.Free(ctx)
}

// shared: every rank stores a block into its own memory of a shared window. After a Fence
// it loads every peer's block through SharedQuery, or Gets it when the peer's memory is
// not mapped here (ErrNotShared, as over tcp). Then it stores (or Puts) a block into its
// successor's memory and checks its own after the next Fence.
func shared(ctx context.Context, w *runtime.World, o opts) error {
	me, size := w.Rank(), w.Size()
	next, prev := (me+1)%size, (me+size-1)%size
	win, err := window.AllocateShared[int64](ctx, w, 2*blk)
	if err != nil {
		return err
	}
	mine, err := win.SharedQuery(me)
	if err != nil {
		return fmt.Errorf("SharedQuery of this rank: %w", err)
	}
	if len(mine) != 2*blk || &mine[0] != &win.Local()[0] {
		return errors.New("this rank's SharedQuery is not Local()")
	}
	for i := range blk {
		mine[i] = pattern(me, i, 0)
	}
	if err := win.Fence(ctx, 0); err != nil {
		return err
	}
	want, got := make([]int64, blk), make([]int64, size*blk)
	for r := range size {
		mem, err := win.SharedQuery(r)
		switch {
		case errors.Is(err, window.ErrNotShared):
			err = win.Get(got[r*blk:(r+1)*blk], r, 0)
		case err == nil:
			copy(got[r*blk:(r+1)*blk], mem[:blk])
		}
		if err != nil {
			return fmt.Errorf("rank %d's memory: %w", r, err)
		}
	}
	if err := win.Fence(ctx, 0); err != nil {
		return err
	}
	for r := range size {
		for i := range want {
			want[i] = pattern(r, i, 0)
		}
		if err := equal(fmt.Sprintf("rank %d's block", r), got[r*blk:(r+1)*blk], want); err != nil {
			return err
		}
	}
	src := make([]int64, blk)
	for i := range src {
		src[i], want[i] = pattern(me, i, 1), pattern(prev, i, 1)
	}
	if mem, err := win.SharedQuery(next); err == nil {
		copy(mem[blk:], src)
	} else if err := win.Put(src, next, blk); err != nil {
		return err
	}
	if err := win.Fence(ctx, window.NoSucceed); err != nil {
		return err
	}
	if err := equal("block stored by the predecessor", mine[blk:], want); err != nil {
		return err
	}
	return win.Free(ctx)
}
