package window_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/gorma-hpc/gorma/collectives"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/runtimetest"
	"github.com/gorma-hpc/gorma/window"
)

// Adversarial tests of the page cache at the window level: every kind of write, by every
// kind of writer (the home itself, a rank of the home's host, a rank of the reader's
// host), under every synchronization mode, on pages in the middle and at the partial end
// of windows of arena and user memory; a rank of another host that had the page cached
// must read the new value once the synchronization that orders the write before its
// read has returned. Every rank keeps the same model of the home's memory, and each read
// checks a few neighbouring elements against it.

// cacheWrite is one way to write one element v at disp of rank's memory; prev is the
// model's value there (CompareAndSwap compares with it).
type cacheWrite struct {
	name    string
	request bool // request-based: valid in passive-target epochs only
	owner   bool // a store of the home into its own memory (Local), not an RMA call
	write   func(win *window.Win[int64], v, prev int64, rank, disp int) error
}

var cacheWrites = []cacheWrite{
	{name: "put", write: func(win *window.Win[int64], v, _ int64, rank, disp int) error {
		return win.Put([]int64{v}, rank, disp)
	}},
	{name: "accumulate", write: func(win *window.Win[int64], v, prev int64, rank, disp int) error {
		return win.Accumulate([]int64{v - prev}, rank, disp, collectives.Sum[int64]())
	}},
	{name: "get_accumulate", write: func(win *window.Win[int64], v, prev int64, rank, disp int) error {
		old := make([]int64, 1)
		if err := win.GetAccumulate([]int64{v}, old, rank, disp, collectives.Replace[int64]()); err != nil {
			return err
		}
		return wantOld("get_accumulate", old[0], prev)
	}},
	{name: "fetch_and_op", write: func(win *window.Win[int64], v, prev int64, rank, disp int) error {
		var old int64
		if err := win.FetchAndOp(v, &old, rank, disp, collectives.Replace[int64]()); err != nil {
			return err
		}
		return wantOld("fetch_and_op", old, prev)
	}},
	{name: "compare_and_swap", write: func(win *window.Win[int64], v, prev int64, rank, disp int) error {
		var old int64
		if err := win.CompareAndSwap(v, prev, &old, rank, disp); err != nil {
			return err
		}
		return wantOld("compare_and_swap", old, prev)
	}},
	{name: "rput", request: true, write: func(win *window.Win[int64], v, _ int64, rank, disp int) error {
		src := []int64{v}
		r, err := win.Rput(src, rank, disp)
		if err != nil {
			return err
		}
		return r.Wait(context.Background())
	}},
	{name: "rput_nowait", request: true, write: func(win *window.Win[int64], v, _ int64, rank, disp int) error {
		// The request is left to the epoch's flush to complete.
		_, err := win.Rput([]int64{v}, rank, disp)
		return err
	}},
	{name: "raccumulate", request: true, write: func(win *window.Win[int64], v, _ int64, rank, disp int) error {
		r, err := win.Raccumulate([]int64{v}, rank, disp, collectives.Replace[int64]())
		if err != nil {
			return err
		}
		return r.Wait(context.Background())
	}},
	{name: "rget_accumulate", request: true, write: func(win *window.Win[int64], v, prev int64, rank, disp int) error {
		old := make([]int64, 1)
		r, err := win.RgetAccumulate([]int64{v}, old, rank, disp, collectives.Replace[int64]())
		if err != nil {
			return err
		}
		if err := r.Wait(context.Background()); err != nil {
			return err
		}
		return wantOld("rget_accumulate", old[0], prev)
	}},
	{name: "owner_store", owner: true, write: func(win *window.Win[int64], v, _ int64, _, disp int) error {
		win.Local()[disp] = v
		return nil
	}},
}

func wantOld(op string, got, want int64) error {
	if got != want {
		return fmt.Errorf("%s returned old value %d, want %d", op, got, want)
	}
	return nil
}

// cacheSyncModes are the synchronizations that order a write before later Gets of other
// ranks: the write happens between open and publish; the reader checks after publish
// (and a barrier), and close ends the writer's epoch afterwards.
var cacheSyncModes = []string{"fence", "pscw", "lock_unlock", "lock_flush", "lockall_flush", "lockall_flushall"}

