package mpigroup

import (
	"errors"
	"fmt"
	"slices"
)

// Undefined is runtime.Undefined (MPI_UNDEFINED), ProcNull runtime.ProcNull; the
// runtime's tests check that they agree.
const (
	Undefined = -1
	ProcNull  = -3
)

// ErrInvalid is runtime.ErrInvalid, which the runtime sets at init: every error of a
// Group wraps it.
var ErrInvalid = errors.New("invalid argument")

// Group is an ordered set of the job's processes (MPI_Group): group rank i is the
// process at position i. World.Group returns a World's; Incl, Excl, RangeIncl, RangeExcl,
// Union, Intersection and Difference derive others; World.Create and World.CreateGroup
// make a World over one. A Group is an immutable value: no method changes it, copies
// share its memory, and it is safe for concurrent use. It needs no freeing
// (MPI_Group_free). The zero Group is empty (MPI_GROUP_EMPTY).
type Group struct {
	procs []int // by group rank: the process's rank in the job (Init's World); never written after construction
	me    int   // this process's job rank + 1; 0 when not known (the zero Group)
	rank  int   // this process's group rank, or Undefined
}

// New returns the Group of procs (job ranks, distinct, owned by the Group) seen from the
// process whose job rank is me-1 (me 0: not known).
func New(procs []int, me int) Group {
	g := Group{procs: procs, me: me, rank: Undefined}
	if me > 0 {
		if i := slices.Index(procs, me-1); i >= 0 {
			g.rank = i
		}
	}
	return g
}

// Procs returns g's members' job ranks, by group rank. The slice is g's: never written.
func Procs(g Group) []int { return g.procs }

// Size is the number of processes in g (MPI_Group_size).
func (g Group) Size() int { return len(g.procs) }

// Rank is this process's rank in g, or Undefined if it is not a member (MPI_Group_rank).
func (g Group) Rank() int {
	if g.me == 0 {
		return Undefined
	}
	return g.rank
}

// Comparison is the result of Group.Compare.
type Comparison int

// Group.Compare's results (MPI_IDENT, MPI_SIMILAR, MPI_UNEQUAL).
const (
	Ident   Comparison = iota + 1 // the same members in the same order
	Similar                       // the same members in another order
	Unequal                       // different members
)

func (c Comparison) String() string {
	switch c {
	case Ident:
		return "ident"
	case Similar:
		return "similar"
	case Unequal:
		return "unequal"
	}
	return fmt.Sprintf("Comparison(%d)", int(c))
}

// Compare reports whether g and h have the same members in the same order (Ident), the
// same members in another order (Similar), or not the same members (Unequal)
// (MPI_Group_compare).
func (g Group) Compare(h Group) Comparison {
	if slices.Equal(g.procs, h.procs) {
		return Ident
	}
	if len(g.procs) != len(h.procs) {
		return Unequal
	}
	in := h.positions()
	for _, p := range g.procs {
		if _, ok := in[p]; !ok {
			return Unequal
		}
	}
	return Similar
}

// Incl returns the group of g's ranks listed, in that order: its rank i is g's rank
// ranks[i] (MPI_Group_incl). The ranks must be distinct ranks of g; otherwise the
// ErrInvalid error names the first bad one.
func (g Group) Incl(ranks []int) (Group, error) {
	if err := g.checkRanks(ranks); err != nil {
		return Group{}, withOp("group incl", err)
	}
	procs := make([]int, len(ranks))
	for i, r := range ranks {
		procs[i] = g.procs[r]
	}
	return New(procs, g.me), nil
}

// Excl returns the group of g's ranks other than those listed, in g's order
// (MPI_Group_excl). The ranks must be distinct ranks of g; otherwise the ErrInvalid
// error names the first bad one.
func (g Group) Excl(ranks []int) (Group, error) {
	if err := g.checkRanks(ranks); err != nil {
		return Group{}, withOp("group excl", err)
	}
	return g.without(ranks), nil
}

// RangeIncl is Incl of the ranks that the triplets (first, last, stride) list, in order:
// first, first+stride, ... up to last (MPI_Group_range_incl). A stride is not 0, is
// positive when first < last and negative when first > last; every rank listed is a rank
// of g and listed once. Otherwise the ErrInvalid error names the triplet and the rank.
func (g Group) RangeIncl(ranges [][3]int) (Group, error) {
	ranks, err := g.expand(ranges)
	if err != nil {
		return Group{}, withOp("group range_incl", err)
	}
	return g.Incl(ranks)
}

// RangeExcl is Excl of the ranks that the triplets list, with RangeIncl's rules
// (MPI_Group_range_excl).
func (g Group) RangeExcl(ranges [][3]int) (Group, error) {
	ranks, err := g.expand(ranges)
	if err != nil {
		return Group{}, withOp("group range_excl", err)
	}
	return g.without(ranks), nil
}

