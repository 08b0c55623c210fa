package main

import (
	"context"
	"fmt"

	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/window"
)

// freedWrite is issue 36's stale slice: every rank keeps the Local() slice of a window,
// frees the window, allocates a new one and writes through the stale slice. By default
// the freed memory is quarantined, so the new window (read here and from the next rank)
// is untouched. Under GORMA_CHECK=1 the write faults and the process dies; Free has
// printed the window's name and address range on stderr.
func freedWrite(ctx context.Context, w *runtime.World, _ opts) error {
	const n = 8
	old, err := window.Allocate[int64](ctx, w, n)
	if err != nil {
		return err
	}
	stale := old.Local()
	if err := old.Free(ctx); err != nil {
		return err
	}
	win, err := window.Allocate[int64](ctx, w, n)
	if err != nil {
		return err
	}
	stale[0] = 42 // the program's bug: faults here under GORMA_CHECK=1
	if err := win.Fence(ctx, 0); err != nil {
		return err
	}
	next := (w.Rank() + 1) % w.Size()
	got := make([]int64, n)
	if err := win.Get(got, next, 0); err != nil {
		return err
	}
	if err := win.Fence(ctx, 0); err != nil {
		return err
	}
	for i, v := range win.Local() {
		if v != 0 {
			return fmt.Errorf("element %d of the new window is %d after a write through the freed window's slice, want 0", i, v)
		}
	}
	for i, v := range got {
		if v != 0 {
			return fmt.Errorf("element %d of rank %d's new window is %d, want 0", i, next, v)
		}
	}
	return win.Free(ctx)
}
