package launcher

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
)

// raceEnabled is set by race_test.go: the golaunch binary is then built with -race too.
var raceEnabled bool

// Binaries built once by TestMain.
var (
	golaunchBin string
	pmiprogBin  string
	buildErr    error
	binDir      string
)

func TestMain(m *testing.M) {
	code := testbudget.Run(m)
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

var buildOnce sync.Once

// binaries builds golaunch and pmiprog (once per test binary), or skips with -short.
func binaries(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("real-process test (builds golaunch)")
	}
	buildOnce.Do(func() {
		binDir, buildErr = os.MkdirTemp("", "golaunch-test-")
		if buildErr != nil {
			return
		}
		golaunchBin = filepath.Join(binDir, "golaunch")
		pmiprogBin = filepath.Join(binDir, "pmiprog")
		args := []string{"build", "-o", golaunchBin}
		if raceEnabled {
			args = append(args, "-race")
		}
		for _, b := range [][]string{append(args, "./cmd/golaunch"), {"build", "-o", pmiprogBin, "../tests/pmiprog"}} {
			out, err := exec.Command("go", b...).CombinedOutput()
			if err != nil {
				buildErr = fmt.Errorf("go %s: %v\n%s", strings.Join(b, " "), err, out)
				return
			}
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
}

// program is a rank program built once per test binary on first use.
type program struct {
	pkg  string // package to build, relative to launcher/
	race bool   // built with -race when the tests are
	once sync.Once
	bin  string
	err  error
}

var (
	helloProg  = &program{pkg: "../apps/hello"}
	rtprogProg = &program{pkg: "../tests/rtprog"}
)

// path builds the program into binDir on first use and returns its path.
func (p *program) path(t *testing.T) string {
	t.Helper()
	binaries(t)
	p.once.Do(func() {
		p.bin = filepath.Join(binDir, filepath.Base(p.pkg))
		args := []string{"build", "-o", p.bin}
		if p.race && raceEnabled {
			args = append(args, "-race")
		}
		out, err := exec.Command("go", append(args, p.pkg)...).CombinedOutput()
		if err != nil {
			p.err = fmt.Errorf("go build %s: %v\n%s", p.pkg, err, out)
		}
	})
	if p.err != nil {
		t.Fatal(p.err)
	}
	return p.bin
}

// hello builds apps/hello (the runtime's own rank program), or skips when it is absent.
func hello(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat("../apps/hello"); err != nil {
		t.Skip("apps/hello not there")
	}
	return helloProg.path(t)
}

// result is a finished golaunch run.
type result struct {
	stdout, stderr string
	code           int
	took           time.Duration
}

// runGL runs golaunch with args (stdin from stdin, may be nil) and waits at most 60 s
// scaled by the test slack.
func runGL(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	binaries(t)
	budget := testbudget.Scale(60 * time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	cmd := exec.CommandContext(ctx, golaunchBin, args...)
	cmd.Env = glEnv()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	start := time.Now()
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errb.String(), took: time.Since(start)}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	default:
		t.Fatalf("golaunch %q: %v", args, err)
	}
	if ctx.Err() != nil {
		t.Fatalf("golaunch %q did not end within %v:\n%s\n%s", args, budget, r.stdout, r.stderr)
	}
	if strings.Contains(r.stderr, "DATA RACE") {
		t.Errorf("golaunch %q: data race:\n%s", args, r.stderr)
	}
	return r
}

// glEnv is the environment of golaunch processes in tests: the race detector's
// one-second sleep at exit is turned off.
func glEnv() []string {
	return append(os.Environ(), "GORACE=atexit_sleep_ms=0")
}

// running is a golaunch (or agent) process whose stdout lines are collected as they come.
type running struct {
	cmd    *exec.Cmd
	lines  chan string
	stderr *lockedBuffer
	done   chan struct{}
	code   int
}

func startGL(t *testing.T, args ...string) *running {
	t.Helper()
	binaries(t)
	return startCmd(t, exec.Command(golaunchBin, args...))
}

// startCmd starts cmd (a golaunch command line, perhaps wrapped) and collects its output:
// its stdout by lines, and its stderr unless cmd.Stderr is set.
func startCmd(t *testing.T, cmd *exec.Cmd) *running {
	t.Helper()
	args := cmd.Args
	cmd.Env = glEnv()
	r := &running{cmd: cmd, lines: make(chan string, 1024), stderr: &lockedBuffer{}, done: make(chan struct{})}
	if cmd.Stderr == nil {
		cmd.Stderr = r.stderr
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			r.lines <- sc.Text()
		}
		close(r.lines)
		cmd.Wait()
		r.code = cmd.ProcessState.ExitCode()
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			r.code = 128 + int(ws.Signal())
		}
		close(r.done)
	}()
	t.Cleanup(func() {
		select {
		case <-r.done:
		default:
			cmd.Process.Kill()
			<-r.done
		}
		if strings.Contains(r.stderr.String(), "DATA RACE") {
			t.Errorf("golaunch %q: data race:\n%s", args, r.stderr.String())
		}
	})
	return r
}

