package mpich_test

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestAttrWin runs testdata/attrwincheck.c at 2 ranks on gorma's library and on
// MPICH's: attributes of communicators, datatypes and windows (with MPICH's helpers for
// Fortran), window names, groups, hints, MPI_Win_test, shared and dynamic windows, info
// objects, user error classes and codes, and error handlers. Both must print the same
// lines. MPI_Rget_accumulate runs apart, on gorma's library only, against fixed
// answers: Debian's MPICH 4.0.2 returns the origin's own values instead of the
// target's.
func TestAttrWin(t *testing.T) {
	dir := setup(t)
	prog := filepath.Join(dir, "attrwincheck")
	got, err := onGorma(t, dir, 2, prog)
	if err != nil {
		t.Fatalf("on gorma's library: %v\n%s", err, got)
	}
	want, err := onMPICH(t, 2, prog)
	if err != nil {
		t.Fatalf("on MPICH's library: %v\n%s", err, want)
	}
	if g, w := shape(got, true), shape(want, true); !slices.Equal(g, w) {
		t.Errorf("gorma's output differs from MPICH's:\n--- gorma\n%s\n--- MPICH\n%s", strings.Join(g, "\n"), strings.Join(w, "\n"))
	}
	out, err := onGorma(t, dir, 2, prog, "rget")
	if err != nil {
		t.Fatalf("attrwincheck rget: %v\n%s", err, out)
	}
	if g, w := shape(out, true), []string{"rank 0: MPI_Rget_accumulate ok", "rank 1: MPI_Rget_accumulate ok"}; !slices.Equal(g, w) {
		t.Errorf("attrwincheck rget printed:\n%s\nwant:\n%s", out, strings.Join(w, "\n"))
	}
}
