package collectives

import (
	"fmt"
	"testing"
	"time"

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