// line waits for the next stdout line containing substr, for timeout scaled by the test
// slack.
func (r *running) line(t *testing.T, substr string, timeout time.Duration) string {
	t.Helper()
	timeout = testbudget.Scale(timeout)
	deadline := time.After(timeout)
	for {
		select {
		case l, ok := <-r.lines:
			if !ok {
				t.Fatalf("output ended before a line with %q; stderr:\n%s", substr, r.stderr.String())
			}
			if strings.Contains(l, substr) {
				return l
			}
		case <-deadline:
			t.Fatalf("no line with %q within %v; stderr:\n%s", substr, timeout, r.stderr.String())
		}
	}
}

// waitStderr waits until stderr contains substr, for timeout scaled by the test slack.
func (r *running) waitStderr(t *testing.T, substr string, timeout time.Duration) {
	t.Helper()
	timeout = testbudget.Scale(timeout)
	deadline := time.Now().Add(timeout)
	for !strings.Contains(r.stderr.String(), substr) {
		if time.Now().After(deadline) {
			t.Fatalf("stderr has no %q within %v:\n%s", substr, timeout, r.stderr.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// readyPids waits for n "ready RANK PID" lines and returns the pids by rank.
func (r *running) readyPids(t *testing.T, n int) map[int]int {
	t.Helper()
	pids := map[int]int{}
	for len(pids) < n {
		l := r.line(t, "ready ", 20*time.Second)
		f := strings.Fields(l[strings.Index(l, "ready "):])
		rank, _ := strconv.Atoi(f[1])
		pid, _ := strconv.Atoi(f[2])
		pids[rank] = pid
	}
	return pids
}

// wait waits for the process to end, for timeout scaled by the test slack, and returns
// its exit code (128+signal if killed).
func (r *running) wait(t *testing.T, timeout time.Duration) int {
	t.Helper()
	timeout = testbudget.Scale(timeout)
	select {
	case <-r.done:
		return r.code
	case <-time.After(timeout):
		t.Fatalf("did not end within %v; stderr:\n%s", timeout, r.stderr.String())
	}
	return 0
}

// alive reports whether pid is a live (non-zombie) process.
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// groupAlive reports whether any live process is in process group pgid.
func groupAlive(pgid int) bool {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		f := strings.Fields(s[i+1:]) // state ppid pgrp ...
		if len(f) > 2 && f[0] != "Z" && f[2] == strconv.Itoa(pgid) && pid > 0 {
			return true
		}
	}
	return false
}

// requireGone fails unless every pid (and its process group) is gone within timeout (at
// least 1 s) scaled by the test slack.
func requireGone(t *testing.T, pids map[int]int, timeout time.Duration) {
	t.Helper()
	timeout = testbudget.Scale(max(timeout, time.Second))
	deadline := time.Now().Add(timeout)
	for {
		var left []string
		for rank, pid := range pids {
			if alive(pid) || groupAlive(pid) {
				left = append(left, fmt.Sprintf("rank %d pid %d", rank, pid))
			}
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("still running %v after %v: %s", timeout, timeout, strings.Join(left, ", "))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func mustContain(t *testing.T, what, s, substr string) {
	t.Helper()
	if !strings.Contains(s, substr) {
		t.Errorf("%s does not contain %q:\n%s", what, substr, s)
	}
}

// summaryLines returns the lines of stderr that start with "golaunch: ".
func summaryLines(stderr string) []string {
	var out []string
	for _, l := range strings.Split(stderr, "\n") {
		if strings.HasPrefix(l, "golaunch: ") {
			out = append(out, l)
		}
	}
	return out
}

func hostName() string {
	h, err := os.Hostname()
	if err != nil || checkHostName(h) != nil {
		return "localhost"
	}
	return h
}
