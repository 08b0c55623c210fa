package topo

import (
	"context"
	"slices"

	"github.com/gorma-hpc/gorma/runtime"
)

// DistGraph is a distributed graph of processes over a World (MPI_Dist_graph_create and
// MPI_Dist_graph_create_adjacent): each rank knows only its own in-neighbours (Sources)
// and out-neighbours (Destinations). Edges carry no weights (MPI_UNWEIGHTED). A
// DistGraph does not change after it is made, and its methods are safe for concurrent
// use; its World follows the runtime's rules (Free it when done).
type DistGraph struct {
	w              *runtime.World
	sources, dests []int
	nb             *hood // the neighbourhood collectives' (neighbor.go)
}

// NewDistGraphAdjacent returns the DistGraph in which this rank's in-neighbours are sources
// and its out-neighbours destinations, ranks of w (MPI_Dist_graph_create_adjacent). Its
// World has w's ranks in w's order, whatever reorder says. Every rank's sources must list
// exactly the ranks whose destinations list it, as often as they do: the ranks check that
// with each other. A rank out of range or an edge one end does not list fails the call at
// every rank with runtime.ErrInvalid, naming the rank that found it. Collective over w.
func NewDistGraphAdjacent(ctx context.Context, w *runtime.World, sources, destinations []int, reorder bool) (*DistGraph, error) {
	const op = "dist_graph_create_adjacent"
	if w == nil {
		return nil, invalidf(op, "nil World")
	}
	gw, err := w.Split(ctx, 0, w.Rank())
	if err != nil {
		return nil, wrap(op, err)
	}
	n, me := gw.Size(), gw.Rank()
	bad := checkRanks(op, "sources", sources, n)
	if bad == nil {
		bad = checkRanks(op, "destinations", destinations, n)
	}
	out := make([][]int64, n) // to each rank: this rank's edges to it, as (me, it) pairs
	if bad == nil {
		for _, d := range destinations {
			out[d] = append(out[d], int64(me), int64(d))
		}
	}
	in, all, err := exchangeEdges(ctx, gw, out, bad == nil)
	err = wrap(op, err)
	if err == nil && bad == nil && all {
		var got []int
		for _, pairs := range in {
			for i := 0; i < len(pairs); i += 2 {
				got = append(got, int(pairs[i]))
			}
		}
		if want := slices.Sorted(slices.Values(sources)); !slices.Equal(slices.Sorted(slices.Values(got)), want) {
			bad = invalidf(op, "rank %d lists sources %v, but the ranks whose destinations name it are %v", me, want, slices.Sorted(slices.Values(got)))
		}
	}
	if err == nil {
		err = agree(ctx, gw, op, bad)
	}
	if err != nil {
		gw.Free()
		return nil, err
	}
	return (&DistGraph{w: gw, sources: slices.Clone(sources), dests: slices.Clone(destinations)}).withHood(op)
}

// NewDistGraph returns the DistGraph of the edges that the ranks give between them
// (MPI_Dist_graph_create): this rank gives, for each i, the edges from sources[i] to the
// next degrees[i] entries of destinations, and any rank may give any edge. Each rank's
// Sources and Destinations list its edges' other ends by the rank that gave them, then in
// that rank's order. Its World has w's ranks in w's order, whatever reorder says. A rank
// out of range, a negative degree or degrees that do not add up to len(destinations) fail
// the call at every rank with runtime.ErrInvalid, naming the rank that passed them.
// Collective over w.
func NewDistGraph(ctx context.Context, w *runtime.World, sources, degrees, destinations []int, reorder bool) (*DistGraph, error) {
	const op = "dist_graph_create"
	if w == nil {
		return nil, invalidf(op, "nil World")
	}
	gw, err := w.Split(ctx, 0, w.Rank())
	if err != nil {
		return nil, wrap(op, err)
	}
	n, me := gw.Size(), gw.Rank()
	bad := checkRanks(op, "sources", sources, n)
	if bad == nil {
		bad = checkRanks(op, "destinations", destinations, n)
	}
	if bad == nil && len(degrees) != len(sources) {
		bad = invalidf(op, "%d degrees for %d sources", len(degrees), len(sources))
	}
	total := 0
	for i, d := range degrees {
		if bad == nil && d < 0 {
			bad = invalidf(op, "degrees[%d] = %d", i, d)
		}
		total += d
	}
	if bad == nil && total != len(destinations) {
		bad = invalidf(op, "the degrees add up to %d, for %d destinations", total, len(destinations))
	}
	out := make([][]int64, n) // to each end of each edge: the edge, as a (from, to) pair
	if bad == nil {
		k := 0
		for i, s := range sources {
			for _, d := range destinations[k : k+degrees[i]] {
				out[s] = append(out[s], int64(s), int64(d))
				if d != s {
					out[d] = append(out[d], int64(s), int64(d))
				}
			}
			k += degrees[i]
		}
	}
	in, _, err := exchangeEdges(ctx, gw, out, bad == nil)
	err = wrap(op, err)
	if err == nil {
		err = agree(ctx, gw, op, bad)
	}
	if err != nil {
		gw.Free()
		return nil, err
	}
	g := &DistGraph{w: gw}
	for _, pairs := range in {
		for i := 0; i < len(pairs); i += 2 {
			from, to := int(pairs[i]), int(pairs[i+1])
			if from == me {
				g.dests = append(g.dests, to)
			}
			if to == me {
				g.sources = append(g.sources, from)
			}
		}
	}
	return g.withHood(op)
}

