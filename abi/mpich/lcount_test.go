package mpich_test

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestLcount runs testdata/lcountcheck.c at 2 ranks on gorma's library and on MPICH's:
// the large-count (_c) one-sided calls, window constructors, neighbourhood collectives,
// datatype constructors and MPI_Op_create_c, MPI_Status_c2f and MPI_Status_f2c, and
// MPICH's extended generalized requests. Both must print the same lines. The checks of
// "fixed" run on gorma's library only, against answers of the program's own:
// MPI_Rget_accumulate_c, as Debian's MPICH 4.0.2 returns the origin's values for
// MPI_Rget_accumulate (TestAttrWin); MPI_ERR_COUNT for a disp_unit beyond a C int; and
// MPI_DUP_FN and the Fortran 2008 status conversions, which MPICH's libmpich.so.12
// does not define (libmpichfort.so.12 holds its own).
func TestLcount(t *testing.T) {
	dir := setup(t)
	prog := filepath.Join(dir, "lcountcheck")
	got, err := onGorma(t, dir, 2, prog)
	if err != nil {
		t.Fatalf("on gorma's library: %v\n%s", err, got)
	}
	want, err := onMPICH(t, 2, prog)
	if err != nil {
		t.Fatalf("on MPICH's library: %v\n%s", err, want)
	}
	if g, w := shape(got, true), shape(want, true); !slices.Equal(g, w) {
		t.Errorf("gorma's output differs from MPICH's (- gorma only, + MPICH only):\n%s", lineDiff(g, w))
	}
	out, err := onGorma(t, dir, 2, prog, "fixed")
	if err != nil {
		t.Fatalf("lcountcheck fixed: %v\n%s", err, out)
	}
	var w []string
	for _, r := range []string{"0", "1"} {
		for _, what := range []string{"MPI_Rget_accumulate_c", "MPI_ERR_COUNT",
			"MPI_Status_c2f08 MPI_Status_f082c MPI_Status_f082f MPI_Status_f2f08", "MPI_DUP_FN"} {
			w = append(w, "rank "+r+": "+what+" ok")
		}
	}
	slices.Sort(w)
	if g := shape(out, true); !slices.Equal(g, w) {
		t.Errorf("lcountcheck fixed printed:\n%s\nwant:\n%s", out, strings.Join(w, "\n"))
	}
}
