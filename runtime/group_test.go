package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/gorma-hpc/gorma/runtime"
)

// grp is the Group of procs seen from job rank me.
func grp(me int, procs ...int) runtime.Group { return runtime.NewGroupForTest(procs, me) }

// wantGroup checks g's members and this process's rank in it.
func wantGroup(t *testing.T, what string, g runtime.Group, procs []int, rank int) {
	t.Helper()
	if got := runtime.ProcsForTest(g); !slices.Equal(got, procs) || g.Size() != len(procs) {
		t.Errorf("%s: members %v (size %d), want %v", what, got, g.Size(), procs)
	}
	if g.Rank() != rank {
		t.Errorf("%s: rank %d, want %d", what, g.Rank(), rank)
	}
}

// wantInvalid checks that err wraps ErrInvalid and names what.
func wantInvalid(t *testing.T, what string, err error, names string) {
	t.Helper()
	if !errors.Is(err, runtime.ErrInvalid) || !strings.Contains(err.Error(), names) {
		t.Errorf("%s: error %v, want ErrInvalid naming %q", what, err, names)
	}
}

// TestGroupInclExcl: Incl and Excl pick and order members, keep this process's rank,
// and name the first bad rank.
func TestGroupInclExcl(t *testing.T) {
	g := grp(12, 10, 11, 12, 13, 14)
	wantGroup(t, "base", g, []int{10, 11, 12, 13, 14}, 2)
	tests := []struct {
		name  string
		excl  bool
		ranks []int
		procs []int
		rank  int
		bad   string
	}{
		{name: "incl reorder", ranks: []int{4, 0, 2}, procs: []int{14, 10, 12}, rank: 2},
		{name: "incl without me", ranks: []int{0, 1}, procs: []int{10, 11}, rank: runtime.Undefined},
		{name: "incl none", ranks: nil, procs: []int{}, rank: runtime.Undefined},
		{name: "incl out of range", ranks: []int{0, 5}, bad: "ranks[1] = 5"},
		{name: "incl negative", ranks: []int{-1}, bad: "ranks[0] = -1"},
		{name: "incl twice", ranks: []int{3, 1, 3}, bad: "ranks[2] = 3 is listed twice"},
		{name: "excl", excl: true, ranks: []int{0, 3}, procs: []int{11, 12, 14}, rank: 1},
		{name: "excl me", excl: true, ranks: []int{2}, procs: []int{10, 11, 13, 14}, rank: runtime.Undefined},
		{name: "excl all", excl: true, ranks: []int{4, 3, 2, 1, 0}, procs: []int{}, rank: runtime.Undefined},
		{name: "excl out of range", excl: true, ranks: []int{7}, bad: "ranks[0] = 7"},
		{name: "excl twice", excl: true, ranks: []int{0, 0}, bad: "ranks[1] = 0 is listed twice"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			op := g.Incl
			if tc.excl {
				op = g.Excl
			}
			h, err := op(tc.ranks)
			if tc.bad != "" {
				wantInvalid(t, tc.name, err, tc.bad)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			wantGroup(t, tc.name, h, tc.procs, tc.rank)
		})
	}
}

