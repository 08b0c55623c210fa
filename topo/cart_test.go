package topo_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/topo"
)

// TestCartLayout: coordinates in row-major order, wrapping in periodic dimensions only,
// Shift's neighbours and NoNeighbor, ranks beyond the grid, and argument errors.
func TestCartLayout(t *testing.T) {
	forEach(t, []int{7}, func(ctx context.Context, w *runtime.World) error {
		c, err := topo.NewCart(ctx, w, []int{3, 2}, []bool{true, false}, true)
		if err != nil {
			return err
		}
		if w.Rank() == 6 {
			if c != nil {
				return errors.New("rank 6 of a 3x2 grid got a Cart")
			}
			return nil
		}
		defer c.World().Free()
		if c.World().Size() != 6 || c.World().Rank() != w.Rank() || c.NDims() != 2 ||
			!slices.Equal(c.Dims(), []int{3, 2}) || !slices.Equal(c.Periods(), []bool{true, false}) {
			return fmt.Errorf("cart: rank %d of %d, dims %v periods %v", c.World().Rank(), c.World().Size(), c.Dims(), c.Periods())
		}
		for r := range 6 {
			co, err := c.Coords(r)
			if err != nil || !slices.Equal(co, []int{r / 2, r % 2}) {
				return fmt.Errorf("Coords(%d) = %v, %v", r, co, err)
			}
			back, err := c.Rank(co)
			if err != nil || back != r {
				return fmt.Errorf("Rank(%v) = %d, %v", co, back, err)
			}
		}
		if r, err := c.Rank([]int{-1, 1}); err != nil || r != 5 {
			return fmt.Errorf("Rank of a wrapped row: %d, %v", r, err)
		}
		if r, err := c.Rank([]int{7, 0}); err != nil || r != 2 {
			return fmt.Errorf("Rank of a wrapped row: %d, %v", r, err)
		}
		me, _ := c.Coords(w.Rank())
		up, down, err := c.Shift(0, 1)
		wantUp, _ := c.Rank([]int{me[0] - 1, me[1]})
		wantDown, _ := c.Rank([]int{me[0] + 1, me[1]})
		if err != nil || up != wantUp || down != wantDown {
			return fmt.Errorf("Shift(0, 1) = %d, %d, %v; want %d, %d", up, down, err, wantUp, wantDown)
		}
		left, right, err := c.Shift(1, 1)
		wantLeft, wantRight := topo.NoNeighbor, topo.NoNeighbor
		if me[1] == 0 {
			wantRight = w.Rank() + 1
		} else {
			wantLeft = w.Rank() - 1
		}
		if err != nil || left != wantLeft || right != wantRight {
			return fmt.Errorf("Shift(1, 1) = %d, %d, %v; want %d, %d", left, right, err, wantLeft, wantRight)
		}
		if s, d, err := c.Shift(0, 0); err != nil || s != w.Rank() || d != w.Rank() {
			return fmt.Errorf("Shift(0, 0) = %d, %d, %v", s, d, err)
		}
		bad := []struct {
			err   error
			names string
		}{
			{second(c.Rank([]int{0, 2})), "coordinate 2 of dimension 1"},
			{second(c.Rank([]int{0})), "1 coordinates for 2 dimensions"},
			{second(c.Coords(6)), "rank 6 out of range"},
			{third(c.Shift(2, 1)), "dimension 2 of a 2-dimensional grid"},
			{second(topo.NewCart(ctx, w, []int{3, 0}, []bool{true, true}, false)), "dims[1] = 0"},
			{second(topo.NewCart(ctx, w, []int{3, 3}, []bool{true, true}, false)), "needs more than the World's 7 ranks"},
			{second(topo.NewCart(ctx, w, []int{3}, []bool{true, true}, false)), "2 periods for 1 dimensions"},
			{second(c.Sub(ctx, []bool{true})), "1 remain entries for 2 dimensions"},
		}
		for _, b := range bad {
			if !errors.Is(b.err, runtime.ErrInvalid) || !strings.Contains(b.err.Error(), b.names) {
				return fmt.Errorf("error %v, want ErrInvalid naming %q", b.err, b.names)
			}
		}
		return nil
	})
}

func second[T any](_ T, err error) error        { return err }
func third[T, U any](_ T, _ U, err error) error { return err }

// TestCartSub: the rows and the columns of a 3x2 grid, each with a ring exchange in its
// own numbering, and the slice that keeps no dimension.
func TestCartSub(t *testing.T) {
	forEach(t, []int{6}, func(ctx context.Context, w *runtime.World) error {
		c, err := topo.NewCart(ctx, w, []int{3, 2}, []bool{false, true}, false)
		if err != nil {
			return err
		}
		me, _ := c.Coords(c.World().Rank())
		for _, keep := range []int{0, 1} {
			remain := []bool{keep == 0, keep == 1}
			s, err := c.Sub(ctx, remain)
			if err != nil {
				return err
			}
			if s.NDims() != 1 || s.Dims()[0] != c.Dims()[keep] || s.Periods()[0] != c.Periods()[keep] ||
				s.World().Size() != c.Dims()[keep] || s.World().Rank() != me[keep] {
				return fmt.Errorf("sub %v: rank %d of %d, dims %v", remain, s.World().Rank(), s.World().Size(), s.Dims())
			}
			// Each passes its rank of the full grid to the next along the slice.
			prev, next := slices.Clone(me), slices.Clone(me)
			n := c.Dims()[keep]
			prev[keep], next[keep] = (me[keep]+n-1)%n, (me[keep]+1)%n
			wantFrom, _ := c.Rank(prev)
			got := []int64{-1}
			if _, err := runtime.Sendrecv(ctx, s.World(), []int64{int64(c.World().Rank())}, next[keep], 0, got, prev[keep], 0); err != nil {
				return err
			}
			if got[0] != int64(wantFrom) {
				return fmt.Errorf("sub %v: got grid rank %d from the previous, want %d", remain, got[0], wantFrom)
			}
			if err := s.World().Free(); err != nil {
				return err
			}
		}
		none, err := c.Sub(ctx, []bool{false, false})
		if err != nil {
			return err
		}
		if none.NDims() != 0 || none.World().Size() != 1 {
			return fmt.Errorf("sub of no dimension: %d dims, %d ranks", none.NDims(), none.World().Size())
		}
		if r, err := none.Rank(nil); err != nil || r != 0 {
			return fmt.Errorf("Rank of no coordinates: %d, %v", r, err)
		}
		if err := none.World().Free(); err != nil {
			return err
		}
		return c.World().Free()
	})
}

