package main

import (
	"context"
	"fmt"

	"github.com/gorma-hpc/gorma/collectives"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/window"
)

func init() {
	register("rma-compare_and_swap", "rma/compare_and_swap.c", 4, rmaCompareAndSwap)
	register("rma-fetch_and_op_char", "rma/fetch_and_op.c", 4, rmaFetchAndOp[int8])
	register("rma-fetch_and_op_short", "rma/fetch_and_op.c", 4, rmaFetchAndOp[int16])
	register("rma-fetch_and_op_int", "rma/fetch_and_op.c", 4, rmaFetchAndOp[int32])
	register("rma-fetch_and_op_long", "rma/fetch_and_op.c", 4, rmaFetchAndOp[int64])
	register("rma-fetch_and_op_double", "rma/fetch_and_op.c", 4, rmaFetchAndOp[float64])
	register("rma-get_accumulate_short", "rma/get_accumulate.c", 4, rmaGetAccumulate[int16])
	register("rma-get_accumulate_int", "rma/get_accumulate.c", 4, rmaGetAccumulate[int32])
	register("rma-get_accumulate_long", "rma/get_accumulate.c", 4, rmaGetAccumulate[int64])
	register("rma-get_accumulate_double", "rma/get_accumulate.c", 4, rmaGetAccumulate[float64])
}

// num is the element types of the typed fetch_and_op and get_accumulate variants.
type num interface {
	~int8 | ~int16 | ~int32 | ~int64 | ~float64
}

// selfStore runs f on this rank's window memory inside a lock of type lt on itself, as
// MPICH's tests store to (and load from) their window buffers.
func selfStore[T runtime.Elem](ctx context.Context, win *window.Win[T], lt window.LockType, f func(local []T)) error {
	me := win.Rank()
	if err := win.Lock(ctx, lt, me, 0); err != nil {
		return err
	}
	f(win.Local())
	return win.Unlock(ctx, me)
}

// rmaCompareAndSwap: CompareAndSwap under exclusive locks, 100 times, on this rank's
// own element, then on the next rank's, each swap expected to succeed (result i). Then
// every rank but 0 tries the same 100 swaps on rank 0, whose element ends at 100.
func rmaCompareAndSwap(ctx context.Context, w *runtime.World) error {
	const iter = 100
	rank, n := w.Rank(), w.Size()
	win, err := window.Create(ctx, w, make([]int32, 1))
	if err != nil {
		return err
	}
	swaps := func(target int, check bool, what string) error {
		for i := 0; i < iter; i++ {
			result := int32(-1)
			if err := first(win.Lock(ctx, window.Exclusive, target, 0),
				win.CompareAndSwap(int32(i+1), int32(i), &result, target, 0),
				win.Unlock(ctx, target)); err != nil {
				return err
			}
			if check && result != int32(i) {
				return fmt.Errorf("%s: swap %d on rank %d returned %d, want %d", what, i, target, result, i)
			}
		}
		return nil
	}
	reset := func() error {
		return first(selfStore(ctx, win, window.Exclusive, func(l []int32) { l[0] = 0 }), runtime.Barrier(ctx, w))
	}
	if err := first(swaps(rank, true, "self"), reset(), swaps((rank+1)%n, true, "neighbour"),
		runtime.Barrier(ctx, w), reset()); err != nil {
		return err
	}
	if rank != 0 {
		if err := swaps(0, false, "contention"); err != nil {
			return err
		}
	}
	if err := runtime.Barrier(ctx, w); err != nil {
		return err
	}
	if rank == 0 && n > 1 {
		if got := win.Local()[0]; got != iter {
			return first(fmt.Errorf("contention: rank 0 holds %d, want %d", got, iter), win.Free(ctx))
		}
	}
	return win.Free(ctx)
}

