package mpich_test

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"
)

// TestTopo runs topocheck (groups, communicators, Cartesian, graph and distributed
// graph topologies, the neighbourhood collectives) on gorma's library and on MPICH's:
// each checks its own results, and both must print the same lines.
func TestTopo(t *testing.T) {
	dir := setup(t)
	prog := filepath.Join(dir, "topocheck")
	for _, n := range []int{2, 4} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			got, err := onGorma(t, dir, n, prog)
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
