package window_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/collectives"
	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/runtimetest"
	"github.com/gorma-hpc/gorma/runtime/substrate"
	"github.com/gorma-hpc/gorma/window"
)

// TestLazyWindow: a window larger than GORMA_WINDOW_EAGER connects no pair at creation
// or in a Fence that the World's own collectives do not (on one host of more ranks than
// GORMA_SHM_TEAM, the members of a rank's team and the teams' heads; over tcp, O(log N)
// partners); a Lock, Put and Unlock to one rank reach that rank; a Fence epoch that puts
// to every rank reaches every rank; and every value lands where it was put, on shm and on
// tcp (without the page cache, whose coherence regions every rank maps at creation).
func TestLazyWindow(t *testing.T) {
	t.Setenv("GORMA_WINDOW_EAGER", "4")
	t.Setenv("GORMA_SHM_TEAM", "8") // four teams: no group of the collectives spans the host
	const n = 32
	for _, tr := range []string{"shm", "tcp"} {
		t.Run(tr, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(60*time.Second))
			defer cancel()
			// The ranks' calls end with ctx before runtimetest gives up on them, so a
			// failure shows as each rank's error, the first cause among them.
			opt := runtimetest.Options{Transport: tr, Timeout: 90 * time.Second}
			runtimetest.Run(t, n, opt, func(w *runtime.World) error {
				me := w.Rank()
				// The pairs the World's collectives connect. A call has connected its
				// partners by the time it returns: it heard from each.
				if err := collectives.Barrier(ctx, w); err != nil {
					return err
				}
				base := substrate.Connections(w)
				win, err := window.Allocate[int64](ctx, w, n, window.NoCache())
				if err != nil {
					return err
				}
				if err := win.Fence(ctx, 0); err != nil {
					return err
				}
				c := substrate.Connections(w)
				if tr == "shm" && c != base {
					return fmt.Errorf("rank %d: Allocate and Fence connected %d ranks beyond the %d of the World's collectives", me, c-base, base)
				}
				// Over tcp the window's and the Barrier's partners: at most 2 log2 n + 2.
				if c > 12 {
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
				// The collectives' Barrier: it connects no pair that the first did not, so
				// a rank still counting above sees no connection from one that is here.
				if err := collectives.Barrier(ctx, w); err != nil {
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

// TestLazyWindowLockAtCreation: a lazy window's creation ends with its record exchange,
// without a Barrier, so a rank may lock a peer that is still in Allocate. Right after
// Allocate, with no Fence, every rank increments a counter at every other rank under an
// exclusive Lock (Get, Flush, Put): the counters end at n-1 only if every peer's lock
// word was cleared before any rank took it.
func TestLazyWindowLockAtCreation(t *testing.T) {
	t.Setenv("GORMA_WINDOW_EAGER", "2")
	const n = 8
	for _, tr := range []string{"shm", "tcp"} {
		t.Run(tr, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(60*time.Second))
			defer cancel()
			opt := runtimetest.Options{Transport: tr, Timeout: 90 * time.Second}
			runtimetest.Run(t, n, opt, func(w *runtime.World) error {
				me := w.Rank()
				win, err := window.Allocate[int64](ctx, w, 1, window.NoCache())
				if err != nil {
					return err
				}
				v := make([]int64, 1)
				for i := 1; i < n; i++ {
					r := (me + i) % n
					if err := win.Lock(ctx, window.Exclusive, r, 0); err != nil {
						return err
					}
					if err := win.Get(v, r, 0); err != nil {
						return err
					}
					if err := win.Flush(ctx, r); err != nil {
						return err
					}
					if err := win.Put([]int64{v[0] + 1}, r, 0); err != nil {
						return err
					}
					if err := win.Unlock(ctx, r); err != nil {
						return err
					}
				}
				if err := collectives.Barrier(ctx, w); err != nil {
					return err
				}
				if got := win.Local()[0]; got != n-1 {
					return fmt.Errorf("rank %d: counter %d, want %d: an increment was lost", me, got, n-1)
				}
				return win.Free(ctx)
			})
		})
	}
}
