package main

import (
	"context"
	"fmt"

	"github.com/gorma-hpc/gorma/collectives"
	"github.com/gorma-hpc/gorma/runtime"
)

func init() {
	register("group-groupcreate", "group/groupcreate.c", 4, groupGroupcreate)
	register("group-groupnullincl", "group/groupnullincl.c", 4, groupGroupnullincl)
	register("group-grouptest", "group/grouptest.c", 8, groupGrouptest)
	register("group-grouptest2", "group/grouptest2.c", 4, groupGrouptest2)
	register("group-gtranks", "group/gtranks.c", 8, groupGtranks)
}

// selfGroup is MPI_COMM_SELF's group: this process alone.
func selfGroup(w *runtime.World) (runtime.Group, error) {
	return w.Group().Incl([]int{w.Rank()})
}

// groupGroupcreate: 2048 groups of every rank of the World, each of the World's size; the
// minimum count made over the ranks is 2048.
func groupGroupcreate(ctx context.Context, w *runtime.World) error {
	const goal = 2048
	ranks := seq(w.Size(), func(i int) int { return i })
	groups := make([]runtime.Group, 0, goal)
	for i := 0; i < goal; i++ {
		g, err := w.Group().Incl(ranks)
		if err != nil {
			return fmt.Errorf("group %d: %w", i, err)
		}
		if g.Size() != w.Size() {
			return fmt.Errorf("group %d has size %d, want %d", i, g.Size(), w.Size())
		}
		groups = append(groups, g)
	}
	n, err := reduceBcast(ctx, w, int32(len(groups)), collectives.Min[int32](), 0)
	if err != nil {
		return err
	}
	if n != goal {
		return fmt.Errorf("the ranks made at least %d groups, want %d", n, goal)
	}
	return nil
}

// groupGroupnullincl: on each communicator, Incl of no ranks is a group that compares
// Ident to the empty group.
func groupGroupnullincl(ctx context.Context, w *runtime.World) error {
	return eachComm(ctx, w, 1, func(c *runtime.World, name string) error {
		g, err := c.Group().Incl(nil)
		if err != nil {
			return fmt.Errorf("%s: incl of no ranks: %w", name, err)
		}
		if r := g.Compare(runtime.Group{}); r != runtime.Ident {
			return fmt.Errorf("%s: incl of no ranks compares %v to the empty group, want Ident", name, r)
		}
		return nil
	})
}

// groupGrouptest: Incl of this rank, 2 and 7 (3 and 6 at ranks 2 and 7) has size 3, this
// rank first, and translates back to those ranks. The self group translates to this rank
// and the World's ranks to it (Undefined but this one). excluding every rank gives the
// empty group. The empty group compares Unequal to RangeIncl of the odd ranks, with
// positive and negative strides.
func groupGrouptest(ctx context.Context, w *runtime.World) error {
	g1, me, size := w.Group(), w.Rank(), w.Size()
	ranks := []int{me, 2, 7}
	if me == 2 {
		ranks[1] = 3
	}
	if me == 7 {
		ranks[2] = 6
	}
	g2, err := g1.Incl(ranks)
	if err != nil {
		return err
	}
	if g2.Size() != 3 || g2.Rank() != 0 {
		return fmt.Errorf("incl %v: size %d, rank %d; want 3, 0", ranks, g2.Size(), g2.Rank())
	}
	out, err := g2.TranslateRanks([]int{0, 1, 2}, g1)
	if err != nil {
		return err
	}
	if err := same("incl's ranks translated to the World", out, ranks); err != nil {
		return err
	}
	self, err := selfGroup(w)
	if err != nil {
		return err
	}
	if out, err = self.TranslateRanks([]int{0}, g1); err != nil {
		return err
	}
	if out[0] != me {
		return fmt.Errorf("self's rank 0 is the World's %d, want %d", out[0], me)
	}
	if out, err = g1.TranslateRanks(seq(size, func(i int) int { return i }), self); err != nil {
		return err
	}
	if err := same("the World's ranks translated to self", out, seq(size, func(i int) int {
		if i == me {
			return 0
		}
		return runtime.Undefined
	})); err != nil {
		return err
	}
	g6, err := g1.Excl(seq(size, func(i int) int { return i }))
	if err != nil {
		return err
	}
	if g6.Size() != 0 || g6.Compare(runtime.Group{}) != runtime.Ident {
		return fmt.Errorf("excluding every rank gave a group of size %d, not the empty group", g6.Size())
	}
	for _, rg := range [][3]int{{1, size - 1, 2}, {size - 1, 1, -2}} {
		g5, err := g1.RangeExcl([][3]int{rg})
		if err != nil {
			return fmt.Errorf("range excl %v: %w", rg, err)
		}
		g4, err := g1.RangeIncl([][3]int{rg})
		if err != nil {
			return fmt.Errorf("range incl %v: %w", rg, err)
		}
		if u := g4.Union(g5); u.Size() != size {
			return fmt.Errorf("union of range incl and excl %v has size %d, want %d", rg, u.Size(), size)
		}
		if r := (runtime.Group{}).Compare(g4); r != runtime.Unequal {
			return fmt.Errorf("the empty group compares %v to range incl %v, want Unequal", r, rg)
		}
	}
	return nil
}

