package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/gorma-hpc/gorma/collectives"
	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/window"
)

// ulfm runs mode "ulfm WHAT [ORDER]" under golaunch --ft. The ranks first split the
// World by parity and free the halves, so that Shrink makes its World in the Split block
// the halves left. Then every rank runs WHAT in a loop (a short sleep apiece) until a call
// fails with a peer's failure; the test kills a rank meanwhile. Each survivor then
// recovers as a ULFM program does: Revoke, then ORDER's calls (ulfmRecover). On the
// shrunk World it checks an Allreduce of the ranks' old ranks, prints "shrunk RANK SIZE
// SUM FAILED" (its old rank, the new size, the sum, the failed ranks it knows of) and
// finalizes.
//
//	allreduce  Allreduce of 1 KiB, then of 1 MiB, of float64
//	fence      a Put to the next rank between two Fences of a window
//	anysource  every rank sends to rank 0, which receives from AnySource
func ulfm(ctx context.Context, w *runtime.World, what, order string) {
	rank, size := w.Rank(), w.Size()
	bctx, cancel := context.WithTimeout(ctx, testbudget.Scale(60*time.Second))
	defer cancel()
	half, err := w.Split(bctx, rank%2, rank)
	if err != nil {
		fail("rank %d: split: %v", rank, err)
	}
	if err := runtime.Barrier(bctx, half); err != nil {
		fail("rank %d: barrier on the half: %v", rank, err)
	}
	if err := half.Free(); err != nil {
		fail("rank %d: free the half: %v", rank, err)
	}
	var win *window.Win[int64]
	if what == "fence" {
		var err error
		if win, err = window.Allocate[int64](bctx, w, 1); err != nil {
			fail("rank %d: allocate: %v", rank, err)
		}
	}
	step := func() error {
		switch what {
		case "allreduce":
			for _, n := range []int{128, 128 << 10} {
				in := make([]float64, n)
				if err := collectives.Allreduce(bctx, w, in, make([]float64, n), collectives.Sum[float64]()); err != nil {
					return err
				}
			}
			return nil
		case "fence":
			if err := win.Fence(bctx, 0); err != nil {
				return err
			}
			if err := win.Put([]int64{int64(rank)}, (rank+1)%size, 0); err != nil {
				return err
			}
			return win.Fence(bctx, 0)
		case "anysource":
			if rank != 0 {
				return runtime.Send(bctx, w, []int64{int64(rank)}, 0, 1)
			}
			for range size - 1 {
				if _, err := runtime.Recv(bctx, w, make([]int64, 1), runtime.AnySource, 1); err != nil {
					return err
				}
			}
			return nil
		}
		fail("usage: rtprog ulfm allreduce|fence|anysource")
		return nil
	}
	fmt.Printf("ready %d %d\n", rank, os.Getpid())
	for err == nil {
		err = step()
		time.Sleep(2 * time.Millisecond)
	}
	if !errors.Is(err, runtime.ErrProcFailed) && !errors.Is(err, runtime.ErrRevoked) {
		fail("rank %d: %s: %v", rank, what, err)
	}
	if err := w.Revoke(); err != nil {
		fail("rank %d: revoke: %v", rank, err)
	}
	s := ulfmRecover(bctx, w, order)
	sum := make([]int64, 1)
	if err := collectives.Allreduce(bctx, s, []int64{int64(rank)}, sum, collectives.Sum[int64]()); err != nil {
		fail("rank %d: allreduce on the shrunk World: %v", rank, err)
	}
	failed := w.GetFailed()
	idx := make([]int, failed.Size())
	for i := range idx {
		idx[i] = i
	}
	ranks, err := failed.TranslateRanks(idx, w.Group())
	if err != nil {
		fail("rank %d: translate: %v", rank, err)
	}
	fmt.Printf("shrunk %d %d %d %v\n", rank, s.Size(), sum[0], ranks)
	if err := w.Finalize(bctx); err != nil {
		fail("rank %d: finalize: %v", rank, err)
	}
}

// steps runs mode "steps N": n steps of an Allreduce and a Barrier, then Finalize.
func steps(ctx context.Context, w *runtime.World, n int) {
	rank := w.Rank()
	bctx, cancel := context.WithTimeout(ctx, testbudget.Scale(120*time.Second))
	defer cancel()
	in, out := make([]float64, 128), make([]float64, 128)
	for i := range n {
		if err := collectives.Allreduce(bctx, w, in, out, collectives.Sum[float64]()); err != nil {
			fail("rank %d: step %d: allreduce: %v", rank, i, err)
		}
		if err := runtime.Barrier(bctx, w); err != nil {
			fail("rank %d: step %d: barrier: %v", rank, i, err)
		}
	}
	if err := w.Finalize(bctx); err != nil {
		fail("rank %d: finalize: %v", rank, err)
	}
}

