package mpich_test

import (
	"path/filepath"
	"slices"
	"testing"
)

// TestSession runs sesscheck's modes at 2 ranks on gorma's library and on MPICH's:
// sessions alone, with MPI_Init before a session, with a session before MPI_Init, and
// the tool interface. Each mode checks its own results, and both libraries must print
// the same lines. gorma's own MPI_T variables, and the errors that MPICH 4.0.2 gets
// wrong, are checked inside sesscheck on gorma's library only.
func TestSession(t *testing.T) {
	dir := setup(t)
	prog := filepath.Join(dir, "sesscheck")
	for _, mode := range []string{"session", "initfirst", "sessfirst", "mpit"} {
		t.Run(mode, func(t *testing.T) {
			got, err := onGorma(t, dir, 2, prog, mode)
			if err != nil {
				t.Fatalf("on gorma's library: %v\n%s", err, got)
			}
			want, err := onMPICH(t, 2, prog, mode)
			if err != nil {
				t.Fatalf("on MPICH's library: %v\n%s", err, want)
			}
			if g, w := shape(got, true), shape(want, true); !slices.Equal(g, w) {
				t.Errorf("gorma's output differs from MPICH's (- gorma only, + MPICH only):\n%s", lineDiff(g, w))
			}
		})
	}
}
