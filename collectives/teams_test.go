package collectives

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/runtimetest"
	"github.com/gorma-hpc/gorma/runtime/substrate"
)

// TestTeams: a one-host job of more ranks than GORMA_SHM_TEAM runs Barrier and the
// shared-memory Allreduce in teams (teams.go): every type and operator, in place and not,
// short and chunked vectors, the non-commutative affine operator in rank order; and
// Barriers and Allreduces connect a rank only to its team and, as a head, to the other
// heads. The hierarchical Allreduce of a job spanning hosts runs its on-host steps in
// teams too.
func TestTeams(t *testing.T) {
	t.Setenv("GORMA_SHM_TEAM", "4")
	for _, p := range []int{5, 11} {
		t.Run(fmt.Sprintf("p=%d", p), func(t *testing.T) {
			runJob(t, p, runtimetest.Options{Transport: "shm"}, 60*time.Second, func(e rankEnv) error {
				for _, err := range []error{
					Barrier(e.ctx, e.w),
					checkAllreduce(e, floatCases[float64]()[0], 1<<17, false),
					checkAllreduce(e, affineCase[int64](), 1<<16, true),
					Barrier(e.ctx, e.w),
				} {
					if err != nil {
						return err
					}
				}
				k := (p + 3) / 4 // teams of at most 4
				if c, most := substrate.Connections(e.w), (p+k-1)/k-1+k-1; c > most {
					return fmt.Errorf("rank %d of %d is connected to %d ranks, want at most %d (its team and the heads)", e.r, p, c, most)
				}
				return everyType(e, []int{0, 1, 7, 3000})
			})
		})
	}
	// Two hosts of 9 ranks: the selection picks the hierarchical Allreduce, whose on-host
	// steps run in teams, the host's first rank leading.
	hosts := make([]string, 18)
	for i := range hosts {
		hosts[i] = string(rune('a' + i/9))
	}
	t.Run("hier", func(t *testing.T) {
		runJob(t, len(hosts), runtimetest.Options{Hosts: hosts}, 90*time.Second, func(e rankEnv) error {
			if err := shmSuite(e, []int{0, 7, shmSmallMax/8 + 1, 70001}); err != nil {
				return err
			}
			s, _ := stateOf(e.w)
			if l := s.local; l.team == nil || l.onHost != nil {
				return fmt.Errorf("rank %d: the hierarchical algorithm did not run in teams on host %v", e.r, l.host)
			}
			return Barrier(e.ctx, e.w)
		})
	})
}

// TestPlanTeams: planTeams makes teams of consecutive ranks in rank order, one per run of
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
		if got := planTeams(c.ranks, c.dom, 32, 16); !slices.EqualFunc(got, c.want, slices.Equal[[]int]) {
			t.Errorf("%s: planTeams(%v, %v) = %v, want %v", c.name, c.ranks, c.dom, got, c.want)
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
			teams := planTeams(ranks, dom, 32, bound)
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

// TestTeamsByDomain: with pretend cache domains (rankDomains), a one-host job of a few
// ranks runs Barrier and Allreduce in teams of the domains' runs, a commutative and a
// non-commutative operator alike, and each rank connects only to its team and, as a
// head, to the other heads. Runs of one rank (domains interleaved, or all of one rank)
// keep one group. The hierarchical Allreduce's on-host steps follow the domains too.
func TestTeamsByDomain(t *testing.T) {
	pretend := func(t *testing.T, pattern string) {
		old := rankDomains
		rankDomains = func(_ *runtime.World, ranks []int) []int {
			dom := make([]int, len(ranks))
			for i, r := range ranks {
				dom[i] = int(pattern[r] - 'a')
			}
			return dom
		}
		t.Cleanup(func() { rankDomains = old })
	}
	for _, c := range []struct {
		domains string
		team    string // the teams, as runs of one letter; "" for one group
		env     string // GORMA_SHM_TEAM
	}{
		{"aabbb", "aabbb", ""},
		{"aaabbb", "aaabbb", ""},
		{"abbbbcc", "abbbbcc", ""},
		{"aaaaaaab", "aaabbbbc", "4"}, // the domain of 7 in teams of 3 and 4
		{"aabbaabb", "aabbccdd", ""},  // ranks dealt out to the processors in turn
		{"ababababa", "", ""},
		{"abcde", "", ""},
	} {
		t.Run(c.domains, func(t *testing.T) {
			if c.env != "" {
				t.Setenv("GORMA_SHM_TEAM", c.env)
			}
			pretend(t, c.domains)
			p := len(c.domains)
			runJob(t, p, runtimetest.Options{Transport: "shm"}, 60*time.Second, func(e rankEnv) error {
				for _, err := range []error{
					Barrier(e.ctx, e.w),
					checkAllreduce(e, floatCases[float64]()[0], 5, false),
					checkAllreduce(e, affineCase[int64](), 5, true),
					checkAllreduce(e, affineCase[int64](), 3000, false),
					checkAllreduce(e, floatCases[float64]()[0], 1<<16+3, true),
					checkAllreduce(e, affineCase[uint64](), 1<<16+3, false),
					Barrier(e.ctx, e.w),
				} {
					if err != nil {
						return err
					}
				}
				return checkTeam(e, c.team, true)
			})
		})
	}
	// Two hosts of five ranks, each in two domains: the forced hierarchical Allreduce runs
	// its on-host steps in the domains' teams.
	t.Run("hier", func(t *testing.T) {
		t.Setenv(EnvAllreduce, "hier")
		pretend(t, "aabbbccddd")
		hosts := strings.Split("aaaaabbbbb", "")
		runJob(t, len(hosts), runtimetest.Options{Hosts: hosts}, 60*time.Second, func(e rankEnv) error {
			for _, err := range []error{
				checkAllreduce(e, floatCases[float64]()[0], 7, false),
				checkAllreduce(e, affineCase[int64](), 70001, true),
			} {
				if err != nil {
					return err
				}
			}
			return checkTeam(e, "aabbbccddd", false)
		})
	})
}

// checkTeam checks e's rank's team against teams, a letter per rank of the job that
// changes where a team starts ("" for one group). With conns, it checks the rank's
// connections against what the teams allow a one-host job.
func checkTeam(e rankEnv, teams string, conns bool) error {
	s, _ := stateOf(e.w)
	l := s.local
	if teams == "" {
		switch {
		case l.team != nil:
			return fmt.Errorf("rank %d: team %v, want one group", e.r, l.team.ranks)
		case !l.flat:
			return fmt.Errorf("rank %d: the host's groups were never decided", e.r)
		}
		return nil
	}
	var want []int
	k := 0 // teams of the host
	for r := range teams {
		if r == 0 || teams[r] != teams[r-1] {
			k++
		}
		if teams[r] == teams[e.r] {
			want = append(want, r)
		}
	}
	if l.team == nil || !slices.Equal(l.team.ranks, want) {
		return fmt.Errorf("rank %d: team %v, want %v", e.r, l.team, want)
	}
	if head := want[0] == e.r; (l.heads != nil) != head {
		return fmt.Errorf("rank %d of team %v: in the heads' group %v, want %v", e.r, want, l.heads != nil, head)
	}
	most := len(want) - 1
	if l.heads != nil {
		most += k - 1
	}
	if c := substrate.Connections(e.w); conns && c > most {
		return fmt.Errorf("rank %d of team %v is connected to %d ranks, want at most %d (its team and the heads)", e.r, want, c, most)
	}
	return nil
}