// TestCacheStressWriteSyncMatrix runs the matrix on 4 ranks over two pretend hosts:
// home 0 and rank 1 on host a, rank 2 and the reader 3 on host b.
func TestCacheStressWriteSyncMatrix(t *testing.T) {
	for _, cfg := range []struct {
		name   string
		n      int // elements per rank: the last page is partial
		page   int
		create bool
	}{
		{"allocate-512", 1000, 512, false},
		{"create-4096", 700, 4096, true},
	} {
		t.Run(cfg.name, func(t *testing.T) {
			stressRun(t, 4, runtimetest.Options{Hosts: []string{"a", "a", "b", "b"}}, func(ctx context.Context, w *runtime.World) error {
				win, err := newStressWin(ctx, w, cfg.n, cfg.create, window.PageSize(cfg.page))
				if err != nil {
					return err
				}
				bad := runCacheMatrix(ctx, w, win, cfg.n)
				return errors.Join(errors.Join(bad...), win.Free(ctx))
			})
		})
	}
}

// runCacheMatrix runs every (write, writer, mode) of the matrix; it returns the data
// mismatches seen (recorded, so that the ranks stay in step) or the first call error.
func runCacheMatrix(ctx context.Context, w *runtime.World, win *window.Win[int64], n int) []error {
	const home, reader = 0, 3
	me := w.Rank()
	model := make([]int64, n)
	var bad []error
	// read checks elements [disp-1, disp+1] of the home against the model, twice per
	// epoch (the second Get may be served from the cache), in a shared-lock epoch.
	got := make([]int64, 3)
	read := func(disp int, when string) error {
		lo := min(max(disp-1, 0), n-len(got))
		for range 2 {
			if err := locked(ctx, win, window.Shared, home, func() error {
				if err := win.Get(got, home, lo); err != nil {
					return err
				}
				return win.Flush(ctx, home)
			}); err != nil {
				return err
			}
			for i, v := range got {
				if v != model[lo+i] {
					bad = append(bad, fmt.Errorf("%s: element %d = %d, want %d (stale cached copy)", when, lo+i, v, model[lo+i]))
				}
			}
		}
		return nil
	}
	barrier := func() error { return runtime.Barrier(ctx, w) }
	val := int64(0)
	step := 0
	for _, wr := range cacheWrites {
		for _, writer := range []int{1, 2, 0} {
			if wr.owner && writer != home {
				continue
			}
			for _, mode := range cacheSyncModes {
				if wr.request && (mode == "fence" || mode == "pscw") {
					continue
				}
				step++
				// Alternate between the partial last page and a page in the middle.
				disp := n - 1 - step%3
				if step%2 == 0 {
					disp = (n / 2) + step%5
				}
				val += 7
				name := fmt.Sprintf("%s by rank %d, %s, element %d", wr.name, writer, mode, disp)
				if me == reader { // cache the page: the first miss, then a fill, then hits
					if err := read(disp, "before "+name); err != nil {
						return []error{fmt.Errorf("%s: %w", name, err)}
					}
				}
				if err := barrier(); err != nil {
					return []error{err}
				}
				prev := model[disp]
				if err := writeWithSync(ctx, w, win, wr, mode, writer, home, val, prev, disp); err != nil {
					return []error{fmt.Errorf("%s: %w", name, err)}
				}
				model[disp] = val
				if err := barrier(); err != nil {
					return []error{err}
				}
				if me == reader {
					if err := read(disp, "after "+name); err != nil {
						return []error{fmt.Errorf("%s: %w", name, err)}
					}
				}
				if err := barrier(); err != nil {
					return []error{err}
				}
				if err := closeSync(ctx, win, mode, me, writer); err != nil {
					return []error{fmt.Errorf("%s: close: %w", name, err)}
				}
				if err := barrier(); err != nil {
					return []error{err}
				}
			}
		}
	}
	if me == reader {
		if st := win.CacheStats(); st.Hits == 0 || st.Installs == 0 {
			bad = append(bad, fmt.Errorf("the reader never hit the cache: %+v", st))
		}
	}
	return bad
}

