package mpich_test

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"
)

// TestColl runs collcheck (testdata/collcheck.c) on gorma's library and on MPICH's:
// the vector, nonblocking, persistent and large-count collectives, each checking its
// results, must print the same lines. On MPICH's library collcheck starts a persistent
// Gather, Scatter or Allgather once, not twice: Debian's MPICH 4.0.2 gives the second
// start the first one's data. gorma's run starts each twice, and collcheck checks the
// second start's results itself.
func TestColl(t *testing.T) {
	dir := setup(t)
	prog := filepath.Join(dir, "collcheck")
	for _, n := range []int{2, 4} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			got, err := onGorma(t, dir, n, prog)
			if err != nil {
				t.Fatalf("on gorma's library: %v\n%s", err, got)
			}
			want, err := onMPICH(t, n, prog, "mpich")
			if err != nil {
				t.Fatalf("on MPICH's library: %v\n%s", err, want)
			}
			g, w := shape(got, true), shape(want, true)
			if !slices.Equal(g, w) {
				t.Errorf("gorma's output differs from MPICH's (- gorma only, + MPICH only):\n%s", lineDiff(g, w))
			}
		})
	}
}
