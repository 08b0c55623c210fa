package main

import (
	"context"
	"fmt"
	"math/rand"

	"github.com/gorma-hpc/gorma/runtime"
)

func init() {
	register("comm-dup", "comm/dup.c", 2, commDup)
	register("comm-cmsplit", "comm/cmsplit.c", 4, commCmsplit)
	register("comm-cmsplit2", "comm/cmsplit2.c", 12, commCmsplit2)
	register("comm-commcreate1", "comm/commcreate1.c", 8, commCommcreate1)
	register("comm-comm_create_group", "comm/comm_create_group.c", 4, commCreateGroupEven)
	register("comm-comm_group_half", "comm/comm_group_half.c", 4, commGroupHalf)
	register("comm-comm_group_rand", "comm/comm_group_rand.c", 4, commGroupRand)
}

// commDup: a Dup has the World's rank and size; its first and last ranks Sendrecv their
// ranks on it: each gets the other's, from the other.
func commDup(ctx context.Context, w *runtime.World) error {
	d, err := w.Dup()
	if err != nil {
		return err
	}
	if d.Rank() != w.Rank() || d.Size() != w.Size() {
		return fmt.Errorf("dup: rank %d size %d, want %d %d", d.Rank(), d.Size(), w.Rank(), w.Size())
	}
	rank, size := d.Rank(), d.Size()
	if rank == 0 || rank == size-1 {
		dest := size - 1 - rank
		b := []int32{-1}
		st, err := runtime.Sendrecv(ctx, d, []int32{int32(rank)}, dest, 0, b, dest, 0)
		if err != nil {
			return err
		}
		if b[0] != int32(dest) || st.Source != dest {
			return fmt.Errorf("sendrecv with %d: got %d from %d", dest, b[0], st.Source)
		}
	}
	return d.Free()
}

// commCmsplit: on a Dup, ranks 0 and 1 split with color 1 and key size-rank (so their
// order reverses), the others with no color and get no World.
func commCmsplit(ctx context.Context, w *runtime.World) error {
	c, err := w.Dup()
	if err != nil {
		return err
	}
	rank, size := c.Rank(), c.Size()
	color := runtime.NoColor
	if rank < 2 {
		color = 1
	}
	s, err := c.Split(ctx, color, size-rank)
	if err != nil {
		return err
	}
	if rank < 2 {
		if s == nil || s.Rank() != 1-rank {
			return fmt.Errorf("split of ranks 0 and 1 reversed: rank %v, want %d", s, 1-rank)
		}
		if err := s.Free(); err != nil {
			return err
		}
	} else if s != nil {
		return fmt.Errorf("split with no color gave a World")
	}
	return c.Free()
}

// commCmsplit2: for each cs in 1..size, the first cs ranks split off. In that World,
// for each modulus 1..cs, a split with one color and key rank%modulus keeps every rank,
// and (at its rank 0) its ranks in the World are those of key 0 in order, then key 1,
// and so on: position pos holds i + modulus*j.
func commCmsplit2(ctx context.Context, w *runtime.World) error {
	wrank, wsize := w.Rank(), w.Size()
	identity := seq(wsize, func(i int) int { return i })
	for cs := 1; cs <= wsize; cs++ {
		color := runtime.NoColor
		if wrank < cs {
			color = 0
		}
		c, err := w.Split(ctx, color, wrank)
		if err != nil {
			return err
		}
		if c == nil {
			continue
		}
		rank, size := c.Rank(), c.Size()
		for modulus := 1; modulus <= size; modulus++ {
			s, err := c.Split(ctx, 5, rank%modulus)
			if err != nil {
				return err
			}
			if s.Size() != size {
				return fmt.Errorf("cs %d modulus %d: split has %d ranks, want %d", cs, modulus, s.Size(), size)
			}
			old, err := s.Group().TranslateRanks(identity[:size], w.Group())
			if err != nil {
				return err
			}
			if err := s.Free(); err != nil {
				return err
			}
			if rank == 0 {
				pos := 0
				for i := 0; i < modulus; i++ {
					for j := 0; j < size/modulus+b2i(i < size%modulus); j++ {
						if old[pos] != i+modulus*j {
							return fmt.Errorf("cs %d modulus %d: position %d is World rank %d, want %d", cs, modulus, pos, old[pos], i+modulus*j)
						}
						pos++
					}
				}
			}
		}
		if err := c.Free(); err != nil {
			return err
		}
	}
	return nil
}

