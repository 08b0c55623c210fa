package launcher

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/launcher/internal/netns"
)

// MPI programs that Debian's Open MPI 4.1 builds: it has no PMI-1 component, so its ranks
// join their job through the agent's PMIx server (pmixenv.go), as under mpirun. The C
// sources are the MPICH tests' and bench/mpi's, built with mpicc.openmpi once per test
// binary; the tests skip, saying which package to install, where it is absent.
var ompiProgs = &cPrograms{mpicc: "mpicc.openmpi", pkgs: "Debian's openmpi-bin and libopenmpi-dev", suffix: "_ompi",
	sources: map[string]string{
		"hello":          "../bench/mpi/hello.c",
		"allreduce":      "../tests/mpi/allreduce.c",
		"putfence":       "../tests/mpi/putfence.c",
		"split":          "../tests/mpi/split.c",
		"abort":          "../tests/mpi/abort.c",
		"hang":           "../tests/mpi/hang.c",
		"spawn":          "../tests/mpi/spawn.c",
		"session":        "../tests/mpi/session.c",
		"allreducebench": "../bench/mpi/allreducebench.c",
		"halobench":      "../bench/mpi/halobench.c",
		"pingpong":       "../bench/mpi/pingpong.c",
		"rmabench":       "../bench/mpi/rmabench.c",
		"scalebench":     "../bench/mpi/scalebench.c",
	}}

// The Open MPI programs run under golaunch -n 4 on one host: one world of 4, every check
// passed, exit 0.
func TestOpenMPIOneHost(t *testing.T) {
	checkOneHost(t, ompiProgs.build(t))
}

// The C twins of apps/ built with Open MPI run to completion under golaunch with short
// runs, and rank 0 reports for the whole world. Each checks its own results and aborts
// on a wrong one. pingpong and rmabench need exactly 2 ranks, halobench at least 2.
func TestOpenMPIBenchTwins(t *testing.T) {
	progs := ompiProgs.build(t)
	for _, tc := range []struct {
		name, prog string
		flags      []string // golaunch's
		args       []string // the program's
		want       []string // lines of rank 0's output, without the "[0] " prefix
	}{
		{"allreducebench", "allreducebench", []string{"-n", "4"}, []string{"--test", "colls", "--sizes", "8,4K", "--iters", "20", "--min-iters", "5"},
			[]string{"# Open MPI allreducebench (OSU method): 4 ranks on 1 host(s)", "# allreduce: float64 sum", "# alltoall:", "# barrier"}},
		{"halobench", "halobench", []string{"-n", "4"}, []string{"--sizes", "64,256", "--iters", "20", "--warmup", "5"},
			[]string{"# Open MPI halobench (MPI_Type_vector column, MPI_Sendrecv): 4 ranks in a ring", "256 "}},
		{"pingpong", "pingpong", []string{"-n", "2"}, []string{"--max-size", "1024", "--iters", "50", "--bw-iters", "5"},
			[]string{"# Open MPI pingpong (OSU method)", "# latency: half round trip", "# bandwidth:", "1024 "}},
		// Open MPI 4.1.4's default one-sided component (osc/rdma over btl/vader) crashes the
		// target in MPI_Compare_and_swap (scripts/compare-rma.sh says so too): cas_lat runs
		// on its own with osc/sm.
		{"rmabench", "rmabench", []string{"-n", "2"}, []string{"--test", "put_lat,get_lat,put_bw,get_bw,acc_lat,fop_lat,busy_get,fence,lock_put,alloc_free",
			"--max-size", "64", "--iters", "20", "--bw-iters", "5", "--alloc-iters", "3", "--busy", "5ms", "--busy-reps", "2"},
			[]string{"# Open MPI rmabench (OSU one-sided method)", "# put_lat.pscw:", "# get_bw:", "# fop_lat:", "# busy_get:", "# alloc_free.create:"}},
		{"rmabench_cas_osc_sm", "rmabench", []string{"-n", "2", "-x", "OMPI_MCA_osc=sm"}, []string{"--test", "cas_lat", "--iters", "20"},
			[]string{"# Open MPI rmabench (OSU one-sided method)", "# cas_lat:"}},
		{"scalebench", "scalebench", []string{"-n", "4"}, []string{"--iters", "10", "--big-iters", "2", "--window-size", "65536"},
			[]string{"# Open MPI scalebench: 4 ranks", "allreduce_1m_us", "win_allocate_us", "fds"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"--timeout", testbudget.Scale(45 * time.Second).String()}, tc.flags...)
			r := runGL(t, "", append(append(args, progs[tc.prog]), tc.args...)...)
			if r.code != 0 {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
			}
			for _, w := range tc.want {
				mustContain(t, "output", "\n"+r.stdout, "\n[0] "+w)
			}
		})
	}
}

