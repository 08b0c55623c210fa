package launcher

// Adversarial tests of golaunch: the inputs and situations users of mpirun, Hydra's
// mpiexec, srun and torchrun throw at a launcher (odd flags and hostfiles, output that is
// not line-shaped, signals, ranks that refuse to die, a stdout nobody reads), each with a
// concrete outcome: exit code, exact output, no process or job directory left behind.
// Bounds stated by the contract ("within 2 s") are checked with generous margins so that
// a loaded machine does not fail them; timings never decide anything else.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gorma-hpc/gorma/internal/testbudget"
)

var stressProg = &program{pkg: "../tests/stressprog"}

// stressBin builds tests/stressprog (and golaunch) once.
func stressBin(t *testing.T) string {
	t.Helper()
	return stressProg.path(t)
}

func TestStressLaunchParseArgs(t *testing.T) {
	env := map[string]string{"GL_SET": "from env", "GL_EMPTY": "", "GL_EQ": "a=b=c"}
	getenv := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	tests := []struct {
		args    []string
		np      int
		envOut  []string
		prog    string
		progArg []string
		wantErr string
	}{
		// mpirun spellings and repeats: the last -n wins, as with pflag everywhere.
		{args: []string{"-np", "3", "p"}, np: 3, prog: "p"},
		{args: []string{"-np=5", "p"}, np: 5, prog: "p"},
		{args: []string{"-n4", "p"}, np: 4, prog: "p"},
		{args: []string{"--np=6", "p"}, np: 6, prog: "p"},
		{args: []string{"-n", "2", "-n", "7", "p"}, np: 7, prog: "p"},
		{args: []string{"-np", "2", "-np", "9", "p"}, np: 9, prog: "p"},
		// Flags after the program belong to it, -np included.
		{args: []string{"-n", "2", "p", "-np", "8", "-x", "Y"}, np: 2, prog: "p", progArg: []string{"-np", "8", "-x", "Y"}},
		{args: []string{"-n", "2", "--", "-p", "-n"}, np: 2, prog: "-p", progArg: []string{"-n"}},
		// -x: from the environment, with '=' in the value, empty, repeated (kept in order).
		{args: []string{"-x", "GL_SET", "-x", "GL_EMPTY", "-x", "GL_EQ", "p"}, envOut: []string{"GL_SET=from env", "GL_EMPTY=", "GL_EQ=a=b=c"}, prog: "p"},
		{args: []string{"-x", "A=x=y", "-x", "A=", "-xB=1", "--env=C=2", "p"}, envOut: []string{"A=x=y", "A=", "B=1", "C=2"}, prog: "p"},
		{args: []string{"-x", "GL_UNSET_FOR_TEST", "p"}, wantErr: "-x GL_UNSET_FOR_TEST: GL_UNSET_FOR_TEST is not set in golaunch's environment (use -x GL_UNSET_FOR_TEST=VALUE)"},
		{args: []string{"-x", "=v", "p"}, wantErr: "empty variable name"},
		{args: []string{"-x", "1A=v", "p"}, wantErr: `"1A" is not a valid variable name`},
		{args: []string{"-x", "A B=v", "p"}, wantErr: `"A B" is not a valid variable name`},
		{args: []string{"-x", "GOLAUNCH_RANK=3", "p"}, wantErr: "GOLAUNCH_* variables are golaunch's own contract"},
		{args: []string{"-x"}, wantErr: "-x needs a value"},
		// Bad counts and durations.
		{args: []string{"-n", "0", "p"}, wantErr: "-n 0: want at least 1 rank"},
		{args: []string{"-n", "-3", "p"}, wantErr: "-n -3: want at least 1 rank"},
		{args: []string{"-n", "two", "p"}, wantErr: "-n two: want a whole number of ranks"},
		{args: []string{"--timeout", "-1s", "p"}, wantErr: "negative duration"},
		{args: []string{"--timeout", "Inf", "p"}, wantErr: "--timeout"},
		{args: []string{"--grace", "soon", "p"}, wantErr: "want a duration such as 90s"},
		// A local run cannot start more ranks than one host may have slots: golaunch must
		// refuse at once rather than plan (and allocate) a billion-rank job.
		{args: []string{"-n", "2000000000", "p"}, wantErr: "-n 2000000000"},
		{args: []string{"-n", strconv.Itoa(maxSlots + 1), "p"}, wantErr: "at most " + strconv.Itoa(maxSlots)},
		{args: []string{"-n", strconv.Itoa(maxSlots), "p"}, np: maxSlots, prog: "p"},
		// Hosts.
		{args: []string{"-H", "a:1", "--hostfile", "f", "p"}, wantErr: "give -H or --hostfile, not both"},
		{args: []string{"-H", "a:1,,b", "p"}, wantErr: "empty entry in host list"},
		{args: []string{"-H", "a:0", "p"}, wantErr: `host "a": slots "0": want an integer from 1 to 65536`},
		{args: []string{"-H", "a:99999999999", "p"}, wantErr: "want an integer from 1 to 65536"},
		{args: []string{"--keyfile", "k", "p"}, wantErr: "--keyfile and --gossip-addr only make sense with --join"},
		{args: []string{"--transport", "rdma", "p"}, wantErr: `--transport "rdma": want auto, shm or tcp`},
		{args: []string{"-n", "2"}, wantErr: "no program to run"},
	}
	for _, tt := range tests {
		o, err := ParseArgs(tt.args, getenv)
		if tt.wantErr != "" {
			var ue *UsageError
			if err == nil || !errors.As(err, &ue) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseArgs(%q) = %v, want a usage error containing %q", tt.args, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseArgs(%q): %v", tt.args, err)
			continue
		}
		if o.NP != tt.np || o.Program != tt.prog || fmt.Sprint(o.Args) != fmt.Sprint(tt.progArg) && len(tt.progArg)+len(o.Args) > 0 ||
			fmt.Sprint(o.Env) != fmt.Sprint(tt.envOut) && len(tt.envOut)+len(o.Env) > 0 {
			t.Errorf("ParseArgs(%q) = np %d prog %q args %q env %q; want np %d prog %q args %q env %q",
				tt.args, o.NP, o.Program, o.Args, o.Env, tt.np, tt.prog, tt.progArg, tt.envOut)
		}
	}
}

