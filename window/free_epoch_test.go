package window_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/pmi"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/runtimetest"
	"github.com/gorma-hpc/gorma/window"
)

// wantRefused checks that err is Free's refusal naming rank and words: a *window.Error
// wrapping ErrEpoch, never a context error (the refusal needs no deadline).
func wantRefused(me int, err error, rank int, words ...string) error {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return fmt.Errorf("rank %d: Free ended with its context (%v), want a refusal naming rank %d", me, err, rank)
	}
	var we *window.Error
	if !errors.Is(err, window.ErrEpoch) || !errors.As(err, &we) || we.Rank != rank {
		return fmt.Errorf("rank %d: Free: %v, want a *window.Error of rank %d wrapping ErrEpoch", me, err, rank)
	}
	for _, w := range append([]string{fmt.Sprintf("rank %d ", rank)}, words...) {
		if !strings.Contains(err.Error(), w) {
			return fmt.Errorf("rank %d: Free: %q does not name %q", me, err, w)
		}
	}
	return nil
}

// ringThenFree shows the window usable at every rank (a ring of Puts under Fence) and
// frees it.
func ringThenFree(ctx context.Context, w *runtime.World, win *window.Win[int64]) error {
	me, n := w.Rank(), w.Size()
	if err := win.Fence(ctx, 0); err != nil {
		return fmt.Errorf("rank %d: Fence after a refused Free: %w", me, err)
	}
	if err := win.Put([]int64{int64(100 + me)}, (me+1)%n, 1); err != nil {
		return err
	}
	if err := win.Fence(ctx, 0); err != nil {
		return err
	}
	if got, want := win.Local()[1], int64(100+(me+n-1)%n); got != want {
		return fmt.Errorf("rank %d: after a refused Free the ring's Put left %d, want %d", me, got, want)
	}
	if err := win.Free(ctx); err != nil {
		return fmt.Errorf("rank %d: Free once the epoch is closed: %w", me, err)
	}
	return nil
}

// TestFreeRefusedLock: rank 1 holds a Lock on rank 0 and every rank calls Free (rank 0
// and the others first, rank 1 after a Put in its epoch). Every rank's Free fails with
// ErrEpoch naming rank 1 and its Lock on rank 0, and the window stays usable: rank 1
// reads its Put back and Unlocks, and the next Free succeeds at every rank.
func TestFreeRefusedLock(t *testing.T) {
	forLayouts(t, func(ctx context.Context, w *runtime.World) error {
		win, err := window.Allocate[int64](ctx, w, 8)
		if err != nil {
			return err
		}
		me := w.Rank()
		if me == 1 {
			if err := win.Lock(ctx, window.Exclusive, 0, 0); err != nil {
				return err
			}
		}
		if err := runtime.Barrier(ctx, w); err != nil { // rank 1 holds its lock now
			return err
		}
		if me == 1 {
			if err := win.Put([]int64{41}, 0, 0); err != nil {
				return err
			}
		}
		if err := wantRefused(me, win.Free(ctx), 1, "Lock on rank 0", "Unlock"); err != nil {
			return err
		}
		if me == 1 {
			got := make([]int64, 1)
			if err := win.Get(got, 0, 0); err != nil {
				return fmt.Errorf("Get after a refused Free: %w", err)
			}
			if err := win.Unlock(ctx, 0); err != nil {
				return err
			}
			if got[0] != 41 {
				return fmt.Errorf("Get after a refused Free read %d, want 41", got[0])
			}
		}
		return ringThenFree(ctx, w, win)
	})
}

// TestFreeRefusedLockAll: the last rank holds LockAll while every rank calls Free: every
// rank's Free fails naming it and LockAll; after UnlockAll, Free succeeds.
func TestFreeRefusedLockAll(t *testing.T) {
	forLayouts(t, func(ctx context.Context, w *runtime.World) error {
		win, err := window.Allocate[int64](ctx, w, 8)
		if err != nil {
			return err
		}
		me, last := w.Rank(), w.Size()-1
		if me == last {
			if err := win.LockAll(ctx, 0); err != nil {
				return err
			}
		}
		if err := runtime.Barrier(ctx, w); err != nil {
			return err
		}
		if err := wantRefused(me, win.Free(ctx), last, "LockAll", "UnlockAll"); err != nil {
			return err
		}
		if me == last {
			if err := win.UnlockAll(ctx); err != nil {
				return err
			}
		}
		return ringThenFree(ctx, w, win)
	})
}

