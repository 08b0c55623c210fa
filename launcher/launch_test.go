package launcher

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
	"golang.org/x/sys/unix"
)

func TestLaunchOK(t *testing.T) {
	r := runGL(t, "", "-n", "4", pmiprogBinPath(t), "ok")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	h := hostName()
	for rank := range 4 {
		mustContain(t, "stdout", r.stdout, fmt.Sprintf("[%d] rank %d/4 host %s node 0/1 local %d/4 transport auto secret 32 ok", rank, rank, h, rank))
	}
	if r.stderr != "" {
		t.Errorf("stderr on success: %q", r.stderr)
	}
	t.Logf("4 ranks in %v", r.took)
}

// pmiprogBinPath builds the binaries and returns pmiprog's path.
func pmiprogBinPath(t *testing.T) string {
	binaries(t)
	return pmiprogBin
}

func TestLaunchRankExitCode(t *testing.T) {
	r := runGL(t, "", "-np", "4", pmiprogBinPath(t), "exit", "3", "2")
	if r.code != 3 {
		t.Fatalf("exit %d, want 3\n%s", r.code, r.stderr)
	}
	sum := summaryLines(r.stderr)
	if len(sum) != 1 || !strings.Contains(sum[0], "rank 2 (host "+hostName()+", pid ") || !strings.HasSuffix(sum[0], "exited with code 3; job aborted") {
		t.Errorf("summary %q", sum)
	}
}

// The survivors of a failure are told through PMI, and ranks that ignore SIGTERM get
// SIGKILL after --grace.
func TestLaunchAbortEventsAndGrace(t *testing.T) {
	gl := startGL(t, "-n", "3", "--grace", "300ms", pmiprogBinPath(t), "survive")
	pids := gl.readyPids(t, 3)
	start := time.Now()
	syscall.Kill(pids[2], syscall.SIGKILL)
	if code := gl.wait(t, 5*time.Second); code != 137 {
		t.Errorf("exit %d, want 137", code)
	}
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Errorf("ended %v after the failure, before the grace period", d)
	}
	requireGone(t, pids, time.Second)
	for _, rank := range []int{0, 1} {
		mustContain(t, "stderr", gl.stderr.String(), fmt.Sprintf("[%d] event %d kind=1 rank=2 host=%s code=137 cause=rank 2 (host", rank, rank, hostName()))
	}
}

func TestLaunchRankKilled(t *testing.T) {
	gl := startGL(t, "-n", "4", "--grace", "5s", pmiprogBinPath(t), "hang")
	pids := gl.readyPids(t, 4)
	start := time.Now()
	syscall.Kill(pids[1], syscall.SIGKILL)
	code := gl.wait(t, 2*time.Second)
	if code != 137 {
		t.Errorf("exit %d, want 137", code)
	}
	requireGone(t, pids, 2*time.Second-time.Since(start))
	mustContain(t, "stderr", gl.stderr.String(), fmt.Sprintf("golaunch: rank 1 (host %s, pid %d) killed by signal 9 (SIGKILL); job aborted", hostName(), pids[1]))
	t.Logf("job ended %v after the kill", time.Since(start))
}

func TestLaunchNoFinalize(t *testing.T) {
	r := runGL(t, "", "-n", "3", pmiprogBinPath(t), "nofinalize", "1")
	if r.code != ExitFailure {
		t.Fatalf("exit %d, want %d\n%s", r.code, ExitFailure, r.stderr)
	}
	mustContain(t, "stderr", r.stderr, "rank 1 (host "+hostName())
	mustContain(t, "stderr", r.stderr, "exited without calling Finalize (call w.Finalize(ctx), or MPI_Finalize, before the program exits); job aborted")
}

func TestLaunchAbort(t *testing.T) {
	r := runGL(t, "", "-n", "3", pmiprogBinPath(t), "abort", "7", "1")
	if r.code != 7 {
		t.Fatalf("exit %d, want 7\n%s", r.code, r.stderr)
	}
	mustContain(t, "stderr", r.stderr, "called Abort(7): pmiprog abort; job aborted")
}

