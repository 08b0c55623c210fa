package runtime_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/tests/slurmtest"
)

// TestMain stops the one-node Slurm that the srun tests start (slurmtest), once the
// package's tests are done.
func TestMain(m *testing.M) { os.Exit(slurmtest.Run(m)) }

// runSrun runs srun with args and the extra environment under a timeout and returns its
// stdout; it fails the test with both streams when srun fails or times out.
func runSrun(t *testing.T, srun slurmtest.Srun, timeout time.Duration, env []string, args ...string) string {
	t.Helper()
	timeout = testbudget.Scale(timeout)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := srun(ctx, args...)
	cmd.Env = append(cmd.Env, env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ctx.Err() != nil {
		err = fmt.Errorf("%v; did not end within %v", err, timeout)
	}
	if err != nil {
		t.Fatalf("srun %s (env %v): %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), env, err, out.String(), errb.String())
	}
	return out.String()
}

// srunArgs are srun's arguments for n ranks of prog over Slurm's PMI-2 plugin.
func srunArgs(n int, prog string, args ...string) []string {
	return append([]string{"-n", fmt.Sprint(n), "--mpi=pmi2", "--oversubscribe", prog}, args...)
}

// TestSlurmHello runs apps/hello under srun -n 4 --mpi=pmi2: one world of 4.
func TestSlurmHello(t *testing.T) {
	srun := slurmtest.Up(t)
	hello, _ := buildPMIBins(t)
	checkHello(t, runSrun(t, srun, 3*time.Minute, []string{"GORMA_PROGRESS=block"}, srunArgs(4, hello)...), 4)
}

// TestSlurmWorld runs the RMA and Allreduce check program under srun, over PMI-2 and
// over PMI-1 (Slurm's pmi2 plugin answers both on PMI_FD), and as a 64-rank job.
func TestSlurmWorld(t *testing.T) {
	srun := slurmtest.Up(t)
	_, prog := buildPMIBins(t)
	for _, tc := range []struct {
		pmi string
		n   int
	}{{"2", 4}, {"1", 4}, {"", 64}} {
		t.Run(fmt.Sprintf("pmi=%q/n=%d", tc.pmi, tc.n), func(t *testing.T) {
			env := []string{"GORMA_PMI=" + tc.pmi, "GORMA_PROGRESS=block"}
			out := runSrun(t, srun, 4*time.Minute, env, srunArgs(tc.n, prog, "--size", fmt.Sprint(tc.n), "--timeout", testbudget.Scale(3*time.Minute).String())...)
			checkWorld(t, out, tc.n)
		})
	}
}

// TestSlurmAbort: a rank's Abort under srun ends the step with the Abort's code while
// the other ranks wait in a Barrier, over both wires: no rank hangs, and srun reports
// the Abort's code.
func TestSlurmAbort(t *testing.T) {
	srun := slurmtest.Up(t)
	_, prog := buildPMIBins(t)
	for _, pmi := range []string{"1", "2"} {
		t.Run("pmi="+pmi, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(3*time.Minute))
			defer cancel()
			cmd := srun(ctx, srunArgs(4, prog, "--abort", "1")...)
			cmd.Env = append(cmd.Env, "GORMA_PMI="+pmi, "GORMA_PROGRESS=block")
			out, err := cmd.CombinedOutput()
			// srun's status is the highest of its tasks': 3, unless Slurm's kill of the
			// step (SIGKILL) reached the waiting ranks before they ended themselves, when it
			// is 137 and srun's report still names the aborting task's code.
			var ee *exec.ExitError
			reported := strings.Contains(string(out), "task 1: Exited with exit code 3")
			if ctx.Err() != nil || !errors.As(err, &ee) || ee.ExitCode() != 3 && !(ee.ExitCode() == 137 && reported) {
				t.Errorf("srun ended with %v (context: %v), want exit status 3 (or 137 with task 1's exit code 3 reported)\n%s", err, ctx.Err(), out)
			}
		})
	}
}

// TestSlurmFT: under srun --no-kill --kill-on-bad-exit=0 and GORMA_FT=1, a rank that
// SIGKILLs itself leaves the step running; the others shrink Init's World, pass
// pmiworld's checks on the survivors and finalize (Finalize's fence is the survivors'
// agreement, not Slurm's, which would wait for the dead rank). srun exits with the
// killed task's 137 all the same.
func TestSlurmFT(t *testing.T) {
	srun := slurmtest.Up(t)
	_, prog := buildPMIBins(t)
	ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(3*time.Minute))
	defer cancel()
	args := append([]string{"--no-kill", "--kill-on-bad-exit=0"}, srunArgs(4, prog, "--kill", "2", "--size", "4")...)
	cmd := srun(ctx, args...)
	cmd.Env = append(cmd.Env, "GORMA_FT=1", "GORMA_PROGRESS=block")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("srun did not end: %v\nstdout:\n%s\nstderr:\n%s", err, out.String(), errb.String())
	}
	checkWorld(t, out.String(), 3)
	if strings.Contains(errb.String(), "pmiworld:") {
		t.Errorf("a survivor failed:\n%s", errb.String())
	}
	// The survivors finalized, but srun's exit is the killed task's: 128+9
	// (docs/launcher.md says so).
	if ee, ok := errors.AsType[*exec.ExitError](err); !ok || ee.ExitCode() != 137 {
		t.Errorf("srun: %v, want exit status 137 (the killed task's)\n%s", err, errb.String())
	}
}

// TestSlurmPMIx runs pmiworld under srun --mpi=pmix (Slurm's PMIx plugin): one World of
// 4 through the PMIx client.
func TestSlurmPMIx(t *testing.T) {
	srun := slurmtest.Up(t)
	_, prog := buildPMIBins(t)
	args := []string{"-n", "4", "--mpi=pmix", "--oversubscribe", prog, "--size", "4"}
	out := runSrun(t, srun, 3*time.Minute, []string{"GORMA_PROGRESS=block"}, args...)
	checkWorld(t, out, 4)
}
