package runtime

import (
	"context"
	"slices"

	"github.com/gorma-hpc/gorma/runtime/internal/mpigroup"
)

// World kinds. A World spans the whole job (Init's World and its Dups), a group of the
// job's ranks (Split, Create, CreateGroup, Merge and their Dups), or two groups (an
// intercommunicator). Every kind keeps its ranks in groups: World.own is its own ranks
// and this rank's place among them, World.g the ranks that its point-to-point calls
// name. So Rank, Size and the rank translation of the send and receive paths read a
// table, whatever the kind. The kind holds what differs: how Dup, Split, Barrier,
// Create, Free and Merge go, and the remote group. The World's methods call it; it
// calls down into the contexts (comms, ctxalloc.go) and the messages (swap, exchangeAmong).

// kind is what differs between a whole World, a sub-world and an intercommunicator.
type kind interface {
	isInter() bool
	// local is an intercommunicator's local group's World, nil for an intracommunicator.
	local(w *World) *World
	remoteSize(w *World) int
	remoteGroup(w *World) Group
	// rankErr is the error of a rank argument r that names no rank of w.
	rankErr(w *World, r int) error
	// dupLocked makes a Dup of w without communication (e.mu held); full when w's
	// block has no room, and Dup then splits w with one color.
	dupLocked(w *World) (d *World, full bool, err error)
	split(ctx context.Context, w *World, color, key int) (*World, error)
	merge(ctx context.Context, w *World, high bool) (*World, error)
	barrier(ctx context.Context, w *World) error
	// createColor is Create's color and key for this rank, or the error naming a member
	// of g that is not a rank of w.
	createColor(w *World, g Group) (color, key int, err error)
	// fam is the family w's Dups take their contexts from; nil for a whole World.
	fam(w *World) *family
	// trackOn is the World whose Tracks report w's calls, and members its job ranks
	// (nil: every rank).
	trackOn(w *World) *World
	members(w *World) []int
	// freeWith is what Free of w frees with it.
	freeWith(w *World) []func()
}

// intra is the behaviour that the whole World and sub-worlds share.
type intra struct{}

func (intra) isInter() bool            { return false }
func (intra) local(*World) *World      { return nil }
func (intra) remoteSize(*World) int    { return 0 }
func (intra) remoteGroup(*World) Group { return Group{} }
func (intra) trackOn(w *World) *World  { return w }
func (intra) freeWith(*World) []func() { return nil }
func (intra) rankErr(w *World, r int) error {
	_, job := w.k.(whole)
	return rankRangeErr(r, w.Size(), job)
}

// rankRangeErr is the ErrInvalid error of rank r outside [0, n), the ranks of a World;
// job says that the World holds every rank of the job, whose size the launcher sets. It
// says what to do: start more ranks, or pass a rank of the World.
func rankRangeErr(r, n int, job bool) error {
	switch {
	case r >= n && job:
		return invalidf("rank %d out of range [0, %d): the job has %d ranks (start it with golaunch -n %d or more)", r, n, n, r+1)
	case r >= n:
		return invalidf("rank %d out of range [0, %d): the World has %d ranks (Rank and Size number its ranks, not the job's)", r, n, n)
	}
	return invalidf("rank %d out of range [0, %d) (the negative ranks are AnySource, for receives and probes, and ProcNull)", r, n)
}

func (intra) split(ctx context.Context, w *World, color, key int) (*World, error) {
	return intraSplit(ctx, w, color, key)
}

func (intra) merge(context.Context, *World, bool) (*World, error) {
	return nil, invalidf("Merge takes an intercommunicator (CreateIntercomm); this World is an intracommunicator")
}

func (intra) barrier(ctx context.Context, w *World) error { return dissemination(ctx, w) }

func (intra) createColor(w *World, g Group) (color, key int, err error) {
	if _, err := memberRanks(w, g); err != nil {
		return 0, 0, err
	}
	color = NoColor
	if i := groupIndex(g, w.e.rank); i >= 0 {
		color, key = slices.Min(mpigroup.Procs(g)), i // disjoint groups have different lowest members
	}
	return color, key, nil
}

