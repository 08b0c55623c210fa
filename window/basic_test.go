package window_test

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/runtimetest"
	"github.com/gorma-hpc/gorma/window"
)

// layouts are the placements every behaviour is tested on: one host (shm, mapped), two
// pretend hosts (tcp between them, shm within), and tcp everywhere.
var layouts = []struct {
	name string
	n    int
	opt  runtimetest.Options
}{
	{"shm", 3, runtimetest.Options{Transport: "shm"}},
	{"tcp", 3, runtimetest.Options{Transport: "tcp"}},
	{"hosts", 4, runtimetest.Options{Hosts: []string{"a", "a", "b", "b"}}},
}

func forLayouts(t *testing.T, f func(ctx context.Context, w *runtime.World) error) {
	for _, l := range layouts {
		t.Run(l.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(30*time.Second))
			defer cancel()
			runtimetest.Run(t, l.n, l.opt, func(w *runtime.World) error { return f(ctx, w) })
		})
	}
}

func TestFencePutGetRing(t *testing.T) {
	forLayouts(t, func(ctx context.Context, w *runtime.World) error {
		const n = 1000
		win, err := window.Allocate[int64](ctx, w, n)
		if err != nil {
			return err
		}
		me, size := w.Rank(), w.Size()
		next := (me + 1) % size
		src := make([]int64, n)
		for i := range src {
			src[i] = int64(me*1_000_000 + i)
		}
		if err := win.Fence(ctx, 0); err != nil {
			return err
		}
		if err := win.Put(src, next, 0); err != nil {
			return err
		}
		if err := win.Fence(ctx, 0); err != nil {
			return err
		}
		prev := (me - 1 + size) % size
		for i, v := range win.Local() {
			if v != int64(prev*1_000_000+i) {
				return fmt.Errorf("rank %d: local[%d] = %d after the fence", me, i, v)
			}
		}
		got := make([]int64, 10)
		if err := win.Get(got, next, 500); err != nil {
			return err
		}
		if err := win.Fence(ctx, window.NoSucceed); err != nil {
			return err
		}
		for i, v := range got {
			if v != int64(me*1_000_000+500+i) {
				return fmt.Errorf("rank %d: get[%d] = %d", me, i, v)
			}
		}
		return win.Free(ctx)
	})
}

func TestLockPutGet(t *testing.T) {
	forLayouts(t, func(ctx context.Context, w *runtime.World) error {
		win, err := window.Allocate[float64](ctx, w, 64)
		if err != nil {
			return err
		}
		me, size := w.Rank(), w.Size()
		target := (me + 1) % size
		if err := win.Lock(ctx, window.Exclusive, target, 0); err != nil {
			return err
		}
		if err := win.Put([]float64{float64(me) + 0.5}, target, me); err != nil {
			return err
		}
		if err := win.Unlock(ctx, target); err != nil {
			return err
		}
		if err := runtime.Barrier(ctx, w); err != nil {
			return err
		}
		if err := win.LockAll(ctx, 0); err != nil {
			return err
		}
		got := make([]float64, 1)
		for r := range size {
			src := (r - 1 + size) % size
			if err := win.Get(got, r, src); err != nil {
				return err
			}
			if err := win.Flush(ctx, r); err != nil {
				return err
			}
			if got[0] != float64(src)+0.5 {
				return fmt.Errorf("rank %d: rank %d's [%d] = %v", me, r, src, got[0])
			}
		}
		if err := win.UnlockAll(ctx); err != nil {
			return err
		}
		if err := runtime.Barrier(ctx, w); err != nil {
			return err
		}
		return win.Free(ctx)
	})
}

func TestMisuse(t *testing.T) {
	forLayouts(t, func(ctx context.Context, w *runtime.World) error {
		win, err := window.Allocate[int32](ctx, w, 8)
		if err != nil {
			return err
		}
		peer := (w.Rank() + 1) % w.Size()
		if err := win.Put([]int32{1}, peer, 0); !errors.Is(err, window.ErrEpoch) {
			return fmt.Errorf("put outside an epoch: %v", err)
		}
		if err := win.Unlock(ctx, peer); !errors.Is(err, window.ErrEpoch) {
			return fmt.Errorf("unlock without lock: %v", err)
		}
		if err := win.Lock(ctx, window.Shared, peer, 0); err != nil {
			return err
		}
		var we *window.Error
		if err := win.Put([]int32{1, 2}, peer, 7); !errors.Is(err, window.ErrRange) || !errors.As(err, &we) || we.Rank != peer || we.Disp != 7 {
			return fmt.Errorf("put past the end: %v", err)
		}
		if err := win.Get(make([]int32, 1), peer, -1); !errors.Is(err, window.ErrRange) {
			return fmt.Errorf("negative displacement: %v", err)
		}
		if err := win.Fence(ctx, 0); !errors.Is(err, window.ErrEpoch) {
			return fmt.Errorf("fence in a passive epoch: %v", err)
		}
		if err := win.Unlock(ctx, peer); err != nil {
			return err
		}
		if err := win.SetName("halo"); err != nil {
			return err
		}
		if err := win.Free(ctx); err != nil {
			return err
		}
		if err := win.Lock(ctx, window.Shared, peer, 0); !errors.Is(err, window.ErrFreed) {
			return fmt.Errorf("lock after free: %v", err)
		}
		// The error names the window, as hang reports do, and says what to do.
		want := regexp.MustCompile(`^window fence: window freed: win\d+ \("halo"\): Free was called on it, .*\(create another with Allocate or Create\)$`)
		if err := win.Fence(ctx, 0); !errors.Is(err, window.ErrFreed) || !want.MatchString(err.Error()) {
			return fmt.Errorf("fence after free: %v, want an error matching %s", err, want)
		}
		return nil
	})
}
