package launcher

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/launcher/internal/netns"
)

// MPI programs that other people's MPI (Debian's MPICH) builds: golaunch serves them
// PMI-1 on PMI_FD, as mpiexec.hydra would. Built with mpicc.mpich once per test binary;
// the tests skip, saying which package to install, where it is absent.
var mpiSources = map[string]string{
	"hello":     "../bench/mpi/hello.c",
	"allreduce": "../tests/mpi/allreduce.c",
	"putfence":  "../tests/mpi/putfence.c",
	"split":     "../tests/mpi/split.c",
	"abort":     "../tests/mpi/abort.c",
	"appnum":    "../tests/mpi/appnum.c",
	"hang":      "../tests/mpi/hang.c",
	"spawn":     "../tests/mpi/spawn.c",
	"session":   "../tests/mpi/session.c",
}

var mpichProgs = &cPrograms{mpicc: "mpicc.mpich", pkgs: "Debian's mpich and libmpich-dev", suffix: "_c", sources: mpiSources}

// mpiProgs builds the MPICH programs (or skips) and returns their paths by name.
func mpiProgs(t *testing.T) map[string]string {
	t.Helper()
	return mpichProgs.build(t)
}

// cPrograms is a set of C MPI programs built with one MPI's compiler wrapper into binDir,
// once per test binary.
type cPrograms struct {
	mpicc   string            // the compiler wrapper, looked up on PATH
	pkgs    string            // the Debian packages that provide it, named when it is absent
	suffix  string            // appended to each program's name in binDir
	sources map[string]string // name → source file, relative to launcher/

	once sync.Once
	bins map[string]string
	err  error
}

// build builds the programs (or skips the test) and returns their paths by name.
func (p *cPrograms) build(t *testing.T) map[string]string {
	t.Helper()
	binaries(t)
	mpicc, err := exec.LookPath(p.mpicc)
	if err != nil {
		testbudget.SkipEngine(t, "%s not found: install %s to run its MPI programs under golaunch", p.mpicc, p.pkgs)
	}
	p.once.Do(func() {
		p.bins = map[string]string{}
		for name, src := range p.sources {
			bin := filepath.Join(binDir, name+p.suffix)
			ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(2*time.Minute))
			out, err := exec.CommandContext(ctx, mpicc, "-O1", "-o", bin, src).CombinedOutput()
			cancel()
			if err != nil {
				p.err = fmt.Errorf("%s %s: %v\n%s", p.mpicc, src, err, out)
				return
			}
			p.bins[name] = bin
		}
	})
	if p.err != nil {
		t.Fatal(p.err)
	}
	return p.bins
}

// mpiWant is what each checked program prints on success, per rank r of n.
func mpiWant(name string, r, n int) string {
	switch name {
	case "hello":
		return fmt.Sprintf("hello from rank %d of %d on ", r, n)
	case "allreduce":
		return fmt.Sprintf("allreduce ok rank %d of %d sum %d", r, n, n*(n+1)/2)
	case "putfence":
		return fmt.Sprintf("putfence ok rank %d of %d", r, n)
	case "split":
		return fmt.Sprintf("split ok rank %d color %d", r, r%2)
	}
	panic(name)
}

// checkMPIRun fails unless a run of name with n ranks exited 0 and every rank printed its
// success line.
func checkMPIRun(t *testing.T, name string, n, code int, stdout, stderr string) {
	t.Helper()
	if code != 0 {
		t.Fatalf("%s: exit %d\nstdout:\n%s\nstderr:\n%s", name, code, stdout, stderr)
	}
	for r := range n {
		mustContain(t, name+" output", stdout, fmt.Sprintf("[%d] ", r)+mpiWant(name, r, n))
	}
	if name == "hello" {
		mustContain(t, "hello output", stdout, fmt.Sprintf("[0] ring token %d ok", n*(n-1)/2))
	}
}

// The MPICH programs run under golaunch -n 4 on one host: one world of 4, every check
// passed, exit 0.
func TestMPIOneHost(t *testing.T) {
	checkOneHost(t, mpiProgs(t))
}

