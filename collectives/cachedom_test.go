package collectives

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gorma-hpc/gorma/runtime/runtimetest"
	"github.com/gorma-hpc/gorma/runtime/substrate"
)

// TestCacheDomainsCPUsOf: every rank learns the same processors for each rank from the
// cards (substrate.CPUsOf): here the test process's own affinity, since the ranks are its
// goroutines; nil out of range.
func TestCacheDomainsCPUsOf(t *testing.T) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		t.Fatal(err)
	}
	var want []int
	for p := range len(set) * 64 {
		if set.IsSet(p) {
			want = append(want, p)
		}
	}
	runJob(t, 3, runtimetest.Options{Transport: "shm"}, 30*time.Second, func(e rankEnv) error {
		for r := -1; r <= e.p; r++ {
			w := want
			if r < 0 || r == e.p {
				w = nil
			}
			if got := substrate.CPUsOf(e.w, r); !slices.Equal(got, w) {
				return fmt.Errorf("rank %d: CPUsOf(%d) = %v, want %v", e.r, r, got, w)
			}
		}
		return nil
	})
}
