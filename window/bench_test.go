package window_test

import (
	"context"
	"sync"
	"testing"

	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/runtimetest"
	"github.com/gorma-hpc/gorma/window"
)

// benchJob runs f on rank 0 of a 2-rank shm job while rank 1 waits in a barrier; both
// ranks allocate the window first.
func benchJob(b *testing.B, f func(ctx context.Context, w *runtime.World, win *window.Win[int64])) {
	ctx := context.Background()
	j, err := runtimetest.Start(ctx, 2, runtimetest.Options{Transport: "shm"})
	if err != nil {
		b.Fatal(err)
	}
	defer j.Close()
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for r, w := range j.Worlds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			win, err := window.Allocate[int64](ctx, w, 1024)
			if err != nil {
				errs[r] = err
				return
			}
			if r == 0 {
				f(ctx, w, win)
			}
			if err := runtime.Barrier(ctx, w); err != nil {
				errs[r] = err
				return
			}
			errs[r] = win.Free(ctx)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			b.Fatal(err)
		}
	}
	if err := j.Finalize(ctx); err != nil {
		b.Fatal(err)
	}
}

func BenchmarkPutFlush8(b *testing.B) {
	benchJob(b, func(ctx context.Context, w *runtime.World, win *window.Win[int64]) {
		if err := win.LockAll(ctx, 0); err != nil {
			b.Error(err)
			return
		}
		src := []int64{42}
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			win.Put(src, 1, 8)
			win.Flush(ctx, 1)
		}
		b.StopTimer()
		win.UnlockAll(ctx)
	})
}

func BenchmarkGetFlush8(b *testing.B) {
	benchJob(b, func(ctx context.Context, w *runtime.World, win *window.Win[int64]) {
		if err := win.LockAll(ctx, 0); err != nil {
			b.Error(err)
			return
		}
		dst := []int64{0}
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			win.Get(dst, 1, 8)
			win.Flush(ctx, 1)
		}
		b.StopTimer()
		win.UnlockAll(ctx)
	})
}

func BenchmarkLockPutUnlock8(b *testing.B) {
	benchJob(b, func(ctx context.Context, w *runtime.World, win *window.Win[int64]) {
		src := []int64{42}
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			win.Lock(ctx, window.Exclusive, 1, 0)
			win.Put(src, 1, 8)
			win.Unlock(ctx, 1)
		}
	})
}
