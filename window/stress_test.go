package window_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/collectives"
	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/runtimetest"
	"github.com/gorma-hpc/gorma/window"
)

// Adversarial tests of the RMA windows: limits (thousands of outstanding operations),
// edges (window ends, zero lengths, odd element sizes, out-of-range accesses), atomicity
// under contention, synchronization corner cases and page-cache coherence. Every test
// checks data.

// stressRun runs f on n ranks with opt under a 30 s context.
func stressRun(t *testing.T, n int, opt runtimetest.Options, f func(ctx context.Context, w *runtime.World) error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(30*time.Second))
	defer cancel()
	runtimetest.Run(t, n, opt, func(w *runtime.World) error { return f(ctx, w) })
}

// locked runs f in a passive-target epoch on target of type lt.
func locked[T runtime.Elem](ctx context.Context, win *window.Win[T], lt window.LockType, target int, f func() error) error {
	if err := win.Lock(ctx, lt, target, 0); err != nil {
		return err
	}
	ferr := f()
	uerr := win.Unlock(ctx, target)
	return errors.Join(ferr, uerr)
}

// cacheWriters are the ways a rank writes one element of a peer's window memory in a
// passive-target epoch; each must invalidate the page copies cached at other hosts by
// the time the epoch's Unlock returns.
var cacheWriters = []struct {
	name  string
	write func(win *window.Win[int64], v int64, rank, disp int) error
}{
	{"put", func(win *window.Win[int64], v int64, rank, disp int) error {
		return win.Put([]int64{v}, rank, disp)
	}},
	{"rput", func(win *window.Win[int64], v int64, rank, disp int) error {
		r, err := win.Rput([]int64{v}, rank, disp)
		if err != nil {
			return err
		}
		return r.Wait(context.Background())
	}},
	{"accumulate", func(win *window.Win[int64], v int64, rank, disp int) error {
		return win.Accumulate([]int64{v}, rank, disp, collectives.Replace[int64]())
	}},
	{"raccumulate", func(win *window.Win[int64], v int64, rank, disp int) error {
		r, err := win.Raccumulate([]int64{v}, rank, disp, collectives.Replace[int64]())
		if err != nil {
			return err
		}
		return r.Wait(context.Background())
	}},
	{"get_accumulate", func(win *window.Win[int64], v int64, rank, disp int) error {
		return win.GetAccumulate([]int64{v}, make([]int64, 1), rank, disp, collectives.Replace[int64]())
	}},
	{"rget_accumulate", func(win *window.Win[int64], v int64, rank, disp int) error {
		r, err := win.RgetAccumulate([]int64{v}, make([]int64, 1), rank, disp, collectives.Replace[int64]())
		if err != nil {
			return err
		}
		return r.Wait(context.Background())
	}},
	{"fetch_and_op", func(win *window.Win[int64], v int64, rank, disp int) error {
		var old int64
		return win.FetchAndOp(v, &old, rank, disp, collectives.Replace[int64]())
	}},
	{"compare_and_swap", func(win *window.Win[int64], v int64, rank, disp int) error {
		var old int64
		if err := win.CompareAndSwap(v, 0, &old, rank, disp); err != nil {
			return err
		}
		if old != 0 {
			return fmt.Errorf("compare_and_swap found %d, want 0", old)
		}
		return nil
	}},
}

