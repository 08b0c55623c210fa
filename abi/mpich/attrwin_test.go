package mpich_test

import (
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gorma-hpc/gorma/internal/testbudget"
)

// TestAttrWin runs testdata/attrwincheck.c at 2 ranks on gorma's library and on
// MPICH's: attributes of communicators, datatypes and windows (with MPICH's helpers for
// Fortran), window names, groups, hints, MPI_Win_test, shared and dynamic windows, info
// objects, user error classes and codes, and error handlers. Both must print the same
// lines. MPI_Rget_accumulate runs apart, on gorma's library only, against fixed
// answers: Debian's MPICH 4.0.2 returns the origin's own values instead of the
// target's. TestAttrWinFortran covers the helpers of libmpichfort.
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
		t.Errorf("gorma's output differs from MPICH's (- gorma only, + MPICH only):\n%s", lineDiff(g, w))
	}
	out, err := onGorma(t, dir, 2, prog, "rget")
	if err != nil {
		t.Fatalf("attrwincheck rget: %v\n%s", err, out)
	}
	if g, w := shape(out, true), []string{"rank 0: MPI_Rget_accumulate ok", "rank 1: MPI_Rget_accumulate ok"}; !slices.Equal(g, w) {
		t.Errorf("attrwincheck rget printed:\n%s\nwant:\n%s", out, strings.Join(w, "\n"))
	}
}

// TestAttrWinFortran runs testdata/attrwinfort.f90, built with mpif90.mpich, at 2
// ranks on both libraries: Fortran attributes of communicators and windows through
// Debian's libmpichfort.so.12, whose proxies call the Fortran callbacks.
func TestAttrWinFortran(t *testing.T) {
	dir := setup(t)
	if _, err := exec.LookPath("mpif90.mpich"); err != nil {
		testbudget.SkipEngine(t, "mpif90.mpich is not installed (Debian: apt-get install libmpich-dev gfortran)")
	}
	src, err := filepath.Abs("testdata/attrwinfort.f90")
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	prog := filepath.Join(work, "attrwinfort")
	cc := exec.Command("mpif90.mpich", "-O2", "-o", prog, src)
	cc.Dir = work // gfortran writes the module file there
	if out, err := cc.CombinedOutput(); err != nil {
		t.Fatalf("mpif90.mpich: %v\n%s", err, out)
	}
	got, err := onGorma(t, dir, 2, prog)
	if err != nil {
		t.Fatalf("on gorma's library: %v\n%s", err, got)
	}
	want, err := onMPICH(t, 2, prog)
	if err != nil {
		t.Fatalf("on MPICH's library: %v\n%s", err, want)
	}
	if g, w := shape(got, true), shape(want, true); !slices.Equal(g, w) || len(g) != 2 {
		t.Errorf("gorma's output differs from MPICH's (- gorma only, + MPICH only):\n%s", lineDiff(g, w))
	}
}
