package window_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/gorma-hpc/gorma/collectives"
	"github.com/gorma-hpc/gorma/datatype"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/window"
)

const typeRows, typeCols = 50, 5 // row-major matrices of the typed tests; column 0 is a ghost column

// TestPutTypeColumn puts each rank's last interior column into the next rank's ghost
// column (a vector on both sides), then gets the previous rank's column 2 back into a
// contiguous buffer (a vector at the target only).
func TestPutTypeColumn(t *testing.T) {
	forLayouts(t, func(ctx context.Context, w *runtime.World) error {
		win, err := window.Allocate[float64](ctx, w, typeRows*typeCols)
		if err != nil {
			return err
		}
		me, size := w.Rank(), w.Size()
		next, prev := (me+1)%size, (me-1+size)%size
		m := win.Local()
		val := func(r, i int) float64 { return float64(r*1_000_000 + i) }
		for i := range m {
			m[i] = val(me, i)
		}
		mine := append([]float64(nil), m...)
		col, err := datatype.Vector[float64](typeRows, 1, typeCols)
		if err != nil {
			return err
		}
		if err := win.Fence(ctx, 0); err != nil {
			return err
		}
		if err := win.PutType(mine[typeCols-2:], 1, col, next, 0, 1, col); err != nil {
			return err
		}
		if err := win.Fence(ctx, 0); err != nil {
			return err
		}
		for r := range typeRows {
			if got, want := m[r*typeCols], val(prev, r*typeCols+typeCols-2); got != want {
				return fmt.Errorf("rank %d: ghost [%d][0] = %v, want %v", me, r, got, want)
			}
			if got, want := m[r*typeCols+1], val(me, r*typeCols+1); got != want {
				return fmt.Errorf("rank %d: [%d][1] = %v, want %v (untouched)", me, r, got, want)
			}
		}
		got := make([]float64, typeRows)
		flat, _ := datatype.Contiguous[float64](typeRows)
		if err := win.GetType(got, 1, flat, prev, 2, 1, col); err != nil {
			return err
		}
		if err := win.Fence(ctx, window.NoSucceed); err != nil {
			return err
		}
		for r, v := range got {
			if want := val(prev, r*typeCols+2); v != want {
				return fmt.Errorf("rank %d: got[%d] = %v, want %v", me, r, v, want)
			}
		}
		return win.Free(ctx)
	})
}

// TestTypeTargetSubarray puts a contiguous 2x3 block into a sub-block of every other
// rank's 4x5 grid (a layout on the target side only) under a passive-target lock, and
// accumulates a column into it with Sum.
func TestTypeTargetSubarray(t *testing.T) {
	forLayouts(t, func(ctx context.Context, w *runtime.World) error {
		win, err := window.Allocate[int32](ctx, w, 20)
		if err != nil {
			return err
		}
		me, size := w.Rank(), w.Size()
		sub, err := datatype.Subarray[int32]([]int{4, 5}, []int{2, 3}, []int{1, 1}, datatype.OrderC)
		if err != nil {
			return err
		}
		block := []int32{1, 2, 3, 4, 5, 6}
		flat, _ := datatype.Contiguous[int32](6)
		target := (me + 1) % size
		if err := win.Lock(ctx, window.Exclusive, target, 0); err != nil {
			return err
		}
		if err := win.PutType(block, 1, flat, target, 0, 1, sub); err != nil {
			return err
		}
		if err := win.Unlock(ctx, target); err != nil {
			return err
		}
		if err := win.Fence(ctx, 0); err != nil {
			return err
		}
		// Every rank adds 1 to column 4 of every rank's grid.
		col, _ := datatype.Vector[int32](4, 1, 5)
		ones := []int32{1, 1, 1, 1}
		one, _ := datatype.Contiguous[int32](4)
		for r := range size {
			if err := win.AccumulateType(ones, 1, one, r, 4, 1, col, collectives.Sum[int32]()); err != nil {
				return err
			}
		}
		if err := win.Fence(ctx, 0); err != nil {
			return err
		}
		want := make([]int32, 20)
		for k, idx := range []int{6, 7, 8, 11, 12, 13} {
			want[idx] = block[k]
		}
		for r := range 4 {
			want[r*5+4] = int32(size)
		}
		got := make([]int32, 20)
		if err := win.Get(got, me, 0); err != nil {
			return err
		}
		if err := win.Fence(ctx, window.NoSucceed); err != nil {
			return err
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			return fmt.Errorf("rank %d: grid %v, want %v", me, got, want)
		}
		return win.Free(ctx)
	})
}