// rmaFetchAndOp: FetchAndOp(sum) of 1, 100 times under exclusive locks, on this rank
// (the element ends at 100), the next rank (each fetch returns the count so far), and
// from every rank but 0 on rank 0 (it ends at 100*(n-1)). Then every rank adds its rank
// to element rank of every window, 100 times, in Fence (NoPrecede, NoSucceed), LockAll,
// and LockAll-with-Flush epochs, each fetch returning i*rank. Then NoOp fetches read the
// neighbour's and its own value. MPICH builds it for char, short, int, long, double and
// long double (no Go type).
func rmaFetchAndOp[T num](ctx context.Context, w *runtime.World) error {
	const iter = 100
	rank, n := w.Rank(), w.Size()
	win, err := window.Create(ctx, w, make([]T, n))
	if err != nil {
		return err
	}
	res := make([]T, n)
	sum := collectives.Sum[T]()
	reset := func() error {
		for i := range res {
			res[i] = T(0) - 1
		}
		return first(selfStore(ctx, win, window.Exclusive, func(l []T) { clear(l) }), runtime.Barrier(ctx, w))
	}
	checkLocal := func(what string, want func(i int) T, upto int) error {
		var err error
		e := selfStore(ctx, win, window.Exclusive, func(l []T) { err = same(what, l[:upto], seq(upto, want)) })
		return first(e, err)
	}
	fop := func(target int, what string, check bool) error {
		for i := 0; i < iter; i++ {
			result := T(0) - 1
			if err := first(win.Lock(ctx, window.Exclusive, target, 0),
				win.FetchAndOp(1, &result, target, 0, sum), win.Unlock(ctx, target)); err != nil {
				return err
			}
			if check && result != T(i) {
				return fmt.Errorf("%s: fetch %d on rank %d returned %v, want %d", what, i, target, result, i)
			}
		}
		return nil
	}
	// Self.
	if err := first(reset(), fop(rank, "self", false)); err != nil {
		return err
	}
	if err := checkLocal("self", func(int) T { return iter }, 1); err != nil {
		return err
	}
	// Neighbour.
	if err := first(reset(), fop((rank+1)%n, "neighbour", true), runtime.Barrier(ctx, w)); err != nil {
		return err
	}
	if err := checkLocal("neighbour", func(int) T { return iter }, 1); err != nil {
		return err
	}
	// Contention.
	if err := reset(); err != nil {
		return err
	}
	if rank != 0 {
		if err := fop(0, "contention", false); err != nil {
			return err
		}
	}
	if err := runtime.Barrier(ctx, w); err != nil {
		return err
	}
	if rank == 0 && n > 1 {
		if err := checkLocal("contention", func(int) T { return T(iter * (n - 1)) }, 1); err != nil {
			return err
		}
	}
	// All to all, in three kinds of epoch.
	for _, kind := range []string{"fence", "lock-all", "lock-all+flush"} {
		if err := reset(); err != nil {
			return err
		}
		for i := 0; i < iter; i++ {
			var err error
			if kind == "fence" {
				err = win.Fence(ctx, window.NoPrecede)
			} else {
				err = win.LockAll(ctx, 0)
			}
			for j := 0; j < n && err == nil; j++ {
				err = win.FetchAndOp(T(rank), &res[j], j, rank, sum)
				if err == nil && kind == "lock-all+flush" {
					err = win.Flush(ctx, j)
				}
			}
			if err != nil {
				return fmt.Errorf("all-to-all (%s): %w", kind, err)
			}
			if kind == "fence" {
				err = win.Fence(ctx, window.NoSucceed)
			} else {
				err = win.UnlockAll(ctx)
			}
			if err = first(err, runtime.Barrier(ctx, w)); err != nil {
				return err
			}
			if err := same(fmt.Sprintf("all-to-all (%s) round %d: fetched", kind, i), res, fill(n, T(i*rank))); err != nil {
				return err
			}
		}
		if err := runtime.Barrier(ctx, w); err != nil {
			return err
		}
		if err := checkLocal("all-to-all ("+kind+")", func(i int) T { return T(iter * i) }, n); err != nil {
			return err
		}
	}
	// NoOp reads of the neighbour, then of itself.
	for _, target := range []int{(rank + 1) % n, rank} {
		if err := first(runtime.Barrier(ctx, w), reset(),
			selfStore(ctx, win, window.Exclusive, func(l []T) {
				for i := range l {
					l[i] = T(rank)
				}
			}), runtime.Barrier(ctx, w)); err != nil {
			return err
		}
		for i := 0; i < iter; i++ {
			if err := first(win.Lock(ctx, window.Exclusive, target, 0),
				win.FetchAndOp(0, &res[0], target, 0, collectives.NoOp[T]()), win.Unlock(ctx, target)); err != nil {
				return err
			}
			if res[0] != T(target) {
				return fmt.Errorf("no-op read %d of rank %d returned %v, want %d", i, target, res[0], target)
			}
		}
	}
	return win.Free(ctx)
}

