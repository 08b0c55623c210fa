package main

import (
	"context"
	"fmt"

	"github.com/gorma-hpc/gorma/collectives"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/window"
)

func init() {
	register("rma-lockcontention2", "rma/lockcontention2.c", 4, rmaLockcontention2)
	register("rma-large_small_acc", "rma/large_small_acc.c", 2, rmaLargeSmallAcc)
}

// rmaLockcontention2: every rank writes rank 0's window under exclusive locks, 200 locks
// each, in six phases, rank 0 checking after each (its window reset by plain stores
// between phases, as the MPICH test does): two one-int Puts per lock. One Put. Two
// 10-int Puts and one one-int Put (rank 0 writing only the one-int one). Puts while rank
// 0 Gets (each value it sees is the old one or the one written). Gets only. And two sum
// Accumulates per lock.
func rmaLockcontention2(ctx context.Context, w *runtime.World) error {
	const nelm, nblock, trank = 200, 10, 0
	rank, ws := w.Rank(), w.Size()
	size := (2*nblock + 2) * nelm * ws
	local := seq(nelm, func(i int) int32 { return int32(rank + i*ws) })
	local2 := seq(nelm*nblock, func(k int) int32 { return int32(k%nblock + nblock*(rank+(k/nblock)*ws)) })
	win, err := window.Create(ctx, w, fill(size, int32(-1)))
	if err != nil {
		return err
	}
	rmabuf := win.Local()
	reset := func(f func(i int) int32) {
		for i := range rmabuf {
			rmabuf[i] = f(i)
		}
	}
	locked := func(f func(i int) error) error {
		for i := 0; i < nelm; i++ {
			if err := first(win.Lock(ctx, window.Exclusive, trank, 0), f(i), win.Unlock(ctx, trank)); err != nil {
				return err
			}
		}
		return runtime.Barrier(ctx, w)
	}
	check := func(what string, from, n int) error {
		var err error
		e := selfStore(ctx, win, window.Exclusive, func(l []int32) {
			err = same(what, l[from:from+n], seq(n, func(i int) int32 { return int32(i) }))
		})
		return first(e, err)
	}
	put1 := func(i, disp int) error { return win.Put(local[i:i+1], trank, disp) }
	putBlock := func(i, disp int) error { return win.Put(local2[i*nblock:(i+1)*nblock], trank, disp) }

	// Multiple puts.
	if err := first(runtime.Barrier(ctx, w), locked(func(i int) error {
		return first(put1(i, rank+i*ws), put1(i, rank+(i+nelm)*ws))
	})); err != nil {
		return err
	}
	if rank == trank {
		if err := first(check("multiple puts (1)", 0, nelm*ws), check("multiple puts (2)", nelm*ws, nelm*ws)); err != nil {
			return err
		}
	}
	if err := runtime.Barrier(ctx, w); err != nil {
		return err
	}
	reset(func(int) int32 { return -1 })
	if err := runtime.Barrier(ctx, w); err != nil {
		return err
	}
	// Single put.
	if err := locked(func(i int) error { return put1(i, rank+i*ws) }); err != nil {
		return err
	}
	if rank == trank {
		if err := check("single put", 0, nelm*ws); err != nil {
			return err
		}
	}
	reset(func(int) int32 { return -1 })
	// Longer puts.
	if err := first(runtime.Barrier(ctx, w), locked(func(i int) error {
		var err error
		if rank != trank {
			err = first(putBlock(i, nelm*ws+nblock*(rank+i*ws)), putBlock(i, nelm*ws+nblock*(rank+(i+nelm)*ws)))
		}
		return first(err, put1(i, rank+i*ws))
	})); err != nil {
		return err
	}
	if rank == trank {
		for i := 0; i < nelm; i++ {
			for j := 0; j < nblock; j++ {
				v := int32(j + nblock*(trank+i*ws))
				rmabuf[nelm*ws+nblock*(trank+i*ws)+j] = v
				rmabuf[nelm*ws+nblock*(trank+(i+nelm)*ws)+j] = v
			}
		}
		if err := first(check("long puts (1)", 0, nelm*ws), check("long puts (2)", nelm*ws, nblock*nelm*ws),
			check("long puts (3)", nelm*ws*(1+nblock), nblock*nelm*ws)); err != nil {
			return err
		}
	}
	reset(func(int) int32 { return -1 })
	vals := fill(nelm, int32(-2))
	// Puts mixed with Gets.
	if err := first(runtime.Barrier(ctx, w), locked(func(i int) error {
		if rank != trank {
			return first(win.Put(local2[i:i+nblock], trank, nelm*ws+nblock*(rank+i*ws)), put1(i, rank+i*ws))
		}
		return win.Get(vals[i:i+1], trank, i)
	})); err != nil {
		return err
	}
	if rank == trank {
		for i := 0; i < ws; i++ {
			if (i == trank && vals[i] != -1) || (i != trank && vals[i] != int32(i) && vals[i] != -1) {
				return fmt.Errorf("put/get: vals[%d] is %d, want -1 or %d", i, vals[i], i)
			}
		}
	}
	// Gets only.
	reset(func(i int) int32 { return int32(-i) })
	vals = fill(nelm, int32(-2))
	if err := first(runtime.Barrier(ctx, w), locked(func(i int) error { return win.Get(vals[i:i+1], trank, i) })); err != nil {
		return err
	}
	if rank == trank {
		if err := same("single get", vals, seq(nelm, func(i int) int32 { return int32(-i) })); err != nil {
			return err
		}
	}
	// Accumulates.
	if err := runtime.Barrier(ctx, w); err != nil {
		return err
	}
	clear(rmabuf[:nelm*ws])
	sum := collectives.Sum[int32]()
	if err := first(runtime.Barrier(ctx, w), locked(func(i int) error {
		return first(win.Accumulate(local[i:i+1], trank, rank+i*ws, sum), win.Accumulate(local[i:i+1], trank, rank+i*ws, sum))
	})); err != nil {
		return err
	}
	if rank == trank {
		var err error
		e := selfStore(ctx, win, window.Exclusive, func(l []int32) {
			err = same("two accumulates", l[:nelm*ws], seq(nelm*ws, func(i int) int32 { return int32(2 * i) }))
		})
		if err = first(e, err); err != nil {
			return err
		}
	}
	return win.Free(ctx)
}