func TestStressLaunchHostfile(t *testing.T) {
	tests := []struct {
		name, text string
		want       []HostSlots
		wantErr    string
	}{
		{"crlf-tabs-comments", "# cluster\r\n\r\nnodeA\tslots=4\r\n  nodeB:2  # two\r\n\t\r\nnodeC\r\n",
			[]HostSlots{{"nodeA", 4}, {"nodeB", 2}, {"nodeC", 1}}, ""},
		{"duplicates-sum-at-first-position", "a:2\nb slots=1\na slots=3\nb\n", []HostSlots{{"a", 5}, {"b", 2}}, ""},
		{"no-final-newline", "a slots=2", []HostSlots{{"a", 2}}, ""},
		// Windows editors that write CRLF also write a byte-order mark.
		{"utf8-bom", "\ufeffnodeA slots=2\r\nnodeB\r\n", []HostSlots{{"nodeA", 2}, {"nodeB", 1}}, ""},
		{"duplicates-capped", fmt.Sprintf("a:%d\na:%d\n", maxSlots, maxSlots), []HostSlots{{"a", maxSlots}}, ""},
		{"both-forms", "ok\nnodeA:2 slots=3\n", nil, `hosts:2: slots given twice for host "nodeA"`},
		{"unknown-key", "a\nb\nnodeA cpus=4\n", nil, `hosts:3: unknown attribute "cpus" (slots=N and max_slots=M are understood)`},
		{"spaces-around-equals", "nodeA slots = 4\n", nil, `hosts:1: unexpected "slots" after the host name (want slots=N or max_slots=M)`},
		{"huge", "nodeA slots=1000000000\n", nil, `hosts:1: slots "1000000000": want an integer from 1 to 65536`},
		{"zero", "nodeA:0\n", nil, `hosts:1: host "nodeA": slots "0"`},
		{"empty-slots", "nodeA slots=\n", nil, `hosts:1: slots "": want an integer`},
		{"bad-char", "node/A\n", nil, `hosts:1: host name "node/A": character '/' is not allowed`},
		{"only-comments", "# nothing\n\n   \n", nil, "hosts: no hosts in the hostfile"},
		{"line-too-long", "a\n" + strings.Repeat("x", 70<<10) + "\n", nil, "hosts:2: "},
	}
	for _, tt := range tests {
		got, err := ParseHostfile("hosts", strings.NewReader(tt.text))
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%s: got %v, %v; want an error containing %q", tt.name, got, err, tt.wantErr)
			}
			continue
		}
		if err != nil || fmt.Sprint(got) != fmt.Sprint(tt.want) {
			t.Errorf("%s: got %v, %v; want %v", tt.name, got, err, tt.want)
		}
	}
}

