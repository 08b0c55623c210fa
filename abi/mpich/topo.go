//go:build cgo

package mpich

import (
	"fmt"
	"unsafe"

	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/topo"
)

// A topology is what a topology communicator's World carries: its Cart, Graph or
// DistGraph (one of them), and a DistGraph's edge weights. It does not change after it
// is made.
type topology struct {
	cart  *topo.Cart
	graph *topo.Graph
	dist  *topo.DistGraph
	// A weighted DistGraph's weights, by slot of Sources and Destinations: topo's
	// DistGraph carries none.
	weighted   bool
	srcW, dstW []int32
}

// topoKey keeps a communicator's topology on its World, so that the World's Free drops
// it. A Dup does not copy it: dupWorld makes the Dup's own.
var topoKey = runtime.NewKeyval[*topology](nil, nil)

// kind is MPI_Topo_test's answer.
func (t *topology) kind() int32 {
	switch {
	case t.cart != nil:
		return mpi_CART
	case t.graph != nil:
		return mpi_GRAPH
	}
	return mpi_DIST_GRAPH
}

// of returns t as the neighbourhood collectives take it.
func (t *topology) of() topo.Topology {
	switch {
	case t.cart != nil:
		return t.cart
	case t.graph != nil:
		return t.graph
	}
	return t.dist
}

// topologyOf returns w's topology, nil for none.
func topologyOf(w *runtime.World) *topology {
	t, _, _ := runtime.GetAttr(w, topoKey)
	return t
}

// topoOf returns c's topology, which must be of kind (0: any).
func topoOf(c Comm, kind int32) (*topology, error) {
	w, err := worldOf(c)
	if err != nil {
		return nil, err
	}
	t := topologyOf(w)
	if t == nil || (kind != 0 && t.kind() != kind) {
		name := map[int32]string{0: "a", mpi_CART: "a Cartesian", mpi_GRAPH: "a graph", mpi_DIST_GRAPH: "a distributed graph"}[kind]
		return nil, mpiErr(mpi_ERR_TOPOLOGY, fmt.Sprintf("communicator %#x has no %s topology (MPI_Topo_test tells which it has)", uint32(c), name))
	}
	return t, nil
}

// intraOf returns the communicator c, which must be an intracommunicator: a topology
// is made over one.
func intraOf(c Comm) (*comm, error) {
	co, err := commOf(c)
	if err != nil {
		return nil, err
	}
	if co.w.IsInter() {
		return nil, mpiErr(mpi_ERR_COMM, fmt.Sprintf("communicator %#x is an intercommunicator: a topology is made over an intracommunicator", uint32(c)))
	}
	return co, nil
}

// addTopo registers the communicator of topology t, made from co.
func addTopo(t *topology, co *comm, out *Comm) error {
	w := t.of().World()
	if err := runtime.SetAttr(w, topoKey, t); err != nil {
		w.Free()
		return err
	}
	newComm(w, co, out)
	return nil
}

// dupWorld is MPI_Comm_dup's World: a Dup, or for a topology communicator a topology
// of the same shape over w, with w's hints. Collective over w.
func dupWorld(w *runtime.World) (*runtime.World, error) {
	t := topologyOf(w)
	if t == nil {
		return w.Dup()
	}
	d := &topology{weighted: t.weighted, srcW: t.srcW, dstW: t.dstW}
	var err error
	switch {
	case t.cart != nil:
		d.cart, err = topo.NewCart(bg, w, t.cart.Dims(), t.cart.Periods(), false)
	case t.graph != nil:
		d.graph, err = topo.NewGraph(bg, w, t.graph.Index(), t.graph.Edges(), false)
	default:
		d.dist, err = topo.NewDistGraphAdjacent(bg, w, t.dist.Sources(), t.dist.Destinations(), false)
	}
	if err != nil {
		return nil, err
	}
	nw := d.of().World()
	if err := runtime.SetAttr(nw, topoKey, d); err != nil {
		nw.Free()
		return nil, err
	}
	if h := commHints(w); h != nil {
		if err := runtime.SetAttr(nw, hintsKey, h); err != nil {
			nw.Free()
			return nil, err
		}
	}
	return nw, nil
}