// World returns the World of the graph's ranks.
func (g *DistGraph) World() *runtime.World { return g.w }

// NeighborsCount returns the number of this rank's in- and out-neighbours
// (MPI_Dist_graph_neighbors_count).
func (g *DistGraph) NeighborsCount() (indegree, outdegree int) {
	return len(g.sources), len(g.dests)
}

// Sources returns this rank's in-neighbours, a copy (MPI_Dist_graph_neighbors' sources).
func (g *DistGraph) Sources() []int { return slices.Clone(g.sources) }

// Destinations returns this rank's out-neighbours, a copy (MPI_Dist_graph_neighbors'
// destinations).
func (g *DistGraph) Destinations() []int { return slices.Clone(g.dests) }

// checkRanks returns the ErrInvalid error naming the first entry of list (called name)
// that is not a rank of a World of n, or nil.
func checkRanks(op, name string, list []int, n int) error {
	for i, r := range list {
		if r < 0 || r >= n {
			return invalidf(op, "%s[%d] = %d is not a rank of the World of %d", name, i, r, n)
		}
	}
	return nil
}

// Tags of the creation exchanges on the graph's own World, which no user message has
// reached yet.
const (
	tagCount = iota + 1
	tagEdges
	tagAgree
)

// exchangeEdges sends out[r] to every rank r and returns what each rank sent this one,
// in n-1 rounds of Sendrecv around the ring (round k: to me+k, from me-k), a count and
// then the edges. When ok is false it sends -1 and no edges. all reports whether every
// other rank sent its edges (none sent -1).
func exchangeEdges(ctx context.Context, w *runtime.World, out [][]int64, ok bool) (in [][]int64, all bool, err error) {
	n, me := w.Size(), w.Rank()
	in, all = make([][]int64, n), true
	in[me] = out[me]
	for k := 1; k < n; k++ {
		to, from := (me+k)%n, (me-k+n)%n
		cnt, edges := []int64{int64(len(out[to]))}, out[to]
		if !ok {
			cnt[0], edges = -1, nil
		}
		got := []int64{0}
		if _, err := runtime.Sendrecv(ctx, w, cnt, to, tagCount, got, from, tagCount); err != nil {
			return nil, false, err
		}
		all = all && got[0] >= 0
		in[from] = make([]int64, max(got[0], 0))
		if _, err := runtime.Sendrecv(ctx, w, edges, to, tagEdges, in[from], from, tagEdges); err != nil {
			return nil, false, err
		}
	}
	return in, all, nil
}

// agree tells every rank of w whether this rank found bad arguments (bad), and returns
// bad, or the ErrInvalid error naming the lowest rank that did, or nil when none did.
func agree(ctx context.Context, w *runtime.World, op string, bad error) error {
	n, me := w.Size(), w.Rank()
	first := -1
	if bad != nil {
		first = me
	}
	for k := 1; k < n; k++ {
		to, from := (me+k)%n, (me-k+n)%n
		flag := []int64{0}
		if bad != nil {
			flag[0] = 1
		}
		got := []int64{0}
		if _, err := runtime.Sendrecv(ctx, w, flag, to, tagAgree, got, from, tagAgree); err != nil {
			return wrap(op, err)
		}
		if got[0] != 0 && (first < 0 || from < first) && bad == nil {
			first = from
		}
	}
	switch {
	case bad != nil:
		return bad
	case first >= 0:
		return invalidf(op, "rank %d passed bad arguments (its error names them)", first)
	}
	return nil
}