// checkOneHost runs hello, allreduce, putfence and split of progs under golaunch -n 4 on
// one host: one world of 4, every check passed, exit 0.
func checkOneHost(t *testing.T, progs map[string]string) {
	for _, name := range []string{"hello", "allreduce", "putfence", "split"} {
		t.Run(name, func(t *testing.T) {
			r := runGL(t, "", "-n", "4", "--timeout", testbudget.Scale(45*time.Second).String(), progs[name])
			checkMPIRun(t, name, 4, r.code, r.stdout, r.stderr)
		})
	}
}

// An MPI rank killed by SIGKILL ends the job with 137 and one summary line naming it,
// as a gorma rank does; no rank survives.
func TestMPIRankKilled(t *testing.T) {
	checkRankKilled(t, mpiProgs(t)["abort"])
}

// checkRankKilled kills rank 2 of abort (tests/mpi/abort.c) in its hang scenario under
// golaunch -n 4: the job ends with 137 and one summary line naming the rank; no rank
// survives.
func checkRankKilled(t *testing.T, abort string) {
	t.Helper()
	gl := startGL(t, "-n", "4", "--grace", "500ms", "--timeout", testbudget.Scale(45*time.Second).String(), abort, "hang")
	pids := gl.readyPids(t, 4)
	syscall.Kill(pids[2], syscall.SIGKILL)
	code := gl.wait(t, 30*time.Second)
	sum := summaryLines(gl.stderr.String())
	want := fmt.Sprintf("golaunch: rank 2 (host %s, pid %d) killed by signal 9 (SIGKILL); job aborted", hostName(), pids[2])
	if code != ExitSignalBase+9 || len(sum) != 1 || sum[0] != want {
		t.Fatalf("exit %d, summary %q; want %d and %q\nstderr:\n%s", code, sum, ExitSignalBase+9, want, gl.stderr.String())
	}
	requireGone(t, pids, 5*time.Second)
}

// MPI_Abort(MPI_COMM_WORLD, 3) reaches golaunch as a PMI abort: the job ends with 3 and
// a summary naming the rank; MPI_Abort never returns to the rank, which the abort ends.
// A rank that leaves with exit(0) after MPI_Init but without MPI_Finalize fails the
// job (125), as a gorma rank that skips Finalize does.
func TestMPIAbortRules(t *testing.T) {
	checkAbortRules(t, mpiProgs(t)["abort"])
}

// checkAbortRules runs abort (tests/mpi/abort.c) under golaunch -n 4: rank 1 calling
// MPI_Abort(MPI_COMM_WORLD, 3) ends the job with 3, and rank 2 leaving with exit(0)
// without MPI_Finalize with 125; each with one summary line naming the rank.
func checkAbortRules(t *testing.T, abort string) {
	t.Helper()
	r := runGL(t, "", "-n", "4", "--grace", "500ms", "--timeout", testbudget.Scale(45*time.Second).String(), abort, "abort", "3", "1")
	sum := summaryLines(r.stderr)
	if r.code != 3 || len(sum) != 1 || !strings.HasPrefix(sum[0], "golaunch: rank 1 (host ") || !strings.HasSuffix(sum[0], "called Abort(3); job aborted") {
		t.Fatalf("MPI_Abort: exit %d, summary %q\nstderr:\n%s", r.code, sum, r.stderr)
	}
	r = runGL(t, "", "-n", "4", "--grace", "500ms", "--timeout", testbudget.Scale(45*time.Second).String(), abort, "nofinalize", "2")
	sum = summaryLines(r.stderr)
	if r.code != ExitFailure || len(sum) != 1 || !strings.Contains(sum[0], "rank 2 (host ") || !strings.HasSuffix(sum[0], "exited without calling Finalize (call w.Finalize(ctx), or MPI_Finalize, before the program exits); job aborted") {
		t.Fatalf("exit without MPI_Finalize: exit %d, summary %q\nstderr:\n%s", r.code, sum, r.stderr)
	}
}

