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

// TestFenceWakesSleepers: ranks asleep in a Fence on one host wake when the last rank
// arrives, whose counts are release stores, rung after a full fence (fence.go). Sleeps
// are made a minute long, so that a ring that wakes nobody fails the test instead of
// costing a millisecond.
func TestFenceWakesSleepers(t *testing.T) {
	defer window.SetSleepMax(time.Minute)()
	const late = 30 * time.Millisecond // the others are well asleep by then
	runtimetest.Run(t, 3, runtimetest.Options{}, func(w *runtime.World) error {
		ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(30*time.Second))
		defer cancel()
		win, err := window.Allocate[int64](ctx, w, 1)
		if err != nil {
			return err
		}
		me, size := w.Rank(), w.Size()
		if err := win.Fence(ctx, 0); err != nil {
			return err
		}
		for epoch := range 2 * size {
			lateRank := epoch % size
			if me == lateRank {
				time.Sleep(late)
				v := []int64{int64(100*epoch + me)}
				if err := win.Put(v, (me+1)%size, 0); err != nil {
					return err
				}
			}
			start := time.Now()
			if err := win.Fence(ctx, 0); err != nil {
				return fmt.Errorf("epoch %d: Fence after %v: %w", epoch, time.Since(start), err)
			}
			if me == (lateRank+1)%size {
				if got, want := win.Local()[0], int64(100*epoch+lateRank); got != want {
					return fmt.Errorf("epoch %d: element 0 = %d after the Fence, want %d", epoch, got, want)
				}
			}
		}
		return win.Free(ctx)
	})
}
