package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
)

// Binaries built once per test binary.
var bins struct {
	once              sync.Once
	dir               string
	golaunch, elastic string
	err               error
}

func TestMain(m *testing.M) {
	code := testbudget.Run(m)
	if bins.dir != "" {
		os.RemoveAll(bins.dir)
	}
	os.Exit(code)
}

// build builds golaunch and this command once, or skips with -short.
func build(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds golaunch and runs jobs")
	}
	bins.once.Do(func() {
		if bins.dir, bins.err = os.MkdirTemp("", "elastic-test-"); bins.err != nil {
			return
		}
		bins.golaunch, bins.elastic = filepath.Join(bins.dir, "golaunch"), filepath.Join(bins.dir, "elastic")
		for _, args := range [][]string{
			{"build", "-o", bins.golaunch, "../../launcher/cmd/golaunch"},
			{"build", "-o", bins.elastic, "."},
		} {
			if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
				bins.err = fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, out)
				return
			}
		}
	})
	if bins.err != nil {
		t.Fatal(bins.err)
	}
}

// job is a golaunch run of elastic.
type job struct {
	cmd            *exec.Cmd
	stdout, stderr bytes.Buffer
	dir            string // --state-dir
	done           chan struct{}
	code           int
}

// start runs golaunch with its flags glFlags, then elastic with testOptions' flags and
// extra, and --state-dir.
func start(t *testing.T, glFlags []string, extra ...string) *job {
	t.Helper()
	build(t)
	j := &job{dir: t.TempDir(), done: make(chan struct{})}
	args := append([]string{"--timeout", testbudget.Scale(90 * time.Second).String(), "--tag-output=false"}, glFlags...)
	args = append(args, bins.elastic, "--dim", "7", "--batch", "24", "--samples", "600", "--state-dir", j.dir)
	j.cmd = exec.Command(bins.golaunch, append(args, extra...)...)
	j.cmd.Stdout, j.cmd.Stderr = &j.stdout, &j.stderr
	if err := j.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		j.cmd.Wait()
		j.code = j.cmd.ProcessState.ExitCode()
		close(j.done)
	}()
	t.Cleanup(func() {
		j.cmd.Process.Kill()
		<-j.done
	})
	return j
}

// wait waits for golaunch's exit and returns its code.
func (j *job) wait(t *testing.T) int {
	t.Helper()
	budget := testbudget.Scale(2 * time.Minute)
	select {
	case <-j.done:
		return j.code
	case <-time.After(budget):
		t.Fatalf("golaunch did not end within %v; stderr:\n%s", budget, j.stderr.String())
	}
	return 0
}