// Union returns g's members in g's order, then h's members not in g in h's order
// (MPI_Group_union).
func (g Group) Union(h Group) Group {
	procs := slices.Clone(g.procs)
	in := g.positions()
	for _, p := range h.procs {
		if _, ok := in[p]; !ok {
			procs = append(procs, p)
		}
	}
	return New(procs, g.self(h))
}

// Intersection returns g's members that are also h's, in g's order
// (MPI_Group_intersection).
func (g Group) Intersection(h Group) Group {
	in := h.positions()
	var procs []int
	for _, p := range g.procs {
		if _, ok := in[p]; ok {
			procs = append(procs, p)
		}
	}
	return New(procs, g.self(h))
}

// Difference returns g's members that are not h's, in g's order (MPI_Group_difference).
func (g Group) Difference(h Group) Group {
	in := h.positions()
	var procs []int
	for _, p := range g.procs {
		if _, ok := in[p]; !ok {
			procs = append(procs, p)
		}
	}
	return New(procs, g.self(h))
}

// TranslateRanks returns, for each of g's ranks listed, the rank in other of the same
// process, or Undefined if other lacks it (MPI_Group_translate_ranks); ProcNull
// translates to ProcNull. The ranks must be ranks of g (repeats allowed) or ProcNull;
// otherwise the ErrInvalid error names the first bad one.
func (g Group) TranslateRanks(ranks []int, other Group) ([]int, error) {
	for i, r := range ranks {
		if (r < 0 || r >= len(g.procs)) && r != ProcNull {
			return nil, withOp("group translate_ranks", invalidf("ranks[%d] = %d is not a rank of the group of %d", i, r, len(g.procs)))
		}
	}
	in := other.positions()
	out := make([]int, len(ranks))
	for i, r := range ranks {
		if r == ProcNull {
			out[i] = ProcNull // MPI_PROC_NULL translates to itself
		} else if j, ok := in[g.procs[r]]; ok {
			out[i] = j
		} else {
			out[i] = Undefined
		}
	}
	return out, nil
}

// positions maps each member's job rank to its group rank.
func (g Group) positions() map[int]int {
	m := make(map[int]int, len(g.procs))
	for i, p := range g.procs {
		m[p] = i
	}
	return m
}

// self returns the me of g, else of h.
func (g Group) self(h Group) int {
	if g.me != 0 {
		return g.me
	}
	return h.me
}

// checkRanks returns the ErrInvalid error naming the first of ranks that is out of range
// or repeated, or nil.
func (g Group) checkRanks(ranks []int) error {
	seen := make([]bool, len(g.procs))
	for i, r := range ranks {
		if r < 0 || r >= len(g.procs) {
			return invalidf("ranks[%d] = %d is not a rank of the group of %d", i, r, len(g.procs))
		}
		if seen[r] {
			return invalidf("ranks[%d] = %d is listed twice", i, r)
		}
		seen[r] = true
	}
	return nil
}

// without returns g less its ranks listed (valid and distinct), in g's order.
func (g Group) without(ranks []int) Group {
	drop := make([]bool, len(g.procs))
	for _, r := range ranks {
		drop[r] = true
	}
	procs := make([]int, 0, len(g.procs)-len(ranks))
	for i, p := range g.procs {
		if !drop[i] {
			procs = append(procs, p)
		}
	}
	return New(procs, g.me)
}

// expand lists the ranks of the triplets, checking each against g and the others.
func (g Group) expand(ranges [][3]int) ([]int, error) {
	n := len(g.procs)
	seen := make([]bool, n)
	var ranks []int
	for i, t := range ranges {
		first, last, stride := t[0], t[1], t[2]
		switch {
		case stride == 0:
			return nil, invalidf("triplet %d (%d, %d, %d): stride 0", i, first, last, stride)
		case first < 0 || first >= n:
			return nil, invalidf("triplet %d (%d, %d, %d): first rank %d is not a rank of the group of %d", i, first, last, stride, first, n)
		case last < 0 || last >= n:
			return nil, invalidf("triplet %d (%d, %d, %d): last rank %d is not a rank of the group of %d", i, first, last, stride, last, n)
		case stride > 0 && first > last, stride < 0 && first < last:
			return nil, invalidf("triplet %d (%d, %d, %d): the stride leads away from the last rank", i, first, last, stride)
		}
		for j := range (last-first)/stride + 1 {
			r := first + j*stride
			if seen[r] {
				return nil, invalidf("triplet %d (%d, %d, %d): rank %d is listed twice", i, first, last, stride, r)
			}
			seen[r] = true
			ranks = append(ranks, r)
		}
	}
	return ranks, nil
}

func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}

// withOp wraps err with the operation's name, as the runtime's errors read.
func withOp(op string, err error) error { return fmt.Errorf("runtime: %s: %w", op, err) }