// rmaLargeSmallAcc: 5 times, in one Fence epoch, rank 0 Accumulates (replace) 8192 ones
// into rank 1's uint64 window, then 2 into element 0, then 3 and 3 into elements 1 and
// 2: MPI orders accumulates from one origin to the same location. So rank 1 ends with
// 2, 3, 3 and then ones.
func rmaLargeSmallAcc(ctx context.Context, w *runtime.World) error {
	const loops, count = 5, 8192
	repl := collectives.Replace[uint64]()
	for j := 0; j < loops; j++ {
		win, err := window.Create(ctx, w, make([]uint64, count))
		if err != nil {
			return err
		}
		if err := win.Fence(ctx, 0); err != nil {
			return err
		}
		if w.Rank() == 0 {
			if err := first(win.Accumulate(fill(count, uint64(1)), 1, 0, repl), win.Accumulate([]uint64{2}, 1, 0, repl),
				win.Accumulate([]uint64{3, 3}, 1, 1, repl)); err != nil {
				return err
			}
		}
		if err := win.Fence(ctx, 0); err != nil {
			return err
		}
		if w.Rank() == 1 {
			want := fill(count, uint64(1))
			want[0], want[1], want[2] = 2, 3, 3
			if err := same(fmt.Sprintf("loop %d", j), win.Local(), want); err != nil {
				return err
			}
		}
		if err := win.Free(ctx); err != nil {
			return err
		}
	}
	return nil
}
