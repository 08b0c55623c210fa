package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/runtimetest"
	"github.com/gorma-hpc/gorma/window"
)

// ringCheck passes each rank's rank of w around w's ring and checks what arrives, then
// Barriers: w's rank numbering and context work.
func ringCheck(ctx context.Context, w *runtime.World) error {
	n, me := w.Size(), w.Rank()
	got := []int64{-1}
	if _, err := runtime.Sendrecv(ctx, w, []int64{int64(me)}, (me+1)%n, 3, got, (me+n-1)%n, 3); err != nil {
		return err
	}
	if got[0] != int64((me+n-1)%n) {
		return fmt.Errorf("ring: got %d from rank %d", got[0], (me+n-1)%n)
	}
	return runtime.Barrier(ctx, w)
}

// oddsReversed is the group of w's odd ranks, highest first.
func oddsReversed(w *runtime.World) (runtime.Group, []int, error) {
	var ranks []int
	for r := w.Size() - 1; r >= 0; r-- {
		if r%2 == 1 {
			ranks = append(ranks, r)
		}
	}
	g, err := w.Group().Incl(ranks)
	return g, ranks, err
}

// TestCreate: Create over a reordered subset keeps the group's order, gives
// non-members nil, and refuses a group with a process outside the World.
func TestCreate(t *testing.T) {
	forEach(t, []int{1, 4, 5}, func(t *testing.T, tr string, n int) {
		run(t, tr, n, func(ctx context.Context, w *runtime.World) error {
			g, ranks, err := oddsReversed(w)
			if err != nil {
				return err
			}
			c, err := w.Create(ctx, g)
			if err != nil {
				return err
			}
			at := slices.Index(ranks, w.Rank())
			if at < 0 {
				if c != nil {
					return errors.New("a non-member got a World")
				}
			} else {
				if c == nil || c.Size() != len(ranks) || c.Rank() != at {
					return fmt.Errorf("member got %v", c)
				}
				if cmp := c.Group().Compare(g); cmp != runtime.Ident {
					return fmt.Errorf("the World's group is %v to the group it was made of", cmp)
				}
				if err := ringCheck(ctx, c); err != nil {
					return err
				}
				if err := c.Free(); err != nil {
					return err
				}
			}
			// The whole group again: a World like w, on contexts of its own.
			all, err := w.Create(ctx, w.Group())
			if err != nil {
				return err
			}
			if all.Rank() != w.Rank() || all.Size() != n {
				return fmt.Errorf("create of the whole group: rank %d of %d", all.Rank(), all.Size())
			}
			if err := ringCheck(ctx, all); err != nil {
				return err
			}
			// Disjoint groups (MPI-2.2): the even ranks pass theirs, the odd ranks theirs
			// (reversed); each gets a World of its own members.
			evens, err := w.Group().RangeIncl([][3]int{{0, n - 1, 2}})
			if err != nil {
				return err
			}
			mine := evens
			if w.Rank()%2 == 1 {
				odds := w.Group().Difference(evens)
				if mine, err = odds.Incl(reversed(odds.Size())); err != nil {
					return err
				}
			}
			part, err := w.Create(ctx, mine)
			if err != nil {
				return err
			}
			if part == nil || part.Size() != mine.Size() || part.Group().Compare(mine) != runtime.Ident {
				return fmt.Errorf("create of a disjoint group of %d: got %v", mine.Size(), part)
			}
			if err := ringCheck(ctx, part); err != nil {
				return err
			}
			if err := part.Free(); err != nil {
				return err
			}
			// A group of w's processes handed to a World that lacks some of them.
			if n > 1 {
				half, err := w.Split(ctx, w.Rank()%2, 0)
				if err != nil {
					return err
				}
				_, err = half.Create(ctx, w.Group())
				if !errors.Is(err, runtime.ErrInvalid) || !strings.Contains(err.Error(), "is not a rank of this World") {
					return fmt.Errorf("create with outsiders: %v", err)
				}
				if err := half.Free(); err != nil {
					return err
				}
			}
			return all.Free()
		})
	})
}

