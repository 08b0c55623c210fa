package window_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/pmi"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/runtimetest"
	"github.com/gorma-hpc/gorma/window"
)

// TestFenceFailureFT: under GORMA_FT=1 a rank that fails while the others wait in Fence
// fails their Fence, bounded; a Put to it fails too, and a survivor's own window memory
// keeps what the last completed epoch left there.
func TestFenceFailureFT(t *testing.T) {
	for _, tr := range []string{"shm", "tcp"} {
		t.Run(tr, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(30*time.Second))
			defer cancel()
			const n = 4
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
					win, err := window.Allocate[int64](ctx, w, 4)
					if err == nil {
						wins[r] = win
						err = win.Fence(ctx, 0)
					}
					if err == nil { // each rank writes its rank into the next rank's window
						err = win.Put([]int64{int64(r)}, (r+1)%n, 0)
					}
					if err == nil {
						err = win.Fence(ctx, 0)
					}
					errs <- err
				}()
			}
			for range n {
				if err := <-errs; err != nil {
					t.Fatal(err)
				}
			}
			for r := 1; r < n; r++ { // rank 0 is absent from the next Fence, and fails
				go func() { errs <- wins[r].Fence(ctx, 0) }()
			}
			time.Sleep(30 * time.Millisecond)
			for r := 1; r < n; r++ {
				j.Notify(r, pmi.Event{Kind: pmi.ProcFailed, Rank: 0, Host: "node0", Code: 9, Cause: "killed by signal 9"})
			}
			for range n - 1 {
				select {
				case err := <-errs:
					if !errors.Is(err, runtime.ErrProcFailed) {
						t.Fatalf("Fence across the failure: %v, want ErrProcFailed", err)
					}
				case <-ctx.Done():
					t.Fatal("a Fence still blocked after rank 0 failed")
				}
			}
			for r := 1; r < n; r++ {
				if got := wins[r].Local()[0]; got != int64(r-1) {
					t.Fatalf("rank %d's window holds %d after the failure, want %d", r, got, r-1)
				}
			}
			err = wins[1].Lock(ctx, window.Shared, 0, 0)
			if err == nil {
				if err = wins[1].Put([]int64{1}, 0, 0); err == nil {
					err = wins[1].Flush(ctx, 0)
				}
			}
			if !errors.Is(err, runtime.ErrProcFailed) {
				t.Fatalf("a lock epoch on the failed rank: %v, want ErrProcFailed", err)
			}
		})
	}
}