// TestFreeRefusedExposure: rank 0 has a PSCW exposure epoch open (Post to rank 1, whose
// Start has not come) while every rank calls Free: every rank's Free fails naming rank 0
// and its exposure epoch. Then rank 1 Starts, Puts and Completes, rank 0 Waits, and Free
// succeeds.
func TestFreeRefusedExposure(t *testing.T) {
	forLayouts(t, func(ctx context.Context, w *runtime.World) error {
		win, err := window.Allocate[int64](ctx, w, 8)
		if err != nil {
			return err
		}
		me := w.Rank()
		if me == 0 {
			if err := win.Post(ctx, []int{1}, 0); err != nil {
				return err
			}
		}
		if err := wantRefused(me, win.Free(ctx), 0, "exposure", "Wait"); err != nil {
			return err
		}
		switch me {
		case 0:
			if err := win.Wait(ctx); err != nil {
				return err
			}
			if got := win.Local()[2]; got != 7 {
				return fmt.Errorf("rank 0: the Put of rank 1's access epoch left %d, want 7", got)
			}
		case 1:
			if err := win.Start(ctx, []int{0}, 0); err != nil {
				return err
			}
			if err := win.Put([]int64{7}, 0, 2); err != nil {
				return err
			}
			if err := win.Complete(ctx); err != nil {
				return err
			}
		}
		return ringThenFree(ctx, w, win)
	})
}

// TestFreeRefusedLowestRank: every rank but 0 refuses (an exposure epoch for rank 0):
// every rank's Free names rank 1, the lowest.
func TestFreeRefusedLowestRank(t *testing.T) {
	forLayouts(t, func(ctx context.Context, w *runtime.World) error {
		win, err := window.Allocate[int64](ctx, w, 8)
		if err != nil {
			return err
		}
		me, last := w.Rank(), w.Size()-1
		if me != 0 {
			if err := win.Post(ctx, []int{0}, 0); err != nil {
				return err
			}
		}
		if err := wantRefused(me, win.Free(ctx), 1, "exposure"); err != nil {
			return err
		}
		if me == 0 {
			others := make([]int, 0, last)
			for r := 1; r <= last; r++ {
				others = append(others, r)
			}
			if err := win.Start(ctx, others, 0); err != nil {
				return err
			}
			if err := win.Complete(ctx); err != nil {
				return err
			}
		} else if err := win.Wait(ctx); err != nil {
			return err
		}
		return ringThenFree(ctx, w, win)
	})
}

// TestFreeWithoutPeerEndsWithContext: rank 0 frees while the other ranks never call Free.
// That is a genuine wait: rank 0's Free ends with its context's error, and the window is
// freed at rank 0 (a second Free fails with ErrFreed).
func TestFreeWithoutPeerEndsWithContext(t *testing.T) {
	forLayouts(t, func(ctx context.Context, w *runtime.World) error {
		win, err := window.Allocate[int64](ctx, w, 8)
		if err != nil {
			return err
		}
		if w.Rank() == 0 {
			short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
			err := win.Free(short)
			cancel()
			var we *window.Error
			if !errors.Is(err, context.DeadlineExceeded) || !errors.As(err, &we) {
				return fmt.Errorf("Free while no peer frees: %v, want a *window.Error wrapping DeadlineExceeded", err)
			}
			if err := win.Free(ctx); !errors.Is(err, window.ErrFreed) {
				return fmt.Errorf("a second Free: %v, want ErrFreed", err)
			}
		}
		return runtime.Barrier(ctx, w) // the others wait for rank 0, outside the window
	})
}

// TestFreeFailureFT: under GORMA_FT=1 a rank that fails while the others wait in Free
// fails their Free with ErrProcFailed, bounded. A second Free fails at once: ErrFreed, or
// ErrProcFailed where the first Free learnt of the failure while it completed the
// operations, before it freed anything.
func TestFreeFailureFT(t *testing.T) {
	for _, tr := range []string{"shm", "tcp"} {
		t.Run(tr, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(30*time.Second))
			defer cancel()
			const n = 3
			j, err := runtimetest.Start(ctx, n, runtimetest.Options{Transport: tr, Env: map[string]string{runtime.EnvFT: "1"}})
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				fctx, stop := context.WithTimeout(context.Background(), testbudget.Scale(3*time.Second))
				defer stop()
				j.Finalize(fctx) // rank 0 counts as failed: errors expected
				j.Close()
			}()
			wins := make([]*window.Win[int64], n)
			errs := make(chan error, n)
			for r, w := range j.Worlds {
				go func() {
					var err error
					wins[r], err = window.Allocate[int64](ctx, w, 4)
					errs <- err
				}()
			}
			for range n {
				if err := <-errs; err != nil {
					t.Fatal(err)
				}
			}
			for r := 1; r < n; r++ { // rank 0 never calls Free, and fails
				go func() { errs <- wins[r].Free(ctx) }()
			}
			time.Sleep(30 * time.Millisecond)
			for r := 1; r < n; r++ {
				j.Notify(r, pmi.Event{Kind: pmi.ProcFailed, Rank: 0, Host: "node0", Code: 9, Cause: "killed by signal 9"})
			}
			for range n - 1 {
				select {
				case err := <-errs:
					if !errors.Is(err, runtime.ErrProcFailed) {
						t.Fatalf("Free across the failure: %v, want ErrProcFailed", err)
					}
				case <-ctx.Done():
					t.Fatal("a Free still blocked after rank 0 failed")
				}
			}
			for r := 1; r < n; r++ {
				if err := wins[r].Free(ctx); !isAny(err, window.ErrFreed, runtime.ErrProcFailed) {
					t.Fatalf("rank %d: a second Free after the failure: %v, want ErrFreed or ErrProcFailed", r, err)
				}
			}
		})
	}
}
