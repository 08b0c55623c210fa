package mpich_test

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestDtype runs dtypecheck at 2 ranks on gorma's library and on MPICH's: the
// datatype constructors' envelopes and contents, names, sizes and extents, element
// counts, darrays, Fortran 90 types, external32 and the large-count forms, and sends of
// derived types between the ranks. Both must print the same lines. Where MPICH 4.0.2 is
// wrong (dtypecheck strict), gorma's answers are checked against fixed ones.
func TestDtype(t *testing.T) {
	dir := setup(t)
	prog := filepath.Join(dir, "dtypecheck")
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
	out, err := onGorma(t, dir, 2, prog, "strict")
	if err != nil {
		t.Fatalf("dtypecheck strict on gorma's library: %v\n%s", err, out)
	}
	// MPICH counts a partial double's bytes as more elements (16:3 18:3 36:6, and
	// 11:2 13:3 16:3 28:7 56:12 nested), returns success for the four errors (classes
	// MPI_ERR_COUNT, MPI_ERR_ARG twice and MPI_ERR_TRUNCATE here) and crashes on the
	// struct's external32.
	strict := []string{
		"strict elements struct: 16:2 18:2 36:5",
		"strict elements nested: 11:1 13:2 16:2 28:4 56:11",
		"strict pack size of big: class 2",
		"strict darray none over 4: class 12",
		"strict pack_external native: class 12",
		"strict pack_external into 8 bytes: class 14",
		"strict external32 struct: 00000007 40040000 00000000 fffd",
	}
	if g := shape(out, true); !slices.Equal(g, shape(strings.Join(strict, "\n"), true)) {
		t.Errorf("dtypecheck strict printed:\n%s\nwant:\n%s", out, strings.Join(strict, "\n"))
	}
}