// TestStressCacheCoherenceWriters: rank 3 (host b) caches a page of rank 0 (host a) by
// reading it twice; then a writer changes one element of that page with each kind of
// write, from the same host as rank 0 (rank 1: mapped memory) and from rank 3's host
// (rank 2: through the transport). After the writer's Unlock and a barrier, rank 3's next
// Get must see the new value.
func TestStressCacheCoherenceWriters(t *testing.T) {
	for _, wr := range cacheWriters {
		t.Run(wr.name, func(t *testing.T) {
			stressRun(t, 4, runtimetest.Options{Hosts: []string{"a", "a", "b", "b"}}, func(ctx context.Context, w *runtime.World) error {
				win, err := window.Allocate[int64](ctx, w, 1024)
				if err != nil {
					return err
				}
				me := w.Rank()
				const reader, home = 3, 0
				var bad []error // data mismatches: recorded, so that the ranks stay in step
				got := make([]int64, 1)
				read := func(disp int) (int64, error) {
					err := locked(ctx, win, window.Shared, home, func() error {
						if err := win.Get(got, home, disp); err != nil {
							return err
						}
						return win.Flush(ctx, home)
					})
					return got[0], err
				}
				for round, writer := range []int{1, 2} {
					disp := 10 + round // the same page, another element
					val := int64(1000*(round+1) + 7)
					if me == reader {
						for range 3 { // the second miss installs the page, the third hits
							v, err := read(disp)
							if err != nil {
								return err
							}
							if v != 0 {
								bad = append(bad, fmt.Errorf("before the write: element %d = %d, want 0", disp, v))
							}
						}
					}
					if err := runtime.Barrier(ctx, w); err != nil {
						return err
					}
					if me == writer {
						if err := locked(ctx, win, window.Exclusive, home, func() error {
							return wr.write(win, val, home, disp)
						}); err != nil {
							return fmt.Errorf("%s: %w", wr.name, err)
						}
					}
					if err := runtime.Barrier(ctx, w); err != nil {
						return err
					}
					if me == reader {
						if st := win.CacheStats(); st.Hits == 0 {
							bad = append(bad, fmt.Errorf("the page was never served from the cache: %+v", st))
						}
						v, err := read(disp)
						if err != nil {
							return err
						}
						if v != val {
							bad = append(bad, fmt.Errorf("after rank %d's %s: element %d = %d, want %d (stale cached copy)", writer, wr.name, disp, v, val))
						}
					}
					if err := runtime.Barrier(ctx, w); err != nil {
						return err
					}
				}
				return errors.Join(errors.Join(bad...), win.Free(ctx))
			})
		})
	}
}

// stressLayouts are the placements of the limit tests: every peer through the transport
// (tcp), pretend hosts (tcp across, mapped within), and one host with user memory
// (Create: cross-memory attach through the shm provider's queues, never mapped).
var stressLayouts = []struct {
	name   string
	n      int
	opt    runtimetest.Options
	create bool
}{
	{"tcp", 2, runtimetest.Options{Transport: "tcp"}, false},
	{"tcp-create", 2, runtimetest.Options{Transport: "tcp"}, true},
	{"hosts", 4, runtimetest.Options{Hosts: []string{"a", "a", "b", "b"}}, false},
	{"shm-create", 2, runtimetest.Options{Transport: "shm"}, true},
}

// newStressWin makes an int64 window of n elements per rank, of arena memory or of the
// caller's memory.
func newStressWin(ctx context.Context, w *runtime.World, n int, create bool, opts ...window.Option) (*window.Win[int64], error) {
	if create {
		return window.Create(ctx, w, make([]int64, n), opts...)
	}
	return window.Allocate[int64](ctx, w, n, opts...)
}

