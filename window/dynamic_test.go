package window_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/window"
)

// allgather returns every rank's mine (all of the same length), by messages on w.
func allgather(ctx context.Context, w *runtime.World, mine []int64) ([][]int64, error) {
	const tag = 77
	all := make([][]int64, w.Size())
	all[w.Rank()] = mine
	var reqs []*runtime.Request
	for r := range w.Size() {
		if r != w.Rank() {
			q, err := runtime.Isend(w, mine, r, tag)
			if err != nil {
				return nil, err
			}
			reqs = append(reqs, q)
		}
	}
	for r := range w.Size() {
		if r != w.Rank() {
			all[r] = make([]int64, len(mine))
			if _, err := runtime.Recv(ctx, w, all[r], r, tag); err != nil {
				return nil, err
			}
		}
	}
	for _, q := range reqs {
		if _, err := q.Wait(ctx); err != nil {
			return nil, err
		}
	}
	return all, nil
}

// TestDynamicAttachPutGet attaches two buffers per rank, accesses them under Fence, PSCW
// and Lock, detaches one (later accesses to it fail with ErrRange), attaches a new one,
// and frees the window with attachments in place.
func TestDynamicAttachPutGet(t *testing.T) {
	forLayouts(t, func(ctx context.Context, w *runtime.World) error {
		win, err := window.CreateDynamic[int64](ctx, w)
		if err != nil {
			return err
		}
		me, size := w.Rank(), w.Size()
		right, left := (me+1)%size, (me-1+size)%size
		a, b := make([]int64, 100), make([]int64, 10)
		baseA, err := win.Attach(ctx, a)
		if err != nil {
			return err
		}
		baseB, err := win.Attach(ctx, b)
		if err != nil {
			return err
		}
		bases, err := allgather(ctx, w, []int64{int64(baseA), int64(baseB)})
		if err != nil {
			return err
		}
		rA, rB := int(bases[right][0]), int(bases[right][1])

		// Fence epoch: Put into the right neighbour's buffers.
		if err := win.Fence(ctx, 0); err != nil {
			return err
		}
		if err := win.Put([]int64{int64(me), int64(me) + 1}, right, rA+10); err != nil {
			return err
		}
		if err := win.Put([]int64{int64(-me)}, right, rB+9); err != nil {
			return err
		}
		if err := win.Put(make([]int64, 2), right, rB+9); !errors.Is(err, window.ErrRange) {
			return fmt.Errorf("put past the end of an attachment: %v", err)
		}
		if err := win.Get(make([]int64, 1), right, 5); !errors.Is(err, window.ErrRange) {
			return fmt.Errorf("get at a displacement never attached: %v", err)
		}
		if err := win.Fence(ctx, window.NoSucceed); err != nil {
			return err
		}
		if a[10] != int64(left) || a[11] != int64(left)+1 || b[9] != int64(-left) {
			return fmt.Errorf("after the fence: a[10:12] = %v, b[9] = %d", a[10:12], b[9])
		}

		// PSCW epoch: Get back what the left neighbour put here, from the right one.
		if err := win.Post(ctx, []int{left}, 0); err != nil {
			return err
		}
		if err := win.Start(ctx, []int{right}, 0); err != nil {
			return err
		}
		got := make([]int64, 2)
		if err := win.Get(got, right, rA+10); err != nil {
			return err
		}
		if err := win.Complete(ctx); err != nil {
			return err
		}
		if err := win.Wait(ctx); err != nil {
			return err
		}
		if got[0] != int64(me) || got[1] != int64(me)+1 {
			return fmt.Errorf("get after PSCW = %v", got)
		}

		// Passive target, every rank, own buffers included.
		if err := win.LockAll(ctx, 0); err != nil {
			return err
		}
		for r := range size {
			one := make([]int64, 1)
			if err := win.Get(one, r, int(bases[r][1])+9); err != nil {
				return err
			}
			if err := win.Flush(ctx, r); err != nil {
				return err
			}
			if want := -int64((r - 1 + size) % size); one[0] != want {
				return fmt.Errorf("rank %d's b[9] = %d, want %d", r, one[0], want)
			}
		}
		if err := win.UnlockAll(ctx); err != nil {
			return err
		}

		// Detach b everywhere; accesses to it fail, a stays reachable.
		if err := runtime.Barrier(ctx, w); err != nil {
			return err
		}
		if err := win.Detach(ctx, baseB); err != nil {
			return err
		}
		if err := win.Detach(ctx, baseB); !errors.Is(err, window.ErrRange) {
			return fmt.Errorf("second detach: %v", err)
		}
		if err := win.Detach(ctx, baseA+1); !errors.Is(err, window.ErrRange) {
			return fmt.Errorf("detach inside a buffer: %v", err)
		}
		c := make([]int64, 3)
		baseC, err := win.Attach(ctx, c)
		if err != nil {
			return err
		}
		cs, err := allgather(ctx, w, []int64{int64(baseC)})
		if err != nil {
			return err
		}
		for _, target := range []int{right, me} {
			if err := win.Lock(ctx, window.Exclusive, target, 0); err != nil {
				return err
			}
			if err := win.Put([]int64{1}, target, int(bases[target][1])); !errors.Is(err, window.ErrRange) {
				return fmt.Errorf("put to rank %d after detach: %v", target, err)
			}
			if err := win.Get(got[:1], target, int(bases[target][1])+9); !errors.Is(err, window.ErrRange) {
				return fmt.Errorf("get from rank %d after detach: %v", target, err)
			}
			if err := win.Put([]int64{int64(100 + me)}, target, int(cs[target][0])+2); err != nil {
				return err
			}
			if err := win.Get(got[:1], target, int(bases[target][0])+11); err != nil {
				return err
			}
			if err := win.Unlock(ctx, target); err != nil {
				return err
			}
		}
		if err := runtime.Barrier(ctx, w); err != nil {
			return err
		}
		if want := int64(100 + left); c[2] != want && c[2] != int64(100+me) {
			return fmt.Errorf("c[2] = %d", c[2])
		}
		if b[9] != int64(-left) {
			return fmt.Errorf("detached b changed: b[9] = %d", b[9])
		}
		if err := win.Free(ctx); err != nil { // a and c still attached
			return err
		}
		if _, err := win.Attach(ctx, b); !errors.Is(err, window.ErrFreed) {
			return fmt.Errorf("attach after free: %v", err)
		}
		return nil
	})
}

