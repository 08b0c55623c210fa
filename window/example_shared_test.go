package window_test

import (
	"context"
	"fmt"

	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/window"
)

// The ranks of a host share one segment: each rank's memory follows the memory of the
// rank before it, so the lowest rank's slice, extended to its capacity, spans every
// rank's memory. Started on its own (not by golaunch) it is a world of one rank.
func ExampleAllocateShared() {
	ctx := context.Background()
	w, err := runtime.Init(ctx)
	if err != nil {
		panic(err)
	}
	defer w.Finalize(ctx)
	host, err := w.SplitShared(ctx, 0) // the ranks of this host
	if err != nil {
		panic(err)
	}
	defer host.Free()

	win, err := window.AllocateShared[int64](ctx, host, 4)
	if err != nil {
		panic(err)
	}
	win.Fence(ctx, 0)
	for i := range win.Local() {
		win.Local()[i] = int64(10*host.Rank() + i)
	}
	win.Fence(ctx, 0)

	first, err := win.SharedQuery(0)
	if err != nil {
		panic(err)
	}
	all := first[:cap(first)] // rank 0's memory, then rank 1's, ...
	fmt.Println(len(all) == 4*host.Size(), all[:4])
	win.Fence(ctx, window.NoSucceed)
	if err := win.Free(ctx); err != nil {
		panic(err)
	}
	// Output: true [0 1 2 3]
}