// TestGroupRanges: (first, last, stride) triplets up and down, several at once, and each
// malformed triplet's error.
func TestGroupRanges(t *testing.T) {
	g := grp(12, 10, 11, 12, 13, 14)
	tests := []struct {
		name   string
		excl   bool
		ranges [][3]int
		procs  []int
		rank   int
		bad    string
	}{
		{name: "every other", ranges: [][3]int{{0, 4, 2}}, procs: []int{10, 12, 14}, rank: 1},
		{name: "downward", ranges: [][3]int{{4, 0, -2}}, procs: []int{14, 12, 10}, rank: 1},
		{name: "stride past last", ranges: [][3]int{{0, 4, 3}}, procs: []int{10, 13}, rank: runtime.Undefined},
		{name: "two triplets", ranges: [][3]int{{1, 1, 1}, {3, 4, 1}}, procs: []int{11, 13, 14}, rank: runtime.Undefined},
		{name: "single", ranges: [][3]int{{2, 2, -5}}, procs: []int{12}, rank: 0},
		{name: "excl every other", excl: true, ranges: [][3]int{{0, 4, 2}}, procs: []int{11, 13}, rank: runtime.Undefined},
		{name: "excl downward", excl: true, ranges: [][3]int{{3, 1, -1}}, procs: []int{10, 14}, rank: runtime.Undefined},
		{name: "stride 0", ranges: [][3]int{{0, 4, 0}}, bad: "stride 0"},
		{name: "first out of range", ranges: [][3]int{{5, 4, -1}}, bad: "first rank 5"},
		{name: "last out of range", ranges: [][3]int{{0, -1, -1}}, bad: "last rank -1"},
		{name: "wrong direction", ranges: [][3]int{{3, 1, 1}}, bad: "triplet 0 (3, 1, 1)"},
		{name: "overlap", ranges: [][3]int{{0, 2, 1}, {4, 2, -1}}, bad: "rank 2 is listed twice"},
		{name: "excl overlap", excl: true, ranges: [][3]int{{0, 0, 1}, {0, 4, 4}}, bad: "triplet 1 (0, 4, 4): rank 0 is listed twice"},
		{name: "huge stride", ranges: [][3]int{{0, 4, 1 << 62}}, procs: []int{10}, rank: runtime.Undefined},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			op := g.RangeIncl
			if tc.excl {
				op = g.RangeExcl
			}
			h, err := op(tc.ranges)
			if tc.bad != "" {
				wantInvalid(t, tc.name, err, tc.bad)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			wantGroup(t, tc.name, h, tc.procs, tc.rank)
		})
	}
}

// TestGroupSetOps: Union, Intersection and Difference in MPI's order; TranslateRanks;
// Compare.
func TestGroupSetOps(t *testing.T) {
	a, b := grp(3, 1, 2, 3), grp(3, 5, 3, 0)
	wantGroup(t, "union", a.Union(b), []int{1, 2, 3, 5, 0}, 2)
	wantGroup(t, "union reversed", b.Union(a), []int{5, 3, 0, 1, 2}, 1)
	wantGroup(t, "intersection", a.Intersection(b), []int{3}, 0)
	wantGroup(t, "intersection reversed", b.Intersection(a), []int{3}, 0)
	wantGroup(t, "difference", a.Difference(b), []int{1, 2}, runtime.Undefined)
	wantGroup(t, "difference reversed", b.Difference(a), []int{5, 0}, runtime.Undefined)
	wantGroup(t, "union with empty", runtime.Group{}.Union(b), []int{5, 3, 0}, 1)
	wantGroup(t, "empty", runtime.Group{}, []int{}, runtime.Undefined)

	got, err := a.TranslateRanks([]int{0, 1, 2, 2}, b)
	if err != nil || !slices.Equal(got, []int{runtime.Undefined, runtime.Undefined, 1, 1}) {
		t.Errorf("translate: %v, %v", got, err)
	}
	got, err = b.TranslateRanks([]int{2, 1}, a.Union(b))
	if err != nil || !slices.Equal(got, []int{4, 2}) {
		t.Errorf("translate to union: %v, %v", got, err)
	}
	_, err = a.TranslateRanks([]int{0, 3}, b)
	wantInvalid(t, "translate out of range", err, "ranks[1] = 3")
	got, err = a.TranslateRanks([]int{runtime.ProcNull, 2}, b)
	if err != nil || !slices.Equal(got, []int{runtime.ProcNull, 1}) {
		t.Errorf("translate ProcNull: %v, %v; want ProcNull to itself", got, err)
	}

	cmp := []struct {
		g, h runtime.Group
		want runtime.Comparison
	}{
		{a, a, runtime.Ident},
		{a, grp(1, 1, 2, 3), runtime.Ident},
		{a, grp(3, 3, 1, 2), runtime.Similar},
		{a, grp(3, 1, 2, 4), runtime.Unequal},
		{a, grp(3, 1, 2), runtime.Unequal},
		{runtime.Group{}, grp(0), runtime.Ident},
	}
	for i, c := range cmp {
		if got := c.g.Compare(c.h); got != c.want {
			t.Errorf("compare %d: %v, want %v", i, got, c.want)
		}
	}
}

