package window_test

import (
	"context"
	"errors"
	"fmt"
	goruntime "runtime"
	"slices"
	"testing"

	"github.com/gorma-hpc/gorma/collectives"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/runtimetest"
	"github.com/gorma-hpc/gorma/window"
)

// Every rank accumulates into every rank at once: the counts are exact. The transport
// path is cut into chunks of two int64 (one float64 pair), so a 5-element accumulate
// spans three chunks.
func TestAccumulateSumExact(t *testing.T) {
	defer window.SetAccChunk(16)()
	forLayouts(t, func(ctx context.Context, w *runtime.World) error {
		if err := sumExact[int64](ctx, w); err != nil {
			return err
		}
		return sumExact[float64](ctx, w)
	})
}

func sumExact[T int64 | float64](ctx context.Context, w *runtime.World) error {
	const k, n = 20, 5
	win, err := window.Allocate[T](ctx, w, n)
	if err != nil {
		return err
	}
	if err := win.LockAll(ctx, 0); err != nil {
		return err
	}
	one := []T{1, 1, 1, 1, 1}
	sum := collectives.Sum[T]()
	for i := range k {
		for r := range w.Size() {
			if err := win.Accumulate(one[:n-i%2], (r+i)%w.Size(), i%2, sum); err != nil {
				return err
			}
		}
	}
	if err := win.UnlockAll(ctx); err != nil {
		return err
	}
	if err := runtime.Barrier(ctx, w); err != nil {
		return err
	}
	for i, v := range win.Local() {
		want := T(w.Size() * k) // odd rounds start at element 1
		if i == 0 {
			want /= 2
		}
		if v != want {
			return fmt.Errorf("rank %d: %T local[%d] = %v, want %v", w.Rank(), v, i, v, want)
		}
	}
	return win.Free(ctx)
}

// FetchAndOp and Accumulate on one counter: the sum is exact and every fetched value is a
// distinct prefix, increasing in each rank's program order.
func TestFetchAndOpWithAccumulate(t *testing.T) {
	forLayouts(t, func(ctx context.Context, w *runtime.World) error {
		const k = 40
		win, err := window.Allocate[int64](ctx, w, 1)
		if err != nil {
			return err
		}
		if err := win.LockAll(ctx, 0); err != nil {
			return err
		}
		sum := collectives.Sum[int64]()
		fetched := make([]int64, 0, k/2)
		for i := range k {
			if i%2 == 0 {
				var old int64
				if err := win.FetchAndOp(1, &old, 0, 0, sum); err != nil {
					return err
				}
				fetched = append(fetched, old)
			} else if err := win.Accumulate([]int64{2}, 0, 0, sum); err != nil {
				return err
			}
		}
		if err := win.UnlockAll(ctx); err != nil {
			return err
		}
		if !slices.IsSorted(fetched) {
			return fmt.Errorf("rank %d: fetched values out of program order: %v", w.Rank(), fetched)
		}
		if w.Rank() != 0 {
			if err := runtime.Send(ctx, w, fetched, 0, 77); err != nil {
				return err
			}
			if err := runtime.Barrier(ctx, w); err != nil {
				return err
			}
			return win.Free(ctx)
		}
		total := int64(w.Size() * k / 2 * 3)
		all := slices.Clone(fetched)
		for r := 1; r < w.Size(); r++ {
			got := make([]int64, k/2)
			if _, err := runtime.Recv(ctx, w, got, r, 77); err != nil {
				return err
			}
			all = append(all, got...)
		}
		if err := runtime.Barrier(ctx, w); err != nil {
			return err
		}
		if v := win.Local()[0]; v != total {
			return fmt.Errorf("counter = %d, want %d", v, total)
		}
		slices.Sort(all)
		for i, v := range all {
			if v < 0 || v >= total || (i > 0 && v == all[i-1]) {
				return fmt.Errorf("fetched values not distinct prefixes of [0, %d): %v", total, all)
			}
		}
		return win.Free(ctx)
	})
}

