package main

import (
	"context"
	"strings"
	"time"

	"github.com/gorma-hpc/gorma/apps/internal/benchkit"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/window"
)

// kind is the shape of a case's table.
type kind uint8

const (
	kindLatency   kind = iota // median/avg/p99 per size
	kindBandwidth             // MB/s per size
	kindMax                   // median and max of single operations
	kindTail                  // median/avg/p99/max per size: kindLatency with the slowest sample
)

// benchCase is one table: its name (for --test), what it measures, and how.
type benchCase struct {
	name  string
	title string
	kind  kind
	sized bool // one row per size from --min-size to --max-size; else one row
	run   func(ctx context.Context, b *bench, size int) (row, error)
}

// cases in the order they run and print. The C twin prints the same names and titles
// (alloc_free.nozero aside: MPI_Win_allocate never clears, so its alloc_free.allocate is
// that case's peer).
var cases = []benchCase{
	{"put_lat.lock", "Lock(exclusive) + Put + Unlock per operation", kindLatency, true, lockLat(false)},
	{"put_lat.lock_all", "LockAll once, Put + Flush per operation", kindLatency, true, lockAllLat(false)},
	{"put_lat.fence", "Fence + Put + Fence, ranks taking turns; per epoch", kindLatency, true, fenceLat(false)},
	{"put_lat.pscw", "Post/Start + Put + Complete/Wait, ranks taking turns; per epoch", kindLatency, true, pscwLat(false)},
	{"get_lat.lock", "Lock(exclusive) + Get + Unlock per operation", kindLatency, true, lockLat(true)},
	{"get_lat.lock_all", "LockAll once, Get + Flush per operation", kindLatency, true, lockAllLat(true)},
	{"get_lat.fence", "Fence + Get + Fence, ranks taking turns; per epoch", kindLatency, true, fenceLat(true)},
	{"get_lat.pscw", "Post/Start + Get + Complete/Wait, ranks taking turns; per epoch", kindLatency, true, pscwLat(true)},
	{"put_bw", "LockAll once, 64 Puts + Flush per round", kindBandwidth, true, bandwidth(false)},
	{"get_bw", "LockAll once, 64 Gets + Flush per round", kindBandwidth, true, bandwidth(true)},
	{"acc_lat.float64", "LockAll once, Accumulate(sum, float64) + Flush per operation", kindLatency, true, accFloat64},
	{"acc_lat.int64", "LockAll once, Accumulate(sum, int64) + Flush per operation", kindLatency, true, accInt64},
	{"fop_lat", "LockAll once, FetchAndOp(sum, int64) + Flush per operation", kindLatency, false, fopLat},
	{"cas_lat", "LockAll once, CompareAndSwap(int64) + Flush per operation", kindLatency, false, casLat},
	{"fence", "empty Fence, every rank", kindTail, false, emptyFence},
	{"busy_get", "Lock(shared) + Get + Unlock while the target computes", kindMax, false, busyGet},
	{"lock_put", "Lock(exclusive) + Put + Unlock", kindLatency, false, lockLat(false)},
	{"alloc_free.allocate", "Allocate + Free of a window, per pair", kindLatency, false, allocFree(allocZeroed)},
	{"alloc_free.nozero", "Allocate(NoZero) + Free of a window, not cleared as MPI_Win_allocate's; per pair (gorma only)", kindLatency, false, allocFree(allocNoZero)},
	{"alloc_free.create", "Create + Free of a window over the caller's memory, per pair", kindLatency, false, allocFree(allocCreate)},
}

func caseNames() []string {
	var names []string
	for _, c := range cases {
		names = append(names, c.name)
	}
	return names
}

// selected reports whether the case name is selected by one of sel: "all", the name, or
// the part of the name before its dot.
func selected(sel []string, name string) bool {
	group, _, _ := strings.Cut(name, ".")
	for _, s := range sel {
		if s == "all" || s == name || s == group {
			return true
		}
	}
	return false
}

func knownSelector(s string) bool {
	for _, c := range cases {
		if selected([]string{s}, c.name) {
			return true
		}
	}
	return false
}

// bench is what the cases share: the world, the flags, this rank's role and the windows.
// Ranks pair up: rank r with rank r^1 (0 with 1, 2 with 3, ...). The even rank of a pair
// is its origin and the odd rank its target, so every origin measures against its own
// target at the same time as the other origins.
type bench struct {
	w        *runtime.World
	o        options
	me, peer int               // peer: me's partner, me^1
	bytes    *window.Win[byte] // max(--max-size, 8) bytes per rank
	f64      *window.Win[float64]
	i64      *window.Win[int64]
	src, dst []byte
	fsrc     []float64
	isrc     []int64
}

func newBench(ctx context.Context, w *runtime.World, o options) (*bench, error) {
	b := &bench{w: w, o: o, me: w.Rank(), peer: w.Rank() ^ 1}
	// Two int64s at least: cas_lat works on the second.
	n := max(o.maxSize, 16)
	var err error
	if b.bytes, err = window.Allocate[byte](ctx, w, n); err != nil {
		return nil, err
	}
	if b.f64, err = window.Allocate[float64](ctx, w, n/8); err != nil {
		return nil, err
	}
	if b.i64, err = window.Allocate[int64](ctx, w, n/8); err != nil {
		return nil, err
	}
	b.src, b.dst = make([]byte, n), make([]byte, n)
	b.fsrc, b.isrc = make([]float64, n/8), make([]int64, n/8)
	for i := range b.src {
		b.src[i], b.dst[i] = byte(i*7+1), byte(i*3+2)
	}
	for i := range b.fsrc {
		b.fsrc[i], b.isrc[i] = 1, 1
	}
	loc := b.bytes.Local()
	for i := range loc {
		loc[i] = byte(i*5 + 3)
	}
	for i := range b.f64.Local() {
		b.f64.Local()[i], b.i64.Local()[i] = 1, 1
	}
	// The stores above become visible to the peer at its first epoch: Create ends in a
	// barrier, and every case begins with one.
	return b, nil
}

