package mpich_test

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestInter runs intercheck (testdata/intercheck.c): every collective on an
// intercommunicator, blocking, nonblocking and persistent, with MPI_ROOT and
// MPI_PROC_NULL in the root's group, MPI_MINLOC and a user operation on a vector
// among them, each checking its results. With the argument
// "mpich", which leaves out the nonblocking and persistent rooted calls from a root
// other than rank 0 (Debian's MPICH 4.0.2 gets MPI_Ibcast's wrong), gorma's library and
// MPICH's print the same lines at 4 ranks. Without it gorma's library passes them all,
// at 4 and 6 ranks.
func TestInter(t *testing.T) {
	dir := setup(t)
	prog := filepath.Join(dir, "intercheck")
	got, err := onGorma(t, dir, 4, prog, "mpich")
	if err != nil {
		t.Fatalf("on gorma's library: %v\n%s", err, got)
	}
	want, err := onMPICH(t, 4, prog, "mpich")
	if err != nil {
		t.Fatalf("on MPICH's library: %v\n%s", err, want)
	}
	if g, w := shape(got, true), shape(want, true); !slices.Equal(g, w) {
		t.Errorf("gorma's output differs from MPICH's (- gorma only, + MPICH only):\n%s", lineDiff(g, w))
	}
	for _, n := range []int{4, 6} {
		out, err := onGorma(t, dir, n, prog)
		if err != nil {
			t.Fatalf("%d ranks on gorma's library: %v\n%s", n, err, out)
		}
		for _, call := range []string{"nonblocking Bcast from rank 1 of the high group", "persistent Scatterv from rank 1 of the low group", "nonblocking Reduce_scatter", "persistent Allreduce MINLOC", "Reduce with a user operation on a vector", "Intercomm_merge"} {
			if !strings.Contains(out, call+": ok") {
				t.Errorf("%d ranks: no %q:\n%s", n, call+": ok", out)
			}
		}
		if ok := strings.Count(out, ": ok"); ok != 103 {
			t.Errorf("%d ranks: %d checks passed, want 103:\n%s", n, ok, out)
		}
	}
}
