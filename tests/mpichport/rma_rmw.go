package main

import (
	"context"
	"fmt"

	"github.com/gorma-hpc/gorma/collectives"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/window"
)

func init() {
	register("rma-get_acc_local", "rma/get_acc_local.c", 1, rmaGetAccLocal)
	register("rma-window_attach", "rma/window_attach.c", 4, rmaWindowAttach)
	register("rma-atomic_rmw_fop", "rma/atomic_rmw_fop.c", 3, rmaAtomicRmwFop)
	register("rma-atomic_rmw_cas", "rma/atomic_rmw_cas.c", 3, rmaAtomicRmwCas)
	register("rma-atomic_rmw_gacc", "rma/atomic_rmw_gacc.c", 3, rmaAtomicRmwGacc)
}

// rmaGetAccLocal: 1000 GetAccumulates (sum, 3) on this rank's own one-int window, each
// in a shared lock on itself, fetch 3i.
func rmaGetAccLocal(ctx context.Context, w *runtime.World) error {
	const niter, acc = 1000, 3
	win, err := window.Create(ctx, w, []int32{0})
	if err != nil {
		return err
	}
	me := w.Rank()
	for i := 0; i < niter; i++ {
		out := []int32{-1}
		if err := first(win.Lock(ctx, window.Shared, me, 0), win.GetAccumulate([]int32{acc}, out, me, 0, collectives.Sum[int32]()), win.Unlock(ctx, me)); err != nil {
			return err
		}
		if out[0] != int32(acc*i) {
			return fmt.Errorf("get-accumulate %d fetched %d, want %d", i, out[0], acc*i)
		}
	}
	return win.Free(ctx)
}

// rmaWindowAttach: 1000 buffers of 1000 ints each attached to one dynamic window, a
// Barrier, then all detached.
func rmaWindowAttach(ctx context.Context, w *runtime.World) error {
	const nelts, nwin = 1000, 1000
	win, err := window.CreateDynamic[int32](ctx, w)
	if err != nil {
		return err
	}
	bases := make([]int, nwin)
	for i := range bases {
		if bases[i], err = win.Attach(ctx, make([]int32, nelts)); err != nil {
			return fmt.Errorf("attaching buffer %d: %w", i, err)
		}
	}
	if err := runtime.Barrier(ctx, w); err != nil {
		return err
	}
	for i, b := range bases {
		if err := win.Detach(ctx, b); err != nil {
			return fmt.Errorf("detaching buffer %d: %w", i, err)
		}
	}
	return win.Free(ctx)
}

// The ranks of the atomic_rmw tests: two origins (MPICH names them after the paths
// their operations take in CH3) and the target.
const rmwShm, rmwAm, rmwDest = 0, 1, 2

// resetTarget zeroes the target's window memory under a shared lock on itself, then
// synchronizes.
func resetTarget(ctx context.Context, w *runtime.World, win *window.Win[int32]) error {
	if w.Rank() == rmwDest {
		if err := selfStore(ctx, win, window.Shared, func(l []int32) { clear(l) }); err != nil {
			return err
		}
	}
	return runtime.Barrier(ctx, w)
}

// distinctFetches checks at rank 0 that no value fetched by rank 1 equals one fetched by
// rank 0 at the same offset within an operation of width ops (the fetches were atomic),
// and at the target that every one of its ops ints holds want.
func distinctFetches(ctx context.Context, w *runtime.World, win *window.Win[int32], loop, ops int, results []int32, amCount, want int) error {
	switch w.Rank() {
	case rmwAm:
		return runtime.Send(ctx, w, results, rmwShm, 123)
	case rmwShm:
		am := make([]int32, amCount*ops)
		if _, err := runtime.Recv(ctx, w, am, rmwAm, 123); err != nil {
			return err
		}
		mine := make(map[[2]int32]bool, len(results))
		for j, v := range results {
			mine[[2]int32{int32(j % ops), v}] = true
		}
		for i, v := range am {
			if mine[[2]int32{int32(i % ops), v}] {
				return fmt.Errorf("loop %d: ranks 0 and 1 both fetched %d at offset %d: the operations were not atomic", loop, v, i%ops)
			}
		}
	case rmwDest:
		var err error
		e := selfStore(ctx, win, window.Shared, func(l []int32) { err = same(fmt.Sprintf("loop %d: target", loop), l[:ops], fill(ops, int32(want))) })
		return first(e, err)
	}
	return nil
}