// origin reports whether this rank is the origin of its pair: an even rank.
func (b *bench) origin() bool { return b.me%2 == 0 }

func (b *bench) free(ctx context.Context) error {
	for _, f := range []func(context.Context) error{b.bytes.Free, b.f64.Free, b.i64.Free} {
		if err := f(ctx); err != nil {
			return err
		}
	}
	return nil
}

// sizesOf yields the sizes of c's rows: powers of two from --min-size to --max-size, or
// the one size of an unsized case.
func (b *bench) sizesOf(c benchCase) []int {
	switch {
	case c.name == "fence":
		return []int{0}
	case strings.HasPrefix(c.name, "alloc_free."):
		return []int{b.o.winSize}
	case !c.sized:
		return []int{8}
	}
	var s []int
	for n := b.o.minSize; n <= b.o.maxSize; n *= 2 {
		s = append(s, n)
	}
	return s
}

// rma runs one Put of size bytes to the peer, or one Get from it.
func (b *bench) rma(get bool, size int) error {
	if get {
		return b.bytes.Get(b.dst[:size], b.peer, 0)
	}
	return b.bytes.Put(b.src[:size], b.peer, 0)
}

// lockLat: every origin locks its target exclusively around every operation; the
// targets idle.
func lockLat(get bool) func(context.Context, *bench, int) (row, error) {
	return func(ctx context.Context, b *bench, size int) (row, error) {
		if !b.origin() {
			return row{}, nil
		}
		iters := scaled(b.o.iters, size)
		m, err := measure(warmupOf(iters), iters, func(int) error {
			if err := b.bytes.Lock(ctx, window.Exclusive, b.peer, 0); err != nil {
				return err
			}
			if err := b.rma(get, size); err != nil {
				return err
			}
			return b.bytes.Unlock(ctx, b.peer)
		})
		return m.latency(size, 1), err
	}
}

// lockAllLat: every origin opens one LockAll epoch and flushes every operation.
func lockAllLat(get bool) func(context.Context, *bench, int) (row, error) {
	return func(ctx context.Context, b *bench, size int) (row, error) {
		return lockAllDo(ctx, b, b.bytes, size, func(int) error {
			if err := b.rma(get, size); err != nil {
				return err
			}
			return b.bytes.Flush(ctx, b.peer)
		})
	}
}

// lockAllDo times op at every origin inside one LockAll epoch of win; the targets idle.
func lockAllDo[T runtime.Elem](ctx context.Context, b *bench, win *window.Win[T], size int, op func(int) error) (row, error) {
	if !b.origin() {
		return row{}, nil
	}
	if err := win.LockAll(ctx, 0); err != nil {
		return row{}, err
	}
	iters := scaled(b.o.iters, size)
	m, err := measure(warmupOf(iters), iters, op)
	if uerr := win.UnlockAll(ctx); err == nil {
		err = uerr
	}
	return m.latency(size, 1), err
}

// fenceLat: as osu_put_latency's fence mode, the origins access their targets in one
// epoch and the targets access their origins in the next. The Fences span every rank. An
// iteration is three Fences, the figure half of it.
func fenceLat(get bool) func(context.Context, *bench, int) (row, error) {
	return func(ctx context.Context, b *bench, size int) (row, error) {
		iters := scaled(b.o.iters, size)
		m, err := measure(warmupOf(iters), iters, func(int) error {
			for e := range 3 {
				if err := b.bytes.Fence(ctx, 0); err != nil {
					return err
				}
				if e == b.me%2 {
					if err := b.rma(get, size); err != nil {
						return err
					}
				}
			}
			return nil
		})
		if ferr := b.bytes.Fence(ctx, window.NoSucceed); err == nil {
			err = ferr
		}
		return m.latency(size, 0.5), err
	}
}

// bwWindow is the number of operations between two Flushes in the bandwidth cases.
const bwWindow = 64

// bandwidth: every origin issues bwWindow operations to its target and a Flush per
// round, in one LockAll epoch; the targets idle.
func bandwidth(get bool) func(context.Context, *bench, int) (row, error) {
	return func(ctx context.Context, b *bench, size int) (row, error) {
		if !b.origin() {
			return row{}, nil
		}
		iters, warmup := b.o.bwIters, max(b.o.bwIters/10, 2)
		if size > 16<<10 {
			iters, warmup = max(iters/5, 2), max(warmup/5, 1)
		}
		if err := b.bytes.LockAll(ctx, 0); err != nil {
			return row{}, err
		}
		var start time.Time
		var cs [2]float64
		var err error
		for i := 0; i < warmup+iters && err == nil; i++ {
			if i == warmup {
				cs = benchkit.Switches() // before the clock starts: the system call is not timed
				start = time.Now()
			}
			for k := 0; k < bwWindow && err == nil; k++ {
				err = b.rma(get, size)
			}
			if err == nil {
				err = b.bytes.Flush(ctx, b.peer)
			}
		}
		secs := time.Since(start).Seconds()
		r := row{Bytes: size, Iterations: iters, MBps: float64(size) * bwWindow * float64(iters) / secs / 1e6}
		r.VCSW, r.IVCSW = perIter(since(cs), iters)
		if uerr := b.bytes.UnlockAll(ctx); err == nil {
			err = uerr
		}
		return r, err
	}
}