// TestWorldGroup: the group of Init's World and of a split World, translated into each
// other, on every transport.
func TestWorldGroup(t *testing.T) {
	forEach(t, []int{1, 4}, func(t *testing.T, tr string, n int) {
		run(t, tr, n, func(ctx context.Context, w *runtime.World) error {
			wg := w.Group()
			if wg.Size() != n || wg.Rank() != w.Rank() {
				return fmt.Errorf("world group: rank %d of %d", wg.Rank(), wg.Size())
			}
			s, err := w.Split(ctx, 0, -w.Rank()) // reversed
			if err != nil {
				return err
			}
			defer s.Free()
			sg := s.Group()
			if sg.Size() != n || sg.Rank() != s.Rank() || sg.Compare(wg) != runtime.Similar && n > 1 {
				return fmt.Errorf("split group: rank %d of %d, %v", sg.Rank(), sg.Size(), sg.Compare(wg))
			}
			all := make([]int, n)
			for i := range all {
				all[i] = i
			}
			got, err := sg.TranslateRanks(all, wg)
			if err != nil {
				return err
			}
			for i, r := range got {
				if r != n-1-i {
					return fmt.Errorf("split rank %d translated to world rank %d, want %d", i, r, n-1-i)
				}
			}
			return nil
		})
	})
}

// naiveRange lists a triplet's ranks as MPI defines them, or false when it is malformed
// for a group of n.
func naiveRange(first, last, stride, n int) ([]int, bool) {
	if stride == 0 || first < 0 || first >= n || last < 0 || last >= n {
		return nil, false
	}
	var out []int
	switch {
	case stride > 0 && first <= last:
		for r := first; r <= last; r += stride {
			out = append(out, r)
		}
	case stride < 0 && first >= last:
		for r := first; r >= last; r += stride {
			out = append(out, r)
		}
	default:
		return nil, false
	}
	return out, true
}

