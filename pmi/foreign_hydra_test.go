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

	"github.com/gorma-hpc/gorma/internal/testbudget"
)

// TestHydra runs tests/pmiclientprog as 3 ranks under MPICH's real
// mpiexec.hydra, over PMI-1 (Hydra hands each rank PMI_FD) and PMI-2: every rank puts a
// value longer than vallen_max, fences, and checks every rank's value and the node map.
func TestHydra(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(3*time.Minute))
	defer cancel()
	hydra, bin := hydraAndProg(ctx, t)
	for _, tc := range []struct{ wire, version string }{{"1", "1.1"}, {"2", "2.0"}, {"auto", "1.1"}} {
		t.Run("GORMA_PMI="+tc.wire, func(t *testing.T) {
			rctx, cancel := context.WithTimeout(ctx, testbudget.Scale(time.Minute))
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

// TestHydraAbort: a rank's Abort ends the whole job under the real mpiexec.hydra, over
// both wires: the other ranks wait in a fence, so a job that Abort did not end outlives
// its context. Hydra passes PMI-1's exitcode on. Its PMI-2 abort carries none, and
// Hydra 4.0.2 then exits 255, or at times 0 (seen under load):
// under PMI-2 only the job's end is checked.
func TestHydraAbort(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(3*time.Minute))
	defer cancel()
	hydra, bin := hydraAndProg(ctx, t)
	for _, tc := range []struct {
		wire string
		code int // -1: any exit status
	}{{"1", 7}, {"2", -1}} {
		t.Run("GORMA_PMI="+tc.wire, func(t *testing.T) {
			rctx, cancel := context.WithTimeout(ctx, testbudget.Scale(time.Minute))
			defer cancel()
			cmd := exec.CommandContext(rctx, hydra, "-n", "3", bin, "abort", "1")
			cmd.Env = append(os.Environ(), EnvPMIWire+"="+tc.wire)
			cmd.WaitDelay = 10 * time.Second
			out, err := cmd.CombinedOutput()
			if rctx.Err() != nil {
				t.Fatalf("the job outlived its context: Abort did not end it\n%s", out)
			}
			if tc.code < 0 {
				if _, ok := err.(*exec.ExitError); err != nil && !ok {
					t.Fatalf("mpiexec.hydra: %v\n%s", err, out)
				}
				return
			}
			if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != tc.code {
				t.Fatalf("mpiexec.hydra: %v, want exit code %d\n%s", err, tc.code, out)
			}
		})
	}
}

// hydraAndProg returns mpiexec.hydra's path and a freshly built pmiclientprog, or skips
// the test when Hydra is not installed.
func hydraAndProg(ctx context.Context, t *testing.T) (hydra, bin string) {
	t.Helper()
	hydra, err := exec.LookPath("mpiexec.hydra")
	if err != nil {
		testbudget.SkipEngine(t, "mpiexec.hydra not found: install Debian's mpich package (apt-get install mpich) to run this test")
	}
	bin = filepath.Join(t.TempDir(), "pmiclientprog")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "../tests/pmiclientprog")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return hydra, bin
}
