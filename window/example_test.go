package window_test

import (
	"context"
	"fmt"

	"github.com/gorma-hpc/gorma/collectives"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/window"
)

// A rank program's use of a window. Started on its own (not by golaunch) it is a world of
// one rank, in which every operation targets this rank itself.
func Example() {
	ctx := context.Background()
	w, err := runtime.Init(ctx)
	if err != nil {
		panic(err)
	}
	defer w.Finalize(ctx)

	win, err := window.Allocate[float64](ctx, w, 8)
	if err != nil {
		panic(err)
	}
	next := (w.Rank() + 1) % w.Size()

	// Active target: everything between two Fences is complete after the second.
	win.Fence(ctx, 0)
	win.Put([]float64{1.5, 2.5}, next, 0)
	win.Fence(ctx, window.NoSucceed)

	// Passive target: lock, operate, unlock; the target does nothing.
	win.Lock(ctx, window.Exclusive, next, 0)
	win.Accumulate([]float64{10, 10}, next, 0, collectives.Sum[float64]())
	var old float64
	win.FetchAndOp(1, &old, next, 7, collectives.Sum[float64]())
	got := make([]float64, 2)
	win.Get(got, next, 0)
	win.Unlock(ctx, next) // got is filled, and every operation complete, here

	fmt.Println(got, old, win.Local()[7])
	if err := win.Free(ctx); err != nil {
		panic(err)
	}
	// Output: [11.5 12.5] 0 1
}

// Passive target: a shared counter on rank 0 that any rank bumps with an atomic
// FetchAndOp inside a Lock epoch, without rank 0 taking part.
func ExampleWin_Lock() {
	ctx := context.Background()
	w, err := runtime.Init(ctx)
	if err != nil {
		panic(err)
	}
	defer w.Finalize(ctx)
	win, err := window.Allocate[int64](ctx, w, 1)
	if err != nil {
		panic(err)
	}
	defer win.Free(ctx)
	var before int64
	if err := win.Lock(ctx, window.Shared, 0, 0); err != nil {
		panic(err)
	}
	if err := win.FetchAndOp(1, &before, 0, 0, collectives.Sum[int64]()); err != nil {
		panic(err)
	}
	if err := win.Unlock(ctx, 0); err != nil { // the operation is complete at rank 0
		panic(err)
	}
	fmt.Println("counter was", before)
	// Output: counter was 0
}

// Generalized active target (PSCW): the target exposes its window to a group (Post ...
// Wait), the origins access it (Start ... Complete); only the ranks named take part.
func ExampleWin_Post() {
	ctx := context.Background()
	w, err := runtime.Init(ctx)
	if err != nil {
		panic(err)
	}
	defer w.Finalize(ctx)
	win, err := window.Allocate[int32](ctx, w, 4)
	if err != nil {
		panic(err)
	}
	defer win.Free(ctx)
	me := []int{w.Rank()} // a world of one: this rank is both target and origin
	if err := win.Post(ctx, me, 0); err != nil {
		panic(err)
	}
	if err := win.Start(ctx, me, 0); err != nil {
		panic(err)
	}
	if err := win.Put([]int32{7, 8}, w.Rank(), 1); err != nil {
		panic(err)
	}
	if err := win.Complete(ctx); err != nil {
		panic(err)
	}
	if err := win.Wait(ctx); err != nil { // the exposure is over: the Puts have landed
		panic(err)
	}
	fmt.Println(win.Local())
	// Output: [0 7 8 0]
}