// mpi4py finds Debian's python3-mpi4py under /usr/bin/python3 (the first python3 on PATH
// may be another one, without it), or skips.
func mpi4py(t *testing.T) string {
	t.Helper()
	const python = "/usr/bin/python3"
	if err := exec.Command(python, "-c", "import mpi4py").Run(); err != nil {
		testbudget.SkipEngine(t, "%s -c 'import mpi4py': %v: install Debian's python3-mpi4py", python, err)
	}
	return python
}

// mpi4py's own benchmarks, from Debian's python3-mpi4py (an Open MPI build), under
// golaunch -n 4: helloworld prints one line per rank of the world of 4, passed along the
// ranks in order; ringtest passes a message around the ring, checks what comes back and
// aborts on a difference.
func TestOpenMPI4py(t *testing.T) {
	python := mpi4py(t)
	binaries(t)
	timeout := testbudget.Scale(45 * time.Second).String()
	t.Run("helloworld", func(t *testing.T) {
		r := runGL(t, "", "-n", "4", "--timeout", timeout, python, "-m", "mpi4py.bench", "helloworld")
		if r.code != 0 {
			t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
		}
		for rank := range 4 {
			mustContain(t, "output", r.stdout, fmt.Sprintf("[%d] Hello, World! I am process %d of 4 on ", rank, rank))
		}
	})
	t.Run("ringtest", func(t *testing.T) {
		r := runGL(t, "", "-n", "4", "--timeout", timeout, python, "-m", "mpi4py.bench", "ringtest", "-n", "1024", "-l", "10", "-s", "2")
		if r.code != 0 {
			t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
		}
		mustContain(t, "output", r.stdout, "[0] time for 10 loops = ")
		mustContain(t, "output", r.stdout, " seconds (4 processes, 1024 bytes)\n")
	})
}

// An Open MPI rank killed by SIGKILL ends the job with 137 and one summary line naming
// it, as an MPICH rank does; no rank survives.
func TestOpenMPIRankKilled(t *testing.T) {
	checkRankKilled(t, ompiProgs.build(t)["abort"])
}

// MPI_Abort of an Open MPI rank reaches golaunch as a PMIx abort and ends the job with
// its code; a rank that exits 0 without MPI_Finalize fails the job (125): as for MPICH
// programs.
func TestOpenMPIAbortRules(t *testing.T) {
	checkAbortRules(t, ompiProgs.build(t)["abort"])
}

// An Open MPI program that hangs where golaunch sees only its PMIx calls: rank 1 waits in
// MPI_Finalize's PMIx fence while rank 0 waits in MPI_Recv for it. The quiet check,
// SIGUSR1 and --timeout each print both ranks with their pids, and no line claims a
// deadlock.
func TestOpenMPIHangReport(t *testing.T) {
	checkForeignHang(t, ompiProgs.build(t)["hang"], "PMIx", "fence", "a PMIx fence")
}