// groupGrouptest2: the World's group has the World's rank and size. The group of the
// World reversed by Split translates rank i to size-1-i and is Similar. A Dup's is Ident.
// A half's is Unequal. {r, r+1} and {r, r-1} are Unequal. Excl of rank 0 united with Excl
// of every other rank is Ident to the World's (as is the World's united with the first).
// RangeExcl of 1..size-1 is Ident to Excl of every rank but 0. The intersection of the
// World's with Excl of 0 is Ident to the latter. RangeExcl of every rank is the empty
// group.
func groupGrouptest2(ctx context.Context, w *runtime.World) error {
	base, rank, size := w.Group(), w.Rank(), w.Size()
	if base.Rank() != rank || base.Size() != size {
		return fmt.Errorf("the World's group: rank %d size %d, want %d %d", base.Rank(), base.Size(), rank, size)
	}
	cmp := func(what string, a, b runtime.Group, want runtime.Comparison) error {
		if r := a.Compare(b); r != want {
			return fmt.Errorf("%s: compare gave %v, want %v", what, r, want)
		}
		return nil
	}
	rev, err := w.Split(ctx, 0, size-rank)
	if err != nil {
		return err
	}
	all := seq(size, func(i int) int { return i })
	out, err := rev.Group().TranslateRanks(all, base)
	if err != nil {
		return err
	}
	if err := first(same("reversed ranks translated", out, seq(size, func(i int) int { return size - 1 - i })),
		cmp("reversed World", base, rev.Group(), runtime.Similar)); err != nil {
		return err
	}
	dup, err := w.Dup()
	if err != nil {
		return err
	}
	half, err := w.Split(ctx, b2i(rank < size/2), rank)
	if err != nil {
		return err
	}
	if err := first(cmp("dup", base, dup.Group(), runtime.Ident), cmp("half", base, half.Group(), runtime.Unequal)); err != nil {
		return err
	}
	g3a, err := base.Incl([]int{rank, (rank + 1) % size})
	if err != nil {
		return err
	}
	g3b, err := base.Incl([]int{rank, (rank + size - 1) % size})
	if err != nil {
		return err
	}
	g4, err := base.Excl(all[:1])
	if err != nil {
		return err
	}
	g5, err := base.Excl(all[1:])
	if err != nil {
		return err
	}
	g8, err := base.RangeExcl([][3]int{{1, size - 1, 1}})
	if err != nil {
		return err
	}
	g10, err := base.RangeExcl([][3]int{{0, size - 1, 1}})
	if err != nil {
		return err
	}
	return first(cmp("{r, r+1} and {r, r-1}", g3a, g3b, runtime.Unequal),
		cmp("excl 0 united with excl the rest", base, g5.Union(g4), runtime.Ident),
		cmp("the World united with excl 0", base, base.Union(g4), runtime.Ident),
		cmp("excl all but 0 and range excl 1..size-1", g5, g8, runtime.Ident),
		cmp("intersection with excl 0", base.Intersection(g4), g4, runtime.Ident),
		cmp("range excl of every rank", g10, runtime.Group{}, runtime.Ident),
		dup.Free(), half.Free(), rev.Free())
}

// groupGtranks: the World's ranks translated to the self group (0 for this rank,
// Undefined for the others). ProcNull translates to ProcNull. The ranks of an irregular
// Incl (size-2, 0, and this rank unless it is one of those) translate to the World, and
// to the World reversed by RangeIncl (size-1, 0, -1), ProcNull among them.
func groupGtranks(ctx context.Context, w *runtime.World) error {
	gw, rank, size := w.Group(), w.Rank(), w.Size()
	self, err := selfGroup(w)
	if err != nil {
		return err
	}
	out, err := gw.TranslateRanks(seq(size, func(i int) int { return i }), self)
	if err != nil {
		return err
	}
	if err := same("the World's ranks in self", out, seq(size, func(i int) int {
		if i == rank {
			return 0
		}
		return runtime.Undefined
	})); err != nil {
		return err
	}
	if out, err = gw.TranslateRanks([]int{runtime.ProcNull, 1, rank, runtime.ProcNull}, self); err != nil {
		return fmt.Errorf("translate with ProcNull: %w", err)
	}
	want1 := runtime.Undefined
	if rank == 1 {
		want1 = 0
	}
	if err := same("ProcNull, 1, self, ProcNull in self", out, []int{runtime.ProcNull, want1, 0, runtime.ProcNull}); err != nil {
		return err
	}
	ranks := []int{size - 2, 0}
	if rank != 0 && rank != size-2 {
		ranks = append(ranks, rank)
	}
	ng, err := gw.Incl(ranks)
	if err != nil {
		return err
	}
	in := []int{1, 0, runtime.ProcNull, 2}[:len(ranks)+1]
	galt, err := gw.RangeIncl([][3]int{{size - 1, 0, -1}})
	if err != nil {
		return err
	}
	for _, c := range []struct {
		name string
		to   runtime.Group
		f    func(r int) int
	}{{"the World", gw, func(r int) int { return r }}, {"the World reversed", galt, func(r int) int { return size - 1 - r }}} {
		out, err := ng.TranslateRanks(in, c.to)
		if err != nil {
			return fmt.Errorf("translate %v of incl %v to %s: %w", in, ranks, c.name, err)
		}
		if err := same(fmt.Sprintf("%v of incl %v in %s", in, ranks, c.name), out, seq(len(in), func(i int) int {
			if in[i] == runtime.ProcNull {
				return runtime.ProcNull
			}
			return c.f(ranks[in[i]])
		})); err != nil {
			return err
		}
	}
	return nil
}
