package window_test

import (
	"context"
	"fmt"

	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/window"
)

// A library keeps per-window state as an attribute; the window's Free runs its delete
// function, which releases the state.
func ExampleNewKeyval() {
	ctx := context.Background()
	w, err := runtime.Init(ctx)
	if err != nil {
		panic(err)
	}
	defer w.Finalize(ctx)

	type stats struct{ puts int }
	key := window.NewKeyval(func(s *stats) { fmt.Println("released stats of", s.puts, "puts") })

	win, err := window.Allocate[float64](ctx, w, 8)
	if err != nil {
		panic(err)
	}
	window.SetAttr(win, key, &stats{})
	win.Fence(ctx, 0)
	win.Put([]float64{1, 2}, w.Rank(), 0)
	if s, ok, _ := window.GetAttr(win, key); ok {
		s.puts++
	}
	win.Fence(ctx, window.NoSucceed)
	if err := win.Free(ctx); err != nil {
		panic(err)
	}
	// Output: released stats of 1 puts
}

// The accessors that answer MPI's predefined window attributes, and a window's name.
func ExampleWin_Model() {
	ctx := context.Background()
	w, err := runtime.Init(ctx)
	if err != nil {
		panic(err)
	}
	defer w.Finalize(ctx)

	win, err := window.Allocate[int32](ctx, w, 10)
	if err != nil {
		panic(err)
	}
	win.SetName("grid")
	fmt.Println(win.Name(), win.Flavor(), win.Model(), win.DispUnit(), win.Len(w.Rank())*win.DispUnit())
	if err := win.Free(ctx); err != nil {
		panic(err)
	}
	// Output: grid allocate unified 4 40
}
