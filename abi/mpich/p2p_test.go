package mpich_test

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"
)

// TestP2P runs testdata/p2pcheck.c (persistent requests, the set calls, the send
// modes, matched probes, generalized requests, the large-count forms) at 2 and 4 ranks
// on gorma's library and on MPICH's: both print the same lines. On gorma's it runs with
// "strict", which also checks the Isendrecv calls that Debian's MPICH 4.0.2 gets wrong.
func TestP2P(t *testing.T) {
	dir := setup(t)
	prog := filepath.Join(dir, "p2pcheck")
	for _, n := range []int{2, 4} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			got, err := onGorma(t, dir, n, prog, "strict")
			if err != nil {
				t.Fatalf("on gorma's library: %v\n%s", err, got)
			}
			want, err := onMPICH(t, n, prog)
			if err != nil {
				t.Fatalf("on MPICH's library: %v\n%s", err, want)
			}
			if g, w := shape(got, true), shape(want, true); !slices.Equal(g, w) {
				t.Errorf("gorma's output differs from MPICH's (- gorma only, + MPICH only):\n%s", lineDiff(g, w))
			}
		})
	}
}