// TestStressOutstandingOps posts thousands of one-element Puts to one target without a
// flush (far beyond any send queue depth or credit window of the transports), each from
// a buffer of its own, then Gets every element back without a flush between them, then
// does the same with Accumulates; every rank targets the next, so that each rank is
// origin and target at once. The data must be exact.
func TestStressOutstandingOps(t *testing.T) {
	const n = 2000
	for _, l := range stressLayouts {
		t.Run(l.name, func(t *testing.T) {
			stressRun(t, l.n, l.opt, func(ctx context.Context, w *runtime.World) error {
				win, err := newStressWin(ctx, w, n, l.create, window.NoCache())
				if err != nil {
					return err
				}
				me, size := w.Rank(), w.Size()
				next, prev := (me+1)%size, (me-1+size)%size
				src := make([]int64, n)
				for i := range src {
					src[i] = int64(me)<<32 | int64(i)
				}
				if err := win.Lock(ctx, window.Shared, next, 0); err != nil {
					return err
				}
				for i := range n { // backwards pairs too: disp order differs from post order
					d := i
					if i%2 == 1 {
						d = n - i
					}
					if err := win.Put(src[d:d+1], next, d); err != nil {
						return err
					}
				}
				if err := win.Flush(ctx, next); err != nil {
					return err
				}
				got := make([]int64, n)
				for i := range n {
					if err := win.Get(got[i:i+1], next, i); err != nil {
						return err
					}
				}
				if err := win.Flush(ctx, next); err != nil {
					return err
				}
				for i, v := range got {
					if v != src[i] {
						return fmt.Errorf("rank %d: element %d of rank %d = %#x after %d Puts and Gets, want %#x", me, i, next, v, n, src[i])
					}
				}
				// Accumulates: every element gets i+1 added twice.
				for k := range 2 {
					for i := range n {
						if err := win.Accumulate([]int64{int64(i + 1)}, next, (i+k)%n, collectives.Sum[int64]()); err != nil {
							return err
						}
					}
				}
				if err := win.Unlock(ctx, next); err != nil {
					return err
				}
				if err := runtime.Barrier(ctx, w); err != nil {
					return err
				}
				if err := locked(ctx, win, window.Shared, me, func() error { return nil }); err != nil {
					return err
				}
				for i, v := range win.Local() {
					want := int64(prev)<<32 | int64(i)
					for k := range 2 {
						want += int64((i-k+n)%n + 1)
					}
					if v != want {
						return fmt.Errorf("rank %d: local[%d] = %#x, want %#x", me, i, v, want)
					}
				}
				if err := runtime.Barrier(ctx, w); err != nil {
					return err
				}
				return win.Free(ctx)
			})
		})
	}
}

// edgeLayouts are the placements of the edge tests; "hosts" has the page cache on with
// 512-byte pages, so that accesses cross page boundaries and end in a partial page.
var edgeLayouts = []struct {
	name string
	n    int
	opt  runtimetest.Options
}{
	{"shm", 2, runtimetest.Options{Transport: "shm"}},
	{"tcp", 2, runtimetest.Options{Transport: "tcp"}},
	{"hosts", 4, runtimetest.Options{Hosts: []string{"a", "b", "a", "b"}}},
}

// TestStressEdges checks, for 1-, 2-, 8- and 16-byte elements and every flavor with
// memory: accesses that end exactly at the window's end, zero-length accesses at the
// end, odd (unaligned) displacements and lengths that cross cache pages, a Get after a
// Put of the same elements with a Flush between them in one epoch; and that every
// out-of-range access of every call fails with ErrRange (a bad rank with ErrInvalid)
// and leaves the target's memory untouched.
func TestStressEdges(t *testing.T) {
	for _, l := range edgeLayouts {
		for _, create := range []bool{false, true} {
			name := l.name + "-allocate"
			if create {
				name = l.name + "-create"
			}
			t.Run(name, func(t *testing.T) {
				stressRun(t, l.n, l.opt, func(ctx context.Context, w *runtime.World) error {
					return errors.Join(
						edges[uint8](ctx, w, create),
						edges[int16](ctx, w, create),
						edges[int64](ctx, w, create),
						edges[complex128](ctx, w, create))
				})
			})
		}
	}
}