// commCommcreate1: Create over the World and over a Dup with the odd ranks (by a
// negative stride), the upper half, the even ranks, each rank's own parity group, and the
// empty group: a member gets a World of the group's size with its group rank, a
// non-member nil.
func commCommcreate1(ctx context.Context, w *runtime.World) error {
	wg, wrank, wsize := w.Group(), w.Rank(), w.Size()
	godd, err := wg.RangeIncl([][3]int{{2*(wsize/2) - 1, 1, -2}})
	if err != nil {
		return err
	}
	if godd.Size() != wsize/2 {
		return fmt.Errorf("odd group has %d ranks, want %d", godd.Size(), wsize/2)
	}
	ghigh, err := wg.RangeIncl([][3]int{{wsize/2 + 1, wsize - 1, 1}})
	if err != nil {
		return err
	}
	geven, err := wg.RangeIncl([][3]int{{0, wsize - 1, 2}})
	if err != nil {
		return err
	}
	dup, err := w.Dup()
	if err != nil {
		return err
	}
	parity := geven
	if wrank%2 == 1 {
		parity = godd
	}
	build := func(old *runtime.World, g runtime.Group, name string) error {
		c, err := old.Create(ctx, g)
		if err != nil {
			return fmt.Errorf("create %s: %w", name, err)
		}
		grank := g.Rank()
		switch {
		case c == nil && grank != runtime.Undefined:
			return fmt.Errorf("create %s: a member (group rank %d) got no World", name, grank)
		case c != nil && grank == runtime.Undefined:
			return fmt.Errorf("create %s: a non-member got a World", name)
		case c != nil:
			if c.Rank() != grank || c.Size() != g.Size() {
				return fmt.Errorf("create %s: rank %d size %d, want %d %d", name, c.Rank(), c.Size(), grank, g.Size())
			}
			return c.Free()
		}
		return nil
	}
	for _, old := range []*runtime.World{w, dup} {
		for _, c := range []struct {
			name string
			g    runtime.Group
		}{{"high", ghigh}, {"odd", godd}, {"even", geven}, {"odd+even", parity}, {"empty", runtime.Group{}}} {
			if err := build(old, c.g, c.name); err != nil {
				return err
			}
		}
	}
	return dup.Free()
}

// commCreateGroupEven: the even ranks (the World's group without the odd ones) make a
// World by CreateGroup, which only they call, and Barrier on it.
func commCreateGroupEven(ctx context.Context, w *runtime.World) error {
	size := w.Size()
	if size%2 != 0 {
		return fmt.Errorf("comm_create_group needs an even rank count, not %d", size)
	}
	even, err := w.Group().Excl(seq(size/2, func(i int) int { return 2*i + 1 }))
	if err != nil {
		return err
	}
	if w.Rank()%2 == 0 {
		c, err := w.CreateGroup(ctx, even, 0)
		if err != nil {
			return err
		}
		if err := first(runtime.Barrier(ctx, c), c.Free()); err != nil {
			return err
		}
	}
	return runtime.Barrier(ctx, w)
}

// commGroupHalf: ranks 0..size/2 make a World by CreateGroup and Barrier on it.
func commGroupHalf(ctx context.Context, w *runtime.World) error {
	half, err := w.Group().RangeIncl([][3]int{{0, w.Size() / 2, 1}})
	if err != nil {
		return err
	}
	if w.Rank() <= w.Size()/2 {
		c, err := w.CreateGroup(ctx, half, 0)
		if err != nil {
			return err
		}
		return first(runtime.Barrier(ctx, c), c.Free())
	}
	return nil
}

// commGroupRand: 100 times, a subset of the ranks drawn from a generator seeded with the
// iteration (the same at every rank) makes a World by CreateGroup and Barriers on it.
func commGroupRand(ctx context.Context, w *runtime.World) error {
	const loops = 100
	for j := 0; j < loops; j++ {
		rng := rand.New(rand.NewSource(int64(j)))
		var ranks []int
		in := false
		for i := 0; i < w.Size(); i++ {
			if rng.Intn(2) == 1 {
				ranks = append(ranks, i)
				in = in || i == w.Rank()
			}
		}
		g, err := w.Group().Incl(ranks)
		if err != nil {
			return err
		}
		if in {
			c, err := w.CreateGroup(ctx, g, 0)
			if err != nil {
				return fmt.Errorf("loop %d, group %v: %w", j, ranks, err)
			}
			if err := first(runtime.Barrier(ctx, c), c.Free()); err != nil {
				return err
			}
		}
	}
	return nil
}

