package hostgroup

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestPlanTeams: PlanTeams makes teams of consecutive ranks in rank order, one per run of
// ranks in a cache domain when the domains decide (domainRuns), and keeps the size-based
// split otherwise.
func TestPlanTeams(t *testing.T) {
	seq := func(lo, n int) []int { // lo, lo+1, ..., lo+n-1
		s := make([]int, n)
		for i := range s {
			s[i] = lo + i
		}
		return s
	}
	doms := func(pattern string) []int { // 'a' is domain 0, '?' unknown
		d := make([]int, len(pattern))
		for i, c := range pattern {
			d[i] = int(c - 'a')
			if c == '?' {
				d[i] = -1
			}
		}
		return d
	}
	same := func(n int) []int { return make([]int, n) }
	for _, c := range []struct {
		name  string
		ranks []int
		dom   []int
		want  [][]int
	}{
		{"unknown, few", seq(0, 5), nil, nil},
		{"unknown, many", seq(0, 33), nil, [][]int{seq(0, 11), seq(11, 11), seq(22, 11)}},
		{"one unknown", seq(0, 5), doms("aab?b"), nil},
		{"one unknown, many", seq(0, 34), append(doms("?"), make([]int, 33)...), [][]int{seq(0, 11), seq(11, 11), seq(22, 12)}},
		{"one domain, few", seq(0, 32), same(32), nil},
		{"one domain, many", seq(0, 40), same(40), [][]int{seq(0, 13), seq(13, 13), seq(26, 14)}},
		{"singletons", seq(0, 5), doms("abcde"), nil},
		{"runs", seq(0, 5), doms("aabbb"), [][]int{{0, 1}, {2, 3, 4}}},
		{"runs, other ranks", []int{3, 4, 5, 9, 12}, doms("aabbb"), [][]int{{3, 4}, {5, 9, 12}}},
		{"a lone rank", seq(0, 5), doms("aaaab"), [][]int{seq(0, 4), {4}}},
		{"a domain twice", seq(0, 6), doms("aabbaa"), [][]int{{0, 1}, {2, 3}, {4, 5}}},
		{"in turn", seq(0, 16), doms("aaaabbbbaaaabbbb"), [][]int{seq(0, 4), seq(4, 4), seq(8, 4), seq(12, 4)}},
		{"interleaved", seq(0, 4), doms("abab"), nil},
		{"short runs", seq(0, 5), doms("aabab"), nil},
		{"runs of 1.5 ranks", seq(0, 3), doms("aab"), nil},
		{"interleaved, many", seq(0, 34), doms("abababababababababababababababababab")[:34],
			[][]int{seq(0, 11), seq(11, 11), seq(22, 12)}},
		{"a domain over the bound", seq(0, 32), append(same(20), doms("bbbbbbbbbbbb")...),
			[][]int{seq(0, 10), seq(10, 10), seq(20, 12)}},
		{"domains beyond flatMax", seq(0, 40), append(same(8), doms("bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb")...),
			[][]int{seq(0, 8), seq(8, 16), seq(24, 16)}},
		{"one rank", seq(0, 1), doms("a"), nil},
		{"no rank", nil, nil, nil},
	} {
		if got := PlanTeams(c.ranks, c.dom, 32, 16); !slices.EqualFunc(got, c.want, slices.Equal[[]int]) {
			t.Errorf("%s: PlanTeams(%v, %v) = %v, want %v", c.name, c.ranks, c.dom, got, c.want)
		}
	}
}

// TestPlanTeamsBounds: for every team bound from 4 to 16 and hosts of runs of many
// sizes in a few domains, the teams are the host's ranks in order, each within one run,
// at most the bound, and each run splits into the fewest near-equal teams.
func TestPlanTeamsBounds(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for bound := 4; bound <= 16; bound++ {
		for range 200 {
			var ranks, dom, sizes []int
			ids := rng.Perm(8) // domain ids need not be ordered
			for d := range 2 + rng.IntN(5) {
				n := 1 + rng.IntN(3*bound)
				sizes = append(sizes, n)
				for range n {
					ranks = append(ranks, len(ranks)*3+rng.IntN(3)) // ascending, with gaps
					dom = append(dom, ids[d%3])                     // a domain may make several runs
				}
			}
			if 2*len(sizes) > len(ranks) { // runs too short to decide
				continue
			}
			teams := PlanTeams(ranks, dom, 32, bound)
			if got := slices.Concat(teams...); !slices.Equal(got, ranks) {
				t.Fatalf("bound %d, runs of %v: teams %v are not the ranks %v in order", bound, sizes, teams, ranks)
			}
			for at, n := range sizes {
				var parts []int
				m := 0
				for m < n {
					parts = append(parts, len(teams[0]))
					m += len(teams[0])
					teams = teams[1:]
				}
				if k := (n + bound - 1) / bound; m != n || len(parts) != k || slices.Max(parts) > bound || slices.Max(parts)-slices.Min(parts) > 1 {
					t.Fatalf("bound %d: run %d of %v made teams of %v, want %d near-equal ones of at most %d within it",
						bound, at, sizes, parts, k, bound)
				}
			}
		}
	}
}