// An MPICH program that hangs where golaunch sees only its PMI-1 calls: rank 1 waits in
// MPI_Finalize's barrier_in while rank 0 waits in MPI_Recv for it. The quiet check,
// SIGUSR1 and --timeout each print both ranks with their pids, and no line claims a
// deadlock.
func TestMPIHangReport(t *testing.T) {
	checkForeignHang(t, mpiProgs(t)["hang"], "PMI-1", "barrier_in", "a PMI-1 barrier (barrier_in)")
}

// checkForeignHang runs hang (tests/mpi/hang.c) under golaunch -n 2 with --hang-report 3s
// and --timeout. The ranks' PMI requests go over wire; rank 1 waits in its fence request,
// which the quiet report's heading names as prose. It checks the quiet report (its heading
// states the facts: rank 1 waits in the fence, rank 0 still runs), a report on SIGUSR1,
// the report at the timeout and exit 124. Each report names rank 1 in the fence and rank
// 0 running MPI code, with their pids; no line says deadlock.
func checkForeignHang(t *testing.T, hang, wire, fence, prose string) {
	t.Helper()
	const period = 3 * time.Second
	timeout := testbudget.Scale(15 * time.Second)
	gl := startGL(t, "-n", "2", "--hang-report", period.String(), "--timeout", timeout.String(), hang)
	pids := gl.readyPids(t, 2)
	// Rank 1 enters its fence right after its ready line: the quiet report comes within
	// 1.25 periods of it, plus the ranks' answer times.
	gl.waitStderr(t, "golaunch: where the ranks are (no PMI or PMIx call has completed for ", period+period/4+5*time.Second)
	gl.cmd.Process.Signal(syscall.SIGUSR1)
	gl.waitStderr(t, "golaunch: where the ranks are (SIGUSR1 to golaunch):\n", 10*time.Second)
	if code := gl.wait(t, timeout+30*time.Second); code != ExitTimeout {
		t.Fatalf("exit %d, want %d (--timeout)\nstderr:\n%s", code, ExitTimeout, gl.stderr.String())
	}
	out := gl.stderr.String()
	mustContain(t, "stderr", out, fmt.Sprintf("; rank 1 (pid %d) waits in %s and rank 0 (pid %d) still runs):\n", pids[1], prose, pids[0]))
	blocks := strings.Split(out, "golaunch: where the ranks are (")[1:]
	if len(blocks) != 3 {
		t.Fatalf("%d reports, want the quiet one, SIGUSR1's and the timeout's:\n%s", len(blocks), out)
	}
	for _, b := range blocks {
		mustContain(t, "report", b, fmt.Sprintf("golaunch:   rank 0 (pid %d): runs MPI code (not a gorma rank: golaunch sees only its PMI calls); last %s request ", pids[0], wire))
		mustContain(t, "report", b, fmt.Sprintf("golaunch:   rank 1 (pid %d): in %s %s (MPI_Init or MPI_Finalize) for ", pids[1], wire, fence))
	}
	mustContain(t, "the last report", blocks[2], "job timed out after ")
	if strings.Contains(out, "deadlock") {
		t.Errorf("a report of ranks whose MPI calls golaunch cannot see claims a deadlock:\n%s", out)
	}
}

// MPICH's MPI_Comm_spawn under golaunch: the agent refuses the PMI-1 spawn (rc=-1), and
// MPICH gives the error to every rank of the spawn, which goes on. So golaunch leaves the
// job alone: both ranks print the error, finalize and exit 0.
func TestMPISpawnRefused(t *testing.T) {
	r := runGL(t, "", "-n", "2", "--timeout", testbudget.Scale(45*time.Second).String(), mpiProgs(t)["spawn"])
	if r.code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	for rank := range 2 {
		mustContain(t, "output", r.stdout, fmt.Sprintf("[%d] rank %d: MPI_Comm_spawn returned an error\n", rank, rank))
	}
}

