package window_test

import (
	"context"
	"fmt"
	goruntime "runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/runtimetest"
	"github.com/gorma-hpc/gorma/window"
)

// Leak tests: many cycles of window creation, use and Free, checking that the ranks'
// arenas (bytes in use, live MRs), goroutines, fds and mappings come back to where they
// were, and that Worlds of finished jobs are not kept alive by the package.

// leakLayouts are the placements the window cycles run on: one host (shm), pretend hosts
// (tcp, with the page cache on) and both at once.
var leakLayouts = []struct {
	name string
	n    int
	opt  runtimetest.Options
}{
	{"shm", 2, runtimetest.Options{Transport: "shm"}},
	{"tcp", 2, runtimetest.Options{Transport: "tcp", Hosts: []string{"a", "b"}}},
	{"mixed", 3, runtimetest.Options{Hosts: []string{"a", "a", "b"}}},
}

// windowCycle creates a window of the given flavor, accesses it under Fence and Lock,
// and frees it.
func windowCycle(ctx context.Context, w *runtime.World, flavor window.Flavor, n int) error {
	me, size := w.Rank(), w.Size()
	next := (me + 1) % size
	var (
		win  *window.Win[int64]
		err  error
		disp int
	)
	switch flavor {
	case window.FlavorAllocate:
		win, err = window.Allocate[int64](ctx, w, n)
	case window.FlavorCreate:
		win, err = window.Create(ctx, w, make([]int64, n))
	case window.FlavorDynamic:
		win, err = window.CreateDynamic[int64](ctx, w)
	}
	if err != nil {
		return err
	}
	if flavor == window.FlavorDynamic {
		a, b := make([]int64, n), make([]int64, n/2+1)
		baseA, err := win.Attach(ctx, a)
		if err != nil {
			return err
		}
		baseB, err := win.Attach(ctx, b)
		if err != nil {
			return err
		}
		bases, err := allgather(ctx, w, []int64{int64(baseA)})
		if err != nil {
			return err
		}
		disp = int(bases[next][0])
		// Detach one attachment while the window lives; the other stays until Free.
		if err := runtime.Barrier(ctx, w); err != nil {
			return err
		}
		if err := win.Detach(ctx, baseB); err != nil {
			return err
		}
	}
	src, dst := make([]int64, n), make([]int64, n)
	for i := range src {
		src[i] = int64(me + i)
	}
	if err := win.Fence(ctx, 0); err != nil {
		return err
	}
	if err := win.Put(src, next, disp); err != nil {
		return err
	}
	if err := win.Fence(ctx, window.NoSucceed); err != nil {
		return err
	}
	// Twice under a shared lock: the second Get of a cross-host target hits the cache.
	for range 2 {
		if err := win.Lock(ctx, window.Shared, next, 0); err != nil {
			return err
		}
		if err := win.Get(dst, next, disp); err != nil {
			return err
		}
		if err := win.Unlock(ctx, next); err != nil {
			return err
		}
	}
	if err := runtime.Barrier(ctx, w); err != nil {
		return err
	}
	return win.Free(ctx)
}

// TestLeakWindowCycles creates, uses and frees windows of every flavor and growing and
// shrinking sizes, 40 times per flavor, and checks that each rank's arena bytes in use
// and live MRs equal their baseline afterwards, and that the process's goroutines and
// fds do too.
func TestLeakWindowCycles(t *testing.T) {
	const cycles = 40
	sizes := []int{1, 100, 4096, 1 << 16, 300, 1 << 14}
	flavors := []window.Flavor{window.FlavorAllocate, window.FlavorCreate, window.FlavorDynamic}
	for _, l := range leakLayouts {
		t.Run(l.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(30*time.Second))
			defer cancel()
			opt := l.opt
			opt.Timeout = 40 * time.Second
			var base atomic.Pointer[runtimetest.Usage]
			runtimetest.Run(t, l.n, opt, func(w *runtime.World) error {
				// Warm up: the window package's World and first-use allocations.
				for _, fl := range flavors {
					if err := windowCycle(ctx, w, fl, 8); err != nil {
						return err
					}
				}
				// Two Barriers: once rank 0 leaves the second, every rank has left the
				// first, whose connections (made on first contact) are then all made.
				for range 2 {
					if err := runtime.Barrier(ctx, w); err != nil {
						return err
					}
				}
				if w.Rank() == 0 {
					u := runtimetest.MeasureUsage()
					base.Store(&u)
				}
				inUse0, mrs0 := runtimetest.ArenaUse(w)
				for _, fl := range flavors {
					for i := range cycles {
						if err := windowCycle(ctx, w, fl, sizes[i%len(sizes)]); err != nil {
							return fmt.Errorf("%v cycle %d: %w", fl, i, err)
						}
					}
					inUse, mrs := runtimetest.ArenaUse(w)
					if inUse != inUse0 || mrs != mrs0 {
						return fmt.Errorf("after %d %v windows: arena %d bytes in use and %d live MRs, want %d and %d",
							cycles, fl, inUse, mrs, inUse0, mrs0)
					}
				}
				if err := runtime.Barrier(ctx, w); err != nil {
					return err
				}
				if w.Rank() == 0 {
					b := *base.Load()
					// The other ranks are parked in the barrier below, as they were at the
					// baseline.
					if u := runtimetest.SettleUsage(b); u.Goroutines > b.Goroutines || u.FDs > b.FDs || u.Maps > b.Maps+32 {
						return fmt.Errorf("after %d windows per flavor: %+v, baseline %+v", cycles, u, b)
					}
				}
				return runtime.Barrier(ctx, w)
			})
		})
	}
}

// TestLeakWindowWorlds checks that package window keeps no World alive once its program
// dropped it: 40 Dup'd Worlds per rank that each created, used and freed a window, and
// worlds of one (Init without a launcher) that did the same and were finalized, must all
// be garbage collected. (The Worlds of a runtimetest job cannot be checked so: each
// rank's engine reaches the Job, and so every World, through the Exit function.)
func TestLeakWindowWorlds(t *testing.T) {
	const dups = 40
	var live, made atomic.Int64
	track := func(w *runtime.World) {
		made.Add(1)
		live.Add(1)
		goruntime.AddCleanup(w, func(n *atomic.Int64) { n.Add(-1) }, &live)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(20*time.Second))
	defer cancel()
	runtimetest.Run(t, 2, runtimetest.Options{Transport: "shm"}, func(w *runtime.World) error {
		for range dups {
			d, err := w.Dup()
			if err != nil {
				return err
			}
			track(d)
			if err := windowCycle(ctx, d, window.FlavorAllocate, 100); err != nil {
				return err
			}
		}
		return nil
	})
	for range 5 {
		w, err := runtime.Init(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if w.Size() != 1 {
			t.Skipf("runtime.Init joined a job of %d ranks", w.Size())
		}
		track(w)
		if err := windowCycle(ctx, w, window.FlavorAllocate, 100); err != nil {
			t.Fatal(err)
		}
		if err := w.Finalize(ctx); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(testbudget.Scale(5 * time.Second))
	for live.Load() > 0 && time.Now().Before(deadline) {
		goruntime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	if n := live.Load(); n > 0 {
		t.Errorf("%d of %d dropped Worlds that created windows are still reachable after GC", n, made.Load())
	}
}