// A hostfile and -H list with every local spelling, duplicates, CRLF and comments run a
// real job with the summed slots; too few slots is a usage error naming the numbers.
func TestStressLaunchLocalHostLists(t *testing.T) {
	bin := stressBin(t)
	dir := t.TempDir()
	hf := filepath.Join(dir, "hosts")
	os.WriteFile(hf, []byte("\ufeff# local\r\nlocalhost slots=2\r\n\r\n127.0.0.1:1\t# loopback\r\nlocalhost\r\n"), 0o644)
	r := runGL(t, "", "--hostfile", hf, bin, "partial")
	if r.code != 0 || r.stdout != "[0] out-0\n[1] out-1\n[2] out-2\n[3] out-3\n" && len(r.stdout) != 40 {
		t.Fatalf("hostfile run: exit %d\nstdout %q\nstderr %q", r.code, r.stdout, r.stderr)
	}
	for rank := range 4 {
		mustContain(t, "stdout", r.stdout, fmt.Sprintf("[%d] out-%d\n", rank, rank))
	}
	r = runGL(t, "", "-H", "localhost:1,localhost:1,127.0.0.1:1", "-n", "4", bin, "partial")
	if r.code != ExitUsage {
		t.Fatalf("-H with 3 slots and -n 4: exit %d, want 2\n%s", r.code, r.stderr)
	}
	mustContain(t, "stderr", r.stderr, "-n 4 needs 4 slots but the hosts offer 3")
	r = runGL(t, "", "-H", "localhost:1,localhost:1,127.0.0.1:1", bin, "partial")
	if r.code != 0 || strings.Count(r.stdout, "\n") != 3 {
		t.Errorf("-H summing to 3 slots without -n: exit %d, stdout %q\n%s", r.code, r.stdout, r.stderr)
	}
	r = runGL(t, "", "-H", "LocalHost:2", bin, "partial") // host names are case-insensitive
	if r.code != 0 || strings.Count(r.stdout, "\n") != 2 {
		t.Errorf("-H LocalHost:2: exit %d, stdout %q\n%s", r.code, r.stdout, r.stderr)
	}
}

// golaunch -n 2000000000 must be a quick usage error, not an out-of-memory crash.
func TestStressLaunchHugeRankCount(t *testing.T) {
	bin := stressBin(t)
	r := runGL(t, "", "-n", "2000000000", bin, "partial")
	if r.code != ExitUsage {
		t.Fatalf("exit %d, want 2\n%.2000s", r.code, r.stderr)
	}
	first, _, _ := strings.Cut(r.stderr, "\n")
	mustContain(t, "first stderr line", first, "golaunch: -n 2000000000")
}

// Bad programs: each gets exit 2 (or 125 when exec itself fails) and a message naming it.
func TestStressLaunchProgramPaths(t *testing.T) {
	bin := stressBin(t)
	dir := t.TempDir()
	sub := filepath.Join(dir, "sub")
	os.Mkdir(sub, 0o755)
	script := filepath.Join(sub, "script.sh")
	os.WriteFile(script, []byte("#!/bin/sh\necho \"script $GOLAUNCH_RANK of $GOLAUNCH_SIZE in $(pwd)\"\n"), 0o755)
	empty := filepath.Join(dir, "empty")
	os.WriteFile(empty, nil, 0o755)
	os.Symlink(sub, filepath.Join(dir, "linkdir"))
	os.Symlink(filepath.Join(dir, "nowhere"), filepath.Join(dir, "dangling"))

	// A relative path, resolved against golaunch's working directory, which the ranks
	// share.
	cmd := exec.Command(golaunchBin, "-n", "2", "sub/script.sh")
	cmd.Dir, cmd.Env = dir, glEnv()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("relative script: %v\n%s", err, out)
	}
	for rank := range 2 {
		mustContain(t, "stdout", string(out), fmt.Sprintf("[%d] script %d of 2 in %s\n", rank, rank, dir))
	}

	tests := []struct {
		prog string
		code int
		want string
	}{
		{filepath.Join(dir, "linkdir"), ExitUsage, "is a directory"},
		{filepath.Join(dir, "dangling"), ExitUsage, "not found"},
		{sub + "/", ExitUsage, "is a directory"},
		{empty, ExitFailure, "rank 0 (host " + hostName() + ") could not be started: fork/exec " + empty + ": exec format error; job aborted"},
	}
	for _, tt := range tests {
		r := runGL(t, "", "-n", "2", tt.prog)
		if r.code != tt.code {
			t.Errorf("%s: exit %d, want %d\n%s", tt.prog, r.code, tt.code, r.stderr)
			continue
		}
		mustContain(t, "stderr", r.stderr, tt.want)
		if sum := summaryLines(r.stderr); len(sum) != 1 {
			t.Errorf("%s: want one golaunch line, got %q", tt.prog, sum)
		}
	}
	_ = bin
}