// TestPutTypeMisuse checks the typed calls' argument errors: each is reported before
// anything is written.
func TestPutTypeMisuse(t *testing.T) {
	forLayouts(t, func(ctx context.Context, w *runtime.World) error {
		win, err := window.Allocate[float64](ctx, w, 10)
		if err != nil {
			return err
		}
		if err := win.Fence(ctx, 0); err != nil {
			return err
		}
		peer := (w.Rank() + 1) % w.Size()
		buf := []float64{1, 2, 3, 4, 5, 6}
		f64 := datatype.Of[float64]()
		three, _ := datatype.Contiguous[float64](3)
		gap, _ := datatype.Vector[float64](3, 1, 4) // reaches element 9
		half, _ := datatype.Hvector[float32](2, 1, 12)
		odd, _ := datatype.Hvector[float64](2, 1, 12)
		cases := []struct {
			name string
			err  error
			is   error
			want string
		}{
			{"sizes differ", win.PutType(buf, 2, three, peer, 0, 5, f64), window.ErrInvalid, "are 48 bytes, the target's 5 copies"},
			{"origin too short", win.PutType(buf, 3, three, peer, 0, 9, f64), window.ErrInvalid, "reach byte 72, but the buffer holds 48"},
			{"target beyond", win.PutType(buf, 1, three, peer, 2, 1, gap), window.ErrRange, "reach elements [2, 11) of rank"},
			{"target before", win.GetType(buf, 1, three, peer, -1, 1, three), window.ErrRange, "reach elements [-1, 2)"},
			{"negative count", win.PutType(buf, -1, three, peer, 0, 1, three), window.ErrInvalid, "count -1"},
			{"half elements", win.PutType(buf, 1, half, peer, 0, 1, half), window.ErrInvalid, "block 0 (4 bytes at offset 0) is not whole elements"},
			{"odd extent", win.PutType(buf, 1, three, peer, 0, 1, odd), window.ErrInvalid, "origin's 1 copies"},
			{"odd target extent", win.PutType(buf, 2, f64, peer, 0, 1, odd), window.ErrInvalid, "target layout datatype{size 16, lb 0, extent 20, 2 blocks}: extent 20 is not a multiple of 8 bytes"},
		}
		for _, c := range cases {
			if !errors.Is(c.err, c.is) || !strings.Contains(c.err.Error(), c.want) {
				return fmt.Errorf("%s: %v, want %v containing %q", c.name, c.err, c.is, c.want)
			}
		}
		if err := win.Fence(ctx, 0); err != nil {
			return err
		}
		for i, v := range win.Local() {
			if v != 0 {
				return fmt.Errorf("rank %d: local[%d] = %v after failed typed calls", w.Rank(), i, v)
			}
		}
		return win.Free(ctx)
	})
}

// TestTypeSplitBlocks pairs layouts whose blocks split differently (3-element blocks at
// the origin, 2-element ones at the target, and an indexed layout running backwards)
// and checks the target against datatype's Pack and Unpack of the same layouts.
func TestTypeSplitBlocks(t *testing.T) {
	forLayouts(t, func(ctx context.Context, w *runtime.World) error {
		win, err := window.Allocate[int64](ctx, w, 40)
		if err != nil {
			return err
		}
		me, size := w.Rank(), w.Size()
		ot, _ := datatype.Vector[int64](4, 3, 5)                                               // 12 elements in 20
		tt, _ := datatype.Indexed[int64]([]int{2, 2, 2, 2, 2, 2}, []int{30, 24, 18, 12, 6, 0}) // 12 in 32, backwards
		origin := make([]int64, 20)
		for i := range origin {
			origin[i] = int64(me*100 + i)
		}
		if err := win.Fence(ctx, 0); err != nil {
			return err
		}
		if err := win.PutType(origin, 1, ot, (me+1)%size, 3, 1, tt); err != nil {
			return err
		}
		if err := win.Fence(ctx, 0); err != nil {
			return err
		}
		prev := (me - 1 + size) % size
		src := make([]int64, 20)
		for i := range src {
			src[i] = int64(prev*100 + i)
		}
		packed := make([]byte, ot.Size())
		if _, err := datatype.Pack(packed, src, 1, ot); err != nil {
			return err
		}
		want := make([]int64, 40)
		if _, err := datatype.Unpack(want[3:], packed, 1, tt); err != nil {
			return err
		}
		if fmt.Sprint(win.Local()) != fmt.Sprint(want) {
			return fmt.Errorf("rank %d: window %v, want %v", me, win.Local(), want)
		}
		if err := win.Fence(ctx, window.NoSucceed); err != nil {
			return err
		}
		return win.Free(ctx)
	})
}
