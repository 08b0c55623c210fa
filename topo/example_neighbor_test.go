package topo_test

import (
	"context"
	"fmt"

	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/topo"
)

// A halo exchange in one call: on a periodic ring each rank sends its first element
// towards its -1 neighbour and its last towards its +1 neighbour, and receives the
// blocks facing it: slot 0 (from the -1 neighbour) holds what that neighbour sent
// towards +1. Run on its own it is a ring of one rank, both of whose neighbours are
// itself; golaunch -n 4 runs it on a ring of four.
func ExampleNeighborAlltoall() {
	ctx := context.Background()
	w, err := runtime.Init(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer w.Finalize(ctx)

	c, err := topo.NewCart(ctx, w, []int{w.Size()}, []bool{true}, false)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.World().Free()

	me := float64(c.World().Rank())
	cells := []float64{me + 0.1, me + 0.2, me + 0.3}
	send := []float64{cells[0], cells[len(cells)-1]} // towards -1, towards +1
	halo := make([]float64, 2)                       // from -1, from +1
	if err := topo.NeighborAlltoall(ctx, c, send, halo); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("halo from -1:", halo[0], "from +1:", halo[1])
	// Output: halo from -1: 0.3 from +1: 0.1
}

// A persistent neighbourhood collective: set up once, then started and waited for at
// every step with the send buffer's new contents. A DistGraph's slots are its Sources
// (receives) and Destinations (sends).
func ExampleNeighborAllgatherInit() {
	ctx := context.Background()
	w, err := runtime.Init(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer w.Finalize(ctx)

	me, n := w.Rank(), w.Size()
	next, prev := (me+1)%n, (me-1+n)%n
	g, err := topo.NewDistGraphAdjacent(ctx, w, []int{prev}, []int{next}, false)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer g.World().Free()

	send, recv := make([]int64, 1), make([]int64, 1)
	req, err := topo.NeighborAllgatherInit(g, send, recv)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer req.Free()
	for step := range 3 {
		send[0] = int64(100*step + me)
		if err := req.Start(); err != nil {
			fmt.Println(err)
			return
		}
		if err := req.Wait(ctx); err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println("step", step, "from rank", prev, "got", recv[0])
	}
	// Output:
	// step 0 from rank 0 got 0
	// step 1 from rank 0 got 100
	// step 2 from rank 0 got 200
}
