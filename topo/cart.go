package topo

import (
	"context"
	"slices"

	"github.com/gorma-hpc/gorma/runtime"
)

// NoNeighbor is the rank Shift returns for a neighbour off the edge of a non-periodic
// dimension: runtime.ProcNull (MPI_Cart_shift's MPI_PROC_NULL), which every
// point-to-point call accepts as a peer that sends and receives nothing. So a halo
// exchange needs no test for the edge. It is not runtime.AnySource.
const NoNeighbor = runtime.ProcNull

// Cart is a Cartesian grid of processes over a World (MPI_Cart_create): rank r of the
// World sits at the coordinates Coords(r), in row-major order (the last dimension varies
// fastest), and a periodic dimension wraps around. A Cart does not change after NewCart
// or Sub, and its methods are safe for concurrent use; its World follows the runtime's
// rules (Free it when done).
type Cart struct {
	w       *runtime.World
	dims    []int
	periods []bool
	nb      *hood // the neighbourhood collectives' (neighbor.go)
}

// NewCart returns a Cart of the grid dims (sizes above 0) with periods[i] telling whether
// dimension i wraps, over a World of the first product(dims) ranks of w, kept in w's
// order whatever reorder says (MPI allows that). A rank beyond the grid gets a nil Cart
// and a nil error. Collective over w (a Split of it), with the same dims and periods at
// every rank; bad arguments fail with runtime.ErrInvalid before it communicates.
func NewCart(ctx context.Context, w *runtime.World, dims []int, periods []bool, reorder bool) (*Cart, error) {
	if w == nil {
		return nil, invalidf("cart_create", "nil World")
	}
	if len(periods) != len(dims) {
		return nil, invalidf("cart_create", "%d periods for %d dimensions", len(periods), len(dims))
	}
	n := 1
	for i, d := range dims {
		if d < 1 {
			return nil, invalidf("cart_create", "dims[%d] = %d (sizes are at least 1; DimsCreate chooses them)", i, d)
		}
		if n > w.Size()/d {
			return nil, invalidf("cart_create", "a grid of %v needs more than the World's %d ranks", dims, w.Size())
		}
		n *= d
	}
	color := 0
	if w.Rank() >= n {
		color = runtime.NoColor
	}
	cw, err := w.Split(ctx, color, w.Rank())
	if err != nil || cw == nil {
		return nil, wrap("cart_create", err)
	}
	return (&Cart{w: cw, dims: slices.Clone(dims), periods: slices.Clone(periods)}).withHood("cart_create")
}

// World returns the World of the grid's ranks.
func (c *Cart) World() *runtime.World { return c.w }

// NDims is the number of dimensions (MPI_Cartdim_get).
func (c *Cart) NDims() int { return len(c.dims) }

// Dims returns the size of each dimension (MPI_Cart_get's dims), a copy.
func (c *Cart) Dims() []int { return slices.Clone(c.dims) }

// Periods returns whether each dimension wraps (MPI_Cart_get's periods), a copy.
func (c *Cart) Periods() []bool { return slices.Clone(c.periods) }

// Coords returns the coordinates of rank (MPI_Cart_coords); Coords(c.World().Rank()) are
// this rank's (MPI_Cart_get's coords). A rank outside the grid is a runtime.ErrInvalid
// error.
func (c *Cart) Coords(rank int) ([]int, error) {
	if rank < 0 || rank >= c.w.Size() {
		return nil, invalidf("cart_coords", "rank %d out of range [0, %d)", rank, c.w.Size())
	}
	return c.coords(rank), nil
}

func (c *Cart) coords(rank int) []int {
	co := make([]int, len(c.dims))
	for i := len(c.dims) - 1; i >= 0; i-- {
		co[i] = rank % c.dims[i]
		rank /= c.dims[i]
	}
	return co
}

// Rank returns the rank at coords (MPI_Cart_rank). A coordinate of a periodic dimension
// wraps; one outside a non-periodic dimension, or a wrong number of coordinates, is a
// runtime.ErrInvalid error naming the dimension.
func (c *Cart) Rank(coords []int) (int, error) {
	if len(coords) != len(c.dims) {
		return 0, invalidf("cart_rank", "%d coordinates for %d dimensions", len(coords), len(c.dims))
	}
	r := 0
	for i, x := range coords {
		d := c.dims[i]
		if x < 0 || x >= d {
			if !c.periods[i] {
				return 0, invalidf("cart_rank", "coordinate %d of dimension %d is outside [0, %d) and the dimension is not periodic", x, i, d)
			}
			x = (x%d + d) % d
		}
		r = r*d + x
	}
	return r, nil
}

// Shift returns the ranks disp steps below and above this rank along dimension dim
// (MPI_Cart_shift): a Sendrecv that sends to dest and receives from source moves data
// disp steps up the dimension. Off the edge of a non-periodic dimension the rank is
// NoNeighbor. A dim out of range is a runtime.ErrInvalid error.
func (c *Cart) Shift(dim, disp int) (source, dest int, err error) {
	if dim < 0 || dim >= len(c.dims) {
		return 0, 0, invalidf("cart_shift", "dimension %d of a %d-dimensional grid", dim, len(c.dims))
	}
	co := c.coords(c.w.Rank())
	at := func(x int) int {
		co := slices.Clone(co)
		co[dim] = x
		r, err := c.Rank(co)
		if err != nil {
			return NoNeighbor
		}
		return r
	}
	return at(co[dim] - disp), at(co[dim] + disp), nil
}

// Sub returns the Cart of the grid slice through this rank that keeps the dimensions
// whose remain entry is true (MPI_Cart_sub): with remain {false, true} on a 2D grid,
// this rank's row. Its ranks are numbered by their coordinates in the kept dimensions,
// which keep their periods; keeping none gives a Cart of this rank alone and no
// dimensions. Collective over c.World() (a Split of it), with the same remain at every
// rank.
func (c *Cart) Sub(ctx context.Context, remain []bool) (*Cart, error) {
	if len(remain) != len(c.dims) {
		return nil, invalidf("cart_sub", "%d remain entries for %d dimensions", len(remain), len(c.dims))
	}
	co := c.coords(c.w.Rank())
	color, key := 0, 0
	var dims []int
	var periods []bool
	for i, d := range c.dims {
		if remain[i] {
			key = key*d + co[i]
			dims = append(dims, d)
			periods = append(periods, c.periods[i])
		} else {
			color = color*d + co[i]
		}
	}
	sw, err := c.w.Split(ctx, color, key)
	if err != nil {
		return nil, wrap("cart_sub", err)
	}
	return (&Cart{w: sw, dims: dims, periods: periods}).withHood("cart_sub")
}