// TestCreateGroup: odd and even ranks make their Worlds at once, each calling only
// among its members; a Split of the parent follows; misuse fails naming the rank.
func TestCreateGroup(t *testing.T) {
	forEach(t, []int{1, 4, 5}, func(t *testing.T, tr string, n int) {
		run(t, tr, n, func(ctx context.Context, w *runtime.World) error {
			me := w.Rank()
			var ranks []int
			for r := n - 1; r >= 0; r-- {
				if r%2 == me%2 {
					ranks = append(ranks, r)
				}
			}
			g, err := w.Group().Incl(ranks)
			if err != nil {
				return err
			}
			c, err := w.CreateGroup(ctx, g, 7+me%2)
			if err != nil {
				return err
			}
			if c.Size() != len(ranks) || c.Rank() != slices.Index(ranks, me) {
				return fmt.Errorf("rank %d of %d, want %d of %d", c.Rank(), c.Size(), slices.Index(ranks, me), len(ranks))
			}
			if err := ringCheck(ctx, c); err != nil {
				return err
			}
			d, err := c.Dup()
			if err != nil {
				return err
			}
			if err := ringCheck(ctx, d); err != nil {
				return err
			}
			s, err := w.Split(ctx, 0, 0)
			if err != nil {
				return err
			}
			if err := ringCheck(ctx, s); err != nil {
				return err
			}
			for _, x := range []*runtime.World{d, c, s} {
				if err := x.Free(); err != nil {
					return err
				}
			}
			others, err := w.Group().Excl([]int{me})
			if err != nil {
				return err
			}
			if _, err := w.CreateGroup(ctx, others, 0); !errors.Is(err, runtime.ErrInvalid) || !strings.Contains(err.Error(), fmt.Sprintf("rank %d is not in the group", me)) {
				return fmt.Errorf("create_group by a non-member: %v", err)
			}
			if _, err := w.CreateGroup(ctx, w.Group(), -1); !errors.Is(err, runtime.ErrInvalid) {
				return fmt.Errorf("create_group with tag -1: %v", err)
			}
			if n > 1 && me < 2 { // ranks 0 and 1 disagree on the tag
				pair, err := w.Group().Incl([]int{0, 1})
				if err != nil {
					return err
				}
				_, err = w.CreateGroup(ctx, pair, 20+me)
				if !errors.Is(err, runtime.ErrInvalid) || !strings.Contains(err.Error(), fmt.Sprintf("rank %d called CreateGroup with tag %d", 1-me, 21-me)) {
					return fmt.Errorf("create_group with mismatched tags: %v", err)
				}
			}
			return runtime.Barrier(ctx, w)
		})
	})
}

// TestSplitShared: one World per host, ranked by key; a shared window on it gives every
// rank its neighbours' memory for loads and stores.
func TestSplitShared(t *testing.T) {
	tests := []struct {
		name  string
		opt   runtimetest.Options
		n     int
		sizes []int // by rank: the size of its shared World
	}{
		{"shm", runtimetest.Options{Transport: "shm"}, 4, []int{4, 4, 4, 4}},
		{"two hosts", runtimetest.Options{Hosts: []string{"a", "b", "a", "b", "a"}}, 5, []int{3, 2, 3, 2, 3}},
		{"tcp", runtimetest.Options{Transport: "tcp"}, 3, []int{1, 1, 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.opt.Timeout = 30 * time.Second
			runtimetest.Run(t, tc.n, tc.opt, func(w *runtime.World) error {
				ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(20*time.Second))
				defer cancel()
				s, err := w.SplitShared(ctx, -w.Rank()) // reversed within a host
				if err != nil {
					return err
				}
				defer s.Free()
				if s.Size() != tc.sizes[w.Rank()] {
					return fmt.Errorf("shared World of %d ranks, want %d", s.Size(), tc.sizes[w.Rank()])
				}
				sg, err := s.Group().TranslateRanks([]int{0}, w.Group())
				if err != nil {
					return err
				}
				for r := w.Rank() + 1; r < w.Size(); r++ { // rank 0 of s: the host's last rank of w
					if w.HostOf(r) == w.Host() && tc.opt.Transport != "tcp" && sg[0] < r {
						return fmt.Errorf("rank 0 of the shared World is rank %d of w, not the last of its host", sg[0])
					}
				}
				return sharedRing(ctx, s)
			})
		})
	}
}

// sharedRing stores into the right neighbour's memory of a shared window on s through
// SharedQuery, and checks what the left one stored.
func sharedRing(ctx context.Context, s *runtime.World) error {
	const n = 64
	win, err := window.AllocateShared[int64](ctx, s, n)
	if err != nil {
		return err
	}
	me := s.Rank()
	right, left := (me+1)%s.Size(), (me+s.Size()-1)%s.Size()
	view, err := win.SharedQuery(right)
	if err != nil {
		return err
	}
	if err := win.Fence(ctx, 0); err != nil {
		return err
	}
	for i := range view {
		view[i] = int64(me*1000 + i)
	}
	if err := win.Fence(ctx, 0); err != nil {
		return err
	}
	for i, v := range win.Local() {
		if v != int64(left*1000+i) {
			return fmt.Errorf("local[%d] = %d, want %d", i, v, left*1000+i)
		}
	}
	return win.Free(ctx)
}

// reversed returns n-1, ..., 1, 0.
func reversed(n int) []int {
	r := make([]int, n)
	for i := range r {
		r[i] = n - 1 - i
	}
	return r
}
