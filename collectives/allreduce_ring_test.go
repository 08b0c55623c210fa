package collectives

import (
	"fmt"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/runtime/runtimetest"
)

// TestAllreduceLongP2P checks ring, Rabenseifner and direct on vectors of several MiB
// (blocks of 1.25 to 2.5 MiB, odd element counts, a non-commutative operator), over both
// transports, with arena and fresh scratch. The job's bound is generous: with the race
// detector on 2 cores shared with other packages' tests, 4 in-process ranks of 5 MiB
// vectors can take several times as long as alone.
func TestAllreduceLongP2P(t *testing.T) {
	if testing.Short() {
		t.Skip("several MiB per rank")
	}
	const n = 5<<20/8 + 3 // float64s: blocks of 1.25 to 2.5 MiB at p = 2..4
	sum, aff, i8 := floatCases[float64]()[0], affineCase[int64](), intCases[int8]()[0]
	for _, tc := range []struct {
		transport string
		p         int
		scratch   Scratch
	}{
		{"tcp", 2, ScratchArena}, {"tcp", 3, ScratchFresh}, {"shm", 4, ScratchArena},
	} {
		t.Run(fmt.Sprintf("%s/p=%d/%v", tc.transport, tc.p, tc.scratch), func(t *testing.T) {
			SetScratch(tc.scratch)
			t.Cleanup(func() { SetScratch(ScratchArena) })
			runJob(t, tc.p, runtimetest.Options{Transport: tc.transport}, 2*time.Minute, func(e rankEnv) error {
				for _, a := range []algo{algoRing, algoRabenseifner, algoDirect} {
					forceAllreduce(e.w, a)
					for _, err := range []error{
						checkAllreduce(e, sum, n, a == algoRing),
						checkAllreduce(e, aff, n, a == algoRabenseifner), // ring and direct give way to Rabenseifner
						checkAllreduce(e, i8, 3<<20+1, false),
					} {
						if err != nil {
							return fmt.Errorf("%v: %w", a, err)
						}
					}
				}
				return nil
			})
		})
	}
}