// Every rank gets PMI_FD, PMI_RANK and PMI_SIZE (and Hydra's MPI_LOCALRANKID and
// MPI_LOCALNRANKS), whatever PMI_* variables golaunch itself inherited (they describe
// golaunch's own process manager); -x still sets one.
func TestPMIEnvironment(t *testing.T) {
	binaries(t)
	ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(time.Minute))
	defer cancel()
	cmd := exec.CommandContext(ctx, golaunchBin, "-n", "2", "-x", "PMI_DEBUG=0",
		pmiprogBin, "env", "PMI_RANK", "PMI_SIZE", "PMI_FD", "PMI_PORT", "PMI_ID", "PMI_DEBUG", "MPI_LOCALRANKID", "MPI_LOCALNRANKS")
	cmd.Env = append(glEnv(), "PMI_PORT=bogus:1", "PMI_ID=7", "PMI_FD=99", "PMI_RANK=5")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("golaunch: %v\n%s", err, out)
	}
	for rank := range 2 {
		for _, want := range []string{"PMI_RANK=" + fmt.Sprint(rank), "PMI_SIZE=2", "PMI_PORT=", "PMI_ID=", "PMI_DEBUG=0",
			"MPI_LOCALRANKID=" + fmt.Sprint(rank), "MPI_LOCALNRANKS=2"} {
			mustContain(t, "output", string(out), fmt.Sprintf("env %d %s\n", rank, want))
		}
		if strings.Contains(string(out), fmt.Sprintf("env %d PMI_FD=\n", rank)) || strings.Contains(string(out), fmt.Sprintf("env %d PMI_FD=99\n", rank)) {
			t.Errorf("rank %d has no PMI_FD of its own:\n%s", rank, out)
		}
	}
}

// The MPICH programs over the netns agent cluster: 2 hosts of 2 ranks, then a rank on
// the second host killed by SIGKILL (137) and one calling MPI_Abort (its code). UCX keeps
// its defaults (ranks in different network namespaces of one machine still reach each
// other over shared memory); every run is bounded by --timeout.
func TestNetnsMPI(t *testing.T) {
	if ok, why := netns.Available(); !ok {
		t.Skip(why)
	}
	checkNetns(t, mpiProgs(t), nil)
}

// The same MPICH programs over the netns agent cluster on gorma's own libmpich.so.12
// (abi/mpich), loaded through LD_LIBRARY_PATH: their ranks run on gorma's runtime across
// the two hosts. A --profile run shows it: only gorma's runtime writes one.
func TestNetnsGormaLibmpich(t *testing.T) {
	if ok, why := netns.Available(); !ok {
		t.Skip(why)
	}
	progs := mpiProgs(t)
	lib := gormaLibmpich(t)
	checkNetns(t, progs, func(t *testing.T, submit netnsSubmit) {
		t.Run("profile", func(t *testing.T) {
			prof := filepath.Join(t.TempDir(), "prof")
			code, out, errOut := netnsRun(t, submit, "-n", "4", "--profile", prof, progs["allreduce"])
			checkMPIRun(t, "allreduce", 4, code, out, errOut)
			sum, err := os.ReadFile(filepath.Join(prof, "summary.txt"))
			if err != nil {
				t.Fatalf("no profile from gorma's library: %v\nstderr:\n%s", err, errOut)
			}
			if !regexp.MustCompile(`(?m)^ +Allreduce +[1-9]`).Match(sum) {
				t.Errorf("the profile's summary has no Allreduce calls:\n%s", sum)
			}
		})
	}, "-x", "LD_LIBRARY_PATH="+lib)
}

// gormaLibmpich builds gorma's libmpich.so.12 into a folder of binDir, once per test
// binary, and returns the folder. It skips where there is no C compiler.
func gormaLibmpich(t *testing.T) string {
	t.Helper()
	binaries(t)
	if _, err := exec.LookPath("gcc"); err != nil {
		testbudget.SkipEngine(t, "gcc is not installed (Debian: apt-get install gcc): it builds gorma's libmpich.so.12")
	}
	libOnce.Do(func() {
		dir := filepath.Join(binDir, "gormalib")
		ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(5*time.Minute))
		defer cancel()
		cmd := exec.CommandContext(ctx, "go", "build", "-buildmode=c-shared", "-ldflags=-extldflags=-Wl,-soname,libmpich.so.12",
			"-o", filepath.Join(dir, "libmpich.so.12"), "../abi/mpich/libmpich")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			libErr = fmt.Errorf("building gorma's libmpich.so.12: %v\n%s", err, out)
			return
		}
		libDir = dir
	})
	if libErr != nil {
		t.Fatal(libErr)
	}
	return libDir
}

