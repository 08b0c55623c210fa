package window_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/runtimetest"
	"github.com/gorma-hpc/gorma/window"
)

// TestOverlappingFences: the Fences of two windows of one World, each a Barrier on the
// windows' World (GORMA_WINDOW_EAGER=0), may run from two goroutines at once: they take
// turns there, and every one of them returns.
func TestOverlappingFences(t *testing.T) {
	t.Setenv("GORMA_WINDOW_EAGER", "0")
	const fences = 20
	ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(60*time.Second))
	defer cancel()
	runtimetest.Run(t, 4, runtimetest.Options{}, func(w *runtime.World) error {
		a, err := window.Allocate[int64](ctx, w, 4)
		if err != nil {
			return err
		}
		b, err := window.Allocate[int64](ctx, w, 4)
		if err != nil {
			return err
		}
		errs := make(chan error, 2)
		for name, win := range map[string]*window.Win[int64]{"a": a, "b": b} {
			go func() {
				for i := range fences {
					if err := win.Fence(ctx, 0); err != nil {
						errs <- fmt.Errorf("rank %d: Fence %d of window %s: %w", w.Rank(), i, name, err)
						return
					}
				}
				errs <- nil
			}()
		}
		for range 2 {
			if err := <-errs; err != nil {
				return err
			}
		}
		if err := a.Free(ctx); err != nil {
			return err
		}
		return b.Free(ctx)
	})
}

// TestFreeDeleteFunctionFences: an attribute's delete function, which Free runs, may make
// a collective call of another window of the World: Free has given its turn back.
func TestFreeDeleteFunctionFences(t *testing.T) {
	t.Setenv("GORMA_WINDOW_EAGER", "0")
	ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(60*time.Second))
	defer cancel()
	runtimetest.Run(t, 3, runtimetest.Options{}, func(w *runtime.World) error {
		a, err := window.Allocate[int64](ctx, w, 4)
		if err != nil {
			return err
		}
		b, err := window.Allocate[int64](ctx, w, 4)
		if err != nil {
			return err
		}
		var fenced error
		kv := window.NewKeyval(func(*window.Win[int64]) { fenced = b.Fence(ctx, 0) })
		if err := window.SetAttr(a, kv, b); err != nil {
			return err
		}
		if err := a.Free(ctx); err != nil {
			return err
		}
		if fenced != nil {
			return fmt.Errorf("rank %d: the delete function's Fence: %w", w.Rank(), fenced)
		}
		return b.Free(ctx)
	})
}
