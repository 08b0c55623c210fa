package main

import (
	"context"
	"fmt"

	"github.com/gorma-hpc/gorma/collectives"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/window"
)

func init() {
	for _, op := range []string{"put", "acc", "gacc", "fop", "cas"} {
		register("rma-win_shared_"+op+"_flush_load", "rma/win_shared_rma_flush_load.c", 3, rmaSharedFlushLoad(op))
		if op == "cas" {
			register("rma-overlap_wins_cas", "rma/overlap_wins_rma.c", 3, rmaOverlapWins[int32](op))
		} else {
			register("rma-overlap_wins_"+op, "rma/overlap_wins_rma.c", 3, rmaOverlapWins[float64](op))
		}
	}
}

// issue runs one element's operation of the *_flush_* and overlap_wins families on win:
// Put; Accumulate, GetAccumulate or FetchAndOp with op; CompareAndSwap with compare.
func issue[T runtime.Elem](win *window.Win[T], kind string, val, compare T, result *T, target, disp int, op collectives.Op[T]) error {
	switch kind {
	case "put":
		return win.Put([]T{val}, target, disp)
	case "acc":
		return win.Accumulate([]T{val}, target, disp, op)
	case "gacc":
		res := []T{0}
		err := win.GetAccumulate([]T{val}, res, target, disp, op)
		*result = res[0]
		return err
	case "fop":
		return win.FetchAndOp(val, result, target, disp, op)
	case "cas":
		return win.CompareAndSwap(val, compare, result, target, disp)
	}
	return fmt.Errorf("unknown operation %q", kind)
}

// rmaSharedFlushLoad: the three ranks of one host share a window of one int each
// (AllocateShared), and a second window is created over the same memory (Create over
// the shared window's Local()). 10000 rounds, in LockAll epochs of both windows: rank 0
// (the target) resets its int and Syncs the shared window. Rank 2 (the origin) writes a
// new value with the operation through the second window and Flushes, and checks the
// fetched old value. Then rank 1 (the checker), after Sync of the shared window, must
// load the new value directly from rank 0's shared memory.
func rmaSharedFlushLoad(kind string) func(ctx context.Context, w *runtime.World) error {
	return func(ctx context.Context, w *runtime.World) error {
		const iter = 10000
		const target, checker, origin = 0, 1, 2
		shm, err := hostComm(ctx, w)
		if err != nil {
			return err
		}
		if shm.Size() != w.Size() {
			return first(fmt.Errorf("needs every rank on one host (%d of %d here)", shm.Size(), w.Size()), shm.Free())
		}
		shmWin, err := window.AllocateShared[int32](ctx, shm, 1)
		if err != nil {
			return err
		}
		win, err := window.Create(ctx, w, shmWin.Local())
		if err != nil {
			return err
		}
		var targetMem []int32
		if w.Rank() == checker {
			if targetMem, err = shmWin.SharedQuery(target); err != nil {
				return err
			}
		}
		if err := first(win.LockAll(ctx, 0), shmWin.LockAll(ctx, 0)); err != nil {
			return err
		}
		repl := collectives.Replace[int32]()
		for x := 0; x < iter; x++ {
			if w.Rank() == target {
				shmWin.Local()[0] = 0
				if err := shmWin.Sync(ctx); err != nil {
					return err
				}
			}
			if err := runtime.Barrier(ctx, w); err != nil {
				return err
			}
			val := int32(1 + x)
			switch w.Rank() {
			case origin:
				result := int32(-1)
				if err := first(issue(win, kind, val, 0, &result, target, 0, repl), win.Flush(ctx, target)); err != nil {
					return err
				}
				if kind != "put" && kind != "acc" && result != 0 {
					return fmt.Errorf("round %d: %s fetched %d, want 0", x, kind, result)
				}
				if err := runtime.Send(ctx, w, []int32{0}, checker, 999); err != nil {
					return err
				}
			case checker:
				if _, err := runtime.Recv(ctx, w, make([]int32, 1), origin, 999); err != nil {
					return err
				}
				if err := shmWin.Sync(ctx); err != nil {
					return err
				}
				if targetMem[0] != val {
					return fmt.Errorf("round %d: after %s and flush, rank 0's shared memory holds %d, want %d", x, kind, targetMem[0], val)
				}
			}
			if err := runtime.Barrier(ctx, w); err != nil {
				return err
			}
		}
		return first(shmWin.UnlockAll(ctx), win.UnlockAll(ctx), win.Free(ctx), shmWin.Free(ctx), shm.Free())
	}
}

// rmaOverlapWins: every rank creates size-1 windows over the same memory of size-1
// elements (double; int for cas). The last rank is the target, and origin r works on
// its own window and displacement r: under a shared lock, 10 rounds of two operations
// (Put, sum Accumulate, sum GetAccumulate, sum FetchAndOp, or CompareAndSwap with the
// last value sent) each followed by a Flush. Then it Gets the value back, which must be
// the last written (Put, CompareAndSwap) or the sum of all sent.
func rmaOverlapWins[T float64 | int32](kind string) func(ctx context.Context, w *runtime.World) error {
	return func(ctx context.Context, w *runtime.World) error {
		const iter, bufCnt = 10, 2
		rank, n := w.Rank(), w.Size()
		target, norigins := n-1, n-1
		mem := make([]T, norigins)
		wins := make([]*window.Win[T], norigins)
		for i := range wins {
			var err error
			if wins[i], err = window.Create(ctx, w, mem); err != nil {
				return fmt.Errorf("overlapping window %d: %w", i, err)
			}
		}
		if err := runtime.Barrier(ctx, w); err != nil {
			return err
		}
		if rank != target {
			win, disp := wins[rank], rank
			local, compare := make([]T, bufCnt), make([]T, bufCnt)
			var want T
			if err := win.Lock(ctx, window.Shared, target, 0); err != nil {
				return err
			}
			for x := 0; x < iter; x++ {
				copy(compare, local)
				for i := range local {
					local[i] = T(rank + i + x)
					if kind == "put" || kind == "cas" {
						want = local[i]
					} else {
						want += local[i]
					}
				}
				for i := range local {
					var res T
					if err := issue(win, kind, local[i], compare[i], &res, target, disp, collectives.Sum[T]()); err != nil {
						return err
					}
				}
				if err := win.Flush(ctx, target); err != nil {
					return err
				}
			}
			got := []T{0}
			if err := first(win.Get(got, target, disp), win.Flush(ctx, target)); err != nil {
				return err
			}
			if got[0] != want {
				return fmt.Errorf("%s through window %d: rank %d's element %d is %v, want %v", kind, rank, target, disp, got[0], want)
			}
			if err := win.Unlock(ctx, target); err != nil {
				return err
			}
		}
		if err := runtime.Barrier(ctx, w); err != nil {
			return err
		}
		for _, win := range wins {
			if err := win.Free(ctx); err != nil {
				return err
			}
		}
		return nil
	}
}