// rmaGetAccumulate: get_accumulate.c's sequence (see rmaFetchAndOp) with GetAccumulate
// of 5 and of 1000 elements. It runs self, neighbour and contention sums under
// exclusive locks, and all-to-all sums in Fence, LockAll and LockAll-with-Flush epochs
// (each rank adding its rank into its own block of every window, the fetched blocks
// i*rank). It ends with NoOp reads of the neighbour and of itself with no origin
// buffer.
func rmaGetAccumulate[T num](ctx context.Context, w *runtime.World) error {
	const iter = 100
	rank, n := w.Rank(), w.Size()
	sum := collectives.Sum[T]()
	for _, count := range []int{5, 1000} {
		win, err := window.Create(ctx, w, make([]T, n*count))
		if err != nil {
			return err
		}
		res := make([]T, n*count)
		val := make([]T, count)
		reset := func(v T) error {
			if err := runtime.Barrier(ctx, w); err != nil {
				return err
			}
			if err := selfStore(ctx, win, window.Exclusive, func(l []T) { clear(l) }); err != nil {
				return err
			}
			for i := range res {
				res[i] = T(0) - 1
			}
			for i := range val {
				val[i] = v
			}
			return runtime.Barrier(ctx, w)
		}
		checkLocal := func(what string, want func(i int) T, upto int) error {
			var err error
			e := selfStore(ctx, win, window.Exclusive, func(l []T) { err = same(fmt.Sprintf("count %d: %s", count, what), l[:upto], seq(upto, want)) })
			return first(e, err)
		}
		gacc := func(target int) error {
			for i := 0; i < iter; i++ {
				if err := first(win.Lock(ctx, window.Exclusive, target, 0),
					win.GetAccumulate(val, res[:count], target, 0, sum), win.Unlock(ctx, target)); err != nil {
					return err
				}
			}
			return nil
		}
		// Self, neighbour, contention.
		if err := first(reset(1), gacc(rank), checkLocal("self", func(int) T { return iter }, count)); err != nil {
			return err
		}
		if err := first(reset(1), gacc((rank+1)%n), runtime.Barrier(ctx, w),
			checkLocal("neighbour", func(int) T { return iter }, count)); err != nil {
			return err
		}
		if err := reset(1); err != nil {
			return err
		}
		if rank != 0 {
			if err := gacc(0); err != nil {
				return err
			}
		}
		if err := runtime.Barrier(ctx, w); err != nil {
			return err
		}
		if rank == 0 && n > 1 {
			if err := checkLocal("contention", func(int) T { return T(iter * (n - 1)) }, count); err != nil {
				return err
			}
		}
		// All to all.
		for _, kind := range []string{"fence", "lock-all", "lock-all+flush"} {
			if err := reset(T(rank)); err != nil {
				return err
			}
			for i := 0; i < iter; i++ {
				var err error
				if kind == "fence" {
					err = win.Fence(ctx, window.NoPrecede)
				} else {
					err = win.LockAll(ctx, 0)
				}
				for j := 0; j < n && err == nil; j++ {
					err = win.GetAccumulate(val, res[j*count:(j+1)*count], j, rank*count, sum)
					if err == nil && kind == "lock-all+flush" {
						err = win.Flush(ctx, j)
					}
				}
				if err != nil {
					return fmt.Errorf("count %d: all-to-all (%s): %w", count, kind, err)
				}
				if kind == "fence" {
					err = win.Fence(ctx, window.NoSucceed)
				} else {
					err = win.UnlockAll(ctx)
				}
				if err = first(err, runtime.Barrier(ctx, w)); err != nil {
					return err
				}
				if err := same(fmt.Sprintf("count %d: all-to-all (%s) round %d: fetched", count, kind, i), res, fill(n*count, T(i*rank))); err != nil {
					return err
				}
			}
			if err := runtime.Barrier(ctx, w); err != nil {
				return err
			}
			if err := checkLocal("all-to-all ("+kind+")", func(i int) T { return T(iter * (i / count)) }, n*count); err != nil {
				return err
			}
		}
		// NoOp reads, with no origin buffer.
		for _, target := range []int{(rank + 1) % n, rank} {
			if err := first(reset(1), selfStore(ctx, win, window.Exclusive, func(l []T) {
				for i := range l {
					l[i] = T(rank)
				}
			}), runtime.Barrier(ctx, w)); err != nil {
				return err
			}
			for i := 0; i < iter; i++ {
				for i := range res {
					res[i] = T(0) - 1
				}
				if err := first(win.Lock(ctx, window.Exclusive, target, 0),
					win.GetAccumulate(nil, res[:count], target, 0, collectives.NoOp[T]()), win.Unlock(ctx, target)); err != nil {
					return err
				}
				if err := same(fmt.Sprintf("count %d: no-op read %d of rank %d", count, i, target), res[:count], fill(count, T(target))); err != nil {
					return err
				}
			}
		}
		if err := win.Free(ctx); err != nil {
			return err
		}
	}
	return nil
}
