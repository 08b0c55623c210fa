package mpich_test

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestMPIIO runs testdata/iocheck.c at 2 and 4 ranks on gorma's library and on
// MPICH's (ROMIO): opening, sizes, hints and error handlers of files, strided views
// written and read back with every data call, and ordered writes. Both must print the
// same lines. The shared file pointer's part runs on gorma's library only, against
// fixed answers (with MPI_MODE_SEQUENTIAL and a communicator's error handler refused
// on a file): Debian's MPICH 4.0.2 loses the pointer's updates on this system.
func TestMPIIO(t *testing.T) {
	dir := setup(t)
	prog := filepath.Join(dir, "iocheck")
	for _, n := range []int{2, 4} {
		got, err := onGorma(t, dir, n, prog, t.TempDir())
		if err != nil {
			t.Fatalf("%d ranks on gorma's library: %v\n%s", n, err, got)
		}
		want, err := onMPICH(t, n, prog, t.TempDir())
		if err != nil {
			t.Fatalf("%d ranks on MPICH's library: %v\n%s", n, err, want)
		}
		if g, w := shape(got, true), shape(want, true); !slices.Equal(g, w) {
			t.Errorf("%d ranks: gorma's output differs from MPICH's (- gorma only, + MPICH only):\n%s", n, lineDiff(g, w))
		}
		out, err := onGorma(t, dir, n, prog, t.TempDir(), "shared")
		if err != nil {
			t.Fatalf("%d ranks, shared file pointer: %v\n%s", n, err, out)
		}
		if !strings.Contains(out, "shared ok") {
			t.Errorf("%d ranks, shared file pointer: no \"shared ok\" line:\n%s", n, out)
		}
	}
}
