package gorma_test

import (
	"context"
	"fmt"

	"github.com/gorma-hpc/gorma/collectives"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/window"
)

// A rank program: messages, a one-sided window and a collective. golaunch -n 4 runs it
// on four ranks; started on its own it is a world of one rank.
func Example() {
	ctx := context.Background()
	w, err := runtime.Init(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer w.Finalize(ctx)
	next := (w.Rank() + 1) % w.Size()

	win, err := window.Allocate[float64](ctx, w, 4)
	if err != nil {
		fmt.Println(err)
		return
	}
	win.Fence(ctx, 0)
	win.Put([]float64{float64(w.Rank() + 1)}, next, 0)
	win.Fence(ctx, window.NoSucceed)

	sum := make([]float64, 1)
	if err := collectives.Allreduce(ctx, w, win.Local()[:1], sum, collectives.Sum[float64]()); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(w.Size(), sum)
	if err := win.Free(ctx); err != nil {
		fmt.Println(err)
	}
	// Output: 1 [1]
}
