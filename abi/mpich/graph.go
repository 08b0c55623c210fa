//go:build cgo

package mpich

// extern int *const MPI_UNWEIGHTED;
// extern int *const MPI_WEIGHTS_EMPTY;
import "C"

import (
	"fmt"
	"unsafe"

	"github.com/gorma-hpc/gorma/collectives"
	"github.com/gorma-hpc/gorma/topo"
)

// The graph topologies: MPI_Graph_create's, whose every rank knows the whole graph, and
// the distributed graphs of MPI_Dist_graph_create and _adjacent (topo.go has what they
// share with the Cartesian ones).

// doGraphCreate is MPI_Graph_create: topo.NewGraph over the first nnodes ranks of c, in
// c's order (reorder is allowed and ignored). A rank beyond them gets MPI_COMM_NULL; so
// does every rank when nnodes is 0.
func doGraphCreate(c Comm, nnodes int, index, edges *int32, reorder int, out *Comm) error {
	co, err := intraOf(c)
	if err != nil {
		return err
	}
	if nnodes < 0 || nnodes > co.w.Size() {
		return mpiErr(mpi_ERR_ARG, fmt.Sprintf("nnodes %d is not in [0, %d], the communicator's size", nnodes, co.w.Size()))
	}
	if nnodes == 0 {
		*out = mpi_COMM_NULL
		return nil
	}
	idx, err := argInts(index, nnodes, "index")
	if err != nil {
		return err
	}
	es, err := argInts(edges, idx[nnodes-1], "edges")
	if err != nil {
		return err
	}
	g, err := topo.NewGraph(bg, co.w, idx, es, reorder != 0)
	if err != nil {
		return err
	}
	if g == nil {
		*out = mpi_COMM_NULL
		return nil
	}
	return addTopo(&topology{graph: g}, co, out)
}

// doGraphMap is MPI_Graph_map: the rank MPI_Graph_create gives this process, which
// keeps its rank when it is a node, or MPI_UNDEFINED.
func doGraphMap(c Comm, nnodes int, index, edges *int32, newrank *int32) error {
	co, err := intraOf(c)
	if err != nil {
		return err
	}
	if nnodes < 1 || nnodes > co.w.Size() {
		return mpiErr(mpi_ERR_ARG, fmt.Sprintf("nnodes %d is not in [1, %d], the communicator's size", nnodes, co.w.Size()))
	}
	*newrank = keptRank(co.w.Rank(), nnodes)
	return nil
}

// doGraphdimsGet is MPI_Graphdims_get.
func doGraphdimsGet(c Comm, nnodes, nedges *int32) error {
	t, err := topoOf(c, mpi_GRAPH)
	if err != nil {
		return err
	}
	*nnodes, *nedges = int32(len(t.graph.Index())), int32(len(t.graph.Edges()))
	return nil
}

// doGraphGet is MPI_Graph_get: up to maxindex entries of index and maxedges of edges.
func doGraphGet(c Comm, maxindex, maxedges int, index, edges *int32) error {
	t, err := topoOf(c, mpi_GRAPH)
	if err != nil {
		return err
	}
	putArgInts(index, maxindex, t.graph.Index())
	putArgInts(edges, maxedges, t.graph.Edges())
	return nil
}

// doGraphNeighborsCount is MPI_Graph_neighbors_count.
func doGraphNeighborsCount(c Comm, rank int, n *int32) error {
	t, err := topoOf(c, mpi_GRAPH)
	if err != nil {
		return err
	}
	k, err := t.graph.NeighborsCount(rank)
	if err != nil {
		return mpiErr(mpi_ERR_RANK, err.Error())
	}
	*n = int32(k)
	return nil
}

// doGraphNeighbors is MPI_Graph_neighbors: up to maxneighbors of rank's neighbours.
func doGraphNeighbors(c Comm, rank, maxneighbors int, neighbors *int32) error {
	t, err := topoOf(c, mpi_GRAPH)
	if err != nil {
		return err
	}
	nb, err := t.graph.Neighbors(rank)
	if err != nil {
		return mpiErr(mpi_ERR_RANK, err.Error())
	}
	putArgInts(neighbors, maxneighbors, nb)
	return nil
}