func init() {
	register("comm-cmsplit_type", "comm/cmsplit_type.c", 4, commCmsplitType)
}

// commCmsplitType: SplitShared (MPI_COMM_TYPE_SHARED) gives every rank a World. It
// leaves out the MPI 4.0 and 4.1 split types (HW_GUIDED, HW_UNGUIDED, RESOURCE_GUIDED and
// their info keys), which gorma does not provide.
func commCmsplitType(ctx context.Context, w *runtime.World) error {
	c, err := w.SplitShared(ctx, 0)
	if err != nil {
		return err
	}
	if c == nil {
		return fmt.Errorf("split shared gave no World")
	}
	if c.Size() < 1 || c.Size() > w.Size() {
		return fmt.Errorf("split shared: %d ranks of %d", c.Size(), w.Size())
	}
	return c.Free()
}

func init() {
	register("comm-cmfree", "comm/cmfree.c", 4, commCmfree)
	register("comm-ctxalloc", "comm/ctxalloc.c", 2, commCtxalloc)
}

// commCmfree: the last rank posts a receive of 128 int32s from rank 0 on a Dup and frees
// the Dup at once (MPI: the receive still completes). Every rank then makes 1020 Splits
// of the World. After an empty Sendrecv with the last rank, rank 0 sends 0..127 on the
// Dup, which the pending receive gets.
func commCmfree(ctx context.Context, w *runtime.World) error {
	const nelm, ncomm = 128, 1020
	c, err := w.Dup()
	if err != nil {
		return err
	}
	rank, size := c.Rank(), c.Size()
	src, dest := 0, size-1
	splits := func() ([]*runtime.World, error) {
		tmp := make([]*runtime.World, ncomm)
		for i := range tmp {
			var err error
			if tmp[i], err = w.Split(ctx, 0, size-rank); err != nil {
				return nil, fmt.Errorf("split %d: %w", i, err)
			}
		}
		return tmp, nil
	}
	freeAll := func(tmp []*runtime.World) error {
		for _, t := range tmp {
			if err := t.Free(); err != nil {
				return err
			}
		}
		return nil
	}
	var tmp []*runtime.World
	switch rank {
	case dest:
		buf := seq(nelm, func(i int) int32 { return int32(-i) })
		r, err := runtime.Irecv(c, buf, src, 0)
		if err != nil {
			return err
		}
		if err := c.Free(); err != nil {
			return fmt.Errorf("free of a World with a receive pending: %w", err)
		}
		if tmp, err = splits(); err != nil {
			return err
		}
		if _, err := runtime.Sendrecv(ctx, w, []int32(nil), src, 1, []int32(nil), src, 1); err != nil {
			return err
		}
		if _, err := r.Wait(ctx); err != nil {
			return err
		}
		if err := first(same("message on the freed World", buf, seq(nelm, func(i int) int32 { return int32(i) })), freeAll(tmp)); err != nil {
			return err
		}
		return runtime.Barrier(ctx, w)
	case src:
		if tmp, err = splits(); err != nil {
			return err
		}
		if _, err := runtime.Sendrecv(ctx, w, []int32(nil), dest, 1, []int32(nil), dest, 1); err != nil {
			return err
		}
		if err := runtime.Send(ctx, c, seq(nelm, func(i int) int32 { return int32(i) }), dest, 0); err != nil {
			return err
		}
	default:
		if tmp, err = splits(); err != nil {
			return err
		}
	}
	return first(runtime.Barrier(ctx, w), freeAll(tmp), c.Free())
}

// commCtxalloc: 1000 times, 200 Dups of a Dup of the World are made and freed.
func commCtxalloc(ctx context.Context, w *runtime.World) error {
	base, err := w.Dup()
	if err != nil {
		return err
	}
	dups := make([]*runtime.World, 200)
	for i := 0; i < 1000; i++ {
		for j := range dups {
			if dups[j], err = base.Dup(); err != nil {
				return fmt.Errorf("round %d, dup %d: %w", i, j, err)
			}
		}
		for j, d := range dups {
			if err := d.Free(); err != nil {
				return fmt.Errorf("round %d, free %d: %w", i, j, err)
			}
		}
	}
	return base.Free()
}