// busy runs shared-memory collectives, then Fence epochs, for d in all, and finalizes.
// Rank 0 decides when each half ends and tells the others in the calls themselves (a
// Max of the remaining time), so that every rank makes as many calls.
func busy(ctx context.Context, w *runtime.World, d time.Duration) {
	rank, size := w.Rank(), w.Size()
	bctx, cancel := context.WithTimeout(ctx, testbudget.Scale(d+120*time.Second))
	defer cancel()
	calls := 0
	until := func(end time.Time) bool { // whether rank 0 says the half goes on
		left := []int64{0}
		if rank == 0 && time.Now().Before(end) {
			left[0] = 1
		}
		if err := collectives.Allreduce(bctx, w, nil, left, collectives.Max[int64]()); err != nil {
			fail("rank %d: allreduce: %v", rank, err)
		}
		calls++
		return left[0] == 1
	}
	end := time.Now().Add(d / 2)
	for until(end) {
		if err := collectives.Barrier(bctx, w); err != nil {
			fail("rank %d: barrier: %v", rank, err)
		}
		calls++
	}
	win, err := window.Allocate[int64](bctx, w, 2) // [the left neighbour's count, rank 0's stop]
	if err != nil {
		fail("rank %d: allocate: %v", rank, err)
	}
	end = time.Now().Add(d / 2)
	for {
		if err := win.Fence(bctx, 0); err != nil {
			fail("rank %d: fence: %v", rank, err)
		}
		// Read here, after the Fence that completes rank 0's stop: a Put through shared
		// memory may land before the Fence that completes it, so a read after the next
		// Fence could see a stop that other ranks' reads missed.
		stop := win.Local()[1] == 1
		if err := win.Put([]int64{int64(calls)}, (rank+1)%size, 0); err != nil {
			fail("rank %d: put: %v", rank, err)
		}
		if err := win.Fence(bctx, 0); err != nil {
			fail("rank %d: fence: %v", rank, err)
		}
		calls += 2
		// Rank 0 stops every rank with a Put of 1 to their second element, in the
		// epoch after its time: every rank reads it after the next first Fence.
		if stop {
			break
		}
		if rank == 0 && !time.Now().Before(end) {
			for r := range size {
				if err := win.Put([]int64{1}, r, 1); err != nil {
					fail("rank 0: put: %v", err)
				}
			}
		}
	}
	fmt.Printf("busy %d %d\n", rank, calls)
	if err := win.Free(bctx); err != nil {
		fail("rank %d: free: %v", rank, err)
	}
	if err := w.Finalize(bctx); err != nil {
		fail("rank %d: finalize: %v", rank, err)
	}
}

// ulfmRecover runs ORDER, the survivor's ULFM calls after its Revoke of w, and returns the
// shrunk World:
//
//	agree-shrink        AckFailed of every failure known, Agree on w, Shrink
//	shrink-agree        Shrink, then Agree on the shrunk World
//	agree-shrink-agree  Agree on w (which reports the failure: nobody acknowledged it),
//	                    Shrink, then Agree on the shrunk World
//
// An Agree on the shrunk World must return 1 and no error: its ranks all live.
func ulfmRecover(ctx context.Context, w *runtime.World, order string) *runtime.World {
	rank := w.Rank()
	agreeOn := func(v *runtime.World, what string) {
		got, err := v.Agree(ctx, 1)
		if err != nil || got != 1 {
			fail("rank %d: agree on the %s World: %d, %v; want 1, nil", rank, what, got, err)
		}
	}
	switch order {
	case "agree-shrink":
		w.AckFailed(w.GetFailed().Size())
		if _, err := w.Agree(ctx, 1); err != nil && !errors.Is(err, runtime.ErrProcFailed) {
			fail("rank %d: agree: %v", rank, err)
		}
	case "agree-shrink-agree":
		if _, err := w.Agree(ctx, 1); !errors.Is(err, runtime.ErrProcFailed) {
			fail("rank %d: agree on the revoked World: %v, want the failure", rank, err)
		}
	case "shrink-agree":
	default:
		fail("usage: rtprog ulfm WHAT [agree-shrink|shrink-agree|agree-shrink-agree]")
	}
	s, err := w.Shrink(ctx)
	if err != nil {
		fail("rank %d: shrink: %v", rank, err)
	}
	if order != "agree-shrink" {
		agreeOn(s, "shrunk")
	}
	return s
}