// writeWithSync makes writer write val at disp of home with wr under mode, and returns
// once the synchronization that publishes it (at every rank taking part) has returned.
// Flush modes leave the writer's epoch open: closeSync ends it.
func writeWithSync(ctx context.Context, w *runtime.World, win *window.Win[int64], wr cacheWrite, mode string, writer, home int, val, prev int64, disp int) error {
	me := w.Rank()
	write := func() error { return wr.write(win, val, prev, home, disp) }
	switch mode {
	case "fence":
		if err := win.Fence(ctx, 0); err != nil {
			return err
		}
		if me == writer {
			if err := write(); err != nil {
				return err
			}
		}
		return win.Fence(ctx, window.NoSucceed)
	case "pscw":
		if wr.owner {
			if me == home {
				if err := write(); err != nil { // stores before Post are visible to the group
					return err
				}
				if err := win.Post(ctx, []int{home}, 0); err != nil {
					return err
				}
				if err := win.Start(ctx, []int{home}, 0); err != nil {
					return err
				}
				if err := win.Complete(ctx); err != nil {
					return err
				}
				return win.Wait(ctx)
			}
			return nil
		}
		if me == home {
			if err := win.Post(ctx, []int{writer}, 0); err != nil {
				return err
			}
		}
		if me == writer {
			if err := win.Start(ctx, []int{home}, 0); err != nil {
				return err
			}
			if err := write(); err != nil {
				return err
			}
			if err := win.Complete(ctx); err != nil {
				return err
			}
		}
		if me == home {
			return win.Wait(ctx)
		}
		return nil
	}
	if me != writer {
		return nil
	}
	switch mode {
	case "lock_unlock":
		return locked(ctx, win, window.Exclusive, home, write)
	case "lock_flush":
		if err := win.Lock(ctx, window.Shared, home, 0); err != nil {
			return err
		}
	default:
		if err := win.LockAll(ctx, 0); err != nil {
			return err
		}
	}
	if err := write(); err != nil {
		return err
	}
	switch {
	case wr.owner:
		return win.Sync(ctx)
	case mode == "lockall_flushall":
		return win.FlushAll(ctx)
	default:
		return win.Flush(ctx, home)
	}
}

// closeSync ends the epoch writeWithSync left open at the writer.
func closeSync(ctx context.Context, win *window.Win[int64], mode string, me, writer int) error {
	if me != writer {
		return nil
	}
	switch mode {
	case "lock_flush":
		return win.Unlock(ctx, 0)
	case "lockall_flush", "lockall_flushall":
		return win.UnlockAll(ctx)
	}
	return nil
}

// cacheBudget is the per-window page budget the capacity tests set, small enough that
// filling it costs little under the race detector.
const cacheBudget = 1024

// TestCacheStressCapacity: the reader caches more pages of one home than the cache holds
// (cacheBudget per window), so the oldest are evicted while newer ones install; it re-reads
// evicted pages (refilled, evicting others) and the newest (hits). The home then changes
// every element and publishes with Sync, and the reader must see the new values on
// evicted, re-installed and still cached pages alike.
func TestCacheStressCapacity(t *testing.T) {
	const page = 512
	const pages = cacheBudget + 64
	const per = page / 8    // int64 elements per page
	const n = pages*per - 5 // a partial last page
	defer window.SetCacheMaxPages(cacheBudget)()
	stressRun(t, 2, runtimetest.Options{Hosts: []string{"a", "b"}}, func(ctx context.Context, w *runtime.World) error {
		win, err := window.Allocate[int64](ctx, w, n, window.PageSize(page))
		if err != nil {
			return err
		}
		me := w.Rank()
		const home, reader = 0, 1
		var bad []error
		buf := make([]int64, 64*per)
		// read Gets elements [lo, hi) in Gets of up to 64 pages, checking generation gen
		// unless gen is 0.
		read := func(gen int64, lo, hi int) error {
			for ; lo < hi; lo += len(buf) {
				b := buf[:min(len(buf), hi-lo)]
				if err := win.Get(b, home, lo); err != nil {
					return err
				}
				if err := win.Flush(ctx, home); err != nil {
					return err
				}
				for i, v := range b {
					if want := gen<<32 | int64(lo+i); gen != 0 && v != want {
						bad = append(bad, fmt.Errorf("generation %d: element %d (page %d) = %#x, want %#x", gen, lo+i, (lo+i)/per, v, want))
						break
					}
				}
			}
			return nil
		}
		// The pages re-read: the first 128 (evicted), the last 128 (cached), and a sample.
		rng := rand.New(rand.NewPCG(5, 6))
		probe := []int{0, 128 * per, n - 128*per, n}
		for range 32 {
			p := rng.IntN(pages - 1)
			probe = append(probe, p*per, (p+1)*per)
		}
		for gen := int64(1); gen <= 2; gen++ {
			if me == home {
				for i := range win.Local() {
					win.Local()[i] = gen<<32 | int64(i)
				}
				if err := win.Sync(ctx); err != nil {
					return err
				}
			}
			if err := runtime.Barrier(ctx, w); err != nil {
				return err
			}
			if me == reader {
				err := locked(ctx, win, window.Shared, home, func() error {
					if gen == 1 { // cold, then fill every page (evicting the oldest)
						if err := read(0, 0, n); err != nil {
							return err
						}
						if err := read(gen, 0, n); err != nil {
							return err
						}
					}
					for k := 0; k < len(probe); k += 2 {
						for range 2 {
							if err := read(gen, probe[k], probe[k+1]); err != nil {
								return err
							}
						}
					}
					return nil
				})
				if err != nil {
					return err
				}
			}
			if err := runtime.Barrier(ctx, w); err != nil {
				return err
			}
		}
		if me == reader {
			if st := win.CacheStats(); st.Evictions == 0 || st.Hits == 0 {
				bad = append(bad, fmt.Errorf("no eviction or no hit under capacity pressure: %+v", st))
			}
		}
		if len(bad) > 5 {
			bad = bad[:5]
		}
		return errors.Join(errors.Join(bad...), win.Free(ctx))
	})
}

