package collectives

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/collectives/internal/hostgroup"
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
			if err := shmSuite(e, []int{0, 7, hostgroup.SmallMax/8 + 1, 70001}); err != nil {
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

// TestTeamsByDomain: with pretend cache domains (hostgroup.RankDomains), a one-host job
// of a few ranks runs Barrier and Allreduce in teams of the domains' runs, a commutative
// and a non-commutative operator alike, and each rank connects only to its team and, as a
// head, to the other heads. Runs of one rank (domains interleaved, or all of one rank)
// keep one group. The hierarchical Allreduce's on-host steps follow the domains too.
func TestTeamsByDomain(t *testing.T) {
	pretend := func(t *testing.T, pattern string) {
		old := hostgroup.RankDomains
		hostgroup.RankDomains = func(_ *runtime.World, ranks []int) []int {
			dom := make([]int, len(ranks))
			for i, r := range ranks {
				dom[i] = int(pattern[r] - 'a')
			}
			return dom
		}
		t.Cleanup(func() { hostgroup.RankDomains = old })
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
			return fmt.Errorf("rank %d: team %v, want one group", e.r, l.team.Ranks)
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
	if l.team == nil || !slices.Equal(l.team.Ranks, want) {
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
