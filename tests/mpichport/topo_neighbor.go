package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/topo"
)

func init() {
	register("topo-neighb_coll", "topo/neighb_coll.c", 4, func(ctx context.Context, w *runtime.World) error {
		return neighbLine(ctx, w, neighbAll...)
	})
	register("coll-neighb_allgather", "coll/neighb_allgather.c", 4, func(ctx context.Context, w *runtime.World) error {
		return neighbLine(ctx, w, neighbAllgather)
	})
	register("coll-neighb_allgatherv", "coll/neighb_allgatherv.c", 4, func(ctx context.Context, w *runtime.World) error {
		return neighbLine(ctx, w, neighbAllgatherv)
	})
	register("coll-neighb_alltoall", "coll/neighb_alltoall.c", 4, func(ctx context.Context, w *runtime.World) error {
		return neighbLine(ctx, w, neighbAlltoall)
	})
	register("coll-neighb_alltoallv", "coll/neighb_alltoallv.c", 4, func(ctx context.Context, w *runtime.World) error {
		return neighbLine(ctx, w, neighbAlltoallv)
	})
	register("coll-neighb_alltoallw", "coll/neighb_alltoallw.c", 4, func(ctx context.Context, w *runtime.World) error {
		return neighbLine(ctx, w, neighbAlltoallw)
	})
	register("coll-neighb_coll2", "coll/neighb_coll2.c", 4, collNeighbColl2)
	register("coll-neighb_dup_edges", "coll/neighb_dup_edges.c", 4, collNeighbDupEdges)
	register("coll-neighb_alltoallw2", "coll/neighb_alltoallw2.c", 3, collNeighbAlltoallw2)
}

// deadbeef is MPICH's sentinel 0xdeadbeef as an int32: a slot with no neighbour keeps it.
const deadbeef = int32(-559038737)

// A neighbLine check runs one neighbourhood collective on the line 0 - 1 - ... - p-1 (a
// non-periodic Cart of one dimension), and returns what differs at rank r of p.
type neighbCheck func(ctx context.Context, c *topo.Cart, r, p int) error

var neighbAll = []neighbCheck{neighbAllgather, neighbAllgatherv, neighbAlltoall, neighbAlltoallv, neighbAlltoallw}

// neighbLine: MPICH's neighbourhood collective tests on a non-periodic line, each call
// with one element per neighbour: rank r's slot 0 is rank r-1 and slot 1 rank r+1, and
// at the ends the slot with no neighbour keeps 0xdeadbeef. topo/neighb_coll.c runs all
// five; coll/neighb_<call>.c one each.
func neighbLine(ctx context.Context, w *runtime.World, checks ...neighbCheck) error {
	c, err := topo.NewCart(ctx, w, []int{w.Size()}, []bool{false}, false)
	if err != nil {
		return err
	}
	for _, check := range checks {
		if err := check(ctx, c, c.World().Rank(), c.World().Size()); err != nil {
			return err
		}
	}
	return c.World().Free()
}

// lineWant returns the two slots rank r of p expects: lo from rank r-1, hi from rank
// r+1, 0xdeadbeef where there is none; with swap the recv buffer holds them the other
// way round (the v and w calls' displacements).
func lineWant(r, p int, lo, hi int32, swap bool) []int32 {
	want := []int32{lo, hi}
	if r == 0 {
		want[0] = deadbeef
	}
	if r == p-1 {
		want[1] = deadbeef
	}
	if swap {
		want[0], want[1] = want[1], want[0]
	}
	return want
}

// neighbAllgather: each rank sends its rank to both neighbours.
func neighbAllgather(ctx context.Context, c *topo.Cart, r, p int) error {
	recv := []int32{deadbeef, deadbeef}
	if err := topo.NeighborAllgather(ctx, c, []int32{int32(r)}, recv); err != nil {
		return err
	}
	return same("neighbor_allgather", recv, lineWant(r, p, int32(r-1), int32(r+1), false))
}

