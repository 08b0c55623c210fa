package window_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/window"
)

// deferredFree is a rank program as a Go user writes it: the windows and a Dup are freed
// by defer, and Finalize is called before the function returns, so the deferred Frees
// run after it. Their errors are what it returns.
func deferredFree(ctx context.Context, w *runtime.World) (err error) {
	keep := func(f func() error) {
		if ferr := f(); err == nil {
			err = ferr
		}
	}
	win, err := window.Allocate[float64](ctx, w, 4)
	if err != nil {
		return err
	}
	defer keep(func() error { return win.Free(ctx) })
	d, err := w.Dup()
	if err != nil {
		return err
	}
	defer keep(d.Free)
	shared, err := window.AllocateShared[int64](ctx, d, 2)
	if err != nil {
		return err
	}
	defer keep(func() error { return shared.Free(ctx) })
	dyn, err := window.CreateDynamic[int32](ctx, w)
	if err != nil {
		return err
	}
	defer keep(func() error { return dyn.Free(ctx) })
	if _, err := dyn.Attach(ctx, make([]int32, 4)); err != nil {
		return err
	}
	if err := win.Fence(ctx, 0); err != nil {
		return err
	}
	if err := win.Put([]float64{float64(w.Rank())}, (w.Rank()+1)%w.Size(), 0); err != nil {
		return err
	}
	if err := win.Fence(ctx, 0); err != nil {
		return err
	}
	if got, want := win.Local()[0], float64((w.Rank()+w.Size()-1)%w.Size()); got != want {
		return fmt.Errorf("rank %d: got %v, want %v", w.Rank(), got, want)
	}
	return w.Finalize(ctx)
}

// TestFreeAfterFinalize: Free of windows of every flavor and of a Dup, deferred past
// Finalize, returns nil; a window freed before Finalize still fails a second Free with
// ErrFreed; and after Free the window's calls fail.
func TestFreeAfterFinalize(t *testing.T) {
	forLayouts(t, func(ctx context.Context, w *runtime.World) error {
		early, err := window.Allocate[int64](ctx, w, 1)
		if err != nil {
			return err
		}
		if err := early.Free(ctx); err != nil {
			return err
		}
		late, err := window.Allocate[int64](ctx, w, 1)
		if err != nil {
			return err
		}
		if err := deferredFree(ctx, w); err != nil {
			return fmt.Errorf("rank %d: a deferred Free after Finalize: %w", w.Rank(), err)
		}
		if err := early.Free(ctx); !errors.Is(err, window.ErrFreed) {
			return fmt.Errorf("rank %d: a second Free, the first before Finalize: %v, want ErrFreed", w.Rank(), err)
		}
		if err := late.Free(ctx); err != nil {
			return fmt.Errorf("rank %d: Free after Finalize: %v, want nil", w.Rank(), err)
		}
		if err := late.Put([]int64{1}, 0, 0); !errors.Is(err, window.ErrFreed) {
			return fmt.Errorf("rank %d: Put after Free after Finalize: %v, want ErrFreed", w.Rank(), err)
		}
		if err := w.Free(); !errors.Is(err, runtime.ErrInvalid) {
			return fmt.Errorf("rank %d: Free of Init's World after Finalize: %v, want ErrInvalid", w.Rank(), err)
		}
		return nil
	})
}