// halo is a rows x cols block of a global grid with a halo of one cell around it.
type halo struct {
	rows, cols int
	a          []int64 // (rows+2) x (cols+2), row-major
}

func (h *halo) at(i, j int) *int64 { return &h.a[(i+1)*(h.cols+2)+j+1] }

// global is the value of cell (gi, gj) of the global grid.
func global(gi, gj int) int64 { return int64(gi*1000 + gj) }

// exchange moves data along one dimension of c: the last interior line to dest and the
// first to source, filling the halo lines from source and dest. A NoNeighbor side is
// runtime.ProcNull, which Sendrecv takes as MPI takes MPI_PROC_NULL: no test needed.
func exchange(ctx context.Context, w *runtime.World, src, dst int, lastOut, firstOut, firstIn, lastIn []int64, tag int) error {
	if _, err := runtime.Sendrecv(ctx, w, lastOut, dst, tag, firstIn, src, tag); err != nil {
		return err
	}
	_, err := runtime.Sendrecv(ctx, w, firstOut, src, tag+1, lastIn, dst, tag+1)
	return err
}

// haloExchange fills h's halo from the neighbours on grid c: columns first (interior
// rows), then rows (full width, corners included).
func haloExchange(ctx context.Context, c *topo.Cart, h *halo) error {
	w := c.World()
	col := func(j int) []int64 {
		v := make([]int64, h.rows)
		for i := range v {
			v[i] = *h.at(i, j)
		}
		return v
	}
	left, right, err := c.Shift(1, 1)
	if err != nil {
		return err
	}
	inL, inR := make([]int64, h.rows), make([]int64, h.rows)
	for i := range inL {
		inL[i], inR[i] = *h.at(i, -1), *h.at(i, h.cols)
	}
	if err := exchange(ctx, w, left, right, col(h.cols-1), col(0), inL, inR, 10); err != nil {
		return err
	}
	for i := range inL {
		*h.at(i, -1), *h.at(i, h.cols) = inL[i], inR[i]
	}
	up, down, err := c.Shift(0, 1)
	if err != nil {
		return err
	}
	stride := h.cols + 2
	row := func(i int) []int64 { return h.a[(i+1)*stride : (i+2)*stride] }
	return exchange(ctx, w, up, down, row(h.rows-1), row(0), row(-1), row(h.rows), 20)
}

// TestCartHalo: a 2D stencil's halo exchange over DimsCreate's grid with Shift and
// Sendrecv, periodic (every halo cell, corners included, holds the wrapped neighbour's
// value) and not (off-grid halo cells stay untouched), on 4 and 6 ranks.
func TestCartHalo(t *testing.T) {
	forEach(t, []int{4, 6}, func(ctx context.Context, w *runtime.World) error {
		dims, err := topo.DimsCreate(w.Size(), []int{0, 0})
		if err != nil {
			return err
		}
		for _, periodic := range []bool{true, false} {
			c, err := topo.NewCart(ctx, w, dims, []bool{periodic, periodic}, true)
			if err != nil {
				return err
			}
			h := &halo{rows: 3, cols: 4}
			h.a = make([]int64, (h.rows+2)*(h.cols+2))
			for i := range h.a {
				h.a[i] = -1
			}
			me, _ := c.Coords(c.World().Rank())
			gr, gc := dims[0]*h.rows, dims[1]*h.cols
			for i := range h.rows {
				for j := range h.cols {
					*h.at(i, j) = global(me[0]*h.rows+i, me[1]*h.cols+j)
				}
			}
			if err := haloExchange(ctx, c, h); err != nil {
				return err
			}
			for i := -1; i <= h.rows; i++ {
				for j := -1; j <= h.cols; j++ {
					gi, gj := me[0]*h.rows+i, me[1]*h.cols+j
					want := int64(-1)
					switch {
					case periodic:
						want = global((gi+gr)%gr, (gj+gc)%gc)
					case gi >= 0 && gi < gr && gj >= 0 && gj < gc:
						want = global(gi, gj)
					}
					if got := *h.at(i, j); got != want {
						return fmt.Errorf("periodic %v, grid %v at %v: cell (%d, %d) = %d, want %d", periodic, dims, me, i, j, got, want)
					}
				}
			}
			if err := c.World().Free(); err != nil {
				return err
			}
		}
		return nil
	})
}
