package window_test

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/runtimetest"
	"github.com/gorma-hpc/gorma/window"
)

func minorFaults() int64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Minflt
}

// Allocate+Free of a 1 MiB window reuses mapped, faulted-in arena memory: once the
// arena's quarantine (a quarter of the high-water mark: 64 MiB by default) is full, the
// windows cycle through its warm bytes, and a hundred cycles fault no arena page (a fresh
// 1 MiB would fault 256 pages, per rank, per cycle).
func TestAllocateFreeReusesMemory(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(30*time.Second))
	defer cancel()
	j, err := runtimetest.Start(ctx, 2, runtimetest.Options{Transport: "shm"})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	const n = 1 << 17    // elements of 8 bytes: 1 MiB
	const warm = 64 + 16 // cycles that fill the default quarantine, and then some
	cycle := func(w *runtime.World) (*int64, error) {
		win, err := window.Allocate[int64](ctx, w, n)
		if err != nil {
			return nil, err
		}
		p := &win.Local()[0]
		for i := 0; i < n; i += 512 { // touch every page, as a program does: the memory is resident
			win.Local()[i] = 1
		}
		return p, win.Free(ctx)
	}
	run := func(cycles int) error {
		errs := make(chan error, 2)
		for r, w := range j.Worlds {
			go func() {
				var err error
				seen := map[*int64]bool{}
				for range cycles {
					var p *int64
					if p, err = cycle(w); err != nil {
						break
					}
					seen[p] = true
				}
				if err == nil && len(seen) > warm {
					err = fmt.Errorf("rank %d: %d cycles used %d distinct windows, want at most %d", r, cycles, len(seen), warm)
				}
				errs <- err
			}()
		}
		for range 2 {
			if err := <-errs; err != nil {
				return err
			}
		}
		return nil
	}
	if err := run(warm); err != nil { // warm up: fault the bytes in once
		t.Fatal(err)
	}
	before := minorFaults()
	if err := run(100); err != nil {
		t.Fatal(err)
	}
	faults := minorFaults() - before
	t.Logf("100 allocate+free cycles of 1 MiB on 2 ranks: %d minor faults in the process", faults)
	// A fresh 1 MiB faults 256 pages per rank and cycle. The bound leaves room for the Go
	// heap of the creation itself (records, target tables, faulted in as the heap grows;
	// more with the race detector's shadow memory): a few pages per rank and cycle.
	if faults > 16*2*100 {
		t.Errorf("%d page faults over 100 cycles of 2 ranks: the reuse path faults", faults)
	}
	if err := j.Finalize(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestAllocateZeroed: Allocate and AllocateShared give zeroed memory, as make does, also
// when the arena hands out a freed window's bytes again.
func TestAllocateZeroed(t *testing.T) {
	forLayouts(t, func(ctx context.Context, w *runtime.World) error {
		for round := range 3 {
			for _, shared := range []bool{false, true} {
				alloc := window.Allocate[int64]
				if shared {
					alloc = window.AllocateShared[int64]
				}
				win, err := alloc(ctx, w, 5000)
				if err != nil {
					return err
				}
				for i, v := range win.Local() {
					if v != 0 {
						return fmt.Errorf("round %d, shared %v: element %d of a new window is %d", round, shared, i, v)
					}
				}
				for i := range win.Local() {
					win.Local()[i] = int64(i + 1)
				}
				if err := win.Free(ctx); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// TestAllocateNoZero: a window made with NoZero works like any other (every rank fills its
// memory, the others read it back through Fence epochs), and NoZero stays with the
// window it was given to: the default Allocate that follows, on the bytes NoZero windows
// left behind, is zeroed again.
func TestAllocateNoZero(t *testing.T) {
	forLayouts(t, func(ctx context.Context, w *runtime.World) error {
		const n = 3000
		me, size := w.Rank(), w.Size()
		next := (me + 1) % size
		for round := range 3 {
			for _, shared := range []bool{false, true} {
				alloc := window.Allocate[int64]
				if shared {
					alloc = window.AllocateShared[int64]
				}
				win, err := alloc(ctx, w, n, window.NoZero())
				if err != nil {
					return err
				}
				for i := range win.Local() {
					win.Local()[i] = int64(me*1_000_000 + round*10_000 + i)
				}
				if err := win.Fence(ctx, 0); err != nil {
					return err
				}
				got := make([]int64, n)
				if err := win.Get(got, next, 0); err != nil {
					return err
				}
				if err := win.Fence(ctx, 0); err != nil {
					return err
				}
				for i, v := range got {
					if want := int64(next*1_000_000 + round*10_000 + i); v != want {
						return fmt.Errorf("round %d, shared %v: element %d of rank %d is %d, want %d", round, shared, i, next, v, want)
					}
				}
				if err := win.Free(ctx); err != nil {
					return err
				}
				z, err := alloc(ctx, w, n)
				if err != nil {
					return err
				}
				for i, v := range z.Local() {
					if v != 0 {
						return fmt.Errorf("round %d, shared %v: element %d of a default window after a NoZero one is %d", round, shared, i, v)
					}
				}
				if err := z.Free(ctx); err != nil {
					return err
				}
			}
		}
		return nil
	})
}
