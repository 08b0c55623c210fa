package window_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/window"
)

// TestWindowsOnFreedWorlds: windows on Worlds that are made and freed per phase, on Dups
// and on split Worlds (whose blocks hold 8 Worlds, the window's own Dup included), far
// more phases than a split World's block could serve without Free; and a window whose
// World is freed under it keeps working until its own Free, as in MPI.
func TestWindowsOnFreedWorlds(t *testing.T) {
	forLayouts(t, func(ctx context.Context, w *runtime.World) error {
		n, r := w.Size(), w.Rank()
		for phase := range 40 {
			var pw *runtime.World
			var err error
			if phase%2 == 0 {
				pw, err = w.Dup()
			} else {
				pw, err = w.Split(ctx, 0, -r)
			}
			if err != nil {
				return fmt.Errorf("phase %d: %w", phase, err)
			}
			win, err := window.Allocate[int64](ctx, pw, 4)
			if err != nil {
				return fmt.Errorf("phase %d: %w", phase, err)
			}
			if err := win.Fence(ctx, 0); err != nil {
				return err
			}
			me := pw.Rank()
			if err := win.Put([]int64{int64(phase*100 + me)}, (me+1)%n, 0); err != nil {
				return err
			}
			if err := win.Fence(ctx, 0); err != nil {
				return err
			}
			if want := int64(phase*100 + (me+n-1)%n); win.Local()[0] != want {
				return fmt.Errorf("phase %d: got %d, want %d", phase, win.Local()[0], want)
			}
			if err := win.Free(ctx); err != nil {
				return err
			}
			if err := pw.Free(); err != nil {
				return fmt.Errorf("phase %d: %w", phase, err)
			}
		}

		// Freeing the World under an open window: the window's Dup of it stays until
		// the window is freed.
		d, err := w.Dup()
		if err != nil {
			return err
		}
		win, err := window.Allocate[int64](ctx, d, 4)
		if err != nil {
			return err
		}
		if err := d.Free(); err != nil {
			return err
		}
		if err := win.Fence(ctx, 0); err != nil {
			return fmt.Errorf("Fence on a window of a freed World: %v", err)
		}
		if err := win.Free(ctx); err != nil {
			return fmt.Errorf("Free of a window of a freed World: %v", err)
		}
		return nil
	})
}
