package runtime_test

import (
	"errors"
	"fmt"
	"os/exec"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
)

// The tests of this file start gorma ranks under Open MPI's mpirun (Debian's
// openmpi-bin, PMIx 4.2.2), whose ranks find its PMIx server in PMIX_SERVER_URI41.

// needOpenMPI returns mpirun.openmpi's path, or skips the test.
func needOpenMPI(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("mpirun.openmpi")
	if err != nil {
		testbudget.SkipEngine(t, "mpirun.openmpi not found: install Debian's openmpi-bin (apt-get install openmpi-bin) to run gorma ranks under a PMIx server")
	}
	return p
}

// mpirunArgs runs n ranks of prog on this host; as root, mpirun needs
// --allow-run-as-root, and --oversubscribe lets n exceed the cores.
func mpirunArgs(n int, prog string, args ...string) []string {
	a := []string{"--allow-run-as-root", "--oversubscribe", "-n", fmt.Sprint(n), prog}
	return append(a, args...)
}

// TestOpenMPIPMIxWorld: 4 gorma ranks under mpirun.openmpi form one World through its
// PMIx server, with the hash job-data store and with the server's default.
func TestOpenMPIPMIxWorld(t *testing.T) {
	mpirun := needOpenMPI(t)
	_, prog := buildPMIBins(t)
	for _, gds := range []string{"hash", ""} {
		env := []string{"PMIX_MCA_gds=" + gds}
		if gds == "" {
			env = nil // the server's default: shared-memory job data
		}
		out := launch(t, time.Minute, env, mpirun, mpirunArgs(4, prog, "--size", "4")...)
		checkWorld(t, out, 4)
	}
}

// TestOpenMPIPMIxAbort: a rank's Abort (PMIx abort, code 3) under mpirun ends the job
// while the other ranks wait in a Barrier.
func TestOpenMPIPMIxAbort(t *testing.T) {
	mpirun := needOpenMPI(t)
	_, prog := buildPMIBins(t)
	out, errb, err := launchErr(t, time.Minute, nil, mpirun, mpirunArgs(4, prog, "--abort", "1")...)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Errorf("mpirun.openmpi ended with %v, want exit status 3\nstdout:\n%s\nstderr:\n%s", err, out, errb)
	}
}
