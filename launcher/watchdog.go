package launcher

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// The watchdog kills the ranks' process groups when the process that spawned them dies
// without ending the job, even by SIGKILL. Pdeathsig kills each rank then, but not what a
// rank started in its group (a helper, a shell pipeline's other commands), which would
// live on as orphans. So each spawner starts a watchdog: this program again (whatever
// binary links package launcher: golaunch, or a test), told by GOLAUNCH_WATCHDOG to run
// watchdogMain instead of its main. It reads the process groups of the ranks from a pipe
// ("+pgid" per rank, "done" at the end). EOF without "done" means its parent died: it
// sends SIGKILL to every group it was told of and exits. The pipe's write end is
// close-on-exec, so no rank holds it open. The watchdog has a process group of its own
// and ignores the signals of a terminal or of an abort, so that it outlives its parent.
// Starting it is best effort: without it (no executable to run) the job runs unguarded.
// A watchdog that exits while its job runs (someone killed it) is reported on stderr
// and restarted, told of every group again (watchdog.reap).
const envWatchdog = "GOLAUNCH_WATCHDOG"

func init() {
	if os.Getenv(envWatchdog) != "1" {
		return
	}
	os.Exit(watchdogMain(os.NewFile(3, "watchdog-pipe")))
}

// watchdogMain is the watchdog process: it returns its exit code.
func watchdogMain(r io.Reader) int {
	signal.Ignore(syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGPIPE)
	groups := watchGroups(r)
	for _, g := range groups {
		syscall.Kill(-g, syscall.SIGKILL)
	}
	return 0
}

// watchGroups reads the watchdog's pipe to its end and returns the process groups to
// kill: none after "done", else every group announced.
func watchGroups(r io.Reader) []int {
	var groups []int
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "done" {
			return nil
		}
		if g, err := strconv.Atoi(strings.TrimPrefix(line, "+")); err == nil && strings.HasPrefix(line, "+") && g > 1 {
			groups = append(groups, g)
		}
	}
	return groups
}

// watchdogRestarts bounds how many times a spawner restarts a watchdog that exited
// before the job ended.
const watchdogRestarts = 5

// unguarded ends the warning about a watchdog that is not restarted. Pdeathsig still
// kills the ranks when golaunch dies; what nothing kills then is the processes they
// started.
const unguarded = "if golaunch dies, its ranks die with it but the processes they started will not be killed"

// watchdog is the spawner's end of a watchdog process. A watchdog that exits before done
// (killed by someone, say) is reported on stderr and restarted, up to watchdogRestarts
// times, and the new one is told of every group announced so far. Its methods may be
// called from any goroutine; each watchdog process has a reaper goroutine that ends
// with the process.
type watchdog struct {
	warn io.Writer // where a watchdog's early exit is reported

	mu       sync.Mutex
	w        *os.File      // the current process's pipe; nil once none runs
	cmd      *exec.Cmd     // the current process
	reaped   chan struct{} // closed when the current process has been waited for
	groups   []int         // every group announced
	ending   bool          // done was called
	restarts int
}

// startWatchdog starts a watchdog, or returns nil when it cannot.
func startWatchdog() *watchdog {
	d := &watchdog{warn: os.Stderr}
	if err := d.spawnLocked(); err != nil {
		return nil
	}
	return d
}

// spawnLocked starts a watchdog process and its reaper, and tells it of d.groups; d.mu
// is held (or d not yet shared).
func (d *watchdog) spawnLocked() error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), envWatchdog+"=1")
	cmd.ExtraFiles = []*os.File{r}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = cmd.Start()
	r.Close()
	if err != nil {
		w.Close()
		return err
	}
	d.w, d.cmd, d.reaped = w, cmd, make(chan struct{})
	for _, g := range d.groups {
		fmt.Fprintf(w, "+%d\n", g)
	}
	go d.reap(cmd, d.reaped)
	return nil
}

// reap waits for the watchdog process cmd; if it exited before done, it reports that
// and starts another.
func (d *watchdog) reap(cmd *exec.Cmd, reaped chan struct{}) {
	err := cmd.Wait()
	d.mu.Lock()
	defer d.mu.Unlock()
	defer close(reaped)
	if d.ending {
		return
	}
	d.w.Close()
	d.w = nil
	why := "exit status 0"
	if err != nil {
		why = err.Error()
	}
	msg := fmt.Sprintf("golaunch: warning: watchdog process %d exited (%s)", cmd.Process.Pid, why)
	if d.restarts >= watchdogRestarts {
		fmt.Fprintf(d.warn, "%s, not restarted after %d restarts; %s\n", msg, d.restarts, unguarded)
		return
	}
	d.restarts++
	if err := d.spawnLocked(); err != nil {
		fmt.Fprintf(d.warn, "%s and cannot be restarted (%v); %s\n", msg, err, unguarded)
		return
	}
	fmt.Fprintf(d.warn, "%s; restarted as process %d\n", msg, d.cmd.Process.Pid)
}

// watch tells the watchdog of a rank's process group.
func (d *watchdog) watch(pgid int) {
	if d == nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.groups = append(d.groups, pgid)
	if d.w != nil {
		fmt.Fprintf(d.w, "+%d\n", pgid)
	}
}

// done tells the watchdog that the job ended and waits for it to exit.
func (d *watchdog) done() {
	if d == nil {
		return
	}
	d.mu.Lock()
	d.ending = true
	if d.w != nil {
		io.WriteString(d.w, "done\n")
		d.w.Close()
		d.w = nil
	}
	reaped := d.reaped
	d.mu.Unlock()
	<-reaped
}
