package window_test

import (
	"context"
	"fmt"

	"testing"

	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/window"
)

// TestCreateEmpty: MPI_Win_create(NULL, 0) is legal. Rank 1 creates its window over an
// empty buffer (and, in an Allocate window, with 0 elements) while the others pass
// memory: creation succeeds everywhere, an access to rank 1 of one element fails with
// ErrRange naming its 0 elements, one of 0 elements succeeds, the others' memory works
// as usual, and Free succeeds.
func TestCreateEmpty(t *testing.T) {
	forLayouts(t, func(ctx context.Context, w *runtime.World) error {
		me, n := w.Rank(), w.Size()
		for _, flavor := range []string{"Create", "Allocate"} {
			var win *window.Win[int64]
			var err error
			count := 4
			if me == 1 {
				count = 0
			}
			if flavor == "Create" {
				var buf []int64
				if count > 0 {
					buf = make([]int64, count)
				}
				win, err = window.Create(ctx, w, buf)
			} else {
				win, err = window.Allocate[int64](ctx, w, count)
			}
			if err != nil {
				return fmt.Errorf("%s with %d elements: %w", flavor, count, err)
			}
			if err := win.Fence(ctx, 0); err != nil {
				return err
			}
			if err := wantWinErr(flavor+": Put of 1 element to the empty rank", win.Put([]int64{7}, 1, 0), []string{"rank 1's 0"}, window.ErrRange); err != nil {
				return err
			}
			if err := wantWinErr(flavor+": Get of 1 element from the empty rank", win.Get(make([]int64, 1), 1, 0), []string{"rank 1's 0"}, window.ErrRange); err != nil {
				return err
			}
			if err := win.Put(nil, 1, 0); err != nil {
				return fmt.Errorf("%s: Put of 0 elements to the empty rank: %w", flavor, err)
			}
			next := (me + 1) % n
			if next == 1 {
				next = (next + 1) % n
			}
			if me != 1 && next != me { // a ring of the ranks with memory
				if err := win.Put([]int64{int64(100 + me)}, next, 0); err != nil {
					return err
				}
			}
			if err := win.Fence(ctx, 0); err != nil {
				return err
			}
			if me != 1 {
				prev := (me - 1 + n) % n
				if prev == 1 {
					prev = (prev - 1 + n) % n
				}
				if got := win.Local()[0]; prev != me && got != int64(100+prev) {
					return fmt.Errorf("%s: rank %d holds %d, want rank %d's %d", flavor, me, got, prev, 100+prev)
				}
			} else if len(win.Local()) != 0 {
				return fmt.Errorf("%s: the empty rank's Local has %d elements", flavor, len(win.Local()))
			}
			if err := win.Free(ctx); err != nil {
				return err
			}
		}
		return nil
	})
}

// TestFenceThenOtherEpochs follows MPI's rule that a Fence starts an epoch only if RMA
// calls and another Fence follow it (MPICH's mixedsync): after a bare Fence, Lock and
// Unlock, LockAll and UnlockAll, and Post, Start, Complete and Wait all work, and so do
// RMA calls in each; after a Fence whose epoch an RMA call used, Lock fails with ErrEpoch
// until the next Fence; an RMA call after a Fence asserting NoSucceed fails with
// ErrEpoch; a Fence asserting NoPrecede after RMA calls fails at that rank only, with
// every rank still through it.
func TestFenceThenOtherEpochs(t *testing.T) {
	forLayouts(t, func(ctx context.Context, w *runtime.World) error {
		win, err := window.Allocate[int64](ctx, w, 8)
		if err != nil {
			return err
		}
		me, n := w.Rank(), w.Size()
		peer := (me + 1) % n
		from := (me - 1 + n) % n
		steps := []func() error{
			func() error { return win.Fence(ctx, 0) },
			// A bare Fence, then a passive-target epoch.
			func() error { return win.Lock(ctx, window.Exclusive, peer, 0) },
			func() error { return win.Put([]int64{int64(me)}, peer, 1) },
			func() error { return win.Unlock(ctx, peer) },
			func() error {
				return wantWinErr("Put after the Lock ended the Fence's epoch", win.Put([]int64{1}, peer, 0), []string{"no Fence, Start or Lock epoch"}, window.ErrEpoch)
			},
			func() error { return win.Fence(ctx, 0) },
			func() error {
				if got := win.Local()[1]; got != int64(from) {
					return fmt.Errorf("element 1 holds %d after the locked Put, want %d", got, from)
				}
				return nil
			},
			// A bare Fence, then LockAll.
			func() error { return win.LockAll(ctx, 0) },
			func() error { return win.Put([]int64{int64(10 + me)}, peer, 2) },
			func() error { return win.UnlockAll(ctx) },
			func() error { return win.Fence(ctx, 0) },
			// A bare Fence, then PSCW: everyone exposes to its predecessor.
			func() error { return win.Post(ctx, []int{from}, 0) },
			func() error { return win.Start(ctx, []int{peer}, 0) },
			func() error { return win.Put([]int64{int64(20 + me)}, peer, 3) },
			func() error { return win.Complete(ctx) },
			func() error { return win.Wait(ctx) },
			func() error {
				if got := win.Local()[2]; got != int64(10+from) {
					return fmt.Errorf("element 2 holds %d after LockAll's Put, want %d", got, 10+from)
				}
				if got := win.Local()[3]; got != int64(20+from) {
					return fmt.Errorf("element 3 holds %d after PSCW's Put, want %d", got, 20+from)
				}
				return nil
			},
			// A Fence whose epoch an RMA call used: no Lock until the next Fence.
			func() error { return win.Fence(ctx, 0) },
			func() error { return win.Put([]int64{int64(30 + me)}, peer, 4) },
			func() error {
				return wantWinErr("Lock in a used Fence epoch", win.Lock(ctx, window.Shared, peer, 0), []string{"Fence epoch that RMA calls of this rank used"}, window.ErrEpoch)
			},
			func() error {
				return wantWinErr("Post in a used Fence epoch", win.Post(ctx, []int{from}, 0), []string{"Fence epoch that RMA calls of this rank used"}, window.ErrEpoch)
			},
			// NoPrecede after RMA calls: rank 0 only; every rank gets through the Fence.
			func() error {
				if me == 0 {
					return wantWinErr("Fence(NoPrecede) after a Put", win.Fence(ctx, window.NoPrecede), []string{"NoPrecede"}, window.ErrEpoch)
				}
				return win.Fence(ctx, 0)
			},
			func() error {
				if got := win.Local()[4]; got != int64(30+from) {
					return fmt.Errorf("element 4 holds %d after the NoPrecede Fence, want %d", got, 30+from)
				}
				return nil
			},
			// NoSucceed closes the epoch: RMA fails, Lock works.
			func() error { return win.Fence(ctx, window.NoPrecede|window.NoSucceed) },
			func() error {
				return wantWinErr("Put after Fence(NoSucceed)", win.Put([]int64{1}, peer, 0), []string{"no Fence, Start or Lock epoch"}, window.ErrEpoch)
			},
			func() error { return win.Lock(ctx, window.Shared, peer, 0) },
			func() error { return win.Unlock(ctx, peer) },
		}
		for i, step := range steps {
			if err := step(); err != nil {
				return fmt.Errorf("step %d: %w", i, err)
			}
		}
		return win.Free(ctx)
	})
}