// argInts copies the C array p of n ints or MPI_Counts, which may be NULL only when n
// is 0.
func argInts[T int32 | int64](p *T, n int, name string) ([]int, error) {
	if n < 0 {
		return nil, mpiErr(mpi_ERR_ARG, fmt.Sprintf("%s has a negative length %d", name, n))
	}
	if n > 0 && p == nil {
		return nil, mpiErr(mpi_ERR_ARG, fmt.Sprintf("%s is NULL for %d entries", name, n))
	}
	return ints(p, n), nil
}

// argBools copies the C array p of n ints as booleans (non-zero is true).
func argBools(p *int32, n int, name string) ([]bool, error) {
	v, err := argInts(p, n, name)
	if err != nil {
		return nil, err
	}
	out := make([]bool, n)
	for i, x := range v {
		out[i] = x != 0
	}
	return out, nil
}

// putArgInts writes up to max entries of v to the C array p.
func putArgInts(p *int32, max int, v []int) {
	n := min(max, len(v))
	if n <= 0 || p == nil {
		return
	}
	dst := unsafe.Slice(p, n)
	for i := range dst {
		dst[i] = int32(v[i])
	}
}

// gridDims checks a grid's dims for MPI_Cart_create and MPI_Cart_map, over a
// communicator of size ranks, and returns them and their product.
func gridDims(ndims int, dims *int32, size int) ([]int, int, error) {
	if ndims < 0 {
		return nil, 0, mpiErr(mpi_ERR_DIMS, fmt.Sprintf("ndims %d is negative", ndims))
	}
	ds, err := argInts(dims, ndims, "dims")
	if err != nil {
		return nil, 0, err
	}
	n := 1
	for i, d := range ds {
		if d < 1 {
			return nil, 0, mpiErr(mpi_ERR_DIMS, fmt.Sprintf("dims[%d] = %d: a grid's sizes are at least 1 (MPI_Dims_create chooses them)", i, d))
		}
		if n > size/d {
			return nil, 0, mpiErr(mpi_ERR_ARG, fmt.Sprintf("a grid of %v needs more than the communicator's %d ranks", ds, size))
		}
		n *= d
	}
	return ds, n, nil
}

// doCartCreate is MPI_Cart_create: topo.NewCart over the first ranks of c, in c's order
// (reorder is allowed and ignored). A rank beyond the grid gets MPI_COMM_NULL.
func doCartCreate(c Comm, ndims int, dims, periods *int32, reorder int, out *Comm) error {
	co, err := intraOf(c)
	if err != nil {
		return err
	}
	ds, _, err := gridDims(ndims, dims, co.w.Size())
	if err != nil {
		return err
	}
	ps, err := argBools(periods, ndims, "periods")
	if err != nil {
		return err
	}
	cart, err := topo.NewCart(bg, co.w, ds, ps, reorder != 0)
	if err != nil {
		return err
	}
	if cart == nil {
		*out = mpi_COMM_NULL
		return nil
	}
	return addTopo(&topology{cart: cart}, co, out)
}

// doCartMap is MPI_Cart_map: the rank MPI_Cart_create gives this process, which keeps
// its rank when inside the grid, or MPI_UNDEFINED.
func doCartMap(c Comm, ndims int, dims, periods *int32, newrank *int32) error {
	co, err := intraOf(c)
	if err != nil {
		return err
	}
	_, n, err := gridDims(ndims, dims, co.w.Size())
	if err != nil {
		return err
	}
	*newrank = keptRank(co.w.Rank(), n)
	return nil
}

// keptRank is the rank a topology of n nodes gives rank r: r itself, or MPI_UNDEFINED.
func keptRank(r, n int) int32 {
	if r < n {
		return int32(r)
	}
	return mpi_UNDEFINED
}

// doCartdimGet is MPI_Cartdim_get.
func doCartdimGet(c Comm, ndims *int32) error {
	t, err := topoOf(c, mpi_CART)
	if err != nil {
		return err
	}
	*ndims = int32(t.cart.NDims())
	return nil
}