func TestLaunchTimeout(t *testing.T) {
	r := runGL(t, "", "-n", "2", "--timeout", "500ms", pmiprogBinPath(t), "hang")
	if r.code != ExitTimeout {
		t.Fatalf("exit %d, want %d\n%s", r.code, ExitTimeout, r.stderr)
	}
	if sum := summaryLines(r.stderr); len(sum) != 1 || sum[0] != "golaunch: job timed out after 500ms; job aborted" {
		t.Errorf("summary %q", sum)
	}
}

func TestLaunchStartupTimeout(t *testing.T) {
	r := runGL(t, "", "-n", "3", "--startup-timeout", "500ms", pmiprogBinPath(t), "late", "2", "30s")
	if r.code != ExitFailure {
		t.Fatalf("exit %d, want %d\n%s", r.code, ExitFailure, r.stderr)
	}
	mustContain(t, "stderr", r.stderr, "rank 2 (host "+hostName())
	mustContain(t, "stderr", r.stderr, "did not reach PMI init within 500ms; job aborted")
}

func TestLaunchNoPMIProgram(t *testing.T) {
	r := runGL(t, "", "-n", "3", pmiprogBinPath(t), "nopmi")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	for rank := range 3 {
		mustContain(t, "stdout", r.stdout, fmt.Sprintf("[%d] nopmi %d\n", rank, rank))
	}
}

func TestLaunchEnvForwarding(t *testing.T) {
	t.Setenv("GL_FORWARDED", "from launcher")
	r := runGL(t, "", "-n", "2", "-x", "GL_SET=a b=c", "-x", "GL_FORWARDED", pmiprogBinPath(t), "env", "GL_SET", "GL_FORWARDED", "GOLAUNCH_SIZE")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	for rank := range 2 {
		mustContain(t, "stdout", r.stdout, fmt.Sprintf("[%d] env %d GL_SET=a b=c\n", rank, rank))
		mustContain(t, "stdout", r.stdout, fmt.Sprintf("[%d] env %d GL_FORWARDED=from launcher\n", rank, rank))
		mustContain(t, "stdout", r.stdout, fmt.Sprintf("[%d] env %d GOLAUNCH_SIZE=2\n", rank, rank))
	}
}

// TestLaunchIdleWatch: a job that may use tcp gives every rank an idle-role watch (a page
// memfd and an eventfd on descriptors 3 and 4, named by GOLAUNCH_IDLE_WATCH); a one-host
// job with the default transport, which runs on shm, gets none.
func TestLaunchIdleWatch(t *testing.T) {
	r := runGL(t, "", "-n", "2", "--transport", "tcp", pmiprogBinPath(t), "watchfds")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	for rank := range 2 {
		mustContain(t, "stdout", r.stdout, fmt.Sprintf("[%d] watch %d \"3,4\" page=/memfd:gorma-idle-watch (deleted) bell=anon_inode:[eventfd]\n", rank, rank))
	}
	r = runGL(t, "", "-n", "2", pmiprogBinPath(t), "watchfds")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	for rank := range 2 {
		mustContain(t, "stdout", r.stdout, fmt.Sprintf("[%d] watch %d \"\"\n", rank, rank))
	}
}