// FuzzGroup checks every Group operation against a naive model over lists of job
// ranks: membership by linear search, order by construction.
func FuzzGroup(f *testing.F) {
	f.Add([]byte{1, 2, 3}, []byte{5, 3, 0}, []byte{2, 0, 1}, []byte{0, 2, 1})
	f.Add([]byte{}, []byte{7}, []byte{0, 0}, []byte{3, 0, 255})
	f.Add([]byte{9, 8, 7, 6, 5}, []byte{5, 6, 7, 8, 9}, []byte{4, 3, 2, 1, 0}, []byte{4, 0, 254, 1, 1, 1})
	f.Fuzz(func(t *testing.T, ab, bb, sel, tri []byte) {
		distinct := func(bs []byte) []int {
			out := []int{}
			for _, x := range bs {
				if p := int(x % 16); !slices.Contains(out, p) {
					out = append(out, p)
				}
			}
			return out
		}
		ap, bp := distinct(ab), distinct(bb)
		me := 0
		if len(sel) > 0 {
			me = int(sel[0] % 16)
		}
		a, b := grp(me, ap...), grp(me, bp...)
		rankOf := func(procs []int) int {
			if i := slices.Index(procs, me); i >= 0 {
				return i
			}
			return runtime.Undefined
		}
		check := func(what string, g runtime.Group, procs []int) {
			if procs == nil {
				procs = []int{}
			}
			wantGroup(t, what, g, procs, rankOf(procs))
		}

		// Union, Intersection, Difference.
		union := slices.Clone(ap)
		var inter, diff []int
		for _, p := range bp {
			if !slices.Contains(ap, p) {
				union = append(union, p)
			}
		}
		for _, p := range ap {
			if slices.Contains(bp, p) {
				inter = append(inter, p)
			} else {
				diff = append(diff, p)
			}
		}
		check("union", a.Union(b), union)
		check("intersection", a.Intersection(b), inter)
		check("difference", a.Difference(b), diff)

		// Compare.
		want := runtime.Unequal
		if slices.Equal(ap, bp) {
			want = runtime.Ident
		} else if sa, sb := slices.Sorted(slices.Values(ap)), slices.Sorted(slices.Values(bp)); slices.Equal(sa, sb) {
			want = runtime.Similar
		}
		if got := a.Compare(b); got != want {
			t.Errorf("compare %v %v: %v, want %v", ap, bp, got, want)
		}

		// Incl, Excl, TranslateRanks over ranks that may be out of range or repeated.
		ranks := make([]int, len(sel))
		valid, distinctRanks := true, true
		for i, x := range sel {
			ranks[i] = int(x)%(len(ap)+2) - 1
			if ranks[i] < 0 || ranks[i] >= len(ap) {
				valid = false
			}
			if slices.Contains(ranks[:i], ranks[i]) {
				distinctRanks = false
			}
		}
		inc, err := a.Incl(ranks)
		if !valid || !distinctRanks {
			if !errors.Is(err, runtime.ErrInvalid) {
				t.Fatalf("incl %v of %v: %v, want ErrInvalid", ranks, ap, err)
			}
		} else {
			var procs []int
			for _, r := range ranks {
				procs = append(procs, ap[r])
			}
			if err != nil {
				t.Fatalf("incl %v of %v: %v", ranks, ap, err)
			}
			check("incl", inc, procs)
			exc, err := a.Excl(ranks)
			if err != nil {
				t.Fatalf("excl %v of %v: %v", ranks, ap, err)
			}
			var rest []int
			for i, p := range ap {
				if !slices.Contains(ranks, i) {
					rest = append(rest, p)
				}
			}
			check("excl", exc, rest)
		}
		tr, err := a.TranslateRanks(ranks, b)
		if !valid {
			if !errors.Is(err, runtime.ErrInvalid) {
				t.Fatalf("translate %v: %v, want ErrInvalid", ranks, err)
			}
		} else {
			for i, r := range ranks {
				w := slices.Index(bp, ap[r])
				if w < 0 {
					w = runtime.Undefined
				}
				if err != nil || tr[i] != w {
					t.Fatalf("translate %v of %v into %v: %v, %v", ranks, ap, bp, tr, err)
				}
			}
		}

		// RangeIncl and RangeExcl.
		var ranges [][3]int
		var listed []int
		ok := true
		for i := 0; i+3 <= len(tri) && len(ranges) < 4; i += 3 {
			t3 := [3]int{int(int8(tri[i])) % (len(ap) + 1), int(int8(tri[i+1])) % (len(ap) + 1), int(int8(tri[i+2])) % 4}
			ranges = append(ranges, t3)
			rs, good := naiveRange(t3[0], t3[1], t3[2], len(ap))
			for _, r := range rs {
				if slices.Contains(listed, r) {
					good = false
				}
				listed = append(listed, r)
			}
			ok = ok && good
		}
		ri, err := a.RangeIncl(ranges)
		re, err2 := a.RangeExcl(ranges)
		if !ok {
			if !errors.Is(err, runtime.ErrInvalid) || !errors.Is(err2, runtime.ErrInvalid) {
				t.Fatalf("ranges %v of %v: %v, %v, want ErrInvalid", ranges, ap, err, err2)
			}
			return
		}
		if err != nil || err2 != nil {
			t.Fatalf("ranges %v of %v: %v, %v", ranges, ap, err, err2)
		}
		var procs, rest []int
		for _, r := range listed {
			procs = append(procs, ap[r])
		}
		for i, p := range ap {
			if !slices.Contains(listed, i) {
				rest = append(rest, p)
			}
		}
		check("range_incl", ri, procs)
		check("range_excl", re, rest)
	})
}