// doCartGet is MPI_Cart_get: up to maxdims entries of each array.
func doCartGet(c Comm, maxdims int, dims, periods, coords *int32) error {
	t, err := topoOf(c, mpi_CART)
	if err != nil {
		return err
	}
	if maxdims < 0 {
		return mpiErr(mpi_ERR_ARG, fmt.Sprintf("maxdims %d is negative", maxdims))
	}
	co, err := t.cart.Coords(t.cart.World().Rank())
	if err != nil {
		return err
	}
	ps := make([]int, t.cart.NDims())
	for i, p := range t.cart.Periods() {
		ps[i] = int(b2i(p))
	}
	putArgInts(dims, maxdims, t.cart.Dims())
	putArgInts(periods, maxdims, ps)
	putArgInts(coords, maxdims, co)
	return nil
}

// doCartCoords is MPI_Cart_coords: up to maxdims coordinates of rank.
func doCartCoords(c Comm, rank, maxdims int, coords *int32) error {
	t, err := topoOf(c, mpi_CART)
	if err != nil {
		return err
	}
	if n := t.cart.World().Size(); rank < 0 || rank >= n {
		return mpiErr(mpi_ERR_RANK, fmt.Sprintf("rank %d is not in [0, %d)", rank, n))
	}
	co, err := t.cart.Coords(rank)
	if err != nil {
		return err
	}
	putArgInts(coords, maxdims, co)
	return nil
}

// doCartRank is MPI_Cart_rank: a coordinate of a periodic dimension wraps.
func doCartRank(c Comm, coords *int32, rank *int32) error {
	t, err := topoOf(c, mpi_CART)
	if err != nil {
		return err
	}
	co, err := argInts(coords, t.cart.NDims(), "coords")
	if err != nil {
		return err
	}
	r, err := t.cart.Rank(co)
	if err != nil {
		return mpiErr(mpi_ERR_ARG, err.Error())
	}
	*rank = int32(r)
	return nil
}

// doCartShift is MPI_Cart_shift: MPI_PROC_NULL off a non-periodic edge.
func doCartShift(c Comm, dir, disp int, src, dst *int32) error {
	t, err := topoOf(c, mpi_CART)
	if err != nil {
		return err
	}
	s, d, err := t.cart.Shift(dir, disp)
	if err != nil {
		return mpiErr(mpi_ERR_ARG, err.Error())
	}
	*src, *dst = nbRank(s), nbRank(d)
	return nil
}

// nbRank maps topo.NoNeighbor onto MPI_PROC_NULL.
func nbRank(r int) int32 {
	if r == topo.NoNeighbor {
		return mpi_PROC_NULL
	}
	return int32(r)
}

// doCartSub is MPI_Cart_sub: the grid slice through this rank that keeps the dimensions
// whose remain_dims entry is true.
func doCartSub(c Comm, remain *int32, out *Comm) error {
	co, err := commOf(c)
	if err != nil {
		return err
	}
	t, err := topoOf(c, mpi_CART)
	if err != nil {
		return err
	}
	keep, err := argBools(remain, t.cart.NDims(), "remain_dims")
	if err != nil {
		return err
	}
	sub, err := t.cart.Sub(bg, keep)
	if err != nil {
		return err
	}
	return addTopo(&topology{cart: sub}, co, out)
}

// doDimsCreate is MPI_Dims_create: topo.DimsCreate fills the 0 entries of dims.
func doDimsCreate(nnodes, ndims int, dims *int32) error {
	if ndims < 0 {
		return mpiErr(mpi_ERR_DIMS, fmt.Sprintf("ndims %d is negative", ndims))
	}
	in, err := argInts(dims, ndims, "dims")
	if err != nil {
		return err
	}
	got, err := topo.DimsCreate(nnodes, in)
	if err != nil {
		return mpiErr(mpi_ERR_DIMS, err.Error())
	}
	putArgInts(dims, ndims, got)
	return nil
}
