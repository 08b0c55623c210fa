package collectives

import (
	"fmt"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/runtime/runtimetest"
)

// TestTeams: a one-host job of more ranks than GORMA_SHM_TEAM runs Barrier and the
// shared-memory Allreduce in teams (teams.go): every type and operator, in place and not,
// short and chunked vectors, the non-commutative affine operator in rank order; and
// Barriers and Allreduces connect a rank only to its team and, as a head, to the other
// heads.
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
				if c, most := e.w.Connections(), (p+k-1)/k-1+k-1; c > most {
					return fmt.Errorf("rank %d of %d is connected to %d ranks, want at most %d (its team and the heads)", e.r, p, c, most)
				}
				return everyType(e, []int{0, 1, 7, 3000})
			})
		})
	}
}