// A rank's last line without a newline is flushed, tagged, with a newline added; with
// one rank (no tags) the bytes pass through untouched.
func TestStressLaunchPartialLineAtExit(t *testing.T) {
	bin := stressBin(t)
	r := runGL(t, "", "-n", "3", bin, "partial")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	for rank := range 3 {
		mustContain(t, "stdout", r.stdout, fmt.Sprintf("[%d] out-%d\n", rank, rank))
		mustContain(t, "stderr", r.stderr, fmt.Sprintf("[%d] err-%d\n", rank, rank))
	}
	if len(r.stdout) != 3*len("[0] out-0\n") || len(r.stderr) != 3*len("[0] err-0\n") {
		t.Errorf("extra output: stdout %q stderr %q", r.stdout, r.stderr)
	}
	r = runGL(t, "", "-n", "1", bin, "partial")
	if r.code != 0 || r.stdout != "out-0" || r.stderr != "err-0" {
		t.Errorf("-n 1: exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	r = runGL(t, "", "-n", "2", "--tag-output=false", bin, "partial")
	if r.code != 0 || len(r.stdout) != 12 || !strings.Contains(r.stdout, "out-0\n") || !strings.Contains(r.stdout, "out-1\n") {
		t.Errorf("untagged: exit %d stdout %q", r.code, r.stdout)
	}
}

// A 1.5 MiB line: passed through byte for byte with one rank; tagged, it is cut into
// pieces of at most maxPartial bytes, each tagged, that put together give the line back,
// and the other rank's line stays whole.
func TestStressLaunchLongLine(t *testing.T) {
	bin := stressBin(t)
	const n = 3<<19 + 7
	want := make([]byte, n)
	for i := range want {
		want[i] = byte('a' + i%26)
	}
	r := runGL(t, "", "-n", "1", bin, "bigline", strconv.Itoa(n))
	if r.code != 0 || r.stdout != string(want)+"\n" {
		t.Fatalf("-n 1: exit %d, %d bytes of stdout (want %d)\n%s", r.code, len(r.stdout), n+1, r.stderr)
	}
	r = runGL(t, "", "-n", "2", bin, "bigline", strconv.Itoa(n))
	if r.code != 0 {
		t.Fatalf("-n 2: exit %d\n%s", r.code, r.stderr)
	}
	var got []byte
	small := 0
	for _, l := range strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n") {
		switch {
		case l == "[1] small 1":
			small++
		case strings.HasPrefix(l, "[0] ") && len(l)-4 <= maxPartial+32<<10:
			got = append(got, l[4:]...)
		default:
			t.Fatalf("unexpected line of %d bytes: %.80q", len(l), l)
		}
	}
	if small != 1 || !bytes.Equal(got, want) {
		t.Errorf("small lines %d; rank 0's line put together: %d bytes, equal %v", small, len(got), bytes.Equal(got, want))
	}
}

// Binary output is passed through untouched with one rank and into --output-dir files.
func TestStressLaunchBinaryOutput(t *testing.T) {
	bin := stressBin(t)
	var want []byte
	for range 64 {
		for c := range 256 {
			want = append(want, byte(c))
		}
	}
	r := runGL(t, "", "-n", "1", bin, "binary")
	if r.code != 0 || r.stdout != string(want) {
		t.Errorf("-n 1: exit %d, stdout %d bytes, equal %v\n%s", r.code, len(r.stdout), r.stdout == string(want), r.stderr)
	}
	dir := t.TempDir()
	r = runGL(t, "", "-n", "3", "--output-dir", dir, bin, "binary")
	if r.code != 0 || r.stdout != "" {
		t.Fatalf("--output-dir: exit %d stdout %q\n%s", r.code, r.stdout, r.stderr)
	}
	for rank := range 3 {
		b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("rank.%d.log", rank)))
		if err != nil || !bytes.Equal(b, want) {
			t.Errorf("rank %d file: %d bytes, %v", rank, len(b), err)
		}
	}
}