// whole is the kind of a World over every rank of the job: its groups are the engine's
// identity group (worlds.all).
type whole struct{ intra }

func (whole) fam(*World) *family { return nil }

// members is nil (every rank) for Init's World of the job's start, its ranks in a
// spawned rank's (its group: spawn.go).
func (whole) members(w *World) []int {
	if len(w.g.ranks) == w.e.size {
		return nil
	}
	return w.g.ranks
}

// wholeGroup returns the group of every rank of e's job, each with its job rank.
func wholeGroup(e *engine) *group {
	g := &group{ranks: make([]int, e.size), of: make([]int32, e.size), me: e.rank, localRank: e.localRank, localSize: e.localSize}
	for r := range g.ranks {
		g.ranks[r], g.of[r] = r, int32(r)
	}
	return g
}

func newWhole(e *engine, c uint16) *World {
	w := &World{e: e, ctx: c, k: whole{}, g: e.all, own: e.all, life: &worldLife{}}
	e.ft.register(w, e.all.ranks)
	return w
}

// dupLocked takes the lowest freed context of a whole World, or a fresh one.
func (whole) dupLocked(w *World) (*World, bool, error) {
	e := w.e
	if base, ok, err := e.dupReuseLocked(); err != nil {
		return nil, false, err
	} else if ok {
		return newWhole(e, base), false, nil
	}
	c, ok := e.ctxs.takeDup()
	if !ok {
		return nil, false, invalidf("too many Worlds derived and not freed (Free those no longer used)")
	}
	return newWhole(e, c), false, nil
}

// subgroup is the kind of a World over a group of the job's ranks.
type subgroup struct{ intra }

func newSubgroup(e *engine, c uint16, g *group) *World {
	w := &World{e: e, ctx: c, k: subgroup{}, g: g, own: g, life: &worldLife{}}
	e.ft.register(w, g.ranks)
	return w
}

func (subgroup) fam(w *World) *family   { return w.g.fam }
func (subgroup) members(w *World) []int { return w.g.ranks }

// dupLocked takes a context of w's block.
func (subgroup) dupLocked(w *World) (*World, bool, error) {
	c, ok, err := w.e.takeFamilyLocked(w.g.fam)
	if err != nil || !ok {
		return nil, !ok && err == nil, err
	}
	return newSubgroup(w.e, c, w.g), false, nil
}

// inter is the kind of an intercommunicator: its g is the remote group, and lw the local
// group's World, on a context of its own, for the local steps of Barrier and of package
// collectives' calls.
type inter struct {
	lw *World
}

func newInter(e *engine, c uint16, lw *World, remote *group) *World {
	w := &World{e: e, ctx: c, k: &inter{lw: lw}, g: remote, own: lw.own, life: &worldLife{}}
	e.ft.register(w, append(slices.Clone(lw.own.ranks), remote.ranks...))
	return w
}

func (*inter) isInter() bool              { return true }
func (x *inter) local(*World) *World      { return x.lw }
func (*inter) remoteSize(w *World) int    { return len(w.g.ranks) }
func (x *inter) trackOn(*World) *World    { return x.lw }
func (x *inter) members(*World) []int     { return x.lw.g.ranks }
func (*inter) fam(w *World) *family       { return w.g.fam }
func (x *inter) freeWith(*World) []func() { return []func(){func() { _ = x.lw.Free() }} }

func (*inter) remoteGroup(w *World) Group {
	return newGroupOf(slices.Clone(w.g.ranks), w.e.rank+1)
}

func (*inter) rankErr(w *World, r int) error {
	return invalidf("rank %d out of range [0, %d) of the remote group (an intercommunicator's point-to-point calls name remote ranks)", r, len(w.g.ranks))
}

func (x *inter) createColor(w *World, g Group) (color, key int, err error) {
	if _, err := memberRanks(x.lw, g); err != nil {
		return 0, 0, err
	}
	color = NoColor
	if i := groupIndex(g, w.e.rank); i >= 0 {
		color, key = 0, i
	}
	return color, key, nil
}
