package topo

import (
	"fmt"
	"sync/atomic"

	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/substrate"
)

// Topology is a process topology that the neighbourhood collectives (NeighborAllgather,
// NeighborAlltoall and their v and w, nonblocking and persistent forms) run over: a
// *Cart, *Graph or *DistGraph. Each rank exchanges blocks with its neighbours only:
// receive slot k is block k of recv, send slot k block k of send.
//
// A Cart's slots are the -1 then the +1 neighbour of each dimension in turn (Shift(d, 1)'s
// source and dest), both ways. Off a non-periodic edge the slot's neighbour is NoNeighbor:
// nothing is sent there and its recv block is left as it was. Slot k receives what the
// neighbour sent in its slot k^1, towards this rank, even when both neighbours of a
// dimension are one rank (a periodic dimension of size 1 or 2). A Graph's slots are
// Neighbors(rank) in order, both ways, and its edges must be symmetric (a node listed by a
// neighbour as often as it lists it); a DistGraph receives from Sources and sends to
// Destinations. On a graph the k-th block between two ranks goes with the k-th edge
// between them, in list order, so repeated edges work.
//
// Every rank of the topology's World makes the same neighbourhood collectives on it in
// the same order (blocking, nonblocking and persistent Inits counted together); calls
// from several goroutines, and several in flight, are safe so long as that order holds.
// Their messages travel on a World of the topology's own (a Dup made at its creation and
// freed with its World), so they never match the user's messages. Bad arguments fail
// with runtime.ErrInvalid, naming the rank, before anything is sent; the neighbours of a
// rank whose call failed wait until their ctx ends. A block that arrives with another
// length than its receiver's count fails the call at the receiver (runtime.ErrMismatch
// when shorter, runtime.ErrTruncated when longer), naming the block and the neighbour.
// A blocking call whose ctx ends first withdraws the receives no message has matched
// and returns ctx's error. Blocking calls are numbered among the World's collective
// calls, for hang reports and GORMA_CHECK=1.
type Topology interface {
	World() *runtime.World
	neighborhood() *hood
}

// hood is a topology's neighbourhood as the neighbourhood collectives use it: the ranks
// to receive block i from (in[i]) and to send block j to (out[j]), NoNeighbor for a slot
// that takes no message. The private World their messages travel on. It does not change
// after it is made, but for seq, the count of the calls made on it.
type hood struct {
	comm    *runtime.World // a Dup of the topology's World, freed with it
	in, out []int
	cart    bool  // slot k sends with code k and receives code k^1 (see sendTag)
	bad     error // the ErrInvalid error every call fails with (a Graph that is not symmetric)
	seq     atomic.Uint64
	obs     *substrate.Obs // the rank's observer (substrate.Observe), nil when off
	members []int          // comm's job ranks, for obs
}

// neighborhood returns c's neighbourhood, nil for a nil Cart (a rank beyond the grid).
func (c *Cart) neighborhood() *hood {
	if c == nil {
		return nil
	}
	return c.nb
}

// neighborhood returns g's neighbourhood.
func (g *Graph) neighborhood() *hood {
	if g == nil {
		return nil
	}
	return g.nb
}

// neighborhood returns g's neighbourhood.
func (g *DistGraph) neighborhood() *hood {
	if g == nil {
		return nil
	}
	return g.nb
}

// withHood gives c its neighbourhood and returns it, or frees c's World and returns the
// error of the Dup under op.
func (c *Cart) withHood(op string) (*Cart, error) {
	nbrs := make([]int, 0, 2*len(c.dims))
	for d := range c.dims {
		src, dst, _ := c.Shift(d, 1)
		nbrs = append(nbrs, src, dst)
	}
	nb, err := newHood(c.w, nbrs, nbrs, true, nil)
	if err != nil {
		c.w.Free()
		return nil, wrap(op, err)
	}
	c.nb = nb
	return c, nil
}