// Eight ranks each write 2000 lines in one burst and exit at once: nothing is lost,
// nothing is mangled, each rank's lines keep their order.
func TestStressLaunchNoOutputLostAtExit(t *testing.T) {
	bin := stressBin(t)
	const ranks, lines = 8, 2000
	r := runGL(t, "", "-n", strconv.Itoa(ranks), bin, "burst", strconv.Itoa(lines))
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	next := make([]int, ranks)
	pad := strings.Repeat("x", 100)
	for _, l := range strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n") {
		var tag, rank, i int
		var p string
		if n, err := fmt.Sscanf(l, "[%d] burst %d %d %s", &tag, &rank, &i, &p); n != 4 || err != nil || tag != rank ||
			rank < 0 || rank >= ranks || i != next[rank] || p != pad {
			t.Fatalf("mangled or out-of-order line %.120q", l)
		}
		next[rank]++
	}
	for rank, n := range next {
		if n != lines {
			t.Errorf("rank %d: %d lines, want %d", rank, n, lines)
		}
	}
}

// stdout and stderr of the ranks go to golaunch's stdout and stderr, each line whole.
func TestStressLaunchStdoutStderrSeparate(t *testing.T) {
	bin := stressBin(t)
	const lines = 500
	r := runGL(t, "", "-n", "2", bin, "mixed", strconv.Itoa(lines))
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	for name, s := range map[string]string{"out": r.stdout, "err": r.stderr} {
		count := map[int]int{}
		for _, l := range strings.Split(strings.TrimSuffix(s, "\n"), "\n") {
			var tag, rank, i int
			var w string
			if n, err := fmt.Sscanf(l, "[%d] %s %d %d", &tag, &w, &rank, &i); n != 4 || err != nil || w != name || tag != rank || i != count[rank] {
				t.Fatalf("std%s: unexpected line %q", name, l)
			}
			count[rank]++
		}
		if count[0] != lines || count[1] != lines {
			t.Errorf("std%s: %v lines per rank, want %d", name, count, lines)
		}
	}
}

// A rank killed by a signal from outside the job: exit 128+N, one summary line naming
// it, the survivors (which never use PMI) are killed.
func TestStressLaunchRankSignalled(t *testing.T) {
	bin := stressBin(t)
	for _, tt := range []struct {
		sig  syscall.Signal
		name string
	}{{syscall.SIGKILL, "9 (SIGKILL)"}, {syscall.SIGTERM, "15 (SIGTERM)"}} {
		r := runGL(t, "", "-n", "3", "--grace", "1s", bin, "killself", strconv.Itoa(int(tt.sig)), "1")
		if r.code != 128+int(tt.sig) {
			t.Errorf("%v: exit %d, want %d\n%s", tt.sig, r.code, 128+int(tt.sig), r.stderr)
		}
		sum := summaryLines(r.stderr)
		if len(sum) != 1 || !strings.HasPrefix(sum[0], "golaunch: rank 1 (host "+hostName()+", pid ") ||
			!strings.HasSuffix(sum[0], "killed by signal "+tt.name+"; job aborted") {
			t.Errorf("%v: summary %q", tt.sig, sum)
		}
	}
}

// rankFiles waits for n files DIR/RANK written by stressprog ("pid childpid sock") and
// returns every pid (ranks and children) and the job directories; it waits for timeout
// scaled by the test slack.
func rankFiles(t *testing.T, dir string, n int, timeout time.Duration) (pids map[int]int, jobDirs map[string]bool) {
	t.Helper()
	timeout = testbudget.Scale(timeout)
	deadline := time.Now().Add(timeout)
	pids, jobDirs = map[int]int{}, map[string]bool{}
	for rank := 0; rank < n; {
		b, err := os.ReadFile(filepath.Join(dir, strconv.Itoa(rank)))
		if err != nil {
			if time.Now().After(deadline) {
				t.Fatalf("rank %d did not start within %v", rank, timeout)
			}
			time.Sleep(10 * time.Millisecond)
			continue
		}
		f := strings.Fields(string(b))
		pid, _ := strconv.Atoi(f[0])
		child, _ := strconv.Atoi(f[1])
		pids[rank] = pid
		if child > 0 {
			pids[1000+rank] = child
		}
		jobDirs[filepath.Dir(f[2])] = true
		rank++
	}
	return pids, jobDirs
}

