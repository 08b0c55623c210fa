package main

import (
	"context"
	"fmt"

	"github.com/gorma-hpc/gorma/runtime"
)

// splitRun runs lock-counter, fence and acc on two Worlds made by Split (the even and the
// odd ranks, each in reverse order), whose ranks the windows address in the group's
// numbering, while a Sendrecv ring runs on each group between the scenarios. It does so
// three times, freeing the split Worlds after each round (World.Free), so that the later
// rounds run on reused contexts.
func splitRun(ctx context.Context, w *runtime.World, o opts) error {
	for round := range 3 {
		if err := splitRound(ctx, w, o); err != nil {
			return fmt.Errorf("round %d: %w", round, err)
		}
	}
	return nil
}

func splitRound(ctx context.Context, w *runtime.World, o opts) error {
	g, err := w.Split(ctx, w.Rank()%2, -w.Rank())
	if err != nil {
		return err
	}
	want := (w.Size() - w.Rank() - 1) / 2 // by key -rank: the group's highest rank first
	if g.Rank() != want {
		return fmt.Errorf("split: group rank %d, want %d", g.Rank(), want)
	}
	for _, sc := range []struct {
		name string
		f    scenario
	}{{"lock-counter", lockCounter}, {"fence", fenceAllToAll}, {"acc", accumulateAll}} {
		if err := sc.f(ctx, g, o); err != nil {
			return fmt.Errorf("%s on the group: %w", sc.name, err)
		}
		n, me := g.Size(), g.Rank()
		got := []int64{-1}
		st, err := runtime.Sendrecv(ctx, g, []int64{int64(w.Rank())}, (me+1)%n, 1, got, runtime.AnySource, 1)
		if err != nil {
			return err
		}
		prev := (me + n - 1) % n
		if st.Source != prev || got[0] != int64(w.Rank()+2*(me-prev)) {
			return fmt.Errorf("ring after %s: job rank %d from group rank %d, want group rank %d", sc.name, got[0], st.Source, prev)
		}
	}
	if err := runtime.Barrier(ctx, g); err != nil {
		return err
	}
	return g.Free()
}