// neighbAllgatherv: as neighbAllgather, with displacements {1, 0} putting the blocks in
// opposite slots.
func neighbAllgatherv(ctx context.Context, c *topo.Cart, r, p int) error {
	recv := []int32{deadbeef, deadbeef}
	if err := topo.NeighborAllgatherv(ctx, c, []int32{int32(r)}, recv, []int{1, 1}, []int{1, 0}); err != nil {
		return err
	}
	return same("neighbor_allgatherv", recv, lineWant(r, p, int32(r-1), int32(r+1), true))
}

// lineSend is rank r's send buffer of the alltoall calls: {-(r+1), r+1}, the first
// towards r-1.
func lineSend(r int) []int32 { return []int32{int32(-(r + 1)), int32(r + 1)} }

// neighbAlltoall: slot 0 gets rank r-1's block towards r (r), slot 1 rank r+1's
// (-(r+2)).
func neighbAlltoall(ctx context.Context, c *topo.Cart, r, p int) error {
	recv := []int32{deadbeef, deadbeef}
	if err := topo.NeighborAlltoall(ctx, c, lineSend(r), recv); err != nil {
		return err
	}
	return same("neighbor_alltoall", recv, lineWant(r, p, int32(r), int32(-(r+2)), false))
}

// neighbAlltoallv: as neighbAlltoall, received into opposite slots.
func neighbAlltoallv(ctx context.Context, c *topo.Cart, r, p int) error {
	recv := []int32{deadbeef, deadbeef}
	if err := topo.NeighborAlltoallv(ctx, c, lineSend(r), []int{1, 1}, []int{0, 1}, recv, []int{1, 1}, []int{1, 0}); err != nil {
		return err
	}
	return same("neighbor_alltoallv", recv, lineWant(r, p, int32(r), int32(-(r+2)), true))
}

// neighbAlltoallw: neighbAlltoallv over bytes, displacements in bytes.
func neighbAlltoallw(ctx context.Context, c *topo.Cart, r, p int) error {
	send, recv := int32Bytes(lineSend(r)), int32Bytes([]int32{deadbeef, deadbeef})
	sb := topo.ByteBlocks{Counts: []int{1, 1}, Displs: []int{0, 4}, Sizes: []int{4, 4}}
	rb := topo.ByteBlocks{Counts: []int{1, 1}, Displs: []int{4, 0}, Sizes: []int{4, 4}}
	if err := topo.NeighborAlltoallw(ctx, c, send, sb, recv, rb); err != nil {
		return err
	}
	return same("neighbor_alltoallw", bytesInt32(recv), lineWant(r, p, int32(r), int32(-(r+2)), true))
}

func int32Bytes(v []int32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], uint32(x))
	}
	return b
}

