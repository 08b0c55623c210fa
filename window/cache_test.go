package window_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/runtimetest"
	"github.com/gorma-hpc/gorma/tests/stalecheck"
	"github.com/gorma-hpc/gorma/window"
)

// The page cache serves repeated Gets from another host and stays coherent: a write's
// completion is seen by every later Get, cached or not.
func TestCacheHitsAndInvalidation(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(30*time.Second))
	defer cancel()
	runtimetest.Run(t, 3, runtimetest.Options{Hosts: []string{"a", "b", "b"}}, func(w *runtime.World) error {
		win, err := window.Allocate[int64](ctx, w, 1024)
		if err != nil {
			return err
		}
		me := w.Rank()
		if me == 0 {
			for i := range win.Local() {
				win.Local()[i] = int64(i)
			}
		}
		if err := win.Fence(ctx, 0); err != nil { // publishes rank 0's stores
			return err
		}
		if err := win.Fence(ctx, window.NoSucceed); err != nil {
			return err
		}
		got := make([]int64, 4)
		readAll := func(want int64) error {
			if err := win.Lock(ctx, window.Shared, 0, 0); err != nil {
				return err
			}
			defer win.Unlock(ctx, 0)
			for k := 0; k < 10; k++ {
				if err := win.Get(got, 0, 100); err != nil {
					return err
				}
				if err := win.Flush(ctx, 0); err != nil {
					return err
				}
				if got[0] != want {
					return fmt.Errorf("rank %d: element 100 is %d, want %d", me, got[0], want)
				}
			}
			return nil
		}
		if me != 0 {
			if err := readAll(100); err != nil {
				return err
			}
			if st := win.CacheStats(); st.Hits < 5 || st.Installs < 1 {
				return fmt.Errorf("rank %d: cache stats %+v: repeated Gets from another host did not hit", me, st)
			}
		}
		if err := runtime.Barrier(ctx, w); err != nil {
			return err
		}
		// Rank 1 (another host) writes; after its Unlock every Get sees the write.
		if me == 1 {
			if err := win.Lock(ctx, window.Exclusive, 0, 0); err != nil {
				return err
			}
			if err := win.Put([]int64{-1}, 0, 100); err != nil {
				return err
			}
			if err := win.Unlock(ctx, 0); err != nil {
				return err
			}
		}
		if err := runtime.Barrier(ctx, w); err != nil {
			return err
		}
		if me != 0 {
			if err := readAll(-1); err != nil {
				return err
			}
		}
		if err := runtime.Barrier(ctx, w); err != nil {
			return err
		}
		// The owner stores into its memory; Sync publishes it.
		if me == 0 {
			win.Local()[100] = -2
			if err := win.Sync(ctx); err != nil {
				return err
			}
		}
		if err := runtime.Barrier(ctx, w); err != nil {
			return err
		}
		if me != 0 {
			if err := readAll(-2); err != nil {
				return err
			}
			if st := win.CacheStats(); me == 2 && st.Invalidations != 0 {
				return fmt.Errorf("rank 2 invalidated %d copies without writing", st.Invalidations)
			}
		}
		if me == 1 {
			if st := win.CacheStats(); st.Invalidations < 1 {
				return fmt.Errorf("rank 1's write invalidated no copy: %+v", st)
			}
		}
		if err := runtime.Barrier(ctx, w); err != nil {
			return err
		}
		return win.Free(ctx)
	})
}

// The stale-read checker over pretend hosts: random locked increments, accumulates,
// owner stores and shared-lock Gets with the cache on; zero stale reads and no lost
// update is the only pass.
func TestStaleReadChecker(t *testing.T) {
	layouts := []struct {
		name  string
		hosts []string
	}{
		{"2x2", []string{"a", "a", "b", "b"}},
		{"3x1", []string{"a", "b", "c"}},
	}
	for _, l := range layouts {
		t.Run(l.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(60*time.Second))
			defer cancel()
			var mu sync.Mutex
			var total stalecheck.Result
			runtimetest.Run(t, len(l.hosts), runtimetest.Options{Hosts: l.hosts}, func(w *runtime.World) error {
				res, err := stalecheck.Run(ctx, w, stalecheck.Options{Rounds: 200, Seed: 7})
				mu.Lock()
				total.Ops += res.Ops
				total.Gets += res.Gets
				total.StaleReads += res.StaleReads
				total.Cache.Hits += res.Cache.Hits
				total.Cache.Misses += res.Cache.Misses
				total.Cache.Invalidations += res.Cache.Invalidations
				mu.Unlock()
				return err
			})
			t.Logf("%d ops, %d gets, %d stale reads, cache %+v", total.Ops, total.Gets, total.StaleReads, total.Cache)
			if total.Cache.Hits == 0 {
				t.Errorf("no cache hit: the checker did not exercise the cache")
			}
		})
	}
}