// stepAtLeast waits until rank 0 has committed step n.
func (j *job) stepAtLeast(t *testing.T, n int) {
	t.Helper()
	ctx, cancel := testbudget.Context(context.Background(), 60*time.Second, fmt.Sprintf("step %d", n))
	defer cancel()
	for {
		b, _ := os.ReadFile(filepath.Join(j.dir, "step"))
		if s, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && s >= n {
			return
		}
		select {
		case <-j.done:
			t.Fatalf("the job ended before step %d (exit %d):\n%s\n%s", n, j.code, j.stdout.String(), j.stderr.String())
		case <-ctx.Done():
			t.Fatalf("%v", context.Cause(ctx))
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// pid returns the pid and host of the rank that Init made rank r.
func (j *job) pid(t *testing.T, r int) (int, string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(j.dir, fmt.Sprintf("rank%d.pid", r)))
	if err != nil {
		t.Fatal(err)
	}
	var pid int
	var host string
	if _, err := fmt.Sscan(string(b), &pid, &host); err != nil {
		t.Fatalf("rank %d's pid file %q: %v", r, b, err)
	}
	return pid, host
}

// kill sends SIGKILL to the ranks that Init made ranks rs.
func (j *job) kill(t *testing.T, rs ...int) {
	t.Helper()
	for _, r := range rs {
		pid, _ := j.pid(t, r)
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatalf("kill rank %d (pid %d): %v", r, pid, err)
		}
	}
}

var resultLine = regexp.MustCompile(`(?m)^elastic: steps=(\d+) ranks=(\d+) loss=(\S+)$`)

// result checks that golaunch exited 0 and printed one result line of steps, and returns
// its ranks and loss.
func (j *job) result(t *testing.T, steps int) (ranks int, loss float64) {
	t.Helper()
	if code := j.wait(t); code != 0 {
		t.Fatalf("golaunch exited %d, want 0:\n%s\n%s", code, j.stdout.String(), j.stderr.String())
	}
	out := j.stdout.String()
	m := resultLine.FindAllStringSubmatch(out, -1)
	if len(m) != 1 || strings.Count(out, "\n") != 1 {
		t.Fatalf("stdout %q: want one line elastic: steps=N ranks=R loss=L", out)
	}
	s, _ := strconv.Atoi(m[0][1])
	ranks, _ = strconv.Atoi(m[0][2])
	loss, err := strconv.ParseFloat(m[0][3], 64)
	if err != nil || s != steps {
		t.Fatalf("result %q: want steps=%d and a number (%v)", m[0][0], steps, err)
	}
	return ranks, loss
}

// TestUndisturbed: 4 ranks and 3 ranks, with --ft and without, end with the reference's
// loss within 1e-9 relative: the number of ranks changes only the rounding of the
// gradient's sum.
func TestUndisturbed(t *testing.T) {
	o := testOptions(60)
	want := reference(o)
	for _, tc := range []struct {
		n  int
		ft bool
	}{{4, true}, {3, true}, {4, false}} {
		gl := []string{"-n", strconv.Itoa(tc.n)}
		if tc.ft {
			gl = append(gl, "--ft")
		}
		j := start(t, gl, "--steps", "60")
		ranks, loss := j.result(t, 60)
		if ranks != tc.n || relDiff(loss, want) > 1e-9 {
			t.Errorf("%v: ranks=%d loss=%.12g; want ranks=%d and the reference's %.12g", gl, ranks, loss, tc.n, want)
		}
	}
}

// TestKillRank kills one rank of 4 with SIGKILL mid-run: the job goes on with 3, redoes
// the interrupted step and ends with the undisturbed loss. Rank 0 is the one that prints
// and the first to hold the model; rank 2's momentum copy is on rank 3.
func TestKillRank(t *testing.T) {
	const steps = 200
	want := reference(testOptions(steps))
	for _, victim := range []int{2, 0} {
		t.Run(fmt.Sprintf("rank%d", victim), func(t *testing.T) {
			j := start(t, []string{"--ft", "-n", "4"}, "--steps", strconv.Itoa(steps), "--pause", "20ms")
			j.stepAtLeast(t, 10)
			j.kill(t, victim)
			ranks, loss := j.result(t, steps)
			if ranks != 3 || relDiff(loss, want) > 1e-6 {
				t.Errorf("ranks=%d loss=%.12g; want ranks=3 and the undisturbed %.12g", ranks, loss, want)
			}
			if sum := fmt.Sprintf("golaunch: --ft: 1 of 4 ranks failed: %d", victim); !strings.Contains(j.stderr.String(), sum) {
				t.Errorf("stderr lacks %q:\n%s", sum, j.stderr.String())
			}
		})
	}
}

// TestKillBuddies kills rank 1 and its buddy, rank 2, at once: rank 1's momentum has no
// copy left, so every survivor fails with errLost's text and golaunch exits non-zero.
func TestKillBuddies(t *testing.T) {
	j := start(t, []string{"--ft", "-n", "4"}, "--steps", "200", "--pause", "20ms")
	j.stepAtLeast(t, 10)
	j.kill(t, 1, 2)
	code := j.wait(t)
	if code == 0 || !strings.Contains(j.stderr.String(), errLost.Error()+" at step") || j.stdout.Len() != 0 {
		t.Errorf("exit %d, stdout %q; want non-zero, no result and %q in stderr:\n%s", code, j.stdout.String(), errLost, j.stderr.String())
	}
}

// TestRefill kills one rank of 4 with --refill: World.Spawn starts a new one, which takes
// the model and the step from the survivors, and the job ends with 4 ranks and the
// undisturbed loss.
func TestRefill(t *testing.T) {
	const steps = 200
	want := reference(testOptions(steps))
	j := start(t, []string{"--ft", "-n", "4"}, "--steps", strconv.Itoa(steps), "--pause", "20ms", "--refill")
	j.stepAtLeast(t, 10)
	j.kill(t, 1)
	ranks, loss := j.result(t, steps)
	if ranks != 4 || relDiff(loss, want) > 1e-6 {
		t.Errorf("ranks=%d loss=%.12g; want ranks=4 and the undisturbed %.12g", ranks, loss, want)
	}
	spawned, err := filepath.Glob(filepath.Join(j.dir, "spawn-*.pid"))
	if err != nil || len(spawned) != 1 {
		t.Errorf("spawned ranks' pid files %v (%v), want one", spawned, err)
	}
}
