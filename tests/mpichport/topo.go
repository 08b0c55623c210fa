package main

import (
	"context"
	"fmt"

	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/topo"
)

func init() {
	register("topo-cartshift1", "topo/cartshift1.c", 4, topoCartshift1)
	register("topo-cartsuball", "topo/cartsuball.c", 4, topoCartsuball)
	register("topo-cartcreates", "topo/cartcreates.c", 4, topoCartcreates)
	register("topo-cartzero", "topo/cartzero.c", 4, topoCartzero)
	register("topo-dims1", "topo/dims1.c", 4, topoDims1)
	register("topo-dims2", "topo/dims2.c", 1, topoDims2)
	register("topo-dims3", "topo/dims3.c", 1, topoDims3)
	register("topo-dims4", "topo/dims4.c", 1, topoDims4)
	register("topo-graphcr", "topo/graphcr.c", 4, topoGraphcr)
	register("topo-graphcr2", "topo/graphcr2.c", 4, topoGraphcr2)
}

// topoCartshift1: Shift by 1, 0 and -1 on a periodic ring of the World's size wraps
// around; on a non-periodic line it gives ProcNull off the ends.
func topoCartshift1(ctx context.Context, w *runtime.World) error {
	rank, size := w.Rank(), w.Size()
	up, down := (rank+1)%size, (rank-1+size)%size
	for _, periodic := range []bool{true, false} {
		c, err := topo.NewCart(ctx, w, []int{size}, []bool{periodic}, false)
		if err != nil {
			return err
		}
		if !periodic {
			if rank == 0 {
				down = runtime.ProcNull
			}
			if rank == size-1 {
				up = runtime.ProcNull
			}
		}
		for _, s := range []struct{ disp, src, dst int }{{1, down, up}, {0, rank, rank}, {-1, up, down}} {
			src, dst, err := c.Shift(0, s.disp)
			if err != nil {
				return err
			}
			if src != s.src || dst != s.dst {
				return fmt.Errorf("periodic %v, shift %d: source %d dest %d, want %d %d", periodic, s.disp, src, dst, s.src, s.dst)
			}
		}
		if err := c.World().Free(); err != nil {
			return err
		}
	}
	return nil
}

// topoCartsuball: Sub keeping no dimension of a line of the World's size gives each rank
// a grid of itself alone (congruent to MPI_COMM_SELF).
func topoCartsuball(ctx context.Context, w *runtime.World) error {
	c, err := topo.NewCart(ctx, w, []int{w.Size()}, []bool{false}, false)
	if err != nil {
		return err
	}
	s, err := c.Sub(ctx, []bool{false})
	if err != nil {
		return err
	}
	if s == nil || s.World().Size() != 1 || s.World().Rank() != 0 {
		return fmt.Errorf("sub keeping no dimension is not this rank alone (%v)", s)
	}
	return first(s.World().Free(), c.World().Free())
}

// topoCartcreates: a periodic ring of size-1 ranks: its World has size-1 ranks, the last
// rank gets none, and the ring's ranks Barrier.
func topoCartcreates(ctx context.Context, w *runtime.World) error {
	n := w.Size() - 1
	c, err := topo.NewCart(ctx, w, []int{n}, []bool{true}, false)
	if err != nil {
		return err
	}
	if c == nil {
		if w.Rank() < n {
			return fmt.Errorf("rank %d of a ring of %d got no grid", w.Rank(), n)
		}
		return nil
	}
	if c.World().Size() != n {
		return fmt.Errorf("the ring's World has %d ranks, want %d", c.World().Size(), n)
	}
	return first(runtime.Barrier(ctx, c.World()), c.World().Free())
}

// topoCartzero: a grid of no dimensions holds rank 0 alone (nil elsewhere): its World
// has one rank, NDims 0, the rank of no coordinates is 0, rank 0's coordinates are
// none, and Sub of it is zero-dimensional too. DimsCreate(1, none) succeeds.
func topoCartzero(ctx context.Context, w *runtime.World) error {
	c, err := topo.NewCart(ctx, w, nil, nil, false)
	if err != nil {
		return err
	}
	if c == nil {
		if w.Rank() == 0 {
			return fmt.Errorf("rank 0 got no zero-dimensional grid")
		}
		return nil
	}
	if c.World().Size() != 1 {
		return fmt.Errorf("the zero-dimensional grid's World has %d ranks, want 1", c.World().Size())
	}
	if _, err := topo.DimsCreate(1, nil); err != nil {
		return fmt.Errorf("dims create (1, no dims): %w", err)
	}
	if c.NDims() != 0 {
		return fmt.Errorf("ndims %d, want 0", c.NDims())
	}
	r, err := c.Rank(nil)
	if err != nil {
		return err
	}
	if r != 0 {
		return fmt.Errorf("the rank of no coordinates is %d, want 0", r)
	}
	if co, err := c.Coords(0); err != nil || len(co) != 0 {
		return fmt.Errorf("coords of 0: %v, %v; want none", co, err)
	}
	s, err := c.Sub(ctx, nil)
	if err != nil {
		return err
	}
	if s.NDims() != 0 {
		return fmt.Errorf("sub of a zero-dimensional grid has %d dimensions", s.NDims())
	}
	return first(runtime.Barrier(ctx, c.World()), s.World().Free(), c.World().Free())
}