// A mutex from CompareAndSwap guards a plain counter updated by Get and Put.
func TestCompareAndSwapMutex(t *testing.T) {
	forLayouts(t, func(ctx context.Context, w *runtime.World) error {
		const k = 15
		win, err := window.Allocate[int64](ctx, w, 2)
		if err != nil {
			return err
		}
		if err := win.LockAll(ctx, 0); err != nil {
			return err
		}
		me := int64(w.Rank() + 1)
		v := make([]int64, 1)
		for range k {
			for {
				var old int64
				if err := win.CompareAndSwap(me, 0, &old, 0, 0); err != nil {
					return err
				}
				if old == 0 {
					break
				}
				goruntime.Gosched()
			}
			if err := win.Get(v, 0, 1); err != nil {
				return err
			}
			if err := win.Flush(ctx, 0); err != nil {
				return err
			}
			v[0]++
			if err := win.Put(v, 0, 1); err != nil {
				return err
			}
			if err := win.Flush(ctx, 0); err != nil {
				return err
			}
			var old int64
			if err := win.CompareAndSwap(0, me, &old, 0, 0); err != nil {
				return err
			}
			if old != me {
				return fmt.Errorf("rank %d: the mutex held %d at release", w.Rank(), old)
			}
		}
		if err := win.UnlockAll(ctx); err != nil {
			return err
		}
		if err := runtime.Barrier(ctx, w); err != nil {
			return err
		}
		if l := win.Local(); w.Rank() == 0 && (l[0] != 0 || l[1] != int64(w.Size()*k)) {
			return fmt.Errorf("mutex %d, counter %d, want 0 and %d", l[0], l[1], w.Size()*k)
		}
		return win.Free(ctx)
	})
}

// GetAccumulate and FetchAndOp with NoOp read 16-byte elements atomically while other
// ranks add to both halves at once.
func TestNoOpAtomicRead(t *testing.T) {
	forLayouts(t, func(ctx context.Context, w *runtime.World) error {
		const k = 30
		win, err := window.Allocate[complex128](ctx, w, 2)
		if err != nil {
			return err
		}
		if err := win.LockAll(ctx, 0); err != nil {
			return err
		}
		sum, noop := collectives.Sum[complex128](), collectives.NoOp[complex128]()
		res := make([]complex128, 2)
		last := 0.0
		for range k {
			if err := win.Accumulate([]complex128{1 + 1i, 2 + 2i}, 0, 0, sum); err != nil {
				return err
			}
			if err := win.GetAccumulate(nil, res, 0, 0, noop); err != nil {
				return err
			}
			var one complex128
			if err := win.FetchAndOp(99, &one, 0, 1, noop); err != nil {
				return err
			}
			for _, x := range []complex128{res[0], res[1], one} {
				if real(x) != imag(x) {
					return fmt.Errorf("rank %d: torn element %v", w.Rank(), x)
				}
			}
			if real(res[0]) <= last {
				return fmt.Errorf("rank %d: read %v after %v", w.Rank(), res[0], last)
			}
			last = real(res[0])
		}
		if err := win.UnlockAll(ctx); err != nil {
			return err
		}
		if err := runtime.Barrier(ctx, w); err != nil {
			return err
		}
		n := float64(w.Size() * k)
		if l := win.Local(); w.Rank() == 0 && (l[0] != complex(n, n) || l[1] != complex(2*n, 2*n)) {
			return fmt.Errorf("final %v, want %v", l, []complex128{complex(n, n), complex(2*n, 2*n)})
		}
		return win.Free(ctx)
	})
}

// A Create window (user memory: reached by cross-memory attach on the same host) takes
// accumulates from every rank.
func TestAccumulateCreateWindow(t *testing.T) {
	forLayouts(t, func(ctx context.Context, w *runtime.World) error {
		const k = 10
		buf := make([]int32, 6)
		win, err := window.Create(ctx, w, buf)
		if err != nil {
			return err
		}
		if err := win.LockAll(ctx, 0); err != nil {
			return err
		}
		sum := collectives.Sum[int32]()
		for i := range k {
			for r := range w.Size() {
				if err := win.Accumulate([]int32{1, 2, 3, 4, 5}, r, 0, sum); err != nil {
					return err
				}
				var old int32
				if err := win.FetchAndOp(int32(1), &old, r, 5, sum); err != nil {
					return err
				}
				if i == k-1 && old < int32(k-1) {
					return fmt.Errorf("rank %d: rank %d's counter was %d in round %d", w.Rank(), r, old, i)
				}
			}
		}
		if err := win.UnlockAll(ctx); err != nil {
			return err
		}
		if err := runtime.Barrier(ctx, w); err != nil {
			return err
		}
		n := int32(w.Size() * k)
		if want := []int32{n, 2 * n, 3 * n, 4 * n, 5 * n, n}; !slices.Equal(buf, want) {
			return fmt.Errorf("rank %d: %v, want %v", w.Rank(), buf, want)
		}
		return win.Free(ctx)
	})
}

