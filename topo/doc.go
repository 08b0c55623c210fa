// Package topo holds process topologies over a runtime.World (MPI's virtual topologies):
// Cartesian grids (Cart), for stencil codes, graphs that every rank knows whole (Graph),
// and distributed graphs in which each rank knows its own neighbours (DistGraph).
//
//	dims, err := topo.DimsCreate(w.Size(), []int{0, 0}) // a balanced 2D grid
//	c, err := topo.NewCart(ctx, w, dims, []bool{true, true}, true)
//	up, down, err := c.Shift(0, 1)                      // neighbours along dimension 0
//	_, err = runtime.Sendrecv(ctx, c.World(), last, down, 0, halo, up, 0)
//	row, err := c.Sub(ctx, []bool{false, true})          // this rank's row
//
// NewCart, Cart.Sub, NewGraph, NewDistGraph and NewDistGraphAdjacent are collective over
// their World and return a topology whose World is a Split of it (rank order kept:
// reorder is accepted and ignored); ranks beyond a grid or Graph get nil. The DistGraph
// calls exchange the edges, so an edge one end does not list fails at every rank. Coords, Rank, Shift, Neighbors and the rest are
// local arithmetic. Shift names an off-grid neighbour of a non-periodic dimension
// NoNeighbor, runtime.ProcNull: a transfer with it completes at once, doing nothing.
//
// The neighbourhood collectives (NeighborAllgather, NeighborAlltoall and their v and w
// forms; Ineighbor... for a nonblocking Request, Neighbor...Init for a persistent one)
// exchange blocks with a topology's neighbours only: a Cart's -1 and +1 neighbour in each
// dimension, a Graph's Neighbors, a DistGraph's Sources (receives) and Destinations
// (sends). Every rank makes them in the same order on a topology; they may run from
// several goroutines at once, on a World of the topology's own.
//
// Errors read "topo: <call>: ..." and wrap runtime.ErrInvalid for bad arguments (naming
// the dimension, rank or entry) or the runtime's error of the Split.
//
// # Concurrency contract
//
// A Cart, Graph or DistGraph does not change after it is made; its methods are safe for concurrent
// use by any number of goroutines. The collective calls follow the runtime's rules for
// Split: every rank of the World calls them in the same order. Free a topology's
// World (World().Free()) when it is no longer used. A neighbourhood Request takes its
// Wait, Test, Start and Free one goroutine at a time. design.md describes the layout.
package topo
