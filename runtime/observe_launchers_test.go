package runtime_test

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/prof"
	"github.com/gorma-hpc/gorma/tests/slurmtest"
)

// checkJobProfile checks the profile a job of n pmiworld ranks left in dir: every rank's
// files, and rank 0's job document of n ranks with none missing, whose put matrix holds
// the window ring's Puts (each rank to the next).
func checkJobProfile(t *testing.T, dir string, n int) {
	t.Helper()
	for r := range n {
		for _, ext := range []string{".prof", ".json"} {
			if _, err := os.Stat(filepath.Join(dir, "prof."+strconv.Itoa(r)+ext)); err != nil {
				t.Error(err)
			}
		}
	}
	f, err := os.Open(filepath.Join(dir, "job.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	job, err := prof.ReadJob(f)
	if err != nil {
		t.Fatal(err)
	}
	if job.Size != n || len(job.Missing) != 0 {
		t.Fatalf("job.json: size %d, missing %v; want %d ranks, none missing", job.Size, job.Missing, n)
	}
	put := job.Matrix(prof.Put)
	for r := range n {
		if put.Msgs[r][(r+1)%n] == 0 {
			t.Errorf("job.json: no Put from rank %d to %d: %v", r, (r+1)%n, put.Msgs)
		}
	}
}

// TestObserveUnderLaunchers: GORMA_PROFILE works under mpirun (PMIx) and srun (PMI-2),
// not only golaunch: the ranks gather the job's profile at rank 0 themselves.
func TestObserveUnderLaunchers(t *testing.T) {
	_, prog := buildPMIBins(t)
	t.Run("mpirun", func(t *testing.T) {
		mpirun := needOpenMPI(t)
		dir := filepath.Join(t.TempDir(), "prof")
		args := append([]string{"-x", "GORMA_PROFILE=" + dir}, mpirunArgs(4, prog, "--size", "4")...)
		checkWorld(t, launch(t, time.Minute, nil, mpirun, args...), 4)
		checkJobProfile(t, dir, 4)
	})
	t.Run("srun", func(t *testing.T) {
		srun := slurmtest.Up(t)
		dir := filepath.Join(t.TempDir(), "prof")
		env := []string{"GORMA_PROGRESS=block", "GORMA_PROFILE=" + dir}
		checkWorld(t, runSrun(t, srun, 3*time.Minute, env, srunArgs(4, prog, "--size", "4")...), 4)
		checkJobProfile(t, dir, 4)
	})
}