func TestAccumulateMisuse(t *testing.T) {
	forLayouts(t, func(ctx context.Context, w *runtime.World) error {
		win, err := window.Allocate[int64](ctx, w, 4)
		if err != nil {
			return err
		}
		peer := (w.Rank() + 1) % w.Size()
		sum := collectives.Sum[int64]()
		var old int64
		if err := win.Accumulate([]int64{1}, peer, 0, sum); !errors.Is(err, window.ErrEpoch) {
			return fmt.Errorf("accumulate outside an epoch: %v", err)
		}
		if err := win.FetchAndOp(1, &old, peer, 0, sum); !errors.Is(err, window.ErrEpoch) {
			return fmt.Errorf("fetch_and_op outside an epoch: %v", err)
		}
		if err := win.Lock(ctx, window.Shared, peer, 0); err != nil {
			return err
		}
		var we *window.Error
		if err := win.Accumulate([]int64{1, 2}, peer, 3, sum); !errors.Is(err, window.ErrRange) || !errors.As(err, &we) || we.Rank != peer || we.Disp != 3 || we.Op != "accumulate" {
			return fmt.Errorf("accumulate past the end: %v", err)
		}
		if err := win.GetAccumulate([]int64{1}, []int64{0}, peer, -1, sum); !errors.Is(err, window.ErrRange) {
			return fmt.Errorf("get_accumulate at -1: %v", err)
		}
		if err := win.CompareAndSwap(1, 0, &old, peer, 4); !errors.Is(err, window.ErrRange) || !errors.As(err, &we) || we.Disp != 4 {
			return fmt.Errorf("compare_and_swap at the end: %v", err)
		}
		if err := win.FetchAndOp(1, &old, peer, 4, sum); !errors.Is(err, window.ErrRange) {
			return fmt.Errorf("fetch_and_op at the end: %v", err)
		}
		if err := win.Accumulate([]int64{1}, peer, 0, collectives.Op[int64]{}); !errors.Is(err, window.ErrInvalid) {
			return fmt.Errorf("zero op: %v", err)
		}
		if err := win.FetchAndOp(1, &old, peer, 0, collectives.Op[int64]{}); !errors.Is(err, window.ErrInvalid) {
			return fmt.Errorf("fetch_and_op with the zero op: %v", err)
		}
		if err := win.FetchAndOp(1, nil, peer, 0, sum); !errors.Is(err, window.ErrInvalid) {
			return fmt.Errorf("fetch_and_op with a nil result: %v", err)
		}
		if err := win.CompareAndSwap(1, 0, nil, peer, 0); !errors.Is(err, window.ErrInvalid) {
			return fmt.Errorf("compare_and_swap with a nil result: %v", err)
		}
		if err := win.GetAccumulate([]int64{1, 2}, []int64{0}, peer, 0, sum); !errors.Is(err, window.ErrInvalid) {
			return fmt.Errorf("get_accumulate with different lengths: %v", err)
		}
		if err := win.Accumulate([]int64{1}, w.Size(), 0, sum); !errors.Is(err, window.ErrInvalid) {
			return fmt.Errorf("accumulate to rank %d: %v", w.Size(), err)
		}
		if err := win.Accumulate(nil, peer, 4, sum); err != nil {
			return fmt.Errorf("empty accumulate at the end: %v", err)
		}
		if err := win.Unlock(ctx, peer); err != nil {
			return err
		}
		if err := win.Free(ctx); err != nil {
			return err
		}
		if err := win.Accumulate([]int64{1}, peer, 0, sum); !errors.Is(err, window.ErrFreed) {
			return fmt.Errorf("accumulate after free: %v", err)
		}
		return nil
	})
}

// On a mapped target the accumulate-type operations allocate nothing.
func TestAccumulateAllocs(t *testing.T) {
	if testing.CoverMode() != "" {
		t.Skip("coverage counters allocate")
	}
	ctx := context.Background()
	runtimetest.Run(t, 2, runtimetest.Options{Transport: "shm"}, func(w *runtime.World) error {
		win, err := window.Allocate[int64](ctx, w, 4)
		if err != nil {
			return err
		}
		if w.Rank() == 0 {
			if err := win.Lock(ctx, window.Shared, 1, 0); err != nil {
				return err
			}
			sum := collectives.Sum[int64]()
			one, res := []int64{1, 1}, make([]int64, 2)
			var old int64
			for name, f := range map[string]func(){
				"accumulate":       func() { win.Accumulate(one, 1, 0, sum) },
				"get_accumulate":   func() { win.GetAccumulate(one, res, 1, 0, sum) },
				"fetch_and_op":     func() { win.FetchAndOp(1, &old, 1, 2, sum) },
				"compare_and_swap": func() { win.CompareAndSwap(1, old, &old, 1, 3) },
			} {
				if n := testing.AllocsPerRun(500, f); n != 0 {
					return fmt.Errorf("%s: %v allocations per call", name, n)
				}
			}
			if err := win.Unlock(ctx, 1); err != nil {
				return err
			}
		}
		if err := runtime.Barrier(ctx, w); err != nil {
			return err
		}
		return win.Free(ctx)
	})
}
