package window_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/runtimetest"
	"github.com/gorma-hpc/gorma/runtime/substrate"
	"github.com/gorma-hpc/gorma/window"
)

// TestLazyWindow: a window larger than GORMA_WINDOW_EAGER connects no pair at creation
// or in a Fence beyond the collectives' partners (O(log N)); a Lock, Put and Unlock to one
// rank reach that rank; a Fence epoch that puts to every rank reaches every rank; and
// every value lands where it was put, on shm and on tcp (without the page cache, whose
// coherence regions every rank maps at creation).
func TestLazyWindow(t *testing.T) {
	t.Setenv("GORMA_WINDOW_EAGER", "4")
	const n = 32
	for _, tr := range []string{"shm", "tcp"} {
		t.Run(tr, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(60*time.Second))
			defer cancel()
			runtimetest.Run(t, n, runtimetest.Options{Transport: tr}, func(w *runtime.World) error {
				me := w.Rank()
				win, err := window.Allocate[int64](ctx, w, n, window.NoCache())
				if err != nil {
					return err
				}
				if err := win.Fence(ctx, 0); err != nil {
					return err
				}
				// Allgather's and Barrier's partners: at most 2 log2 n + 2 of them.
				if c := substrate.Connections(w); c > 12 {
					return fmt.Errorf("rank %d is connected to %d of %d ranks after Allocate and Fence", me, c, n-1)
				}
				if err := win.Fence(ctx, window.NoSucceed); err != nil {
					return err
				}
				far := (me + n/2 + 1) % n
				before := substrate.Connections(w)
				if err := win.Lock(ctx, window.Exclusive, far, 0); err != nil {
					return err
				}
				if err := win.Put([]int64{int64(me) + 1}, far, me); err != nil {
					return err
				}
				if err := win.Unlock(ctx, far); err != nil {
					return err
				}
				// This rank's Lock reaches far, and one rank's Lock reaches this rank.
				if c := substrate.Connections(w); c > before+2 {
					return fmt.Errorf("rank %d: one lock epoch on rank %d and one on this rank connected %d ranks", me, far, c-before)
				}
				if err := runtime.Barrier(ctx, w); err != nil {
					return err
				}
				if got, want := win.Local()[(me+n-n/2-1)%n], int64((me+n-n/2-1)%n)+1; got != want {
					return fmt.Errorf("rank %d: the locked Put left %d, want %d", me, got, want)
				}
				if err := win.Fence(ctx, window.NoPrecede); err != nil {
					return err
				}
				for r := range n {
					if err := win.Put([]int64{int64(1000*me + r)}, r, me); err != nil {
						return err
					}
				}
				if err := win.Fence(ctx, window.NoSucceed); err != nil {
					return err
				}
				if c := substrate.Connections(w); c != n-1 {
					return fmt.Errorf("rank %d is connected to %d ranks after putting to all %d", me, c, n)
				}
				for r, v := range win.Local() {
					if v != int64(1000*r+me) {
						return fmt.Errorf("rank %d: element %d is %d, want %d", me, r, v, 1000*r+me)
					}
				}
				return win.Free(ctx)
			})
		})
	}
}
