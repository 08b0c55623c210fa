package window_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/pmi"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/window"
)

// TestUnlockDeadTarget: once a rank is known to have failed, Flush and Unlock of a lock
// epoch on it return a *window.Error naming it and wrapping ErrProcFailed, on shm (where
// the Puts were copies, complete at once) and on tcp.
func TestUnlockDeadTarget(t *testing.T) {
	for _, tr := range []string{"shm", "tcp"} {
		t.Run(tr, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(20*time.Second))
			defer cancel()
			j, wins := failureJob(t, ctx, tr)
			w1, w2 := wins[1], wins[2]
			if err := w1.Lock(ctx, window.Shared, 0, 0); err != nil {
				t.Fatal(err)
			}
			if err := w1.Put([]int64{7}, 0, 1); err != nil {
				t.Fatal(err)
			}
			if err := w2.Lock(ctx, window.Shared, 0, 0); err != nil {
				t.Fatal(err)
			}
			if err := w2.Put([]int64{8}, 0, 2); err != nil {
				t.Fatal(err)
			}
			for _, r := range []int{1, 2} {
				j.Notify(r, pmi.Event{Kind: pmi.ProcFailed, Rank: 0, Host: "node0", Code: 9, Cause: "killed by signal 9"})
			}
			check := func(what string, err error) {
				t.Helper()
				var we *window.Error
				if !errors.Is(err, runtime.ErrProcFailed) || !errors.As(err, &we) || we.Rank != 0 {
					t.Fatalf("%s: got %v, want a *window.Error naming rank 0 and wrapping ErrProcFailed", what, err)
				}
				t.Logf("%s: %v", what, err)
			}
			// The failure reaches each rank's runtime on its own schedule: Flush, which
			// may be repeated, reports it once it is known.
			for _, w := range []*window.Win[int64]{w1, w2} {
				for w.Flush(ctx, 0) == nil {
					if ctx.Err() != nil {
						t.Fatal("Flush still succeeds on a rank reported failed")
					}
					time.Sleep(time.Millisecond)
				}
				check("Flush", w.Flush(ctx, 0))
				check("Unlock", w.Unlock(ctx, 0))
			}
		})
	}
}
