package launcher

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// watchdogsOf returns the live watchdog processes of parent: its children (listed by
// each of its threads) started with GOLAUNCH_WATCHDOG=1.
func watchdogsOf(parent int) []int {
	var dogs []int
	lists, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", parent))
	for _, l := range lists {
		b, _ := os.ReadFile(l)
		for _, f := range strings.Fields(string(b)) {
			env, err := os.ReadFile("/proc/" + f + "/environ")
			pid, _ := strconv.Atoi(f)
			if err == nil && alive(pid) && bytes.Contains(append([]byte{0}, env...), []byte("\x00"+envWatchdog+"=1\x00")) {
				dogs = append(dogs, pid)
			}
		}
	}
	return dogs
}

// oneWatchdog waits for parent to have exactly one watchdog and returns it.
func oneWatchdog(t *testing.T, parent int) int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		dogs := watchdogsOf(parent)
		if len(dogs) == 1 {
			return dogs[0]
		}
		if time.Now().After(deadline) {
			t.Fatalf("golaunch %d has watchdogs %v, want one", parent, dogs)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// killWatchdog SIGKILLs golaunch's watchdog and waits for golaunch's warning about it.
// It returns the warning's line.
func killWatchdog(t *testing.T, gl *running) string {
	t.Helper()
	dog := oneWatchdog(t, gl.cmd.Process.Pid)
	if err := syscall.Kill(dog, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("golaunch: warning: watchdog process %d exited (signal: killed)", dog)
	gl.waitStderr(t, want, 10*time.Second)
	log := gl.stderr.String()
	line, _, _ := strings.Cut(log[strings.Index(log, want):], "\n")
	return line
}

// TestWatchdogKilledIsRestarted SIGKILLs golaunch's watchdog during a job: golaunch must
// warn and start another, which must then do the watchdog's work: when golaunch is
// SIGKILLed, the ranks' children in their process groups (which Pdeathsig does not
// reach) are killed too.
func TestWatchdogKilledIsRestarted(t *testing.T) {
	bin := stressBin(t)
	dir := t.TempDir()
	gl := startGL(t, "-n", "2", bin, "ignoreterm", dir)
	pids, _ := rankFiles(t, dir, 2, 20*time.Second)
	line := killWatchdog(t, gl)
	_, after, ok := strings.Cut(line, "; restarted as process ")
	newDog, err := strconv.Atoi(after)
	if !ok || err != nil {
		t.Fatalf("warning %q does not name the restarted watchdog", line)
	}
	if dogs := watchdogsOf(gl.cmd.Process.Pid); len(dogs) != 1 || dogs[0] != newDog {
		t.Fatalf("golaunch's watchdogs are %v, want the restarted %d", dogs, newDog)
	}
	gl.cmd.Process.Kill()
	gl.wait(t, 10*time.Second)
	requireGone(t, pids, 5*time.Second)
}

// TestWatchdogGivesUp SIGKILLs golaunch's watchdog once more than it restarts one: the
// last warning says that the processes the ranks started are unguarded. The job still ends cleanly on SIGTERM.
func TestWatchdogGivesUp(t *testing.T) {
	bin := stressBin(t)
	dir := t.TempDir()
	gl := startGL(t, "-n", "2", "--grace", "300ms", bin, "ignoreterm", dir)
	pids, _ := rankFiles(t, dir, 2, 20*time.Second)
	for i := range watchdogRestarts {
		if line := killWatchdog(t, gl); !strings.Contains(line, "; restarted as process ") {
			t.Fatalf("kill %d: warning %q, want a restart", i+1, line)
		}
	}
	line := killWatchdog(t, gl)
	want := fmt.Sprintf(", not restarted after %d restarts; %s", watchdogRestarts, unguarded)
	if !strings.HasSuffix(line, want) {
		t.Errorf("last warning %q, want it to end in %q", line, want)
	}
	if dogs := watchdogsOf(gl.cmd.Process.Pid); len(dogs) != 0 {
		t.Errorf("watchdogs %v after golaunch gave up on them", dogs)
	}
	gl.cmd.Process.Signal(syscall.SIGTERM)
	if code := gl.wait(t, 15*time.Second); code != 128+int(syscall.SIGTERM) {
		t.Errorf("exit %d after SIGTERM, want %d\n%s", code, 128+int(syscall.SIGTERM), gl.stderr.String())
	}
	requireGone(t, pids, 5*time.Second)
}
