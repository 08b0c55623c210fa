package topo_test

import (
	"context"
	"fmt"

	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/topo"
)

// A 2D periodic stencil's halo exchange: each rank owns a block of a global grid, and
// before each step it receives the edge rows and columns of its four neighbours. Run on
// its own it is a world of one rank on a 1x1 grid, whose neighbours are itself; golaunch
// -n 6 runs it on a 3x2 grid.
func Example_haloExchange() {
	ctx := context.Background()
	w, err := runtime.Init(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer w.Finalize(ctx)

	dims, err := topo.DimsCreate(w.Size(), []int{0, 0})
	if err != nil {
		fmt.Println(err)
		return
	}
	c, err := topo.NewCart(ctx, w, dims, []bool{true, true}, true)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.World().Free()
	cw := c.World()

	const rows, cols = 4, 4
	block := make([][]float64, rows+2) // one halo row and column on each side
	for i := range block {
		block[i] = make([]float64, cols+2)
	}
	me, _ := c.Coords(cw.Rank())
	for i := 1; i <= rows; i++ {
		for j := 1; j <= cols; j++ {
			block[i][j] = float64(me[0]*100 + me[1]*10 + i)
		}
	}

	// Columns: pack the edge columns, send right and receive from the left, and back.
	left, right, _ := c.Shift(1, 1)
	column := func(j int) []float64 {
		v := make([]float64, rows)
		for i := range v {
			v[i] = block[i+1][j]
		}
		return v
	}
	fromLeft, fromRight := make([]float64, rows), make([]float64, rows)
	if _, err := runtime.Sendrecv(ctx, cw, column(cols), right, 0, fromLeft, left, 0); err != nil {
		fmt.Println(err)
		return
	}
	if _, err := runtime.Sendrecv(ctx, cw, column(1), left, 1, fromRight, right, 1); err != nil {
		fmt.Println(err)
		return
	}
	for i := range rows {
		block[i+1][0], block[i+1][cols+1] = fromLeft[i], fromRight[i]
	}

	// Rows, halo columns included, so the corners arrive too.
	up, down, _ := c.Shift(0, 1)
	if _, err := runtime.Sendrecv(ctx, cw, block[rows], down, 2, block[0], up, 2); err != nil {
		fmt.Println(err)
		return
	}
	if _, err := runtime.Sendrecv(ctx, cw, block[1], up, 3, block[rows+1], down, 3); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("grid %v, rank %d at %v: halo above %v\n", dims, cw.Rank(), me, block[0])
	// Output: grid [1 1], rank 0 at [0 0]: halo above [4 4 4 4 4 4]
}

// DimsCreate chooses balanced grid sizes; entries above 0 are kept.
func ExampleDimsCreate() {
	for _, tc := range []struct {
		n    int
		dims []int
	}{{6, []int{0, 0}}, {7, []int{0, 0}}, {6, []int{0, 3, 0}}, {7, []int{0, 3, 0}}} {
		dims, err := topo.DimsCreate(tc.n, tc.dims)
		fmt.Println(tc.n, tc.dims, "->", dims, err)
	}
	// Output:
	// 6 [0 0] -> [3 2] <nil>
	// 7 [0 0] -> [7 1] <nil>
	// 6 [0 3 0] -> [2 3 1] <nil>
	// 7 [0 3 0] -> [] topo: dims_create: invalid argument: the sizes given multiply to 3, which does not divide 7 nodes into a grid
}
