package window_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/window"
)

// TestDynamicAcrossAttachments: an access that runs from one attached buffer into the
// next, though they are the two halves of one array, fails with ErrRange at every
// rank, the local one included; with the whole array attached once, the same access
// from the same displacement of the array works.
func TestDynamicAcrossAttachments(t *testing.T) {
	forLayouts(t, func(ctx context.Context, w *runtime.World) error {
		const half = 64
		me, size := w.Rank(), w.Size()
		next := (me + 1) % size
		mem := make([]int32, 2*half)
		win, err := window.CreateDynamic[int32](ctx, w)
		if err != nil {
			return err
		}
		b0, err := win.Attach(ctx, mem[:half])
		if err != nil {
			return err
		}
		b1, err := win.Attach(ctx, mem[half:])
		if err != nil {
			return err
		}
		bases, err := allgather(ctx, w, []int64{int64(b0)})
		if err != nil {
			return err
		}
		src := make([]int32, half+half/2)
		for i := range src {
			src[i] = int32(me*1000 + i)
		}
		if err := win.LockAll(ctx, 0); err != nil {
			return err
		}
		for _, r := range []int{next, me} {
			if err := win.Put(src, r, int(bases[r][0])); !errors.Is(err, window.ErrRange) {
				return fmt.Errorf("Put of %d elements into rank %d's first half of %d: %v, want ErrRange", len(src), r, half, err)
			}
		}
		if err := first(win.UnlockAll(ctx), runtime.Barrier(ctx, w), win.Detach(ctx, b0), win.Detach(ctx, b1)); err != nil {
			return err
		}
		whole, err := win.Attach(ctx, mem)
		if err != nil {
			return err
		}
		if bases, err = allgather(ctx, w, []int64{int64(whole)}); err != nil {
			return err
		}
		got := make([]int32, len(src))
		if err := first(win.LockAll(ctx, 0), win.Put(src, next, int(bases[next][0])), win.Flush(ctx, next),
			win.Get(got, next, int(bases[next][0])), win.Flush(ctx, next), win.UnlockAll(ctx)); err != nil {
			return err
		}
		for i := range got {
			if got[i] != src[i] {
				return fmt.Errorf("rank %d's array [%d] = %d, want %d", next, i, got[i], src[i])
			}
		}
		return first(runtime.Barrier(ctx, w), win.Detach(ctx, whole), win.Free(ctx))
	})
}
