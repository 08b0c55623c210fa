package runtime

import (
	"fmt"
	"io"
	"strconv"
)

// EnvQuietSingleton set to 1 silences Init's note on a job it cannot join (singletonHints).
const EnvQuietSingleton = "GORMA_QUIET_SINGLETON"

// singletonHints are the variables by which launchers tell a process that its job has
// more than one rank when they give it no PMI-1 or PMI-2 server, in the order Init reads
// them. Each names the job's size (empty: the launcher sets none) and this process's
// rank in it, and says what to do instead. SLURM_NTASKS is not one: a batch script sees
// it too, and a program run there without srun is rightly a world of one;
// SLURM_STEP_NUM_TASKS is set by srun only.
var singletonHints = []struct {
	size, rank string
	launcher   string
	fix        string
}{
	{"", "PMIX_RANK", "a PMIx launcher (srun --mpi=pmix, Open MPI's mpirun or prterun)",
		"start it with golaunch, srun --mpi=pmi2 or MPICH's mpiexec"},
	{"OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "Open MPI's mpirun",
		"start it with golaunch, srun --mpi=pmi2 or MPICH's mpiexec"},
	{"PMI_SIZE", "PMI_RANK", "a launcher that set PMI_SIZE but neither PMI_FD nor PMI_PORT",
		"start it with golaunch, or give it a PMI server"},
	{"SLURM_STEP_NUM_TASKS", "SLURM_PROCID", "srun without a PMI plugin (--mpi=none)",
		"run srun --mpi=pmi2"},
}

// noteSingleton prints to out, once per job, that the launcher set a world size that Init
// cannot join: every rank runs as a world of one. Init calls it when it found neither
// golaunch's contract nor a PMI server. Only the rank the launcher numbered 0 prints (a
// process whose rank variable is missing prints too), and EnvQuietSingleton=1 silences
// it.
func noteSingleton(getenv func(string) string, out io.Writer) {
	if getenv(EnvQuietSingleton) == "1" {
		return
	}
	for _, h := range singletonHints {
		rank := getenv(h.rank)
		size := sizeOf(getenv, h.size)
		switch {
		case h.size == "" && (rank == "" || size == 1):
			continue // no such launcher, or a job of one rank
		case h.size != "" && size <= 1:
			continue // unset, or a job of one rank: a world of one is right
		case rank != "" && rank != "0":
			return // rank 0 speaks for the job
		}
		what := fmt.Sprintf("%s=%s is set", h.rank, rank)
		if h.size != "" {
			what = fmt.Sprintf("%s=%d is set", h.size, size)
		}
		fmt.Fprintf(out, "gorma: %s: %s started this process, but offers no process manager that gorma speaks, "+
			"so every rank runs as a world of 1 rank; %s (%s=1 silences this note)\n",
			what, h.launcher, h.fix, EnvQuietSingleton)
		return
	}
}

// sizeOf is the job size that variable name holds, or, with name empty, the first that
// any hint's size variable holds; 0 when none is set to a number.
func sizeOf(getenv func(string) string, name string) int {
	for _, h := range singletonHints {
		if name != "" && h.size != name || h.size == "" {
			continue
		}
		if n, err := strconv.Atoi(getenv(h.size)); err == nil {
			return n
		}
	}
	return 0
}
