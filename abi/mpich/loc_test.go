package mpich_test

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"
)

// TestLoc runs loccheck (testdata/loccheck.c) on gorma's library and on MPICH's:
// MPI_MINLOC and MPI_MAXLOC on every pair type, ties included, through Allreduce,
// Reduce, Iallreduce in place and Reduce_local; the pair types' sizes, extents and
// names; a message of MPI_DOUBLE_INT that leaves the padding alone; and MPI_ERR_OP for
// MINLOC on a type that is no pair. Both must print the same lines.
func TestLoc(t *testing.T) {
	dir := setup(t)
	prog := filepath.Join(dir, "loccheck")
	for _, n := range []int{2, 3} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			got, err := onGorma(t, dir, n, prog)
			if err != nil {
				t.Fatalf("on gorma's library: %v\n%s", err, got)
			}
			want, err := onMPICH(t, n, prog)
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
