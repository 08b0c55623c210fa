package collectives_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/collectives"
	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/pmi"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/runtimetest"
)

// TestAllreduceFailureFT: under GORMA_FT=1, a rank that fails while the others are in an
// Allreduce fails the call at every survivor, whatever the algorithm (short vectors go
// through shared memory or recursive doubling, long ones through rings or the direct
// exchange); the survivors then Shrink and their Allreduce on the new World is right.
func TestAllreduceFailureFT(t *testing.T) {
	for _, c := range []struct {
		tr   string
		n, m int
	}{{"shm", 4, 1}, {"shm", 6, 1 << 17}, {"tcp", 4, 1}, {"tcp", 3, 1 << 16}} {
		t.Run(fmt.Sprintf("%s/%d/%d", c.tr, c.n, c.m), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(30*time.Second))
			defer cancel()
			j, err := runtimetest.Start(ctx, c.n, runtimetest.Options{Transport: c.tr, Env: map[string]string{runtime.EnvFT: "1"}})
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				fctx, stop := context.WithTimeout(context.Background(), testbudget.Scale(3*time.Second))
				defer stop()
				j.Finalize(fctx) // rank 0 counts as failed: errors expected
				j.Close()
			}()
			each := func(f func(r int, w *runtime.World) error) error {
				errs := make([]error, c.n)
				var wg sync.WaitGroup
				for r := 1; r < c.n; r++ { // rank 0 is the one that fails
					wg.Add(1)
					go func() {
						defer wg.Done()
						if err := f(r, j.Worlds[r]); err != nil {
							errs[r] = fmt.Errorf("rank %d: %w", r, err)
						}
					}()
				}
				wg.Wait()
				return errors.Join(errs...)
			}
			// Every rank but 0 enters an Allreduce; rank 0 never comes, and fails.
			failed := make(chan error, 1)
			go func() {
				failed <- each(func(r int, w *runtime.World) error {
					err := collectives.Allreduce(ctx, w, nil, make([]float64, c.m), collectives.Sum[float64]())
					var pe *runtime.ProcError
					if !errors.Is(err, runtime.ErrProcFailed) || !errors.As(err, &pe) || pe.Rank != 0 {
						return fmt.Errorf("Allreduce across the failure: %v, want rank 0's failure", err)
					}
					return nil
				})
			}()
			time.Sleep(30 * time.Millisecond)
			for r := 1; r < c.n; r++ {
				j.Notify(r, pmi.Event{Kind: pmi.ProcFailed, Rank: 0, Host: "node0", Code: 9, Cause: "killed by signal 9"})
			}
			select {
			case err := <-failed:
				if err != nil {
					t.Fatal(err)
				}
			case <-ctx.Done():
				t.Fatal("an Allreduce still blocked after rank 0 failed")
			}
			err = each(func(r int, w *runtime.World) error {
				s, err := w.Shrink(ctx)
				if err != nil {
					return err
				}
				out := make([]float64, c.m)
				in := make([]float64, c.m)
				for i := range in {
					in[i] = float64(r + i)
				}
				if err := collectives.Allreduce(ctx, s, in, out, collectives.Sum[float64]()); err != nil {
					return fmt.Errorf("Allreduce on the shrunk World: %w", err)
				}
				sumR := float64(c.n * (c.n - 1) / 2) // the ranks 1..n-1
				for i, v := range out {
					if want := sumR + float64((c.n-1)*i); v != want {
						return fmt.Errorf("shrunk Allreduce: out[%d] = %v, want %v", i, v, want)
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestAllreduceRevokedFT: a rank that revokes the World instead of joining an Allreduce
// ends the others' call with ErrRevoked, over shm (whose waits are on shared memory,
// outside the runtime's messages) and tcp.
func TestAllreduceRevokedFT(t *testing.T) {
	for _, c := range []struct {
		tr   string
		n, m int
	}{{"shm", 3, 1}, {"shm", 3, 1 << 16}, {"tcp", 3, 1}} {
		t.Run(fmt.Sprintf("%s/%d", c.tr, c.m), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(30*time.Second))
			defer cancel()
			j, err := runtimetest.Start(ctx, c.n, runtimetest.Options{Transport: c.tr, Env: map[string]string{runtime.EnvFT: "1"}})
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				fctx, stop := context.WithTimeout(context.Background(), testbudget.Scale(5*time.Second))
				defer stop()
				j.Finalize(fctx)
				j.Close()
			}()
			errs := make(chan error, c.n)
			for _, w := range j.Worlds { // one Allreduce by every rank sets up the scratch
				go func() {
					errs <- collectives.Allreduce(ctx, w, nil, make([]float64, c.m), collectives.Sum[float64]())
				}()
			}
			for range c.n {
				if err := <-errs; err != nil {
					t.Fatal(err)
				}
			}
			for _, w := range j.Worlds[1:] {
				go func() {
					errs <- collectives.Allreduce(ctx, w, nil, make([]float64, c.m), collectives.Sum[float64]())
				}()
			}
			time.Sleep(30 * time.Millisecond) // past the spin: asleep on the doorbell
			if err := j.Worlds[0].Revoke(); err != nil {
				t.Fatal(err)
			}
			for range c.n - 1 {
				if err := <-errs; !errors.Is(err, runtime.ErrRevoked) {
					t.Fatalf("Allreduce on a World revoked meanwhile: %v, want ErrRevoked", err)
				}
			}
		})
	}
}