func requireNoDirs(t *testing.T, dirs map[string]bool) {
	t.Helper()
	for d := range dirs {
		if _, err := os.Stat(d); err == nil {
			t.Errorf("job directory %s left behind", d)
		}
	}
}

// SIGTERM and SIGHUP to golaunch end a job whose ranks ignore SIGTERM (and started a
// child in their process group): SIGKILL after --grace, golaunch exits 128+signal, and no
// rank, child or job directory survives. The contract's bound is grace + a moment; 10 s
// keeps a loaded machine from failing the test.
func TestStressLaunchSignalKillsStubbornRanks(t *testing.T) {
	bin := stressBin(t)
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGHUP} {
		dir := t.TempDir()
		gl := startGL(t, "-n", "3", "--grace", "500ms", bin, "ignoreterm", dir)
		pids, jobDirs := rankFiles(t, dir, 3, 20*time.Second)
		gl.cmd.Process.Signal(sig)
		if code := gl.wait(t, 10*time.Second); code != 128+int(sig) {
			t.Errorf("%v: exit %d, want %d\n%s", sig, code, 128+int(sig), gl.stderr.String())
		}
		want := fmt.Sprintf("golaunch: received %s; job aborted", describeSignal(int(sig)))
		if sum := summaryLines(gl.stderr.String()); len(sum) != 1 || sum[0] != want {
			t.Errorf("%v: summary %q, want %q", sig, sum, want)
		}
		requireGone(t, pids, 2*time.Second)
		requireNoDirs(t, jobDirs)
	}
}

// TestStressLaunchSIGKILLLeavesNoOrphan: SIGKILL of golaunch itself. Pdeathsig kills the
// ranks, but not the children they started in their process groups (a sleep here), which
// would live on as orphans. The spawner's watchdog (watchdog.go) sees golaunch's end and
// kills the groups, so nothing is left (DESIGN.md: no orphan even after SIGKILL of
// golaunch).
func TestStressLaunchSIGKILLLeavesNoOrphan(t *testing.T) {
	bin := stressBin(t)
	dir := t.TempDir()
	gl := startGL(t, "-n", "2", bin, "ignoreterm", dir)
	pids, _ := rankFiles(t, dir, 2, 20*time.Second)
	gl.cmd.Process.Kill()
	gl.wait(t, 10*time.Second)
	requireGone(t, pids, 5*time.Second)
}

// --timeout with ranks that ignore SIGTERM: exit 124, everything gone.
func TestStressLaunchTimeoutStubbornRanks(t *testing.T) {
	bin := stressBin(t)
	dir := t.TempDir()
	gl := startGL(t, "-n", "2", "--timeout", "1s", "--grace", "300ms", bin, "ignoreterm", dir)
	pids, jobDirs := rankFiles(t, dir, 2, 20*time.Second)
	if code := gl.wait(t, 15*time.Second); code != ExitTimeout {
		t.Errorf("exit %d, want %d\n%s", code, ExitTimeout, gl.stderr.String())
	}
	if sum := summaryLines(gl.stderr.String()); len(sum) != 1 || sum[0] != "golaunch: job timed out after 1s; job aborted" {
		t.Errorf("summary %q", sum)
	}
	requireGone(t, pids, 2*time.Second)
	requireNoDirs(t, jobDirs)
}

// A consumer that stops reading golaunch's stdout (`golaunch ... | slow`, a pager left
// open) must not make golaunch unkillable: SIGTERM still ends the job, golaunch exits 143
// within grace + a few seconds, and nothing is left behind.
func TestStressLaunchSIGTERMWithStdoutNotRead(t *testing.T) {
	out := sigtermWithPipeNotRead(t, "flood")
	mustContain(t, "stderr", out, "golaunch: received 15 (SIGTERM); job aborted")
}

// TestStressLaunchSIGTERMWithStderrNotRead: the same with the ranks flooding stderr into
// a pipe nobody reads: golaunch, blocked writing their lines (and then its own notices),
// must still end on SIGTERM and leave no rank behind.
func TestStressLaunchSIGTERMWithStderrNotRead(t *testing.T) {
	sigtermWithPipeNotRead(t, "flooderr")
}