// TestCacheReinstallKeepsBudget: pages invalidated by the home's writes and installed
// again count once against the cache's budget. The reader caches three quarters of the
// budget, the home rewrites everything, the reader re-reads it all (every page installs
// again) and then once more: nothing may be evicted, and the last pass must hit on every
// page. (The FIFO counted a re-installed page twice, so the second install pass pushed
// the live pages out past the budget.)
func TestCacheReinstallKeepsBudget(t *testing.T) {
	const page = 512
	const per = page / 8
	const pages = cacheBudget * 3 / 4
	const n = pages * per
	defer window.SetCacheMaxPages(cacheBudget)()
	stressRun(t, 2, runtimetest.Options{Hosts: []string{"a", "b"}}, func(ctx context.Context, w *runtime.World) error {
		win, err := window.Allocate[int64](ctx, w, n, window.PageSize(page))
		if err != nil {
			return err
		}
		const home, reader = 0, 1
		buf := make([]int64, 64*per)
		readAll := func(gen int64) error {
			return locked(ctx, win, window.Shared, home, func() error {
				for lo := 0; lo < n; lo += len(buf) {
					if err := win.Get(buf, home, lo); err != nil {
						return err
					}
					if err := win.Flush(ctx, home); err != nil {
						return err
					}
					for i, v := range buf {
						if want := gen<<32 | int64(lo+i); v != want {
							return fmt.Errorf("generation %d: element %d = %#x, want %#x", gen, lo+i, v, want)
						}
					}
				}
				return nil
			})
		}
		var stats []window.CacheStats
		for gen := int64(1); gen <= 2; gen++ {
			if w.Rank() == home {
				for i := range win.Local() {
					win.Local()[i] = gen<<32 | int64(i)
				}
				if err := win.Sync(ctx); err != nil {
					return err
				}
			}
			if err := runtime.Barrier(ctx, w); err != nil {
				return err
			}
			if w.Rank() == reader {
				for range 2 { // the first miss of a page reads through, the second caches it
					if err := readAll(gen); err != nil {
						return err
					}
				}
				stats = append(stats, win.CacheStats())
			}
			if err := runtime.Barrier(ctx, w); err != nil {
				return err
			}
		}
		var bad error
		if w.Rank() == reader {
			if err := readAll(2); err != nil {
				return err
			}
			last := win.CacheStats()
			if last.Evictions != 0 || last.Misses != stats[1].Misses || last.Installs < 2*pages {
				bad = fmt.Errorf("%d pages, budget %d: after the first pass %+v, after re-installing %+v, after one more pass %+v: want no eviction and no miss in the last pass",
					pages, cacheBudget, stats[0], stats[1], last)
			}
		}
		return errors.Join(bad, win.Free(ctx))
	})
}
