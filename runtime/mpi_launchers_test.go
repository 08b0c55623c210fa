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
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/tests/slurmtest"
)

// The tests of this file back the cells of docs/launcher.md's table "Which programs run
// under which launcher" that are not gorma's: C programs that Debian's MPICH
// (mpicc.mpich) and Open MPI (mpicc.openmpi) build, under srun --mpi=pmi2 and
// --mpi=pmix, mpiexec.hydra and mpirun.openmpi. They sit in this package because its
// tests hold the local Slurm (TestMain) and the launcher helpers. Each builds
// bench/mpi/hello.c, runs 4 ranks and checks one outcome: one world of 4, 4 worlds of 1
// (the library found no process manager it speaks and ran as a singleton), or Open MPI's
// refusal.

// mpiHello builds bench/mpi/hello.c with the compiler wrapper mpicc into a directory of
// the test, or skips the test, naming the Debian packages to install.
func mpiHello(t *testing.T, mpicc, pkgs string) string {
	t.Helper()
	path, err := exec.LookPath(mpicc)
	if err != nil {
		testbudget.SkipEngine(t, "%s not found: apt-get install %s", mpicc, pkgs)
	}
	bin := filepath.Join(t.TempDir(), "hello")
	ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(2*time.Minute))
	defer cancel()
	if out, err := exec.CommandContext(ctx, path, "-O1", "-o", bin, "../bench/mpi/hello.c").CombinedOutput(); err != nil {
		t.Fatalf("%s bench/mpi/hello.c: %v\n%s", mpicc, err, out)
	}
	return bin
}

func mpichHello(t *testing.T) string { return mpiHello(t, "mpicc.mpich", "mpich libmpich-dev") }

func openMPIHello(t *testing.T) string {
	return mpiHello(t, "mpicc.openmpi", "openmpi-bin libopenmpi-dev")
}

// checkMPIWorld checks hello.c's output for one world of n: every rank's line and the
// ring token's sum.
func checkMPIWorld(t *testing.T, out string, n int) {
	t.Helper()
	for r := range n {
		if want := fmt.Sprintf("hello from rank %d of %d on ", r, n); !strings.Contains(out, want) {
			t.Errorf("no line %q in the output:\n%s", want, out)
		}
	}
	if want := fmt.Sprintf("ring token %d ok", n*(n-1)/2); !strings.Contains(out, want) {
		t.Errorf("no line %q in the output:\n%s", want, out)
	}
}

// checkSingletons checks hello.c's output for n worlds of one rank each.
func checkSingletons(t *testing.T, out string, n int) {
	t.Helper()
	if got := strings.Count(out, "hello from rank 0 of 1 on "); got != n || strings.Contains(out, fmt.Sprintf(" of %d on ", n)) {
		t.Errorf("want %d worlds of 1 (%d lines \"hello from rank 0 of 1\"), got %d such lines:\n%s", n, n, got, out)
	}
}

// srunMPI runs n ranks of prog under srun --mpi=plugin and returns srun's stdout, its
// stderr and its error (an *exec.ExitError for a failed step).
func srunMPI(t *testing.T, srun slurmtest.Srun, plugin string, n int, prog string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(2*time.Minute))
	defer cancel()
	cmd := srun(ctx, append([]string{"-n", fmt.Sprint(n), "--mpi=" + plugin, "--oversubscribe", prog}, args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("%s did not end: %v\nstdout:\n%s\nstderr:\n%s", cmd, err, out.String(), errb.String())
	}
	return out.String(), errb.String(), err
}

// okSrunMPI is srunMPI for a step that must succeed.
func okSrunMPI(t *testing.T, srun slurmtest.Srun, plugin string, n int, prog string, args ...string) string {
	t.Helper()
	out, errb, err := srunMPI(t, srun, plugin, n, prog, args...)
	if err != nil {
		t.Fatalf("srun --mpi=%s %s: %v\nstdout:\n%s\nstderr:\n%s", plugin, prog, err, out, errb)
	}
	return out
}

// MPICH's simple PMI client speaks PMI-1 on the PMI_FD that Slurm's pmi2 plugin gives
// every task, and the plugin answers PMI-1: one world of 4.
func TestMPICHSrunPMI2(t *testing.T) {
	srun := slurmtest.Up(t)
	checkMPIWorld(t, okSrunMPI(t, srun, "pmi2", 4, mpichHello(t)), 4)
}

// Slurm's pmix plugin gives the tasks PMIX_* variables and no PMI_FD. Debian's MPICH is
// built without a PMIx client, finds no process manager and runs each rank as a
// singleton: 4 worlds of 1, each exiting 0.
func TestMPICHSrunPMIx(t *testing.T) {
	srun := slurmtest.Up(t)
	checkSingletons(t, okSrunMPI(t, srun, "pmix", 4, mpichHello(t)), 4)
}