// rmaAtomicRmwFop: 15 loops: rank 1 FetchAndOps (sum, 1) the target's int 10 times and
// rank 0 1000 times, each followed by a Flush, in a LockAll epoch; the target ends at
// 1010 and no value is fetched by both origins.
func rmaAtomicRmwFop(ctx context.Context, w *runtime.World) error {
	const amN, shmN, loops = 10, 1000, 15
	win, err := window.Allocate[int32](ctx, w, 1)
	if err != nil {
		return err
	}
	n := map[int]int{rmwAm: amN, rmwShm: shmN}[w.Rank()]
	for k := 0; k < loops; k++ {
		results := make([]int32, n)
		if err := first(resetTarget(ctx, w, win), win.LockAll(ctx, 0)); err != nil {
			return err
		}
		for i := range results {
			if err := first(win.FetchAndOp(1, &results[i], rmwDest, 0, collectives.Sum[int32]()), win.Flush(ctx, rmwDest)); err != nil {
				return err
			}
		}
		if err := first(win.UnlockAll(ctx), runtime.Barrier(ctx, w), distinctFetches(ctx, w, win, k, 1, results, amN, amN+shmN)); err != nil {
			return err
		}
	}
	return win.Free(ctx)
}

// rmaAtomicRmwCas: 10000 loops: with the target's int at 0, rank 0 tries to swap 0 for
// 1 and rank 1 to swap 1 for 0, at once, in a LockAll epoch. Gathered at the target,
// (target, rank 0's fetch, rank 1's fetch) is (1, 0, 0) or (0, 0, 1).
func rmaAtomicRmwCas(ctx context.Context, w *runtime.World) error {
	const loops = 10000
	win, err := window.Allocate[int32](ctx, w, 1)
	if err != nil {
		return err
	}
	rank := w.Rank()
	for k := 0; k < loops; k++ {
		result := []int32{0}
		if err := first(resetTarget(ctx, w, win), win.LockAll(ctx, 0)); err != nil {
			return err
		}
		switch rank {
		case rmwShm:
			err = first(win.CompareAndSwap(1, 0, &result[0], rmwDest, 0), win.Flush(ctx, rmwDest))
		case rmwAm:
			err = first(win.CompareAndSwap(0, 1, &result[0], rmwDest, 0), win.Flush(ctx, rmwDest))
		}
		if err = first(err, win.UnlockAll(ctx), runtime.Barrier(ctx, w)); err != nil {
			return err
		}
		var all []int32
		if rank == rmwDest {
			err = selfStore(ctx, win, window.Shared, func(l []int32) { result[0] = l[0] })
			all = make([]int32, 3)
		}
		if err = first(err, collectives.Gather(ctx, w, result, all, rmwDest)); err != nil {
			return err
		}
		if rank == rmwDest {
			t, s, a := all[rmwDest], all[rmwShm], all[rmwAm]
			if !(t == 1 && s == 0 && a == 0) && !(t == 0 && s == 0 && a == 1) {
				return fmt.Errorf("loop %d: target %d, rank 0 fetched %d, rank 1 fetched %d; want 1, 0, 0 or 0, 0, 1", k, t, s, a)
			}
		}
	}
	return win.Free(ctx)
}

// rmaAtomicRmwGacc: atomic_rmw_fop with GetAccumulate of 10 ints (rank 1 10 times, rank
// 0 10000 times) on the target's 10 ints: each ends at 10010, and no value at one
// offset is fetched by both origins. (The test's parts with derived datatypes are left
// out.)
func rmaAtomicRmwGacc(ctx context.Context, w *runtime.World) error {
	const ops, amN, shmN, loops = 10, 10, 10000, 15
	win, err := window.Allocate[int32](ctx, w, ops)
	if err != nil {
		return err
	}
	n := map[int]int{rmwAm: amN, rmwShm: shmN}[w.Rank()]
	orig := fill(ops, int32(1))
	for k := 0; k < loops; k++ {
		results := make([]int32, n*ops)
		if err := first(resetTarget(ctx, w, win), win.LockAll(ctx, 0)); err != nil {
			return err
		}
		for i := 0; i < n; i++ {
			if err := first(win.GetAccumulate(orig, results[i*ops:(i+1)*ops], rmwDest, 0, collectives.Sum[int32]()), win.Flush(ctx, rmwDest)); err != nil {
				return err
			}
		}
		if err := first(win.UnlockAll(ctx), runtime.Barrier(ctx, w), distinctFetches(ctx, w, win, k, ops, results, amN, amN+shmN)); err != nil {
			return err
		}
	}
	return win.Free(ctx)
}