// sigtermWithPipeNotRead runs stressprog's mode (flood: stdout, flooderr: stderr) on 2
// ranks with that stream of golaunch going into a pipe nobody reads, waits until the pipe
// is all but full (golaunch is then blocked writing to it), sends golaunch SIGTERM and
// checks the exit code and that nothing is left. It returns golaunch's other stream.
func sigtermWithPipeNotRead(t *testing.T, mode string) string {
	bin := stressBin(t)
	dir := t.TempDir()
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(60*time.Second))
	defer cancel()
	cmd := exec.CommandContext(ctx, golaunchBin, "-n", "2", "--grace", "500ms", bin, mode, dir)
	cmd.Env = glEnv()
	var other lockedBuffer
	cmd.Stdout, cmd.Stderr = pw, &other
	if mode == "flooderr" {
		cmd.Stdout, cmd.Stderr = &other, pw
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	pids, jobDirs := rankFiles(t, dir, 2, 20*time.Second)
	// The ranks write 8 KB lines, and more is queued behind them.
	size, err := unix.FcntlInt(pr.Fd(), unix.F_GETPIPE_SZ, 0)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(testbudget.Scale(20 * time.Second))
	for {
		n, err := unix.IoctlGetInt(int(pr.Fd()), unix.TIOCINQ)
		if err != nil {
			t.Fatal(err)
		}
		if n >= size-16<<10 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: the pipe holds %d of %d bytes after %v", mode, n, size, testbudget.Scale(20*time.Second))
		}
		time.Sleep(10 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(testbudget.Scale(20 * time.Second)): // grace 0.5 s + exitSlack 3 s + the output bound
		cmd.Process.Kill()
		<-done
		t.Fatalf("%s: golaunch still running %v after SIGTERM with its output not read\n%s", mode, testbudget.Scale(20*time.Second), other.String())
	}
	if code := cmd.ProcessState.ExitCode(); code != 143 {
		t.Errorf("%s: exit %d, want 143\n%s", mode, code, other.String())
	}
	requireGone(t, pids, 2*time.Second)
	requireNoDirs(t, jobDirs)
	return other.String()
}

// TestStressLaunchStdoutClosed: golaunch ... | head. Once the reader of golaunch's
// stdout is gone, the job ends as a pipeline's writer would (exit 141, SIGPIPE's), with
// its summary on stderr and no rank left, instead of its ranks flooding on for ever with
// their output dropped.
func TestStressLaunchStdoutClosed(t *testing.T) {
	bin := stressBin(t)
	dir := t.TempDir()
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(60*time.Second))
	defer cancel()
	cmd := exec.CommandContext(ctx, golaunchBin, "-n", "2", bin, "flood", dir)
	cmd.Env = glEnv()
	var stderr lockedBuffer
	cmd.Stdout, cmd.Stderr = pw, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	pids, jobDirs := rankFiles(t, dir, 2, 20*time.Second)
	if _, err := io.ReadFull(pr, make([]byte, 4096)); err != nil { // head: some output, then gone
		t.Fatal(err)
	}
	pr.Close()
	select {
	case <-done:
	case <-time.After(testbudget.Scale(20 * time.Second)): // the contract: promptly; generous on a loaded machine
		cmd.Process.Kill()
		<-done
		t.Fatalf("golaunch still running %v after its stdout was closed\n%s", testbudget.Scale(20*time.Second), stderr.String())
	}
	if code := cmd.ProcessState.ExitCode(); code != 141 {
		t.Errorf("exit %d, want 141\n%s", code, stderr.String())
	}
	mustContain(t, "stderr", stderr.String(), "golaunch: standard output was closed (broken pipe); job aborted")
	requireGone(t, pids, 2*time.Second)
	requireNoDirs(t, jobDirs)
}

// Sixteen ranks on two cores, with PMI fences: all start, all finish, exit 0.
func TestStressLaunchManyRanks(t *testing.T) {
	r := runGL(t, "", "-n", "16", pmiprogBinPath(t), "ok")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	for rank := range 16 {
		mustContain(t, "stdout", r.stdout, fmt.Sprintf("[%d] rank %d/16 host ", rank, rank))
	}
	if n := strings.Count(r.stdout, "\n"); n != 16 || r.stderr != "" {
		t.Errorf("%d lines; stderr %q", n, r.stderr)
	}
}