func TestLaunchTagOutput(t *testing.T) {
	const lines = 300
	r := runGL(t, "", "-n", "3", pmiprogBinPath(t), "lines", fmt.Sprint(lines))
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	got := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	if len(got) != 3*lines {
		t.Fatalf("%d lines, want %d", len(got), 3*lines)
	}
	next := map[int]int{}
	for _, l := range got {
		var rank, rank2, i int
		var pad, end string
		if n, err := fmt.Sscanf(l, "[%d] line %d %d %s %s", &rank, &rank2, &i, &pad, &end); n != 5 || err != nil ||
			rank != rank2 || len(pad) != 200 || end != "end" || i != next[rank] {
			t.Fatalf("mangled or out-of-order line %q", l)
		}
		next[rank]++
	}
	// One rank, or --tag-output=false: no tags.
	r = runGL(t, "", "-n", "1", pmiprogBinPath(t), "nopmi")
	if r.stdout != "nopmi 0\n" {
		t.Errorf("-n 1 output %q", r.stdout)
	}
	r = runGL(t, "", "-n", "2", "--tag-output=false", pmiprogBinPath(t), "nopmi")
	if lines := strings.Split(strings.TrimSpace(r.stdout), "\n"); len(lines) != 2 || !strings.HasPrefix(lines[0], "nopmi ") {
		t.Errorf("untagged output %q", r.stdout)
	}
}

func TestLaunchOutputDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "logs")
	r := runGL(t, "", "-n", "3", "--output-dir", dir, pmiprogBinPath(t), "env", "GOLAUNCH_RANK")
	if r.code != 0 || r.stdout != "" {
		t.Fatalf("exit %d, stdout %q\n%s", r.code, r.stdout, r.stderr)
	}
	for rank := range 3 {
		b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("rank.%d.log", rank)))
		if err != nil || string(b) != fmt.Sprintf("env %d GOLAUNCH_RANK=%d\n", rank, rank) {
			t.Errorf("rank %d file: %q %v", rank, b, err)
		}
	}
}

func TestLaunchStdinToRank0(t *testing.T) {
	r := runGL(t, "first\nsecond\n", "-n", "2", pmiprogBinPath(t), "stdin")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	if r.stdout != "[0] stdin: first\n[0] stdin: second\n" {
		t.Errorf("stdout %q", r.stdout)
	}
}

func TestLaunchUsageErrors(t *testing.T) {
	binaries(t)
	dir := t.TempDir()
	notExec := filepath.Join(dir, "script")
	os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644)
	hostfile := filepath.Join(dir, "hosts")
	os.WriteFile(hostfile, []byte("localhost slots=2\n# ok\nlocalhost slots=two\n"), 0o644)
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--frobnicate", "x"}, "unknown flag --frobnicate"},
		{[]string{"-n", "2"}, "no program to run"},
		{[]string{"-n", "2", "no-such-program-gorma"}, `program "no-such-program-gorma" not found in PATH`},
		{[]string{"-n", "2", filepath.Join(dir, "missing")}, "not found"},
		{[]string{"-n", "2", notExec}, "is not executable (mode 0644)"},
		{[]string{"-n", "2", dir}, "is a directory"},
		{[]string{"--hostfile", hostfile, pmiprogBin}, hostfile + `:3: slots "two"`},
		{[]string{"-H", "elsewhere:2", pmiprogBin}, `host "elsewhere" is not this host`},
		{[]string{"-H", "localhost:2", "-n", "3", pmiprogBin}, "-n 3 needs 3 slots"},
		{[]string{"--timeout", "forever", pmiprogBin}, "--timeout"},
	}
	for _, tt := range tests {
		r := runGL(t, "", tt.args...)
		if r.code != ExitUsage {
			t.Errorf("golaunch %q: exit %d, want 2\n%s", tt.args, r.code, r.stderr)
			continue
		}
		first, _, _ := strings.Cut(r.stderr, "\n")
		if !strings.HasPrefix(first, "golaunch: ") || !strings.Contains(first, tt.want) {
			t.Errorf("golaunch %q: message %q, want one mentioning %q", tt.args, first, tt.want)
		}
	}
}

func TestLaunchHelpVersion(t *testing.T) {
	r := runGL(t, "", "--help")
	if r.code != 0 || !strings.Contains(r.stdout, "golaunch -n 4 ./hello") || !strings.Contains(r.stdout, "--np") {
		t.Errorf("--help: exit %d\n%s", r.code, r.stdout)
	}
	r = runGL(t, "", "--version")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "golaunch ") {
		t.Errorf("--version: exit %d %q", r.code, r.stdout)
	}
	r = runGL(t, "", "agent", "--help")
	if r.code != 0 || !strings.Contains(r.stdout, "--keyfile") {
		t.Errorf("agent --help: exit %d\n%s", r.code, r.stdout)
	}
}