// unweighted reports whether the weights argument p is MPI_UNWEIGHTED.
func unweighted(p *int32) bool { return unsafe.Pointer(p) == unsafe.Pointer(C.MPI_UNWEIGHTED) }

// weightsEmpty reports whether p is MPI_WEIGHTS_EMPTY.
func weightsEmpty(p *int32) bool { return unsafe.Pointer(p) == unsafe.Pointer(C.MPI_WEIGHTS_EMPTY) }

// weightArg copies n weights at p: none for MPI_WEIGHTS_EMPTY, which MPI allows when n
// is 0.
func weightArg(p *int32, n int, name string) ([]int32, error) {
	if weightsEmpty(p) {
		if n > 0 {
			return nil, mpiErr(mpi_ERR_ARG, fmt.Sprintf("%s is MPI_WEIGHTS_EMPTY for %d edges", name, n))
		}
		return nil, nil
	}
	if n > 0 && p == nil {
		return nil, mpiErr(mpi_ERR_ARG, fmt.Sprintf("%s is NULL for %d edges: pass MPI_UNWEIGHTED for a graph without weights", name, n))
	}
	if n == 0 {
		return nil, nil
	}
	return append([]int32(nil), unsafe.Slice(p, n)...), nil
}

// doDistGraphCreateAdjacent is MPI_Dist_graph_create_adjacent:
// topo.NewDistGraphAdjacent over c's ranks in c's order (reorder is allowed and
// ignored). Weights are kept for MPI_Dist_graph_neighbors; info's hints are not used.
func doDistGraphCreateAdjacent(c Comm, indeg int, sources, sw *int32, outdeg int, dests, dw *int32, info Info, reorder int, out *Comm) error {
	co, err := intraOf(c)
	if err != nil {
		return err
	}
	if _, err := infoCopy(info); err != nil {
		return err
	}
	srcs, err := argInts(sources, indeg, "sources")
	if err != nil {
		return err
	}
	dsts, err := argInts(dests, outdeg, "destinations")
	if err != nil {
		return err
	}
	t := &topology{weighted: !unweighted(sw)}
	if unweighted(sw) != unweighted(dw) {
		return mpiErr(mpi_ERR_ARG, "one of sourceweights and destweights is MPI_UNWEIGHTED and the other is not")
	}
	if t.weighted {
		if t.srcW, err = weightArg(sw, indeg, "sourceweights"); err != nil {
			return err
		}
		if t.dstW, err = weightArg(dw, outdeg, "destweights"); err != nil {
			return err
		}
	}
	if t.dist, err = topo.NewDistGraphAdjacent(bg, co.w, srcs, dsts, reorder != 0); err != nil {
		return err
	}
	return addTopo(t, co, out)
}

// doDistGraphCreate is MPI_Dist_graph_create: topo.NewDistGraph over c's ranks in c's
// order (reorder is allowed and ignored). With weights, the ranks then exchange them
// (distWeights). info's hints are not used.
func doDistGraphCreate(c Comm, n int, sources, degrees, dests, weights *int32, info Info, reorder int, out *Comm) error {
	co, err := intraOf(c)
	if err != nil {
		return err
	}
	if _, err := infoCopy(info); err != nil {
		return err
	}
	srcs, err := argInts(sources, n, "sources")
	if err != nil {
		return err
	}
	degs, err := argInts(degrees, n, "degrees")
	if err != nil {
		return err
	}
	total := 0
	for i, d := range degs {
		if d < 0 {
			return mpiErr(mpi_ERR_ARG, fmt.Sprintf("degrees[%d] = %d is negative", i, d))
		}
		total += d
	}
	dsts, err := argInts(dests, total, "destinations")
	if err != nil {
		return err
	}
	t := &topology{weighted: !unweighted(weights)}
	var ws []int32
	if t.weighted {
		if ws, err = weightArg(weights, total, "weights"); err != nil {
			return err
		}
	}
	if t.dist, err = topo.NewDistGraph(bg, co.w, srcs, degs, dsts, reorder != 0); err != nil {
		return err
	}
	if t.weighted {
		if t.srcW, t.dstW, err = distWeights(t.dist, srcs, degs, dsts, ws); err != nil {
			t.dist.World().Free()
			return err
		}
	}
	return addTopo(t, co, out)
}