// Hydra is MPICH's own process manager: PMI-1 on PMI_FD, one world of 4.
func TestMPICHHydra(t *testing.T) {
	hydra := needHydra(t)
	checkMPIWorld(t, launch(t, time.Minute, nil, hydra, hydraArgs(4, mpichHello(t))...), 4)
}

// mpirun.openmpi serves only PMIx, which Debian's MPICH does not speak: 4 worlds of 1.
func TestMPICHMpirun(t *testing.T) {
	mpirun := needOpenMPI(t)
	checkSingletons(t, launch(t, time.Minute, nil, mpirun, mpirunArgs(4, mpichHello(t))...), 4)
}

// Debian's Open MPI has no PMI-1 or PMI-2 component: under srun --mpi=pmi2 every rank's
// MPI_Init fails with Open MPI's message that it was not built with Slurm's PMI support,
// and the step fails.
func TestOpenMPISrunPMI2(t *testing.T) {
	srun := slurmtest.Up(t)
	out, errb, err := srunMPI(t, srun, "pmi2", 4, openMPIHello(t))
	var ee *exec.ExitError
	const want = "OMPI was not built with SLURM's PMI support"
	if !errors.As(err, &ee) || !strings.Contains(errb, want) {
		t.Errorf("srun --mpi=pmi2 of an Open MPI program ended with %v; want a failed step and %q\nstdout:\n%s\nstderr:\n%s", err, want, out, errb)
	}
}

// Open MPI's PMIx client joins Slurm's PMIx server (Debian's mpi_pmix_v4 plugin): one
// world of 4, for a C program and for mpi4py.
func TestOpenMPISrunPMIx(t *testing.T) {
	srun := slurmtest.Up(t)
	checkMPIWorld(t, okSrunMPI(t, srun, "pmix", 4, openMPIHello(t)), 4)
	python := needMPI4py(t)
	checkMPI4pyHello(t, okSrunMPI(t, srun, "pmix", 4, python, "-m", "mpi4py.bench", "helloworld"), 4)
}

// Hydra serves PMI-1 and PMI-2, not PMIx: an Open MPI rank finds no PMIx server and runs
// as a singleton: 4 worlds of 1. The 4 singletons make their session directory
// (TMPDIR/ompi.HOST.UID) at once, and one whose mkdir loses that race fails MPI_Init
// ("File exists"): the run gets a TMPDIR of its own with that directory made.
func TestOpenMPIHydra(t *testing.T) {
	hydra := needHydra(t)
	tmp := t.TempDir()
	host, _ := os.Hostname()
	host, _, _ = strings.Cut(host, ".")
	if err := os.Mkdir(filepath.Join(tmp, fmt.Sprintf("ompi.%s.%d", host, os.Getuid())), 0o700); err != nil {
		t.Fatal(err)
	}
	env := []string{"TMPDIR=" + tmp, "OMPI_MCA_orte_tmpdir_base=" + tmp}
	checkSingletons(t, launch(t, time.Minute, env, hydra, hydraArgs(4, openMPIHello(t))...), 4)
}

// Open MPI's own mpirun: one world of 4, for a C program and for mpi4py.
func TestOpenMPIMpirun(t *testing.T) {
	mpirun := needOpenMPI(t)
	checkMPIWorld(t, launch(t, time.Minute, nil, mpirun, mpirunArgs(4, openMPIHello(t))...), 4)
	python := needMPI4py(t)
	checkMPI4pyHello(t, launch(t, time.Minute, nil, mpirun, mpirunArgs(4, python, "-m", "mpi4py.bench", "helloworld")...), 4)
}

// needMPI4py returns Debian's python3 when it imports Debian's mpi4py (the first python3
// on PATH may be another one), or skips the test.
func needMPI4py(t *testing.T) string {
	t.Helper()
	const python = "/usr/bin/python3"
	if err := exec.Command(python, "-c", "import mpi4py").Run(); err != nil {
		testbudget.SkipEngine(t, "%s cannot import mpi4py (%v): apt-get install python3-mpi4py", python, err)
	}
	return python
}

// checkMPI4pyHello checks the output of mpi4py.bench helloworld for one world of n.
func checkMPI4pyHello(t *testing.T, out string, n int) {
	t.Helper()
	for r := range n {
		if want := fmt.Sprintf("Hello, World! I am process %d of %d on ", r, n); !strings.Contains(out, want) {
			t.Errorf("no line %q in the output:\n%s", want, out)
		}
	}
}
