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
