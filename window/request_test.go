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
	"github.com/gorma-hpc/gorma/window"
)

// waitTest polls r with Test until it completes.
func waitTest(ctx context.Context, r *window.Request) error {
	for {
		done, err := r.Test()
		if done {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		goruntime.Gosched()
	}
}

func TestRequestOps(t *testing.T) {
	forLayouts(t, func(ctx context.Context, w *runtime.World) error {
		const n = 3000 // 24 KB: several work requests on the transport path
		win, err := window.Allocate[int64](ctx, w, n)
		if err != nil {
			return err
		}
		me, size := w.Rank(), w.Size()
		next := (me + 1) % size
		src := make([]int64, n)
		for i := range src {
			src[i] = int64(me*100_000 + i)
		}
		if err := win.LockAll(ctx, 0); err != nil {
			return err
		}
		r, err := win.Rput(src, next, 0)
		if err != nil {
			return err
		}
		if err := r.Wait(ctx); err != nil {
			return err
		}
		if err := r.Wait(ctx); err != nil { // again: the same outcome
			return err
		}
		got := make([]int64, n)
		if r, err = win.Rget(got, next, 0); err != nil {
			return err
		}
		if err := waitTest(ctx, r); err != nil {
			return err
		}
		if !slices.Equal(got, src) {
			return fmt.Errorf("rank %d: rget after rput differs", me)
		}
		ones := make([]int64, n)
		for i := range ones {
			ones[i] = 1
		}
		sum := collectives.Sum[int64]()
		if r, err = win.Raccumulate(ones, next, 0, sum); err != nil {
			return err
		}
		if err := r.Wait(ctx); err != nil {
			return err
		}
		if r, err = win.RgetAccumulate(ones[:10], got[:10], next, 5, sum); err != nil {
			return err
		}
		if err := r.Wait(ctx); err != nil {
			return err
		}
		for i, v := range got[:10] {
			if v != src[5+i]+1 {
				return fmt.Errorf("rank %d: rget_accumulate[%d] = %d, want %d", me, i, v, src[5+i]+1)
			}
		}
		// A flush completes outstanding requests: Test then reports them done at once.
		src[0] = -1
		rp, err := win.Rput(src[:1], next, 0)
		if err != nil {
			return err
		}
		rg, err := win.Rget(got, next, 0)
		if err != nil {
			return err
		}
		if err := win.Flush(ctx, next); err != nil {
			return err
		}
		for _, q := range []*window.Request{rp, rg} {
			if done, err := q.Test(); !done || err != nil {
				return fmt.Errorf("rank %d: request after a flush: done %v, %v", me, done, err)
			}
		}
		if got[5] != src[5]+2 || got[20] != src[20]+1 {
			return fmt.Errorf("rank %d: rget after flush: [5] %d [20] %d", me, got[5], got[20])
		}
		if err := win.UnlockAll(ctx); err != nil {
			return err
		}
		if err := runtime.Barrier(ctx, w); err != nil {
			return err
		}
		if l := win.Local(); l[0] != -1 || l[1] != int64(((me-1+size)%size)*100_000+2) {
			return fmt.Errorf("rank %d: local %v", me, l[:2])
		}
		return win.Free(ctx)
	})
}

// Requests still outstanding at Unlock are completed by it.
func TestRequestUnlockCompletes(t *testing.T) {
	forLayouts(t, func(ctx context.Context, w *runtime.World) error {
		win, err := window.Allocate[float32](ctx, w, 512)
		if err != nil {
			return err
		}
		next := (w.Rank() + 1) % w.Size()
		if err := win.Lock(ctx, window.Exclusive, next, 0); err != nil {
			return err
		}
		var reqs []*window.Request
		for i := range 8 {
			r, err := win.Rput([]float32{float32(i), float32(i)}, next, 2*i)
			if err != nil {
				return err
			}
			reqs = append(reqs, r)
		}
		if err := win.Unlock(ctx, next); err != nil {
			return err
		}
		for _, r := range reqs {
			if err := r.Wait(ctx); err != nil {
				return err
			}
		}
		if err := runtime.Barrier(ctx, w); err != nil {
			return err
		}
		for i, v := range win.Local()[:16] {
			if v != float32(i/2) {
				return fmt.Errorf("rank %d: local[%d] = %v", w.Rank(), i, v)
			}
		}
		return win.Free(ctx)
	})
}

func TestRequestMisuse(t *testing.T) {
	forLayouts(t, func(ctx context.Context, w *runtime.World) error {
		win, err := window.Allocate[int64](ctx, w, 4)
		if err != nil {
			return err
		}
		peer := (w.Rank() + 1) % w.Size()
		sum := collectives.Sum[int64]()
		buf := make([]int64, 2)
		calls := map[string]func() (*window.Request, error){
			"rput":            func() (*window.Request, error) { return win.Rput(buf, peer, 0) },
			"rget":            func() (*window.Request, error) { return win.Rget(buf, peer, 0) },
			"raccumulate":     func() (*window.Request, error) { return win.Raccumulate(buf, peer, 0, sum) },
			"rget_accumulate": func() (*window.Request, error) { return win.RgetAccumulate(buf, buf, peer, 0, sum) },
		}
		for name, f := range calls {
			if r, err := f(); r != nil || !errors.Is(err, window.ErrEpoch) {
				return fmt.Errorf("%s outside an epoch: %v", name, err)
			}
		}
		if err := win.Fence(ctx, 0); err != nil {
			return err
		}
		for name, f := range calls {
			if r, err := f(); r != nil || !errors.Is(err, window.ErrEpoch) {
				return fmt.Errorf("%s in a fence epoch: %v", name, err)
			}
		}
		if err := win.Fence(ctx, window.NoSucceed); err != nil {
			return err
		}
		if err := win.Lock(ctx, window.Shared, peer, 0); err != nil {
			return err
		}
		var we *window.Error
		if _, err := win.Rput(buf, peer, 3); !errors.Is(err, window.ErrRange) || !errors.As(err, &we) || we.Op != "rput" || we.Rank != peer || we.Disp != 3 {
			return fmt.Errorf("rput past the end: %v", err)
		}
		if _, err := win.Raccumulate(buf, peer, 0, collectives.Op[int64]{}); !errors.Is(err, window.ErrInvalid) {
			return fmt.Errorf("raccumulate with the zero op: %v", err)
		}
		if err := win.Unlock(ctx, peer); err != nil {
			return err
		}
		var nilReq *window.Request
		if err := nilReq.Wait(ctx); !errors.Is(err, window.ErrInvalid) {
			return fmt.Errorf("wait on a nil request: %v", err)
		}
		return win.Free(ctx)
	})
}
