package runtime_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/tests/slurmtest"
)

// launcherEnv is this process's environment without the variables of launchers and
// process managers, plus extra.
func launcherEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(name, "SLURM_"), strings.HasPrefix(name, "PMI_"), strings.HasPrefix(name, "PMIX_"),
			strings.HasPrefix(name, "OMPI_"), strings.HasPrefix(name, "GOLAUNCH_"), name == "GORMA_QUIET_SINGLETON":
			continue
		}
		env = append(env, kv)
	}
	return append(env, extra...)
}

// TestSingletonNote runs apps/hello as a process started by a launcher that set a job
// size but offers no process manager gorma speaks: it runs as a world of 1 and succeeds,
// and rank 0 alone says on stderr which variable it saw, unless GORMA_QUIET_SINGLETON=1.
func TestSingletonNote(t *testing.T) {
	hello, _ := buildPMIBins(t)
	for _, c := range []struct {
		name string
		env  []string
		note string // what stderr says; "" for nothing
	}{
		{"srun --mpi=none, rank 0", []string{"SLURM_STEP_NUM_TASKS=2", "SLURM_PROCID=0", "SLURM_NTASKS=2"}, "SLURM_STEP_NUM_TASKS=2 is set: srun without a PMI plugin (--mpi=none)"},
		{"srun --mpi=none, rank 1", []string{"SLURM_STEP_NUM_TASKS=2", "SLURM_PROCID=1", "SLURM_NTASKS=2"}, ""},
		{"srun -n 1", []string{"SLURM_STEP_NUM_TASKS=1", "SLURM_PROCID=0"}, ""},
		{"batch script", []string{"SLURM_NTASKS=4", "SLURM_PROCID=0"}, ""},
		{"pmix, rank 0", []string{"PMIX_RANK=0", "SLURM_STEP_NUM_TASKS=3", "SLURM_PROCID=0"}, "PMIX_RANK=0 is set: a PMIx launcher"},
		{"pmix, rank 2", []string{"PMIX_RANK=2"}, ""},
		{"pmix, one rank", []string{"PMIX_RANK=0", "SLURM_STEP_NUM_TASKS=1"}, ""},
		{"open mpi", []string{"OMPI_COMM_WORLD_SIZE=3", "OMPI_COMM_WORLD_RANK=0"}, "OMPI_COMM_WORLD_SIZE=3 is set: Open MPI's mpirun"},
		{"pmi size without a server", []string{"PMI_SIZE=2", "PMI_RANK=0"}, "PMI_SIZE=2 is set: a launcher that set PMI_SIZE but neither PMI_FD nor PMI_PORT"},
		{"silenced", []string{"SLURM_STEP_NUM_TASKS=2", "SLURM_PROCID=0", "GORMA_QUIET_SINGLETON=1"}, ""},
		{"no launcher", nil, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(time.Minute))
			defer cancel()
			cmd := exec.CommandContext(ctx, hello)
			cmd.Env = launcherEnv(c.env...)
			var out, errb bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errb
			if err := cmd.Run(); err != nil {
				t.Fatalf("hello with %v: %v\nstdout:\n%s\nstderr:\n%s", c.env, err, out.String(), errb.String())
			}
			if !strings.Contains(out.String(), "hello from rank 0 of 1 ") {
				t.Errorf("hello with %v is not a world of 1:\n%s", c.env, out.String())
			}
			stderr := errb.String()
			switch {
			case c.note == "" && stderr != "":
				t.Errorf("hello with %v printed on stderr:\n%s", c.env, stderr)
			case c.note != "" && (!strings.Contains(stderr, c.note) || !strings.Contains(stderr, "every rank runs as a world of 1 rank") ||
				!strings.Contains(stderr, "GORMA_QUIET_SINGLETON=1 silences this note") || strings.Count(stderr, "\n") != 1):
				t.Errorf("hello with %v: stderr %q, want one line with %q", c.env, stderr, c.note)
			}
		})
	}
}

// TestSlurmSingletonNote runs apps/hello under srun -n 2 --mpi=none: two worlds of 1
// that succeed, and one note on stderr, from the rank srun numbered 0.
func TestSlurmSingletonNote(t *testing.T) {
	srun := slurmtest.Up(t)
	hello, _ := buildPMIBins(t)
	timeout := testbudget.Scale(3 * time.Minute)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := srun(ctx, "-n", "2", "--mpi=none", "--oversubscribe", hello)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("srun -n 2 --mpi=none hello: %v (timeout %v)\nstdout:\n%s\nstderr:\n%s", err, timeout, out.String(), errb.String())
	}
	if n := strings.Count(out.String(), "hello from rank 0 of 1 "); n != 2 {
		t.Errorf("%d worlds of 1, want 2:\n%s", n, out.String())
	}
	want := fmt.Sprintf("gorma: SLURM_STEP_NUM_TASKS=%d is set: srun without a PMI plugin", 2)
	if n := strings.Count(errb.String(), want); n != 1 {
		t.Errorf("%d notes %q on stderr, want 1:\n%s", n, want, errb.String())
	}
}
