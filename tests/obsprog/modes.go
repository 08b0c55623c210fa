package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/gorma-hpc/gorma/runtime"
)

// ft runs mode ft, under golaunch --ft: the pattern of run, then "ready RANK PID", then
// Barriers until one fails with a peer's failure (the test kills a rank meanwhile). The
// survivor then revokes the World, as a ULFM program does before it recovers.
func ft(ctx context.Context, w *runtime.World) error {
	if err := run(ctx, w); err != nil {
		return err
	}
	fmt.Printf("ready %d %d\n", w.Rank(), os.Getpid())
	var err error
	for err == nil {
		err = runtime.Barrier(ctx, w)
		time.Sleep(2 * time.Millisecond)
	}
	if !errors.Is(err, runtime.ErrProcFailed) && !errors.Is(err, runtime.ErrRevoked) {
		return err
	}
	return w.Revoke()
}

// untilGone runs mode "untilgone PATH": the pattern of run, then "ready RANK PID", then
// it waits until PATH can no longer be found (the test removes it, or its folder).
func untilGone(ctx context.Context, w *runtime.World, path string) error {
	if err := run(ctx, w); err != nil {
		return err
	}
	fmt.Printf("ready %d %d\n", w.Rank(), os.Getpid())
	for {
		if _, err := os.Stat(path); err != nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s to go: %w", path, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}
