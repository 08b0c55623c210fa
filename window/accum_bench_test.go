package window_test

import (
	"context"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/collectives"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/window"
)

// benchAtomic reports the latency of op, run b.N times by rank 0 on rank 1's mapped
// memory (shm) inside a LockAll epoch.
func benchAtomic(b *testing.B, op func(win *window.Win[int64]) error) {
	benchJob(b, func(ctx context.Context, w *runtime.World, win *window.Win[int64]) {
		if err := win.LockAll(ctx, 0); err != nil {
			b.Error(err)
			return
		}
		defer win.UnlockAll(ctx)
		b.ReportAllocs()
		b.ResetTimer()
		start := time.Now()
		for i := 0; i < b.N; i++ {
			if err := op(win); err != nil {
				b.Error(err)
				return
			}
		}
		el := time.Since(start)
		b.StopTimer()
		b.ReportMetric(float64(el.Nanoseconds())/float64(b.N), "ns/op")
	})
}

func BenchmarkAccumulate8(b *testing.B) {
	src, sum := []int64{1}, collectives.Sum[int64]()
	benchAtomic(b, func(win *window.Win[int64]) error { return win.Accumulate(src, 1, 8, sum) })
}

func BenchmarkFetchAndOp8(b *testing.B) {
	sum := collectives.Sum[int64]()
	var old int64
	benchAtomic(b, func(win *window.Win[int64]) error { return win.FetchAndOp(1, &old, 1, 8, sum) })
}

func BenchmarkCompareAndSwap8(b *testing.B) {
	var old int64
	benchAtomic(b, func(win *window.Win[int64]) error { return win.CompareAndSwap(old+1, old, &old, 1, 8) })
}