// SIGKILL of golaunch: the ranks die with it (Pdeathsig from the locked spawner thread).
func TestLaunchGolaunchKilled(t *testing.T) {
	gl := startGL(t, "-n", "3", pmiprogBinPath(t), "hang")
	pids := gl.readyPids(t, 3)
	time.Sleep(100 * time.Millisecond) // let Go retire idle threads, if it would
	gl.cmd.Process.Kill()
	gl.wait(t, 2*time.Second)
	requireGone(t, pids, 2*time.Second)
}

func TestLaunchSignals(t *testing.T) {
	// SIGTERM to golaunch aborts the job cleanly.
	gl := startGL(t, "-n", "2", pmiprogBinPath(t), "hang")
	pids := gl.readyPids(t, 2)
	gl.cmd.Process.Signal(syscall.SIGTERM)
	if code := gl.wait(t, 3*time.Second); code != 143 {
		t.Errorf("SIGTERM: exit %d, want 143", code)
	}
	mustContain(t, "stderr", gl.stderr.String(), "golaunch: received 15 (SIGTERM); job aborted")
	requireGone(t, pids, time.Second)

	// SIGINT is forwarded: the ranks die of it, and the summary says the user interrupted
	// the job (no rank failed).
	gl = startGL(t, "-n", "2", pmiprogBinPath(t), "hang")
	pids = gl.readyPids(t, 2)
	gl.cmd.Process.Signal(syscall.SIGINT)
	if code := gl.wait(t, 3*time.Second); code != 130 {
		t.Errorf("SIGINT: exit %d, want 130\n%s", code, gl.stderr.String())
	}
	mustContain(t, "stderr", gl.stderr.String(), "golaunch: interrupted by SIGINT (Ctrl-C), which golaunch forwarded to the ranks; job aborted")
	if strings.Contains(gl.stderr.String(), "killed by signal 2") {
		t.Errorf("a forwarded Ctrl-C reads as a rank's failure:\n%s", gl.stderr.String())
	}
	requireGone(t, pids, time.Second)

	// Ranks that ignore SIGINT (and SIGTERM): a second Ctrl-C kills them at once, whatever
	// the grace period.
	gl = startGL(t, "-n", "2", "--grace", "30s", pmiprogBinPath(t), "survive")
	pids = gl.readyPids(t, 2)
	gl.cmd.Process.Signal(syscall.SIGINT)
	gl.waitStderr(t, "golaunch: forwarding SIGINT to the ranks", 2*time.Second)
	time.Sleep(100 * time.Millisecond)
	if !alive(pids[0]) || !alive(pids[1]) {
		t.Fatal("ranks that ignore SIGINT died of the first Ctrl-C")
	}
	gl.cmd.Process.Signal(syscall.SIGINT)
	if code := gl.wait(t, 2*time.Second); code != 130 {
		t.Errorf("second SIGINT: exit %d, want 130\n%s", code, gl.stderr.String())
	}
	mustContain(t, "stderr", gl.stderr.String(), "golaunch: interrupted twice; job killed")
	requireGone(t, pids, time.Second)
}

// TestLaunchHelloNoLeftoverSegments checks /dev/shm after a job of the real runtime.
func TestLaunchHelloNoLeftoverSegments(t *testing.T) {
	before, _ := os.ReadDir("/dev/shm")
	gl := startGL(t, "-n", "4", "--timeout", testbudget.Scale(20*time.Second).String(), hello(t))
	if code := gl.wait(t, 30*time.Second); code != 0 {
		t.Fatalf("exit %d\n%s", code, gl.stderr.String())
	}
	after, _ := os.ReadDir("/dev/shm")
	if len(after) > len(before) {
		t.Errorf("/dev/shm grew from %d to %d entries", len(before), len(after))
	}
}