// dimsCheck runs DimsCreate(nnodes, dims) and checks that the product is nnodes and the
// sizes do not increase.
func dimsCheck(nnodes int, dims []int, nonIncreasing bool) ([]int, error) {
	d, err := topo.DimsCreate(nnodes, dims)
	if err != nil {
		return nil, fmt.Errorf("dims create (%d, %v): %w", nnodes, dims, err)
	}
	p := 1
	for i, x := range d {
		p *= x
		if nonIncreasing && i > 0 && x > d[i-1] {
			return nil, fmt.Errorf("dims create (%d, %v) gave %v: increasing", nnodes, dims, d)
		}
	}
	if p != nnodes || len(d) != len(dims) {
		return nil, fmt.Errorf("dims create (%d, %v) gave %v: product %d", nnodes, dims, d, p)
	}
	return d, nil
}

// topoDims1: DimsCreate of 2310, 14, 13860 and 11 in 2 dimensions, 385 and 64 in 4:
// the product is the count and the sizes do not increase.
func topoDims1(ctx context.Context, w *runtime.World) error {
	for _, c := range []struct{ n, nd int }{{2 * 3 * 5 * 7 * 11, 2}, {14, 2}, {2 * 2 * 3 * 3 * 5 * 7 * 11, 2}, {11, 2}, {5 * 7 * 11, 4}, {64, 4}} {
		if _, err := dimsCheck(c.n, make([]int, c.nd), true); err != nil {
			return err
		}
	}
	return nil
}

// topoDims2: DimsCreate with some sizes given ([0 n], [1 n], [0 n/2 0 2], [1 n/2 1 2])
// for powers of two: the product is the count.
func topoDims2(ctx context.Context, w *runtime.World) error {
	for n := 1; n <= 32; n *= 2 {
		for _, d := range [][]int{{0, n}, {1, n}} {
			if _, err := dimsCheck(n, d, false); err != nil {
				return err
			}
		}
	}
	for n := 4; n <= 32; n *= 2 {
		for _, d := range [][]int{{0, n / 2, 0, 2}, {1, n / 2, 1, 2}} {
			if _, err := dimsCheck(n, d, false); err != nil {
				return err
			}
		}
	}
	return nil
}

// topoDims3: DimsCreate of the powers of two up to 4096 in 3 and 4 dimensions: no size
// is more than twice the next.
func topoDims3(ctx context.Context, w *runtime.World) error {
	for nd := 3; nd <= 4; nd++ {
		for n := 2; n <= 4096; n *= 2 {
			d, err := dimsCheck(n, make([]int, nd), true)
			if err != nil {
				return err
			}
			for i := 0; i+1 < nd; i++ {
				if d[i]/2 > d[i+1] {
					return fmt.Errorf("dims create (%d, %d dims) gave %v: unbalanced", n, nd, d)
				}
			}
		}
	}
	return nil
}

// topoDims4: DimsCreate of 10^9 in 3 dimensions is 1000 x 1000 x 1000.
func topoDims4(ctx context.Context, w *runtime.World) error {
	d, err := dimsCheck(1000*1000*1000, make([]int, 3), true)
	if err != nil {
		return err
	}
	return same("dims of 10^9", d, []int{1000, 1000, 1000})
}

// topoGraphcr: a graph of no nodes gives every rank nil.
func topoGraphcr(ctx context.Context, w *runtime.World) error {
	g, err := topo.NewGraph(ctx, w, nil, nil, false)
	if err != nil {
		return err
	}
	if g != nil {
		return fmt.Errorf("a graph of no nodes gave this rank a graph")
	}
	return nil
}

// topoGraphcr2: a graph of every rank whose edges are self loops, then one whose every
// node has the same edge twice: each graph's World has every rank.
func topoGraphcr2(ctx context.Context, w *runtime.World) error {
	size := w.Size()
	for _, c := range []struct {
		name         string
		index, edges []int
	}{
		{"self loops", seq(size, func(i int) int { return i + 1 }), seq(size, func(i int) int { return i })},
		{"duplicate edges", seq(size, func(i int) int { return 2 * (i + 1) }), seq(2*size, func(j int) int { return (j/2 + 1) % size })},
	} {
		g, err := topo.NewGraph(ctx, w, c.index, c.edges, false)
		if err != nil {
			return fmt.Errorf("%s: %w", c.name, err)
		}
		if g == nil || g.World().Size() != size || g.World().Rank() != w.Rank() {
			return fmt.Errorf("%s: the graph's World is not the World's ranks", c.name)
		}
		if err := g.World().Free(); err != nil {
			return err
		}
	}
	return nil
}

func init() {
	register("topo-dgraph_unwgt", "topo/dgraph_unwgt.c", 4, topoDgraphUnwgt)
}

// topoDgraphUnwgt: a bidirectional ring as a distributed graph, first by NewDistGraph
// (each rank gives its own two out-edges), then by NewDistGraphAdjacent: each rank has 2
// sources and 2 destinations, each a neighbour on the ring.
func topoDgraphUnwgt(ctx context.Context, w *runtime.World) error {
	rank, size := w.Rank(), w.Size()
	left, right := (rank-1+size)%size, (rank+1)%size
	check := func(what string, d *topo.DistGraph) error {
		in, out := d.NeighborsCount()
		if in != 2 || out != 2 {
			return fmt.Errorf("%s: %d sources and %d destinations, want 2 and 2", what, in, out)
		}
		for _, r := range append(d.Sources(), d.Destinations()...) {
			if sep := r - rank; sep != 1 && sep != -1 && sep != size-1 && sep != 1-size {
				return fmt.Errorf("%s: neighbour %d is not next to %d on the ring", what, r, rank)
			}
		}
		return d.World().Free()
	}
	d, err := topo.NewDistGraph(ctx, w, []int{rank}, []int{2}, []int{left, right}, true)
	if err != nil {
		return err
	}
	if err := check("dist graph", d); err != nil {
		return err
	}
	if d, err = topo.NewDistGraphAdjacent(ctx, w, []int{left, right}, []int{left, right}, true); err != nil {
		return err
	}
	return check("adjacent dist graph", d)
}
