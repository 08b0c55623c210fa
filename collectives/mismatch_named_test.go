package collectives

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/runtime/runtimetest"
)

// TestMismatchNamed: rank 0 calls Bcast while the others call Allreduce, of as many
// bytes, on one host in the default settings: at the first call (the scratch's setup
// meets them) and later (the flag line's meta word does), inline, in the small slot and
// in chunks. Every rank in Allreduce fails with ErrMismatch naming both calls; rank 0,
// which only gives in a short Bcast, may return at once. The calls after work. A long
// Bcast on 2 ranks goes point to point, and its tag (kind Bcast) never matches an
// Allreduce's: both calls wait until the hang check ends the job, which
// launcher's TestHangMismatchEnds covers (a rendezvous send that never matches holds
// Finalize, so this test leaves that case out).
func TestMismatchNamed(t *testing.T) {
	named := func(msg string) bool {
		return strings.Contains(msg, "Allreduce") && strings.Contains(msg, "rank 0 is in Bcast")
	}
	for _, p := range []int{2, 3, 4} {
		for _, n := range []int{4, 1000, 40000} {
			for _, first := range []bool{true, false} {
				t.Run(fmt.Sprintf("p=%d/n=%d/first=%v", p, n, first), func(t *testing.T) {
					if p == 2 && n == 40000 {
						t.Skip("a long Bcast on 2 ranks goes point to point: both calls wait (TestHangMismatchEnds)")
					}
					runJob(t, p, runtimetest.Options{Transport: "shm"}, 60*time.Second, func(e rankEnv) error {
						if !first {
							if err := Barrier(e.ctx, e.w); err != nil {
								return err
							}
						}
						var err error
						if e.r == 0 {
							err = Bcast(e.ctx, e.w, make([]float64, n), 0)
						} else {
							err = Allreduce(e.ctx, e.w, make([]float64, n), make([]float64, n), Sum[float64]())
						}
						switch {
						case err == nil && e.r == 0:
						case !errors.Is(err, ErrMismatch):
							return fmt.Errorf("rank %d: %v, want ErrMismatch", e.r, err)
						case e.r != 0 && !named(err.Error()):
							return fmt.Errorf("rank %d: %v: want the error to name Bcast and Allreduce", e.r, err)
						}
						if err := Barrier(e.ctx, e.w); err != nil {
							return fmt.Errorf("rank %d: the Barrier after: %w", e.r, err)
						}
						return checkAllgather(e, intCases[int32]()[0].gen, 7, false)
					})
				})
			}
		}
	}
}