var (
	libOnce sync.Once
	libDir  string
	libErr  error
)

// checkNetns runs hello, allreduce, putfence and split of progs over a netns agent
// cluster of 2 hosts of 2 ranks, then abort (tests/mpi/abort.c) with a rank on the
// second host killed by SIGKILL (137) and one calling MPI_Abort (its code). Every
// golaunch command line starts with flags; every run is bounded by --timeout.
func checkNetns(t *testing.T, progs map[string]string, more func(t *testing.T, submit netnsSubmit), flags ...string) {
	ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(3*time.Minute))
	defer cancel()
	c := startNetnsCluster(t, ctx, 2, 2)
	var submit netnsSubmit = func(t *testing.T, args ...string) *running {
		t.Helper()
		return c.submitFrom0(t, ctx, append(append([]string{}, flags...), args...)...)
	}
	for _, name := range []string{"hello", "allreduce", "putfence", "split"} {
		t.Run(name, func(t *testing.T) {
			gl := submit(t, "-n", "4", "--timeout", testbudget.Scale(45*time.Second).String(), progs[name])
			code := gl.wait(t, 60*time.Second)
			var out []string
			for l := range gl.lines {
				out = append(out, l)
			}
			checkMPIRun(t, name, 4, code, strings.Join(out, "\n")+"\n", gl.stderr.String())
		})
	}
	t.Run("killed", func(t *testing.T) {
		gl := submit(t, "-n", "4", "--grace", "500ms", "--timeout", testbudget.Scale(45*time.Second).String(), progs["abort"], "hang")
		pids := gl.readyPids(t, 4)
		syscall.Kill(pids[3], syscall.SIGKILL)
		code := gl.wait(t, 30*time.Second)
		sum := summaryLines(gl.stderr.String())
		want := fmt.Sprintf("golaunch: rank 3 (host h1, pid %d) killed by signal 9 (SIGKILL); job aborted", pids[3])
		if code != ExitSignalBase+9 || len(sum) != 1 || sum[0] != want {
			t.Fatalf("exit %d, summary %q; want %d and %q\nstderr:\n%s", code, sum, ExitSignalBase+9, want, gl.stderr.String())
		}
		requireGone(t, pids, 5*time.Second)
	})
	t.Run("abort", func(t *testing.T) {
		gl := submit(t, "-n", "4", "--grace", "500ms", "--timeout", testbudget.Scale(45*time.Second).String(), progs["abort"], "abort", "3", "2")
		code := gl.wait(t, 60*time.Second)
		sum := summaryLines(gl.stderr.String())
		if code != 3 || len(sum) != 1 || !strings.HasPrefix(sum[0], "golaunch: rank 2 (host h1, ") {
			t.Fatalf("MPI_Abort on h1: exit %d, summary %q\nstderr:\n%s", code, sum, gl.stderr.String())
		}
	})
	if more != nil {
		more(t, submit)
	}
}

// netnsSubmit runs golaunch with args (after the test's flags) from the netns cluster's
// first host.
type netnsSubmit func(t *testing.T, args ...string) *running

// netnsRun submits args and returns the job's exit code and its output lines joined.
func netnsRun(t *testing.T, submit netnsSubmit, args ...string) (int, string, string) {
	t.Helper()
	gl := submit(t, append([]string{"--timeout", testbudget.Scale(45 * time.Second).String()}, args...)...)
	code := gl.wait(t, 60*time.Second)
	var out []string
	for l := range gl.lines {
		out = append(out, l)
	}
	return code, strings.Join(out, "\n") + "\n", gl.stderr.String()
}