func bytesInt32(b []byte) []int32 {
	v := make([]int32, len(b)/4)
	for i := range v {
		v[i] = int32(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}

// collNeighbColl2: ten DistGraphs made by NewDistGraphAdjacent from one adjacency matrix
// that every rank computes alike (MPICH's rank 0 builds it and scatters rows and
// columns): complete, every other column, a self-edge at rank 0 only, no edges, and six
// random ones with about a third of the edges left out. On each, NeighborAllgather of
// the rank (slot i holds Sources()[i]) and NeighborAlltoallv of (r + d) % 4 + 1 copies
// of r + d to each destination d. MPICH's random graphs come from C's rand(); these from
// a PCG seeded with the graph's number, so the graphs differ but are of the same kind.
func collNeighbColl2(ctx context.Context, w *runtime.World) error {
	n, me := w.Size(), w.Rank()
	for graph := range 10 {
		adj := make([][]bool, n) // adj[i][j]: an edge from i to j
		rng := rand.New(rand.NewPCG(uint64(graph), 0))
		for i := range adj {
			adj[i] = make([]bool, n)
			for j := range adj[i] {
				switch graph {
				case 0:
					adj[i][j] = true
				case 1:
					adj[i][j] = j%2 == 1
				case 2:
					adj[i][j] = i == 0 && j == 0
				case 3:
				default:
					adj[i][j] = rng.Float64() >= 0.33
				}
			}
		}
		var srcs, dests []int
		for j := range n {
			if adj[me][j] {
				dests = append(dests, j)
			}
			if adj[j][me] {
				srcs = append(srcs, j)
			}
		}
		g, err := topo.NewDistGraphAdjacent(ctx, w, srcs, dests, false)
		if err != nil {
			return fmt.Errorf("graph %d: %w", graph, err)
		}
		got := slices.Repeat([]int32{deadbeef}, len(srcs))
		if err := topo.NeighborAllgather(ctx, g, []int32{int32(me)}, got); err != nil {
			return fmt.Errorf("graph %d: %w", graph, err)
		}
		if err := same(fmt.Sprintf("graph %d: neighbor_allgather", graph), got, toInt32(srcs)); err != nil {
			return err
		}
		const maxCount = 4
		var send, want []int32
		sc, rc := make([]int, len(dests)), make([]int, len(srcs))
		for i, d := range dests {
			sc[i] = (me+d)%maxCount + 1
			send = append(send, slices.Repeat([]int32{int32(me + d)}, sc[i])...)
		}
		for i, s := range srcs {
			rc[i] = (me+s)%maxCount + 1
			want = append(want, slices.Repeat([]int32{int32(me + s)}, rc[i])...)
		}
		recv := slices.Repeat([]int32{deadbeef}, len(want))
		if err := topo.NeighborAlltoallv(ctx, g, send, sc, nil, recv, rc, nil); err != nil {
			return fmt.Errorf("graph %d: %w", graph, err)
		}
		if err := same(fmt.Sprintf("graph %d: neighbor_alltoallv", graph), recv, want); err != nil {
			return err
		}
		if err := g.World().Free(); err != nil {
			return err
		}
	}
	return nil
}

func toInt32(v []int) []int32 {
	out := make([]int32, len(v))
	for i, x := range v {
		out[i] = int32(x)
	}
	return out
}

// collNeighbDupEdges: a 1 x 1 x p grid, periodic in every dimension, so that four of a
// rank's six slots are itself and, at p = 2, the other two one peer. NeighborAlltoall,
// Alltoallv and Alltoallw, blocking and nonblocking, must put the neighbour's block s^1
// in slot s (MPI-4.1 Example 8.10). Then the same neighbour lists as a DistGraph, where
// the k-th edge to a rank matches the k-th edge from it: a point-to-point exchange on
// the Cart's World, one tag per repetition of a neighbour, gives the expected blocks,
// and NeighborAlltoallv, blocking and nonblocking, must agree with it.
func collNeighbDupEdges(ctx context.Context, w *runtime.World) error {
	const slots = 6
	c, err := topo.NewCart(ctx, w, []int{1, 1, w.Size()}, []bool{true, true, true}, false)
	if err != nil {
		return err
	}
	me := c.World().Rank()
	nbrs := make([]int, 0, slots)
	for d := range 3 {
		lo, hi, err := c.Shift(d, 1)
		if err != nil {
			return err
		}
		nbrs = append(nbrs, lo, hi)
	}
	send := seq(slots, func(s int) int32 { return int32(me*slots + s) })
	want := seq(slots, func(s int) int32 { return int32(nbrs[s]*slots + (s ^ 1)) })
	ones, displs := fill(slots, 1), seq(slots, func(s int) int { return s })
	bl := topo.ByteBlocks{Counts: fill(slots, 4), Displs: seq(slots, func(s int) int { return 4 * s })}
	calls := []struct {
		name string
		run  func(recv []int32) error
	}{
		{"neighbor_alltoall", func(recv []int32) error { return topo.NeighborAlltoall(ctx, c, send, recv) }},
		{"neighbor_alltoallv", func(recv []int32) error {
			return topo.NeighborAlltoallv(ctx, c, send, ones, displs, recv, ones, displs)
		}},
		{"neighbor_alltoallw", func(recv []int32) error {
			b := make([]byte, 4*slots)
			if err := topo.NeighborAlltoallw(ctx, c, int32Bytes(send), bl, b, bl); err != nil {
				return err
			}
			copy(recv, bytesInt32(b))
			return nil
		}},
		{"ineighbor_alltoall", func(recv []int32) error {
			return waitReq(ctx)(topo.IneighborAlltoall(c, send, recv))
		}},
		{"ineighbor_alltoallv", func(recv []int32) error {
			return waitReq(ctx)(topo.IneighborAlltoallv(c, send, ones, displs, recv, ones, displs))
		}},
		{"ineighbor_alltoallw", func(recv []int32) error {
			b := make([]byte, 4*slots)
			if err := waitReq(ctx)(topo.IneighborAlltoallw(c, int32Bytes(send), bl, b, bl)); err != nil {
				return err
			}
			copy(recv, bytesInt32(b))
			return nil
		}},
	}
	for _, call := range calls {
		recv := make([]int32, slots)
		if err := call.run(recv); err != nil {
			return fmt.Errorf("%s: %w", call.name, err)
		}
		if err := same(call.name, recv, want); err != nil {
			return err
		}
	}

	g, err := topo.NewDistGraphAdjacent(ctx, c.World(), nbrs, nbrs, false)
	if err != nil {
		return err
	}
	reqs := make([]*runtime.Request, 0, 2*slots)
	for s, p := range nbrs {
		tag := 0
		for _, q := range nbrs[:s] {
			if q == p {
				tag++
			}
		}
		rr, err := runtime.Irecv(c.World(), want[s:s+1], p, tag)
		if err != nil {
			return err
		}
		sr, err := runtime.Isend(c.World(), send[s:s+1], p, tag)
		if err != nil {
			return err
		}
		reqs = append(reqs, rr, sr)
	}
	if err := runtime.WaitAll(ctx, reqs, nil); err != nil {
		return err
	}
	recv := make([]int32, slots)
	if err := topo.NeighborAlltoallv(ctx, g, send, ones, displs, recv, ones, displs); err != nil {
		return err
	}
	if err := same("neighbor_alltoallv (dist graph)", recv, want); err != nil {
		return err
	}
	recv = make([]int32, slots)
	if err := waitReq(ctx)(topo.IneighborAlltoallv(g, send, ones, displs, recv, ones, displs)); err != nil {
		return err
	}
	if err := same("ineighbor_alltoallv (dist graph)", recv, want); err != nil {
		return err
	}
	return first(g.World().Free(), c.World().Free())
}

// waitReq returns a function that waits for the Request of a nonblocking call, or
// returns its error.
func waitReq(ctx context.Context) func(r *topo.Request, err error) error {
	return func(r *topo.Request, err error) error {
		if err != nil {
			return err
		}
		return r.Wait(ctx)
	}
}

// collNeighbAlltoallw2: in-degree and out-degree that differ (MPICH issue 6233): a
// DistGraph in which rank 0 sends to ranks 1 and 2 and receives from none; one int32
// from rank 0's single send block to both. Rank 0's recv keeps its -3.
func collNeighbAlltoallw2(ctx context.Context, w *runtime.World) error {
	if w.Size() != 3 {
		return fmt.Errorf("needs exactly 3 ranks, has %d", w.Size())
	}
	me := w.Rank()
	sources := [][]int{{}, {0}, {0}}
	dests := [][]int{{1, 2}, {}, {}}
	g, err := topo.NewDistGraphAdjacent(ctx, w, sources[me], dests[me], false)
	if err != nil {
		return err
	}
	send := int32Bytes([]int32{[]int32{0, -1, -2}[me]})
	recv := int32Bytes([]int32{[]int32{-3, -4, -5}[me]})
	var sb, rb topo.ByteBlocks
	if me == 0 {
		sb = topo.ByteBlocks{Counts: []int{1, 1}, Displs: []int{0, 0}, Sizes: []int{4, 4}}
		rb = topo.ByteBlocks{Counts: []int{}, Displs: []int{}}
	} else {
		sb = topo.ByteBlocks{Counts: []int{}, Displs: []int{}}
		rb = topo.ByteBlocks{Counts: []int{1}, Displs: []int{0}, Sizes: []int{4}}
	}
	if err := topo.NeighborAlltoallw(ctx, g, send, sb, recv, rb); err != nil {
		return err
	}
	if err := same("neighbor_alltoallw", bytesInt32(recv), []int32{[]int32{-3, 0, 0}[me]}); err != nil {
		return err
	}
	return g.World().Free()
}
