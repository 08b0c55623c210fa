package window_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/gorma-hpc/gorma/collectives"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/window"
)

// TestDynamicAcrossAttachments: an access that runs from one attached buffer into one
// attached right after it in the target's memory (the two halves of one array, attached
// in either order) works, as MPI programs that address attached parts as one array
// expect: Put, Get, Accumulate and GetAccumulate, at a peer and at the rank itself. Past
// the end of a buffer with nothing attached after it (the second half detached, or a
// buffer of another array) the access fails with ErrRange, and so does a request-based
// one (Rput), which never splits.
func TestDynamicAcrossAttachments(t *testing.T) {
	forLayouts(t, func(ctx context.Context, w *runtime.World) error {
		const half = 64
		me, size := w.Rank(), w.Size()
		next := (me + 1) % size
		mem := make([]int32, 2*half)
		other := make([]int32, half)
		win, err := window.CreateDynamic[int32](ctx, w)
		if err != nil {
			return err
		}
		// The second half first at odd ranks: the link is made from either side.
		parts := [][]int32{mem[:half], mem[half:], other}
		if me%2 == 1 {
			parts[0], parts[1] = parts[1], parts[0]
		}
		bs := map[*int32]int{}
		for _, p := range parts {
			b, err := win.Attach(ctx, p)
			if err != nil {
				return err
			}
			bs[&p[0]] = b
		}
		b0, b1, bo := bs[&mem[0]], bs[&mem[half]], bs[&other[0]]
		bases, err := allgather(ctx, w, []int64{int64(b0), int64(b1), int64(bo)})
		if err != nil {
			return err
		}
		src := make([]int32, half+half/2)
		for i := range src {
			src[i] = int32(me*1000 + i)
		}
		sum := collectives.Sum[int32]()
		// A peer's memory, then this rank's own: one origin per target at a time.
		for _, r := range []int{next, me} {
			if err := win.LockAll(ctx, 0); err != nil {
				return err
			}
			at := int(bases[r][0]) + half/4 // runs half/4 + half*3/2 - half = 3/4 into the second half
			if err := first(win.Put(src, r, at), win.Flush(ctx, r), win.Accumulate(src, r, at, sum), win.Flush(ctx, r)); err != nil {
				return fmt.Errorf("Put and Accumulate of %d elements from element %d of rank %d's first half of %d: %w", len(src), half/4, r, half, err)
			}
			got, old := make([]int32, len(src)), make([]int32, len(src))
			if err := first(win.GetAccumulate(nil, old, r, at, collectives.NoOp[int32]()), win.Get(got, r, at), win.Flush(ctx, r)); err != nil {
				return err
			}
			for i := range got {
				if got[i] != 2*src[i] || old[i] != 2*src[i] {
					return fmt.Errorf("rank %d: element %d of the access reads %d (GetAccumulate %d), want %d", r, i, got[i], old[i], 2*src[i])
				}
			}
			// Past the end of a buffer with nothing attached after it.
			if err := win.Put(src[:2], r, int(bases[r][2])+half-1); !errors.Is(err, window.ErrRange) {
				return fmt.Errorf("Put past the end of rank %d's lone buffer: %v, want ErrRange", r, err)
			}
			if _, err := win.Rput(src, r, at); !errors.Is(err, window.ErrRange) {
				return fmt.Errorf("Rput across rank %d's halves: %v, want ErrRange", r, err)
			}
			if err := first(win.UnlockAll(ctx), runtime.Barrier(ctx, w)); err != nil {
				return err
			}
		}
		// The second half detached: the access runs past the first half's end.
		if err := first(win.Detach(ctx, b1), runtime.Barrier(ctx, w), win.LockAll(ctx, 0)); err != nil {
			return err
		}
		for _, r := range []int{next, me} {
			if err := win.Put(src, r, int(bases[r][0])); !errors.Is(err, window.ErrRange) {
				return fmt.Errorf("Put across rank %d's first half with the second detached: %v, want ErrRange", r, err)
			}
		}
		return first(win.UnlockAll(ctx), runtime.Barrier(ctx, w), win.Detach(ctx, b0), win.Detach(ctx, bo), win.Free(ctx))
	})
}
