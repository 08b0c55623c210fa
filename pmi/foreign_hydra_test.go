package pmi

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// TestHydra runs internal/testprog/pmiclientprog as 3 ranks under MPICH's real
// mpiexec.hydra, over PMI-1 (Hydra hands each rank PMI_FD) and PMI-2: every rank puts a
// value longer than vallen_max, fences, and checks every rank's value and the node map.
func TestHydra(t *testing.T) {
	hydra, err := exec.LookPath("mpiexec.hydra")
	if err != nil {
		t.Skip("mpiexec.hydra not found: install Debian's mpich package (apt-get install mpich) to run this test")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	bin := filepath.Join(t.TempDir(), "pmiclientprog")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "../internal/testprog/pmiclientprog")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, tc := range []struct{ wire, version string }{{"1", "1.1"}, {"2", "2.0"}, {"auto", "1.1"}} {
		t.Run("GORMA_PMI="+tc.wire, func(t *testing.T) {
			rctx, cancel := context.WithTimeout(ctx, time.Minute)
			defer cancel()
			cmd := exec.CommandContext(rctx, hydra, "-n", "3", bin)
			cmd.Env = append(os.Environ(), EnvPMIWire+"="+tc.wire)
			cmd.WaitDelay = 10 * time.Second
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("mpiexec.hydra -n 3: %v\n%s", err, out)
			}
			var lines []string
			for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
				if strings.HasPrefix(l, "ok ") {
					lines = append(lines, l)
				}
			}
			sort.Strings(lines)
			var want []string
			for r := 0; r < 3; r++ {
				want = append(want, fmt.Sprintf("ok %d 3 %s 0,0,0", r, tc.version))
			}
			if strings.Join(lines, "\n") != strings.Join(want, "\n") {
				t.Fatalf("output:\n%s\nwant the lines\n%s", out, strings.Join(want, "\n"))
			}
		})
	}
}
