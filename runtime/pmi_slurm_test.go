package runtime_test

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// needSlurm returns srun's path, or skips the test when srun is absent or no Slurm
// controller answers (scripts/slurm-local.sh up brings a one-node Slurm up).
func needSlurm(t *testing.T) string {
	t.Helper()
	srun, err := exec.LookPath("srun")
	if err != nil {
		t.Skip("srun not found: install Debian's slurm-wlm and munge packages and run scripts/slurm-local.sh up to run gorma ranks under Slurm")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "sinfo", "-h", "-o", "%T").CombinedOutput()
	up := strings.Contains(string(out), "idle") || strings.Contains(string(out), "mix") || strings.Contains(string(out), "alloc")
	if err != nil || !up {
		t.Skipf("srun is installed but no Slurm answers (sinfo: %v, %q): run scripts/slurm-local.sh up", err, out)
	}
	return srun
}

// srunArgs are srun's arguments for n ranks of prog over Slurm's PMI-2 plugin.
func srunArgs(n int, prog string, args ...string) []string {
	return append([]string{"-n", fmt.Sprint(n), "--mpi=pmi2", "--oversubscribe", "--time=5", prog}, args...)
}

// TestSlurmHello runs apps/hello under srun -n 4 --mpi=pmi2: one world of 4.
func TestSlurmHello(t *testing.T) {
	srun := needSlurm(t)
	hello, _ := buildPMIBins(t)
	checkHello(t, launch(t, 3*time.Minute, []string{"GORMA_PROGRESS=block"}, srun, srunArgs(4, hello)...), 4)
}

// TestSlurmWorld runs the RMA and Allreduce check program under srun, over PMI-2 and
// over PMI-1 (Slurm's pmi2 plugin answers both on PMI_FD), and as a 64-rank job.
func TestSlurmWorld(t *testing.T) {
	srun := needSlurm(t)
	_, prog := buildPMIBins(t)
	for _, tc := range []struct {
		pmi string
		n   int
	}{{"2", 4}, {"1", 4}, {"", 64}} {
		t.Run(fmt.Sprintf("pmi=%q/n=%d", tc.pmi, tc.n), func(t *testing.T) {
			env := []string{"GORMA_PMI=" + tc.pmi, "GORMA_PROGRESS=block"}
			out := launch(t, 4*time.Minute, env, srun, srunArgs(tc.n, prog, "--size", fmt.Sprint(tc.n), "--timeout", "3m")...)
			checkWorld(t, out, tc.n)
		})
	}
}