// distWeights gives each rank of g the weights of its edges, in the order of its
// Sources and Destinations: by the rank that gave the edge, then in that rank's order
// (topo.NewDistGraph's order). This rank gave the edges srcs[i] -> the next degs[i]
// entries of dsts, with weights ws. Every rank sends each rank the weights of the edges
// it gave that end there, then those that start there. Collective over g's World.
func distWeights(g *topo.DistGraph, srcs, degs, dsts []int, ws []int32) (srcW, dstW []int32, err error) {
	w := g.World()
	p := w.Size()
	in, out := make([][]int32, p), make([][]int32, p) // by rank: weights of edges ending, starting there
	k := 0
	for i, s := range srcs {
		for range degs[i] {
			in[dsts[k]] = append(in[dsts[k]], ws[k])
			out[s] = append(out[s], ws[k])
			k++
		}
	}
	counts := make([]int32, 2*p)
	for r := range p {
		counts[2*r], counts[2*r+1] = int32(len(in[r])), int32(len(out[r]))
	}
	theirs := make([]int32, 2*p)
	if err := collectives.Alltoall(bg, w, counts, theirs); err != nil {
		return nil, nil, err
	}
	send := make([]int32, 0, len(ws)*2)
	sc, rc := make([]int, p), make([]int, p)
	for r := range p {
		send = append(append(send, in[r]...), out[r]...)
		sc[r] = len(in[r]) + len(out[r])
		rc[r] = int(theirs[2*r] + theirs[2*r+1])
	}
	recv := make([]int32, sumInts(rc))
	if err := collectives.Alltoallv(bg, w, send, sc, recv, rc); err != nil {
		return nil, nil, err
	}
	for r := range p {
		nIn := int(theirs[2*r])
		srcW = append(srcW, recv[:nIn]...)
		dstW = append(dstW, recv[nIn:rc[r]]...)
		recv = recv[rc[r]:]
	}
	if nIn, nOut := g.NeighborsCount(); len(srcW) != nIn || len(dstW) != nOut {
		return nil, nil, mpiErr(mpi_ERR_INTERN, fmt.Sprintf("%d and %d weights for %d sources and %d destinations", len(srcW), len(dstW), nIn, nOut))
	}
	return srcW, dstW, nil
}

func sumInts(v []int) int {
	n := 0
	for _, x := range v {
		n += x
	}
	return n
}

// doDistGraphNeighborsCount is MPI_Dist_graph_neighbors_count.
func doDistGraphNeighborsCount(c Comm, indeg, outdeg, weighted *int32) error {
	t, err := topoOf(c, mpi_DIST_GRAPH)
	if err != nil {
		return err
	}
	in, out := t.dist.NeighborsCount()
	*indeg, *outdeg, *weighted = int32(in), int32(out), b2i(t.weighted)
	return nil
}

// doDistGraphNeighbors is MPI_Dist_graph_neighbors: up to maxindegree sources and
// maxoutdegree destinations, with their weights when the graph has them.
func doDistGraphNeighbors(c Comm, maxin int, sources, sw *int32, maxout int, dests, dw *int32) error {
	t, err := topoOf(c, mpi_DIST_GRAPH)
	if err != nil {
		return err
	}
	putArgInts(sources, maxin, t.dist.Sources())
	putArgInts(dests, maxout, t.dist.Destinations())
	if t.weighted {
		putWeights(sw, maxin, t.srcW)
		putWeights(dw, maxout, t.dstW)
	}
	return nil
}

// putWeights writes up to max weights to p, unless p is MPI_UNWEIGHTED.
func putWeights(p *int32, max int, w []int32) {
	if n := min(max, len(w)); n > 0 && p != nil && !unweighted(p) && !weightsEmpty(p) {
		copy(unsafe.Slice(p, n), w)
	}
}

// doTopoTest is MPI_Topo_test: MPI_CART, MPI_GRAPH, MPI_DIST_GRAPH or MPI_UNDEFINED.
func doTopoTest(c Comm, status *int32) error {
	w, err := worldOf(c)
	if err != nil {
		return err
	}
	*status = mpi_UNDEFINED
	if t := topologyOf(w); t != nil {
		*status = t.kind()
	}
	return nil
}