// The runtime's hello (runtime.Init over the contract, a token around the ring) through
// golaunch: what `make run` does.
func TestLaunchHello(t *testing.T) {
	r := runGL(t, "", "-n", "4", hello(t))
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	mustContain(t, "stdout", r.stdout, "[0] token came back around the ring of 4 ranks")
}

// TestLaunchBindTo runs golaunch on at most 2 of this machine's processors (so that the
// host is oversubscribed with twice as many ranks whatever the machine) and checks each
// rank's processor set as the kernel reports it, GOLAUNCH_HOST_CPUS and GOMAXPROCS.
func TestLaunchBindTo(t *testing.T) {
	binaries(t)
	cpus := agentCPUs()
	if len(cpus) > 2 {
		cpus = cpus[:2]
	}
	c := len(cpus)
	list := func(set []int) string {
		s := make([]string, len(set))
		for i, p := range set {
			s[i] = strconv.Itoa(p)
		}
		return strings.Join(s, ",")
	}
	procs := func(set []int, bound bool) string { // GOMAXPROCS: Go's count of the set
		if v := os.Getenv("GOMAXPROCS"); v != "" {
			return v
		}
		if bound {
			return boundProcs
		}
		return strconv.Itoa(len(set))
	}
	socket := func(cpu int) []int { // the rank's processors under --bind-to socket
		var set []int
		for _, p := range cpus {
			if cpuPackage(p) == cpuPackage(cpu) {
				set = append(set, p)
			}
		}
		return set
	}
	run := func(args ...string) result {
		goruntime.LockOSThread()
		defer goruntime.UnlockOSThread()
		restore, err := pinThread(cpus) // golaunch inherits the set
		if err != nil {
			t.Fatal(err)
		}
		defer restore()
		r := runGL(t, "", append(args, pmiprogBinPath(t), "cpus")...)
		if r.code != 0 {
			t.Fatalf("golaunch %q: exit %d\n%s", args, r.code, r.stderr)
		}
		return r
	}
	n := 2 * c
	for _, tc := range []struct {
		name string
		args []string
		n    int
		want func(l int) (set []int, bound bool)
	}{
		{"auto oversubscribed: unbound", []string{"-n", strconv.Itoa(n)}, n,
			func(int) ([]int, bool) { return cpus, false }},
		{"core oversubscribed: in turn", []string{"-n", strconv.Itoa(n), "--bind-to", "core"}, n,
			func(l int) ([]int, bool) { return cpus[l%c : l%c+1], true }},
		{"none", []string{"-n", strconv.Itoa(n), "--bind-to", "none"}, n,
			func(int) ([]int, bool) { return cpus, false }},
		{"core, a processor each", []string{"-n", strconv.Itoa(c), "--bind-to", "core"}, c,
			func(l int) ([]int, bool) { return cpus[l : l+1], true }},
		{"socket oversubscribed: the socket of the rank's core", []string{"-n", strconv.Itoa(n), "--bind-to", "socket"}, n,
			func(l int) ([]int, bool) { set := socket(cpus[l%c]); return set, len(set) == 1 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := run(tc.args...)
			for l := range tc.n {
				set, bound := tc.want(l)
				mustContain(t, "stdout", r.stdout, fmt.Sprintf("[%d] cpus %d %s %d %s\n", l, l, list(set), c, procs(set, bound)))
			}
		})
	}
}

