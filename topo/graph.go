package topo

import (
	"context"
	"slices"

	"github.com/gorma-hpc/gorma/runtime"
)

// Graph is a graph of processes over a World (MPI_Graph_create): node i is rank i of the
// World, and its neighbours are the edges listed for it. A Graph does not change after
// NewGraph, and its methods are safe for concurrent use; its World follows the runtime's
// rules (Free it when done).
type Graph struct {
	w     *runtime.World
	index []int // MPI's index: index[i] is the number of edges of nodes 0..i
	edges []int
	nb    *hood // the neighbourhood collectives' (neighbor.go)
}

// NewGraph returns the Graph of len(index) nodes whose neighbours are given as
// MPI_Graph_create gives them: node i's are edges[index[i-1]:index[i]] (index[-1] being
// 0), so index does not decrease and its last entry is len(edges), and every edge names a
// node. The graph's World holds the first len(index) ranks of w, in w's order whatever
// reorder says; a rank beyond them gets a nil Graph and a nil error. Collective over w
// (a Split of it), with the same index and edges at every rank; bad arguments fail with
// runtime.ErrInvalid, naming the entry, before it communicates.
func NewGraph(ctx context.Context, w *runtime.World, index, edges []int, reorder bool) (*Graph, error) {
	const op = "graph_create"
	if w == nil {
		return nil, invalidf(op, "nil World")
	}
	n := len(index)
	if n > w.Size() {
		return nil, invalidf(op, "%d nodes for a World of %d ranks", n, w.Size())
	}
	prev := 0
	for i, x := range index {
		if x < prev {
			return nil, invalidf(op, "index[%d] = %d is below the entry before it (%d): index counts the edges of nodes 0..i", i, x, prev)
		}
		prev = x
	}
	if prev != len(edges) {
		return nil, invalidf(op, "the last index entry is %d, for %d edges", prev, len(edges))
	}
	for i, e := range edges {
		if e < 0 || e >= n {
			return nil, invalidf(op, "edges[%d] = %d is not a node of the %d", i, e, n)
		}
	}
	color := 0
	if w.Rank() >= n {
		color = runtime.NoColor
	}
	gw, err := w.Split(ctx, color, w.Rank())
	if err != nil || gw == nil {
		return nil, wrap(op, err)
	}
	return (&Graph{w: gw, index: slices.Clone(index), edges: slices.Clone(edges)}).withHood(op)
}

// World returns the World of the graph's ranks.
func (g *Graph) World() *runtime.World { return g.w }

// Index and Edges return the graph as NewGraph took it (MPI_Graph_get), copies;
// len(Index()) and len(Edges()) are MPI_Graphdims_get's answers.
func (g *Graph) Index() []int { return slices.Clone(g.index) }

// Edges: see Index.
func (g *Graph) Edges() []int { return slices.Clone(g.edges) }

// NeighborsCount returns the number of rank's neighbours (MPI_Graph_neighbors_count). A
// rank outside the graph is a runtime.ErrInvalid error.
func (g *Graph) NeighborsCount(rank int) (int, error) {
	lo, hi, err := g.span("graph_neighbors_count", rank)
	return hi - lo, err
}

// Neighbors returns rank's neighbours in the order of its edges, a copy
// (MPI_Graph_neighbors). A rank outside the graph is a runtime.ErrInvalid error.
func (g *Graph) Neighbors(rank int) ([]int, error) {
	lo, hi, err := g.span("graph_neighbors", rank)
	if err != nil {
		return nil, err
	}
	return slices.Clone(g.edges[lo:hi]), nil
}

// span returns the bounds of rank's edges in g.edges.
func (g *Graph) span(op string, rank int) (lo, hi int, err error) {
	if rank < 0 || rank >= len(g.index) {
		return 0, 0, invalidf(op, "rank %d out of range [0, %d)", rank, len(g.index))
	}
	if rank > 0 {
		lo = g.index[rank-1]
	}
	return lo, g.index[rank], nil
}