// stdin: 3 MB reach rank 0 intact; an endless stdin that no rank reads does not keep
// golaunch from ending.
func TestStressLaunchStdin(t *testing.T) {
	bin := stressBin(t)
	in := make([]byte, 3<<20)
	sum := 0
	for i := range in {
		in[i] = byte(i*7 + i>>11)
		sum = (sum*31 + int(in[i])) % 1000000007
	}
	r := runGL(t, string(in), "-n", "2", bin, "stdincount")
	if want := fmt.Sprintf("[0] stdin %d %d\n", len(in), sum); r.code != 0 || r.stdout != want {
		t.Errorf("exit %d stdout %q, want %q\n%s", r.code, r.stdout, want, r.stderr)
	}
	zero, err := os.Open("/dev/zero")
	if err != nil {
		t.Fatal(err)
	}
	defer zero.Close()
	cmd := exec.Command(golaunchBin, "-n", "2", bin, "nostdin")
	cmd.Stdin, cmd.Env = zero, glEnv()
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("stdin /dev/zero: %v", err)
		}
	case <-time.After(testbudget.Scale(30 * time.Second)):
		cmd.Process.Kill()
		<-done
		t.Fatalf("golaunch with stdin /dev/zero did not end within %v", testbudget.Scale(30*time.Second))
	}
}

// Environment: -x overrides golaunch's own value, the last -x of a name wins, values
// keep '=', spaces and newlines, and the rank gets golaunch's environment besides.
func TestStressLaunchEnv(t *testing.T) {
	t.Setenv("GL_INHERITED", "inherited")
	t.Setenv("GL_OVERRIDE", "old")
	r := runGL(t, "", "-n", "2", "-x", "GL_OVERRIDE=new", "-x", "GL_TWICE=1", "-x", "GL_TWICE=2",
		"-x", "GL_ODD=a=b c\td", pmiprogBinPath(t), "env", "GL_INHERITED", "GL_OVERRIDE", "GL_TWICE", "GL_ODD")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	for rank := range 2 {
		for _, kv := range []string{"GL_INHERITED=inherited", "GL_OVERRIDE=new", "GL_TWICE=2", "GL_ODD=a=b c\td"} {
			mustContain(t, "stdout", r.stdout, fmt.Sprintf("[%d] env %d %s\n", rank, rank, kv))
		}
	}
}

// --join with host lists that repeat agents, unknown agents and too few slots; stdin
// reaches rank 0 on another agent than the first of the cluster; a hostfile with a
// byte-order mark and CRLF works with agents too.
func TestStressLaunchJoinHostLists(t *testing.T) {
	bin := stressBin(t)
	c := startCluster(t, 2, 2)
	// a2 is listed twice: it gets 2 slots at its first position, ahead of a1.
	r := runGL(t, "", c.submit("-H", "a2:1,a1:2,a2:1", "-n", "4", pmiprogBinPath(t), "ok")...)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	for rank, want := range []string{"host a2 node 0/2 local 0/2", "host a2 node 0/2 local 1/2", "host a1 node 1/2 local 0/2", "host a1 node 1/2 local 1/2"} {
		mustContain(t, "stdout", r.stdout, fmt.Sprintf("[%d] rank %d/4 %s ", rank, rank, want))
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"-H", "a2:1,a1:1,a2:1", "-n", "4"}, "-n 4 needs 4 slots but the hosts offer 3 (a2:2, a1:1)"},
		{[]string{"-n", "5"}, "-n 5 needs 5 slots but the hosts offer 4 (a1:2, a2:2)"},
		{[]string{"-H", "a1:1,a9:1"}, `host "a9" is not an agent of the cluster at ` + c.seed + " (agents: "},
	} {
		r := runGL(t, "", c.submit(append(tt.args, bin, "partial")...)...)
		if r.code != ExitUsage {
			t.Errorf("%q: exit %d, want 2\n%s", tt.args, r.code, r.stderr)
			continue
		}
		mustContain(t, "stderr", r.stderr, tt.want)
	}
	hf := filepath.Join(t.TempDir(), "hosts")
	os.WriteFile(hf, []byte("\ufeffa2 slots=1\r\n# then a1\r\na1\r\n"), 0o644)
	in := strings.Repeat("stdin across agents\n", 5000)
	sum := 0
	for _, b := range []byte(in) {
		sum = (sum*31 + int(b)) % 1000000007
	}
	r = runGL(t, in, c.submit("--hostfile", hf, bin, "stdincount")...)
	if want := fmt.Sprintf("[0] stdin %d %d\n", len(in), sum); r.code != 0 || r.stdout != want {
		t.Errorf("stdin to rank 0 on a2: exit %d stdout %q, want %q\n%s", r.code, r.stdout, want, r.stderr)
	}
}