// TestDynamicSlotReuse: a slot detached and attached again gives a new base; the old base
// fails at every peer, though it names the same slot.
func TestDynamicSlotReuse(t *testing.T) {
	forLayouts(t, func(ctx context.Context, w *runtime.World) error {
		win, err := window.CreateDynamic[int32](ctx, w)
		if err != nil {
			return err
		}
		x := []int32{1, 2, 3, 4}
		old, err := win.Attach(ctx, x)
		if err != nil {
			return err
		}
		if err := win.Detach(ctx, old); err != nil {
			return err
		}
		// Fill every slot, which brings the next Attach back to the first slot.
		var held []int
		for {
			base, err := win.Attach(ctx, make([]int32, 1))
			if errors.Is(err, window.ErrInvalid) {
				break
			}
			if err != nil {
				return err
			}
			if len(held) > 1024 { // a dynamic window holds 1024 attachments at a rank
				return fmt.Errorf("%d attachments without running out of slots", len(held))
			}
			held = append(held, base)
		}
		for _, base := range held {
			if err := win.Detach(ctx, base); err != nil {
				return err
			}
		}
		y := []int32{10, 20, 30, 40}
		nu, err := win.Attach(ctx, y)
		if err != nil {
			return err
		}
		if nu == old {
			return fmt.Errorf("a reattached slot gave the old base %d again", old)
		}
		bases, err := allgather(ctx, w, []int64{int64(old), int64(nu)})
		if err != nil {
			return err
		}
		if err := win.LockAll(ctx, 0); err != nil {
			return err
		}
		got := make([]int32, 4)
		for r := range w.Size() {
			if err := win.Get(got, r, int(bases[r][0])); !errors.Is(err, window.ErrRange) {
				return fmt.Errorf("get from rank %d's old base: %v", r, err)
			}
			if err := win.Get(got, r, int(bases[r][1])); err != nil {
				return err
			}
			if err := win.Flush(ctx, r); err != nil {
				return err
			}
			if got[3] != 40 {
				return fmt.Errorf("rank %d's new attachment: %v", r, got)
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

// TestDynamicMisuse: attachment calls on other flavors and bad arguments.
func TestDynamicMisuse(t *testing.T) {
	forLayouts(t, func(ctx context.Context, w *runtime.World) error {
		win, err := window.Allocate[int64](ctx, w, 4)
		if err != nil {
			return err
		}
		if _, err := win.Attach(ctx, make([]int64, 4)); !errors.Is(err, window.ErrFlavor) {
			return fmt.Errorf("attach to an allocated window: %v", err)
		}
		if err := win.Detach(ctx, 0); !errors.Is(err, window.ErrFlavor) {
			return fmt.Errorf("detach from an allocated window: %v", err)
		}
		if err := win.Free(ctx); err != nil {
			return err
		}
		dyn, err := window.CreateDynamic[int64](ctx, w)
		if err != nil {
			return err
		}
		if _, err := dyn.Attach(ctx, nil); !errors.Is(err, window.ErrInvalid) {
			return fmt.Errorf("attach of nothing: %v", err)
		}
		if err := dyn.Detach(ctx, -5); !errors.Is(err, window.ErrRange) {
			return fmt.Errorf("detach of a negative base: %v", err)
		}
		if dyn.Local() != nil || dyn.Flavor() != window.FlavorDynamic {
			return fmt.Errorf("dynamic window: Local %v, flavor %v", dyn.Local(), dyn.Flavor())
		}
		if err := dyn.LockAll(ctx, 0); err != nil {
			return err
		}
		if err := dyn.Put([]int64{1}, (w.Rank()+1)%w.Size(), -1); !errors.Is(err, window.ErrRange) {
			return fmt.Errorf("put at a negative displacement: %v", err)
		}
		if err := dyn.UnlockAll(ctx); err != nil {
			return err
		}
		return dyn.Free(ctx)
	})
}
