package runtime_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
)

// The tests of this file start gorma ranks under real foreign process managers: MPICH's
// Hydra (mpiexec.hydra, Debian's mpich package) and Slurm (srun, Debian's slurm-wlm with
// scripts/slurm-local.sh up). Each skips, saying what to install, where its launcher is
// absent.

// pmiBins are the rank programs the tests run, built once.
var pmiBins struct {
	once        sync.Once
	dir         string
	hello, prog string
	err         error
}

func buildPMIBins(t *testing.T) (hello, pmiworld string) {
	t.Helper()
	b := &pmiBins
	b.once.Do(func() {
		if b.dir, b.err = os.MkdirTemp("", "runtime-pmi-"); b.err != nil {
			return
		}
		b.hello, b.prog = filepath.Join(b.dir, "hello"), filepath.Join(b.dir, "pmiworld")
		for out, pkg := range map[string]string{b.hello: "../apps/hello", b.prog: "../tests/pmiworld"} {
			cmd := exec.Command("go", "build", "-o", out, pkg)
			cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
			if msg, err := cmd.CombinedOutput(); err != nil {
				b.err = fmt.Errorf("go build %s: %v\n%s", pkg, err, msg)
				return
			}
		}
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.hello, b.prog
}

// needHydra returns mpiexec.hydra's path, or skips the test.
func needHydra(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("mpiexec.hydra")
	if err != nil {
		testbudget.SkipEngine(t, "mpiexec.hydra not found: install Debian's mpich package (apt-get install mpich) to run gorma ranks under Hydra")
	}
	return p
}

// launch runs a launcher command line under a timeout and returns its stdout; it fails
// the test with both streams when the command fails or times out.
func launch(t *testing.T, timeout time.Duration, env []string, name string, args ...string) string {
	t.Helper()
	out, errb, err := launchErr(t, timeout, env, name, args...)
	if err != nil {
		t.Fatalf("%s %s (env %v): %v\nstdout:\n%s\nstderr:\n%s", name, strings.Join(args, " "), env, err, out, errb)
	}
	return out
}

// launchErr runs a launcher command line under a timeout, in a process group of its own
// that the timeout kills whole, and returns its output and its error (an
// *exec.ExitError for a non-zero status); it fails the test when the command does not
// end within timeout scaled by the test slack.
func launchErr(t *testing.T, timeout time.Duration, env []string, name string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	timeout = testbudget.Scale(timeout)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("%s %s (env %v) did not end within %v: %v\nstdout:\n%s\nstderr:\n%s", name, strings.Join(args, " "), env, timeout, err, out.String(), errb.String())
	}
	return out.String(), errb.String(), err
}

// checkHello checks hello's output for a world of n: every rank's line, and the token.
func checkHello(t *testing.T, out string, n int) {
	t.Helper()
	for r := range n {
		if want := fmt.Sprintf("hello from rank %d of %d ", r, n); !strings.Contains(out, want) {
			t.Errorf("no line %q in the output (N worlds of 1?):\n%s", want, out)
		}
	}
	want := fmt.Sprintf("token came back around the ring of %d ranks: %d (want %d)", n, n*(n-1)/2, n*(n-1)/2)
	if !strings.Contains(out, want) {
		t.Errorf("no line %q in the output:\n%s", want, out)
	}
}

// checkWorld checks pmiworld's output for a world of n on one host, all over shm.
func checkWorld(t *testing.T, out string, n int) {
	t.Helper()
	want := fmt.Sprintf("pmiworld: ok: %d ranks, 1 hosts, transports shm=%d tcp=0, local size %d", n, n-1, n)
	if !strings.Contains(out, want) {
		t.Errorf("no line %q in the output:\n%s", want, out)
	}
}

// hydraArgs are mpiexec.hydra's arguments for n local ranks of prog.
func hydraArgs(n int, prog string, args ...string) []string {
	return append([]string{"-launcher", "fork", "-n", fmt.Sprint(n), prog}, args...)
}

// TestHydraHello runs apps/hello under mpiexec.hydra: one world of 4, and of 8 on this
// machine's 2 processors (oversubscribed).
func TestHydraHello(t *testing.T) {
	hydra := needHydra(t)
	hello, _ := buildPMIBins(t)
	for _, n := range []int{4, 8} {
		t.Run(fmt.Sprintf("n=%d", n), func(t *testing.T) {
			env := []string{"GORMA_PROGRESS=block"}
			checkHello(t, launch(t, 2*time.Minute, env, hydra, hydraArgs(n, hello)...), n)
		})
	}
}

// TestHydraWorld runs the RMA and Allreduce check program under mpiexec.hydra, over
// PMI-1 and PMI-2 (Hydra answers both on PMI_FD, chosen by the client's init line).
func TestHydraWorld(t *testing.T) {
	hydra := needHydra(t)
	_, prog := buildPMIBins(t)
	for _, tc := range []struct {
		pmi string
		n   int
	}{{"1", 4}, {"2", 4}, {"", 8}} {
		t.Run(fmt.Sprintf("pmi=%q/n=%d", tc.pmi, tc.n), func(t *testing.T) {
			env := []string{"GORMA_PMI=" + tc.pmi, "GORMA_PROGRESS=block"}
			out := launch(t, 2*time.Minute, env, hydra, hydraArgs(tc.n, prog, "--size", fmt.Sprint(tc.n))...)
			checkWorld(t, out, tc.n)
		})
	}
}

// TestHydraAbort: a rank's Abort under mpiexec.hydra ends the job while the other ranks
// wait in a Barrier. Over PMI-1 Hydra exits with the Abort's code; Hydra 4.0.2 does not
// know PMI-2's abort command and ends the job with an error of its own (255).
func TestHydraAbort(t *testing.T) {
	hydra := needHydra(t)
	_, prog := buildPMIBins(t)
	for _, pmi := range []string{"1", "2"} {
		t.Run("pmi="+pmi, func(t *testing.T) {
			env := []string{"GORMA_PMI=" + pmi, "GORMA_PROGRESS=block"}
			out, errb, err := launchErr(t, 2*time.Minute, env, hydra, hydraArgs(4, prog, "--abort", "1")...)
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() == 0 || pmi == "1" && ee.ExitCode() != 3 {
				t.Errorf("mpiexec.hydra ended with %v, want exit status 3 (PMI-1) or another failure (PMI-2)\nstdout:\n%s\nstderr:\n%s", err, out, errb)
			}
		})
	}
}
