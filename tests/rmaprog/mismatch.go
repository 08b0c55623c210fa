package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/substrate"
	"github.com/gorma-hpc/gorma/window"
)

// fenceMismatch, under GORMA_CHECK=1: two windows (win1 and win2, after the World's
// collective calls #1 and #2 that made them); rank 0 fences win1 while the others fence
// win2. Every rank must fail its Fence with a *runtime.MismatchError naming both
// Fences, printed on stdout, before anything of the Fence ran; then every rank fences
// win1 and frees both windows, which must work.
func fenceMismatch(ctx context.Context, w *runtime.World, _ opts) error {
	if !substrate.CallCheck() {
		return errors.New("run under GORMA_CHECK=1 (golaunch -x GORMA_CHECK=1)")
	}
	a, err := window.Allocate[int64](ctx, w, 8)
	if err != nil {
		return err
	}
	b, err := window.Allocate[int64](ctx, w, 8)
	if err != nil {
		return err
	}
	mine := b
	if w.Rank() == 0 {
		mine = a
	}
	err = mine.Fence(ctx, 0)
	var me *runtime.MismatchError
	if !errors.As(err, &me) {
		return fmt.Errorf("a Fence of another window than rank 0's returned %v, want a *runtime.MismatchError", err)
	}
	wantMine, wantTheirs := "win2", "win1"
	if w.Rank() == 0 {
		wantMine, wantTheirs = wantTheirs, wantMine
	}
	if me.Seq != 3 || me.Mine.Call != "window.Fence" || me.Mine.Win != wantMine || me.Theirs.Call != "window.Fence" || me.Theirs.Win != wantTheirs {
		return fmt.Errorf("mismatch %+v, want window.Fence #3 of %s against %s", me, wantMine, wantTheirs)
	}
	fmt.Printf("rank %d: %v\n", w.Rank(), err)
	if err := a.Fence(ctx, 0); err != nil {
		return fmt.Errorf("a Fence of win1 after the mismatch: %w", err)
	}
	if err := a.Free(ctx); err != nil {
		return err
	}
	return b.Free(ctx)
}
