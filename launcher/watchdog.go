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
// Starting it is best effort: without it (no executable to run) the job runs as before.
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

// watchdog is the spawner's end of a watchdog process.
type watchdog struct {
	w   *os.File
	cmd *exec.Cmd
}

// startWatchdog starts a watchdog, or returns nil when it cannot.
func startWatchdog() *watchdog {
	exe, err := os.Executable()
	if err != nil {
		return nil
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), envWatchdog+"=1")
	cmd.ExtraFiles = []*os.File{r}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		r.Close()
		w.Close()
		return nil
	}
	r.Close()
	return &watchdog{w: w, cmd: cmd}
}

// watch tells the watchdog of a rank's process group.
func (d *watchdog) watch(pgid int) {
	if d != nil {
		fmt.Fprintf(d.w, "+%d\n", pgid)
	}
}

// done tells the watchdog that the job ended and waits for it to exit.
func (d *watchdog) done() {
	if d == nil {
		return
	}
	io.WriteString(d.w, "done\n")
	d.w.Close()
	d.cmd.Wait()
}