func edges[T uint8 | int16 | int64 | complex128](ctx context.Context, w *runtime.World, create bool) error {
	const n = 1031 // odd: the last 512-byte page is partial for every element size
	var win *window.Win[T]
	var err error
	if create {
		win, err = window.Create(ctx, w, make([]T, n), window.PageSize(512))
	} else {
		win, err = window.Allocate[T](ctx, w, n, window.PageSize(512))
	}
	if err != nil {
		return err
	}
	me, size := w.Rank(), w.Size()
	next, prev := (me+1)%size, (me-1+size)%size
	pattern := func(rank, i int) T { return num[T](rank*31 + i*7 + 1) }
	for i := range win.Local() {
		win.Local()[i] = pattern(me, i)
	}
	if err := win.Fence(ctx, 0); err != nil {
		return err
	}
	if err := win.Fence(ctx, window.NoSucceed); err != nil {
		return err
	}
	typ := fmt.Sprintf("%T", T(0))
	fail := func(format string, args ...any) error {
		return fmt.Errorf("rank %d, %s: %s", me, typ, fmt.Sprintf(format, args...))
	}
	// Reads of the untouched memory first, twice (the second may install cached pages).
	got := make([]T, n)
	err = locked(ctx, win, window.Shared, next, func() error {
		for range 2 {
			for _, g := range [][2]int{{0, n}, {n - 1, 1}, {n, 0}, {511, 3}, {1000, n - 1000}} {
				clear(got)
				if err := win.Get(got[:g[1]], next, g[0]); err != nil {
					return fail("get %d at %d: %v", g[1], g[0], err)
				}
				if err := win.Flush(ctx, next); err != nil {
					return err
				}
				for i, v := range got[:g[1]] {
					if want := pattern(next, g[0]+i); v != want {
						return fail("get %d at %d: element %d = %v, want %v", g[1], g[0], g[0]+i, v, want)
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	// Writes at the edges, each read back in the same epoch after a Flush.
	writes := []struct {
		disp int
		vals []T
	}{
		{n - 1, []T{100}},         // the last element
		{n, nil},                  // zero length at the end
		{511, []T{101, 102, 103}}, // odd, across a page boundary for 1-byte elements
		{n - 3, []T{104, 105, 106}},
	}
	sum := collectives.Sum[T]()
	bad := []struct {
		disp, n int
	}{{n, 1}, {n - 1, 2}, {-1, 1}, {-1, 0}, {n + 1, 0}, {1 << 62, 1}, {int(^uint(0) >> 1), 1}, {0, n + 1}}
	err = locked(ctx, win, window.Exclusive, next, func() error {
		for _, wr := range writes {
			if err := win.Put(wr.vals, next, wr.disp); err != nil {
				return fail("put %d at %d: %v", len(wr.vals), wr.disp, err)
			}
			if err := win.Flush(ctx, next); err != nil {
				return err
			}
			back := make([]T, len(wr.vals))
			if err := win.Get(back, next, wr.disp); err != nil {
				return fail("get %d at %d: %v", len(back), wr.disp, err)
			}
			if err := win.Flush(ctx, next); err != nil {
				return err
			}
			for i := range back {
				if back[i] != wr.vals[i] {
					return fail("get after put at %d: element %d = %v, want %v", wr.disp, wr.disp+i, back[i], wr.vals[i])
				}
			}
		}
		for _, b := range bad {
			buf := make([]T, max(b.n, 0))
			var one T
			calls := map[string]func() error{
				"put":              func() error { return win.Put(buf, next, b.disp) },
				"get":              func() error { return win.Get(buf, next, b.disp) },
				"accumulate":       func() error { return win.Accumulate(buf, next, b.disp, sum) },
				"get_accumulate":   func() error { return win.GetAccumulate(buf, make([]T, len(buf)), next, b.disp, sum) },
				"get_acc_no_op":    func() error { return win.GetAccumulate(nil, buf, next, b.disp, collectives.NoOp[T]()) },
				"fetch_and_op":     func() error { return win.FetchAndOp(1, &one, next, b.disp, sum) },
				"compare_and_swap": func() error { return win.CompareAndSwap(1, 0, &one, next, b.disp) },
				"rput":             func() error { _, err := win.Rput(buf, next, b.disp); return err },
				"rget":             func() error { _, err := win.Rget(buf, next, b.disp); return err },
				"raccumulate":      func() error { _, err := win.Raccumulate(buf, next, b.disp, sum); return err },
			}
			for name, call := range calls {
				if (name == "fetch_and_op" || name == "compare_and_swap") && b.n != 1 {
					continue
				}
				err := call()
				var we *window.Error
				if !errors.Is(err, window.ErrRange) || !errors.As(err, &we) || we.Rank != next || we.Disp != b.disp {
					return fail("%s of %d at %d: got %v, want ErrRange naming rank %d disp %d", name, b.n, b.disp, err, next, b.disp)
				}
			}
		}
		for _, r := range []int{-1, size, 1 << 40} {
			if err := win.Put([]T{1}, r, 0); !errors.Is(err, window.ErrInvalid) {
				return fail("put to rank %d: %v, want ErrInvalid", r, err)
			}
			if err := win.Accumulate([]T{1}, r, 0, sum); !errors.Is(err, window.ErrInvalid) {
				return fail("accumulate to rank %d: %v, want ErrInvalid", r, err)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := runtime.Barrier(ctx, w); err != nil {
		return err
	}
	// The owner checks its memory: the pattern, except for the writes.
	if err := locked(ctx, win, window.Shared, me, func() error { return nil }); err != nil {
		return err
	}
	want := make([]T, n)
	for i := range want {
		want[i] = pattern(me, i)
	}
	for _, wr := range writes {
		copy(want[wr.disp:], wr.vals)
	}
	for i, v := range win.Local() {
		if v != want[i] {
			return fail("local[%d] = %v after rank %d's accesses, want %v (an out-of-range access touched memory?)", i, v, prev, want[i])
		}
	}
	if err := runtime.Barrier(ctx, w); err != nil {
		return err
	}
	return win.Free(ctx)
}

// num converts v to T (complex numbers get an imaginary part too); integers wrap.
func num[T uint8 | int16 | int64 | complex128](v int) T {
	var z T
	switch p := any(&z).(type) {
	case *uint8:
		*p = uint8(v)
	case *int16:
		*p = int16(v)
	case *int64:
		*p = int64(v)
	case *complex128:
		*p = complex(float64(v), -float64(v))
	}
	return z
}

// atomicLayouts place 4 ranks: one host, tcp everywhere, two pretend hosts.
var atomicLayouts = []struct {
	name string
	opt  runtimetest.Options
}{
	{"shm", runtimetest.Options{Transport: "shm"}},
	{"tcp", runtimetest.Options{Transport: "tcp"}},
	{"hosts", runtimetest.Options{Hosts: []string{"a", "a", "b", "b"}}},
}

// TestStressAtomicsContention: 4 ranks hammer rank 0 in one LockAll epoch, on arena and
// on user memory: FetchAndOp(Sum 1) on one word (the sum is exact and every fetched
// value distinct), CompareAndSwap increments of another word (exact), and 16-byte
// elements written with Accumulate(Replace) of a 5-element vector (cut into chunks)
// while GetAccumulate(NoOp) reads them: an element must never be torn (real part =
// -imaginary part, as written), and every Sum-accumulated element counts exactly.
func TestStressAtomicsContention(t *testing.T) { atomicsContention(t, 1, atomicLayouts) }

// TestStressAtomicsContentionGoroutines is TestStressAtomicsContention with two
// goroutines per rank (RMA calls may run concurrently, see Win). Over tcp it hung when
// substrate.Counter.Wait returned without handing the poller role on: two goroutines of
// one rank wait on different Counters, the first becomes the poller and returns, the
// second stays parked for ever while its completions sit in the completion queue.
//
// On shm every rank's goroutines also exclude each other through the accumulate word on
// mapped memory, which -race reported as racing on the accumulate scratch and on the
// memory of a Create window targeting itself until rmwMapped took t.acc.mu in race builds
// (the detector does not see atomics on mmap'd memory).
func TestStressAtomicsContentionGoroutines(t *testing.T) {
	atomicsContention(t, 2, atomicLayouts)
}

func atomicsContention(t *testing.T, g int, layouts []struct {
	name string
	opt  runtimetest.Options
}) {
	defer window.SetAccChunk(32)() // two complex128 per transport-path chunk
	const k, vec = 60, 5
	for _, l := range layouts {
		for _, create := range []bool{false, true} {
			name := l.name + "-allocate"
			if create {
				name = l.name + "-create"
			}
			t.Run(name, func(t *testing.T) {
				stressRun(t, 4, l.opt, func(ctx context.Context, w *runtime.World) error {
					var iw *window.Win[int64]
					var cw *window.Win[complex128]
					var err error
					if create {
						iw, err = window.Create(ctx, w, make([]int64, 2))
					} else {
						iw, err = window.Allocate[int64](ctx, w, 2)
					}
					if err != nil {
						return err
					}
					if create {
						cw, err = window.Create(ctx, w, make([]complex128, 2*vec))
					} else {
						cw, err = window.Allocate[complex128](ctx, w, 2*vec)
					}
					if err != nil {
						return err
					}
					if err := errors.Join(iw.LockAll(ctx, 0), cw.LockAll(ctx, 0)); err != nil {
						return err
					}
					me := w.Rank()
					ng := g
					fetched := make([][]int64, ng)
					errs := make([]error, ng)
					done := make(chan int, ng)
					for gi := range ng {
						go func() {
							defer func() { done <- gi }()
							errs[gi] = hammer(iw, cw, me*4+gi, k, vec, &fetched[gi])
						}()
					}
					for range ng {
						<-done
					}
					if err := errors.Join(errs...); err != nil {
						return err
					}
					if err := errors.Join(iw.UnlockAll(ctx), cw.UnlockAll(ctx)); err != nil {
						return err
					}
					var mine []int64
					for _, f := range fetched {
						mine = append(mine, f...)
					}
					var bad error
					if me != 0 {
						if err := runtime.Send(ctx, w, mine, 0, 91); err != nil {
							return err
						}
					} else {
						all := mine
						for r := 1; r < w.Size(); r++ {
							got := make([]int64, g*k)
							if _, err := runtime.Recv(ctx, w, got, r, 91); err != nil {
								return err
							}
							all = append(all, got...)
						}
						total := int64(len(all))
						seen := make([]bool, total)
						for _, v := range all {
							if v < 0 || v >= total || seen[v] {
								bad = fmt.Errorf("fetched value %d twice or out of [0, %d)", v, total)
								break
							}
							seen[v] = true
						}
						if err := locked(ctx, iw, window.Shared, 0, func() error { return nil }); err != nil {
							return err
						}
						if err := locked(ctx, cw, window.Shared, 0, func() error { return nil }); err != nil {
							return err
						}
						if v := iw.Local()[0]; v != total {
							bad = errors.Join(bad, fmt.Errorf("fetch-and-op counter = %d, want %d", v, total))
						}
						if v := iw.Local()[1]; v != total {
							bad = errors.Join(bad, fmt.Errorf("compare-and-swap counter = %d, want %d", v, total))
						}
						for i, v := range cw.Local()[vec:] {
							if want := complex(float64(total), float64(total)); v != want {
								bad = errors.Join(bad, fmt.Errorf("summed element %d = %v, want %v", i, v, want))
							}
						}
					}
					if err := runtime.Barrier(ctx, w); err != nil {
						return err
					}
					return errors.Join(bad, iw.Free(ctx), cw.Free(ctx))
				})
			})
		}
	}
}

// hammer is one goroutine of TestStressAtomicsContention, with id id.
func hammer(iw *window.Win[int64], cw *window.Win[complex128], id, k, vec int, fetched *[]int64) error {
	sum := collectives.Sum[int64]()
	csum := collectives.Sum[complex128]()
	repl := make([]complex128, vec)
	ones := make([]complex128, vec)
	for i := range ones {
		ones[i] = complex(1, 1)
	}
	read := make([]complex128, vec)
	for i := range k {
		var old int64
		if err := iw.FetchAndOp(1, &old, 0, 0, sum); err != nil {
			return err
		}
		*fetched = append(*fetched, old)
		for cur := int64(0); ; { // CAS increment of word 1
			var seen int64
			if err := iw.CompareAndSwap(cur+1, cur, &seen, 0, 1); err != nil {
				return err
			}
			if seen == cur {
				break
			}
			cur = seen
		}
		x := float64(id*1000 + i + 1)
		for j := range repl {
			repl[j] = complex(x, -x)
		}
		if err := cw.Accumulate(repl, 0, 0, collectives.Replace[complex128]()); err != nil {
			return err
		}
		if err := cw.Accumulate(ones, 0, vec, csum); err != nil {
			return err
		}
		if err := cw.GetAccumulate(nil, read, 0, 0, collectives.NoOp[complex128]()); err != nil {
			return err
		}
		for j, v := range read {
			if real(v) != -imag(v) || real(v) == 0 {
				return fmt.Errorf("goroutine %d: element %d read as %v: torn (written as x-xi)", id, j, v)
			}
		}
	}
	return nil
}

// TestStressPSCWOverlappingGroups: 4 ranks, each an origin and a target at once, with
// access groups that overlap and change every round (neighbours, everyone including
// itself, the previous rank): origin o Puts round*100+o into slot o of each target and
// adds 1 to its counter slot; after Wait each target finds exactly its exposure group's
// values and counts.
func TestStressPSCWOverlappingGroups(t *testing.T) {
	for _, l := range atomicLayouts {
		t.Run(l.name, func(t *testing.T) {
			stressRun(t, 4, l.opt, func(ctx context.Context, w *runtime.World) error {
				const size = 4
				win, err := window.Allocate[int64](ctx, w, size+1)
				if err != nil {
					return err
				}
				me := w.Rank()
				groups := []func(o int) []int{
					func(o int) []int { return []int{(o + 1) % size, (o + 2) % size} },
					func(o int) []int { return []int{3, 2, 1, 0} },
					func(o int) []int { return []int{(o + size - 1) % size} },
					func(o int) []int { return []int{o, (o + 2) % size} },
				}
				for round := range 12 {
					access := groups[round%len(groups)]
					var expose []int
					for o := range size {
						for _, tg := range access(o) {
							if tg == me {
								expose = append(expose, o)
							}
						}
					}
					clear(win.Local())
					if err := win.Post(ctx, expose, 0); err != nil {
						return err
					}
					if err := win.Start(ctx, access(me), 0); err != nil {
						return err
					}
					for _, tg := range access(me) {
						if err := win.Put([]int64{int64(round*100 + me)}, tg, me); err != nil {
							return err
						}
						if err := win.Accumulate([]int64{1}, tg, size, collectives.Sum[int64]()); err != nil {
							return err
						}
					}
					if err := win.Complete(ctx); err != nil {
						return err
					}
					if err := win.Wait(ctx); err != nil {
						return err
					}
					want := make([]int64, size+1)
					for _, o := range expose {
						want[o] = int64(round*100 + o)
					}
					want[size] = int64(len(expose))
					for i, v := range win.Local() {
						if v != want[i] {
							return fmt.Errorf("rank %d round %d: local %v, want %v (exposure group %v)", me, round, win.Local(), want, expose)
						}
					}
					// Nobody clears the next round's memory before every target has checked.
					if err := runtime.Barrier(ctx, w); err != nil {
						return err
					}
				}
				return win.Free(ctx)
			})
		})
	}
}

// TestStressLockContention: 4 ranks, 2 words on rank 0 that must always be equal.
// Exclusive holders read both, check them, and write both +1 with two Puts; shared
// holders (cached Gets on pretend hosts) read both and must never see them differ.
// The final value counts every exclusive epoch exactly.
func TestStressLockContention(t *testing.T) {
	const k = 25
	for _, l := range atomicLayouts {
		t.Run(l.name, func(t *testing.T) {
			stressRun(t, 4, l.opt, func(ctx context.Context, w *runtime.World) error {
				win, err := window.Allocate[int64](ctx, w, 2)
				if err != nil {
					return err
				}
				me := w.Rank()
				pair := make([]int64, 2)
				read := func() error {
					if err := win.Get(pair, 0, 0); err != nil {
						return err
					}
					if err := win.Flush(ctx, 0); err != nil {
						return err
					}
					if pair[0] != pair[1] {
						return fmt.Errorf("rank %d: words %d and %d differ under a lock", me, pair[0], pair[1])
					}
					return nil
				}
				for i := range k {
					if err := locked(ctx, win, window.Exclusive, 0, func() error {
						if err := read(); err != nil {
							return err
						}
						next := pair[0] + 1
						if err := win.Put([]int64{next}, 0, 0); err != nil {
							return err
						}
						if i%2 == 0 { // sometimes the second write lands after a flush
							if err := win.Flush(ctx, 0); err != nil {
								return err
							}
						}
						return win.Put([]int64{next}, 0, 1)
					}); err != nil {
						return err
					}
					for range 2 {
						if err := locked(ctx, win, window.Shared, 0, read); err != nil {
							return err
						}
					}
				}
				if err := runtime.Barrier(ctx, w); err != nil {
					return err
				}
				if err := locked(ctx, win, window.Shared, 0, read); err != nil {
					return err
				}
				if want := int64(w.Size() * k); pair[0] != want {
					return fmt.Errorf("rank %d: counter %d after %d exclusive epochs", me, pair[0], want)
				}
				if err := runtime.Barrier(ctx, w); err != nil {
					return err
				}
				return win.Free(ctx)
			})
		})
	}
}

// TestStressFreeWhilePeerInEpoch: rank 1 holds a lock on rank 0 and writes while every
// other rank is already in Free. Rank 1's Free inside its epoch refuses: every rank's
// Free fails with ErrEpoch naming rank 1 and leaves the window usable. Rank 1's Put reads
// back, and once it has Unlocked, every rank's next Free succeeds. Free inside an exposure
// epoch (Post without Wait, at every rank) fails the same way, naming rank 0.
func TestStressFreeWhilePeerInEpoch(t *testing.T) {
	for _, l := range atomicLayouts {
		t.Run(l.name, func(t *testing.T) {
			stressRun(t, 3, runtimetest.Options{Transport: l.opt.Transport, Hosts: hosts3(l.opt.Hosts)}, func(ctx context.Context, w *runtime.World) error {
				win, err := window.Allocate[int64](ctx, w, 64)
				if err != nil {
					return err
				}
				me := w.Rank()
				if err := win.Post(ctx, nil, 0); err != nil {
					return err
				}
				if err := wantRefused(me, win.Free(ctx), 0, "exposure"); err != nil {
					return fmt.Errorf("Free in an exposure epoch: %w", err)
				}
				if err := win.Wait(ctx); err != nil {
					return err
				}
				if err := runtime.Barrier(ctx, w); err != nil {
					return err
				}
				if me != 1 {
					if err := runtime.Barrier(ctx, w); err != nil { // rank 1 holds its lock now
						return err
					}
					if err := wantRefused(me, win.Free(ctx), 1, "Lock on rank 0"); err != nil {
						return err
					}
					return win.Free(ctx)
				}
				if err := win.Lock(ctx, window.Exclusive, 0, 0); err != nil {
					return err
				}
				if err := runtime.Barrier(ctx, w); err != nil {
					return err
				}
				time.Sleep(20 * time.Millisecond) // the others are (most likely) in Free by now
				if err := win.Put([]int64{41, 42}, 0, 62); err != nil {
					return err
				}
				if err := wantRefused(me, win.Free(ctx), 1, "Lock on rank 0"); err != nil {
					return fmt.Errorf("Free while holding a lock: %w", err)
				}
				got := make([]int64, 2)
				if err := win.Get(got, 0, 62); err != nil {
					return fmt.Errorf("Get after a refused Free: %w", err)
				}
				if err := win.Flush(ctx, 0); err != nil {
					return err
				}
				if got[0] != 41 || got[1] != 42 {
					return fmt.Errorf("Get after a refused Free read %v, want [41 42]", got)
				}
				if err := win.Unlock(ctx, 0); err != nil {
					return err
				}
				return win.Free(ctx)
			})
		})
	}
}

// hosts3 maps a 4-rank host list to 3 ranks (nil stays nil).
func hosts3(h []string) []string {
	if h == nil {
		return nil
	}
	return []string{h[0], h[1], h[2]}
}