// withHood gives g its neighbourhood and returns it, or frees g's World and returns the
// error of the Dup under op. A graph in which some node lists a neighbour more or fewer
// times than that neighbour lists it gets a neighbourhood whose calls fail: each rank
// would wait for a message its neighbour never sends.
func (g *Graph) withHood(op string) (*Graph, error) {
	nbrs, _ := g.Neighbors(g.w.Rank())
	nb, err := newHood(g.w, nbrs, nbrs, false, g.asymmetry())
	if err != nil {
		g.w.Free()
		return nil, wrap(op, err)
	}
	g.nb = nb
	return g, nil
}

// asymmetry returns the ErrInvalid error naming the first pair of nodes whose edges do
// not match (a lists b k times and b lists a another number of times), or nil.
func (g *Graph) asymmetry() error {
	count := make(map[[2]int]int, len(g.edges))
	for a := range g.index {
		lo, hi, _ := g.span("", a)
		for _, b := range g.edges[lo:hi] {
			count[[2]int{a, b}]++
		}
	}
	for a := range g.index {
		lo, hi, _ := g.span("", a)
		for _, b := range g.edges[lo:hi] {
			if ab, ba := count[[2]int{a, b}], count[[2]int{b, a}]; ab != ba {
				return fmt.Errorf("%w: node %d lists node %d as a neighbour %d times and node %d lists node %d %d times: a neighbourhood collective on a Graph sends to and receives from each neighbour, so the edges must be symmetric (use a DistGraph for a directed graph)",
					runtime.ErrInvalid, a, b, ab, b, a, ba)
			}
		}
	}
	return nil
}

// withHood gives g its neighbourhood and returns it, or frees g's World and returns the
// error of the Dup under op.
func (g *DistGraph) withHood(op string) (*DistGraph, error) {
	nb, err := newHood(g.w, g.sources, g.dests, false, nil)
	if err != nil {
		g.w.Free()
		return nil, wrap(op, err)
	}
	g.nb = nb
	return g, nil
}

// newHood returns the neighbourhood of in and out over a Dup of w that w's Free frees.
// Every rank of w makes it at the same point (a topology's creation), so the Dups agree.
func newHood(w *runtime.World, in, out []int, cart bool, bad error) (*hood, error) {
	comm, err := w.Dup()
	if err != nil {
		return nil, err
	}
	substrate.MarkInternal(comm) // hang reports name the blocking call (run's Track), not its messages
	if err := substrate.OnFree(w, func() { comm.Free() }); err != nil {
		comm.Free()
		return nil, err
	}
	h := &hood{comm: comm, in: in, out: out, cart: cart, bad: bad}
	h.obs, h.members = substrate.Observe(comm)
	return h, nil
}

// Tags. Call number s uses the tags from s*width up. It is counted on the hood, so it is
// the same at every rank that makes its neighbourhood collectives in the same order. A
// Graph or DistGraph call uses one tag per edge, as the k-th message between two ranks
// in a call goes with the k-th edge between them (non-overtaking matches them in order).
// A Cart call uses one tag per slot: the block sent to slot k carries code k, and slot
// k's receive expects code k^1. So the block a rank sends towards its +1 neighbour lands
// in that neighbour's -1 slot even when both neighbours are one rank (a periodic
// dimension of size 1 or 2). The tags wrap at MaxTag: calls 2^31/width apart share tags,
// which matters only to that many calls in flight at once.

// width returns the number of tags a call uses.
func (h *hood) width() uint64 {
	if h.cart {
		return uint64(max(len(h.out), 1))
	}
	return 1
}

// next numbers a call and returns its first tag.
func (h *hood) next() uint64 { return (h.seq.Add(1) - 1) * h.width() }

// sendTag returns the tag of slot k's send in the call whose first tag is base.
func (h *hood) sendTag(base uint64, k int) int {
	if !h.cart {
		return int(base & runtime.MaxTag)
	}
	return int((base + uint64(k)) & runtime.MaxTag)
}

// recvTag returns the tag of slot k's receive in the call whose first tag is base.
func (h *hood) recvTag(base uint64, k int) int {
	if !h.cart {
		return int(base & runtime.MaxTag)
	}
	return int((base + uint64(k^1)) & runtime.MaxTag)
}
