package window_test

import (
	"context"
	"fmt"

	"github.com/gorma-hpc/gorma/datatype"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/window"
)

// A halo column put straight into the next rank's ghost column: a vector type on both
// sides, so neither side packs. Started on its own it is a world of one rank.
func ExampleWin_PutType() {
	ctx := context.Background()
	w, err := runtime.Init(ctx)
	if err != nil {
		panic(err)
	}
	defer w.Finalize(ctx)
	const rows, cols = 3, 4 // row-major; column 0 is the ghost column
	win, err := window.Allocate[float64](ctx, w, rows*cols)
	if err != nil {
		panic(err)
	}
	m := []float64{
		0, 1, 2, 3,
		0, 5, 6, 7,
		0, 9, 10, 11,
	}
	col, err := datatype.Vector[float64](rows, 1, cols)
	if err != nil {
		panic(err)
	}
	next := (w.Rank() + 1) % w.Size()
	win.Fence(ctx, 0)
	// Origin: column 3 of m. Target: column 0 of next's window (displacement 0).
	if err := win.PutType(m[cols-1:], 1, col, next, 0, 1, col); err != nil {
		panic(err)
	}
	win.Fence(ctx, window.NoSucceed)
	fmt.Println(win.Local())
	if err := win.Free(ctx); err != nil {
		panic(err)
	}
	// Output: [3 0 0 0 7 0 0 0 11 0 0 0]
}