// MPI_Comm_spawn of an Open MPI rank, with MPI_ERRORS_RETURN (tests/mpi/spawn.c). In a job
// of 2 ranks Open MPI would give the error to the root alone, and rank 1 would wait for
// ever: golaunch ends the job at once (125), with one line that names rank 0, its host
// and pid, the program and what to do. In a job of 1 rank the rank gets the error and
// goes on: golaunch exits 0.
func TestOpenMPISpawnRefused(t *testing.T) {
	spawn := ompiProgs.build(t)["spawn"]
	timeout := testbudget.Scale(45 * time.Second).String()
	r := runGL(t, "", "-n", "2", "--timeout", timeout, spawn)
	sum := summaryLines(r.stderr)
	prefix := "golaunch: rank 0 (host " + hostName() + ", pid "
	want := ") asked to spawn /bin/true (MPI_Comm_spawn over PMIx): golaunch does not start programs for Open MPI's " +
		"MPI_Comm_spawn, and the spawn's other ranks would wait for ever; run the job under mpirun, or grow a gorma job " +
		"with World.Spawn; job aborted"
	if r.code != ExitFailure || len(sum) != 1 || !strings.HasPrefix(sum[0], prefix) || !strings.HasSuffix(sum[0], want) {
		t.Fatalf("2 ranks: exit %d, summary %q; want %d and %q...%q\nstderr:\n%s", r.code, sum, ExitFailure, prefix, want, r.stderr)
	}
	r = runGL(t, "", "-n", "1", "--timeout", timeout, spawn)
	if r.code != 0 {
		t.Fatalf("1 rank: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	mustContain(t, "output", r.stdout, "rank 0: MPI_Comm_spawn returned an error\n")
}

// The Open MPI programs over the netns agent cluster: 2 hosts of 2 ranks, then a rank
// on the second host killed by SIGKILL (137) and one calling MPI_Abort (its code), then
// the bench/mpi twins that take 4 ranks and mpi4py's helloworld and ringtest.
//
// Every pair of ranks talks over btl/tcp, across the namespaces' links. The test hosts
// are namespaces of one machine: they share its hostname and /dev/shm, and Open MPI 4.1
// names btl/vader's shared-memory segment by hostname, job and local rank
// (/dev/shm/vader_segment.HOST.JOB.LOCALRANK), so local rank 0 of h0 and local rank 0
// of h1 would map the same segment and corrupt each other's messages. One-sided
// communication across hosts takes osc/pt2pt: osc/rdma needs a btl with RDMA to every
// peer, and Debian's /etc/openmpi/openmpi-mca-params.conf turns osc/pt2pt off.
func TestNetnsOpenMPI(t *testing.T) {
	if ok, why := netns.Available(); !ok {
		t.Skip(why)
	}
	progs := ompiProgs.build(t)
	python := mpi4py(t)
	checkNetns(t, progs, func(t *testing.T, submit netnsSubmit) {
		for _, tc := range []struct {
			name string
			args []string
			want []string // lines of rank 0's output, without the "[0] " prefix
		}{
			// The hosts are namespaces of one machine: MPI_Get_processor_name names one host.
			{"allreducebench", []string{progs["allreducebench"], "--test", "colls", "--sizes", "8,4K", "--iters", "10", "--min-iters", "3"},
				[]string{"# Open MPI allreducebench (OSU method): 4 ranks on ", "# alltoall:", "# barrier"}},
			{"halobench", []string{progs["halobench"], "--sizes", "64,256", "--iters", "20", "--warmup", "5"},
				[]string{"# Open MPI halobench (MPI_Type_vector column, MPI_Sendrecv): 4 ranks in a ring", "256 "}},
			{"scalebench", []string{progs["scalebench"], "--iters", "10", "--big-iters", "2", "--window-size", "65536"},
				[]string{"# Open MPI scalebench: 4 ranks", "win_allocate_us"}},
			{"mpi4py helloworld", []string{python, "-m", "mpi4py.bench", "helloworld"}, []string{"Hello, World! I am process 0 of 4 on "}},
			{"mpi4py ringtest", []string{python, "-m", "mpi4py.bench", "ringtest", "-n", "1024", "-l", "10", "-s", "2"}, []string{"time for 10 loops = "}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				code, out, stderr := netnsRun(t, submit, append([]string{"-n", "4"}, tc.args...)...)
				if code != 0 {
					t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
				}
				for _, w := range tc.want {
					mustContain(t, "output", "\n"+out, "\n[0] "+w)
				}
			})
		}
	}, "-x", "OMPI_MCA_btl=self,tcp", "-x", "OMPI_MCA_osc=pt2pt")
}

// A real application that Debian builds on Open MPI, under golaunch -n 4, checking its
// own result: MUMPS's sparse direct solver (mumps-test's dsimpletest, in Fortran, over
// ScaLAPACK) on its example system, which rank 0 reads from golaunch's stdin.
func TestOpenMPIMUMPS(t *testing.T) {
	binaries(t)
	const dir = "/usr/lib/mumps"
	input, err := os.ReadFile(filepath.Join(dir, "input_simpletest_real"))
	if err != nil {
		testbudget.SkipEngine(t, "MUMPS's dsimpletest not found: install Debian's mumps-test")
	}
	r := runGL(t, string(input), "-n", "4", "--timeout", testbudget.Scale(45*time.Second).String(), filepath.Join(dir, "dsimpletest"))
	if r.code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	mustContain(t, "output", r.stdout, "Number of working processes                =               4\n")
	checkMUMPSSolution(t, r.stdout)
}

// checkMUMPSSolution fails unless stdout has dsimpletest's "Solution is" line with the
// solution of its example system, 1 2 3 4 5, to 1e-9.
func checkMUMPSSolution(t *testing.T, stdout string) {
	t.Helper()
	_, sol, ok := strings.Cut(stdout, "Solution is")
	if !ok {
		t.Fatalf("no solution in the output:\n%s", stdout)
	}
	sol, _, _ = strings.Cut(sol, "\n")
	f := strings.Fields(sol)
	if len(f) != 5 {
		t.Fatalf("solution %q: want 5 values", sol)
	}
	for i, s := range f {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || v < float64(i+1)-1e-9 || v > float64(i+1)+1e-9 {
			t.Fatalf("solution %q: value %d is %s, want %d", sol, i+1, s, i+1)
		}
	}
}
