package window_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/runtimetest"
	"github.com/gorma-hpc/gorma/window"
)

// TestSharedLoadStore: ranks of one host store into each other's memory through
// SharedQuery, ordered by Fence, then by Sync around a Barrier.
func TestSharedLoadStore(t *testing.T) {
	runtimetest.Run(t, 3, runtimetest.Options{Transport: "shm"}, func(w *runtime.World) error {
		ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(20*time.Second))
		defer cancel()
		const n = 256
		win, err := window.AllocateShared[uint64](ctx, w, n)
		if err != nil {
			return err
		}
		me, size := w.Rank(), w.Size()
		right, left := (me+1)%size, (me-1+size)%size
		views := make([][]uint64, size)
		for r := range size {
			if views[r], err = win.SharedQuery(r); err != nil {
				return err
			}
			if len(views[r]) != n {
				return fmt.Errorf("rank %d's view has %d elements", r, len(views[r]))
			}
		}
		if &views[me][0] != &win.Local()[0] {
			return errors.New("SharedQuery of this rank is not Local()")
		}
		// Fence: store into the right neighbour, load what the left one stored here.
		if err := win.Fence(ctx, 0); err != nil {
			return err
		}
		for i := range views[right] {
			views[right][i] = uint64(me)<<32 | uint64(i)
		}
		if err := win.Fence(ctx, 0); err != nil {
			return err
		}
		for i, v := range win.Local() {
			if v != uint64(left)<<32|uint64(i) {
				return fmt.Errorf("after the fence: local[%d] = %#x", i, v)
			}
		}
		if err := win.Fence(ctx, window.NoSucceed); err != nil {
			return err
		}
		// Sync + Barrier + Sync: each rank stores into its own memory, the others load it.
		for round := range uint64(10) {
			for i := range win.Local() {
				win.Local()[i] = round<<40 | uint64(me)<<32 | uint64(i)
			}
			if err := win.Sync(ctx); err != nil {
				return err
			}
			if err := runtime.Barrier(ctx, w); err != nil {
				return err
			}
			if err := win.Sync(ctx); err != nil {
				return err
			}
			for r := range size {
				for _, i := range []int{0, n / 2, n - 1} {
					if v := views[r][i]; v != round<<40|uint64(r)<<32|uint64(i) {
						return fmt.Errorf("round %d: rank %d's [%d] = %#x", round, r, i, v)
					}
				}
			}
			if err := runtime.Barrier(ctx, w); err != nil { // loads done before the next stores
				return err
			}
		}
		if err := win.Free(ctx); err != nil {
			return err
		}
		if _, err := win.SharedQuery(me); !errors.Is(err, window.ErrFreed) {
			return fmt.Errorf("SharedQuery after free: %v", err)
		}
		return nil
	})
}

// TestSharedQueryErrors: ranks on another host, or reached over tcp, are not shared;
// other flavors have no SharedQuery.
func TestSharedQueryErrors(t *testing.T) {
	forLayouts(t, func(ctx context.Context, w *runtime.World) error {
		win, err := window.AllocateShared[float32](ctx, w, 8)
		if err != nil {
			return err
		}
		for r := range w.Size() {
			v, err := win.SharedQuery(r)
			mapped := r == w.Rank() || (w.Transport(r) == "shm")
			switch {
			case mapped && (err != nil || len(v) != 8):
				return fmt.Errorf("rank %d (%s): %d elements, %v", r, w.Transport(r), len(v), err)
			case !mapped && !errors.Is(err, window.ErrNotShared):
				return fmt.Errorf("rank %d (%s): %v, want ErrNotShared", r, w.Transport(r), err)
			}
		}
		if _, err := win.SharedQuery(w.Size()); !errors.Is(err, window.ErrInvalid) {
			return fmt.Errorf("rank out of range: %v", err)
		}
		if err := win.Free(ctx); err != nil {
			return err
		}
		// Any flavor may be asked (MPI 4.0): Allocate's memory where the transport maps it,
		// nil (MPI's size 0) elsewhere and for Create's user memory.
		plain, err := window.Allocate[float32](ctx, w, 8)
		if err != nil {
			return err
		}
		user, err := window.Create(ctx, w, make([]float32, 8))
		if err != nil {
			return err
		}
		if err := plain.Fence(ctx, 0); err != nil {
			return err
		}
		plain.Local()[3] = float32(w.Rank())
		if err := plain.Fence(ctx, 0); err != nil {
			return err
		}
		for r := range w.Size() {
			v, err := plain.SharedQuery(r)
			mapped := r == w.Rank() || w.Transport(r) == "shm"
			switch {
			case err != nil:
				return fmt.Errorf("SharedQuery(%d) on an Allocate window: %v", r, err)
			case mapped && (len(v) != 8 || v[3] != float32(r)):
				return fmt.Errorf("SharedQuery(%d) on an Allocate window: %v, want rank %d's 8 elements", r, v, r)
			case !mapped && v != nil:
				return fmt.Errorf("SharedQuery(%d) on an Allocate window over %s: %v, want nil", r, w.Transport(r), v)
			}
			u, err := user.SharedQuery(r)
			if err != nil || (r != w.Rank() && u != nil) || (r == w.Rank() && len(u) != 8) {
				return fmt.Errorf("SharedQuery(%d) on a Create window: %v, %v; want nil for another rank, Local for this one", r, u, err)
			}
		}
		if err := user.Free(ctx); err != nil {
			return err
		}
		return plain.Free(ctx)
	})
}