// TestRankSessions: every rank leads a process group of its own; an MPICH program's
// ranks also lead a session each (as under Hydra), while a shell's and an Open MPI
// program's stay in golaunch's session (as under mpirun). Each rank prints "session RANK
// PID SID PGRP".
func TestRankSessions(t *testing.T) {
	own, err := unix.Getsid(0)
	if err != nil {
		t.Fatal(err)
	}
	shell := `read -r pid comm state ppid pgrp sid rest < /proc/self/stat; echo "session $GOLAUNCH_RANK $pid $sid $pgrp"`
	for _, tc := range []struct {
		name string
		prog func(t *testing.T) []string
		own  bool // a session of its own
	}{
		{"shell", func(*testing.T) []string { return []string{"/bin/sh", "-c", shell} }, false},
		{"mpich", func(t *testing.T) []string { return []string{mpiProgs(t)["session"]} }, true},
		{"openmpi", func(t *testing.T) []string { return []string{ompiProgs.build(t)["session"]} }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prog := tc.prog(t)
			if got := ownSession(prog[0]); got != tc.own {
				t.Errorf("ownSession(%s) = %v, want %v", prog[0], got, tc.own)
			}
			r := runGL(t, "", append([]string{"-n", "2"}, prog...)...)
			if r.code != 0 {
				t.Fatalf("golaunch: exit %d\n%s", r.code, r.stderr)
			}
			for rank := range 2 {
				var pid, sid, pgrp int
				l := lineWith(r.stdout, fmt.Sprintf("[%d] session %d ", rank, rank))
				if _, err := fmt.Sscanf(l, fmt.Sprintf("[%d] session %d %%d %%d %%d", rank, rank), &pid, &sid, &pgrp); err != nil {
					t.Fatalf("rank %d: %q: %v\n%s", rank, l, err, r.stdout)
				}
				if pgrp != pid {
					t.Errorf("rank %d: pid %d in process group %d, want its own", rank, pid, pgrp)
				}
				if tc.own && (sid != pid || sid == own) {
					t.Errorf("rank %d: pid %d in session %d (the caller's: %d), want a session of its own", rank, pid, sid, own)
				}
				if !tc.own && sid != own {
					t.Errorf("rank %d: pid %d in session %d, want the caller's (%d)", rank, pid, sid, own)
				}
			}
		})
	}
}

// TestOwnSessionThroughLibrary: a program that links MPICH only through a library of its
// own (found by its RUNPATH, $ORIGIN) is an MPICH program, as ScaLAPACK's MPICH build is;
// the same program built on Open MPI is not.
func TestOwnSessionThroughLibrary(t *testing.T) {
	for _, tc := range []struct {
		mpicc string
		want  bool
	}{{"mpicc.mpich", true}, {"mpicc.openmpi", false}} {
		t.Run(tc.mpicc, func(t *testing.T) {
			mpicc, err := exec.LookPath(tc.mpicc)
			if err != nil {
				testbudget.SkipEngine(t, "%s not found: install Debian's mpich or openmpi-bin", tc.mpicc)
			}
			dir := t.TempDir()
			lib := filepath.Join(dir, "libsolver.c")
			main := filepath.Join(dir, "main.c")
			os.WriteFile(lib, []byte("#include <mpi.h>\nint solver_rank(void) { int r; MPI_Comm_rank(MPI_COMM_WORLD, &r); return r; }\n"), 0o644)
			os.WriteFile(main, []byte("int solver_rank(void);\nint main(void) { return solver_rank(); }\n"), 0o644)
			for _, args := range [][]string{
				{mpicc, "-shared", "-fPIC", "-o", filepath.Join(dir, "libsolver.so"), lib},
				{"cc", "-o", filepath.Join(dir, "prog"), main, "-L" + dir, "-lsolver", "-Wl,-rpath,$ORIGIN"},
			} {
				if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
					t.Fatalf("%q: %v\n%s", args, err, out)
				}
			}
			if got := linksMPICH(filepath.Join(dir, "prog")); got != tc.want {
				t.Errorf("linksMPICH(prog on %s) = %v, want %v", tc.mpicc, got, tc.want)
			}
		})
	}
	if linksMPICH("/bin/sh") || linksMPICH(filepath.Join(t.TempDir(), "absent")) {
		t.Error("a shell, or a missing file, counted as an MPICH program")
	}
}
