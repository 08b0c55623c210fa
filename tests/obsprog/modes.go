package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/gorma-hpc/gorma/runtime"
)

// ft runs mode ft, under golaunch --ft: the pattern of run, then "ready RANK PID", then
// Barriers until one fails with a peer's failure (the test kills a rank meanwhile). The
// survivor then recovers as a ULFM program does: it revokes the World, agrees on it, and
// shrinks it.
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
	if err := w.Revoke(); err != nil {
		return err
	}
	// The failure is not acknowledged: every survivor's Agree reports it.
	if _, err := w.Agree(ctx, 1); !errors.Is(err, runtime.ErrProcFailed) {
		return fmt.Errorf("agree: %v, want the failure", err)
	}
	s, err := w.Shrink(ctx)
	if err != nil {
		return err
	}
	return s.Free()
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

// fill runs mode "fill ROUNDS": EVENTS regions (GORMA_TRACE_EVENTS, or the runtime's
// default of 131072), then ROUNDS Sendrecvs of 8 bytes around the ring, so that the
// flight recorder is full and its last events carry flows.
func fill(ctx context.Context, w *runtime.World, rounds int) error {
	events := 1 << 17
	if v, err := strconv.Atoi(os.Getenv("GORMA_TRACE_EVENTS")); err == nil {
		events = v
	}
	for range events {
		runtime.TraceRegion(ctx, w, "fill")()
	}
	me, n := w.Rank(), w.Size()
	out, in := []int64{int64(me)}, []int64{0}
	for range rounds {
		if _, err := runtime.Sendrecv(ctx, w, out, (me+1)%n, 1, in, (me+n-1)%n, 1); err != nil {
			return err
		}
	}
	return nil
}

// crash runs mode "crash VICTIM HOW": the pattern of run, then "ready RANK PID". Rank
// VICTIM then records a region named "before the crash" and crashes HOW: panic (a
// panic) or nilwrite (a write through a nil pointer, which the Go runtime turns into a
// panic). The others block in a Barrier, until the abort ends them.
func crash(ctx context.Context, w *runtime.World, victim int, how string) error {
	if err := run(ctx, w); err != nil {
		return err
	}
	fmt.Printf("ready %d %d\n", w.Rank(), os.Getpid())
	if w.Rank() == victim {
		runtime.TraceRegion(ctx, w, "before the crash")()
		switch how {
		case "panic":
			panic(fmt.Sprintf("obsprog: rank %d crashes on purpose", victim))
		case "nilwrite":
			var p *int
			*p = 1
		}
		return fmt.Errorf("crash: unknown way %q", how)
	}
	return runtime.Barrier(ctx, w)
}
