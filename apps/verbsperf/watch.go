package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"

	"github.com/gorma-hpc/gorma/transport/verbs"
	"github.com/gorma-hpc/gorma/transport/verbs/idlewatch"
	"github.com/gorma-hpc/gorma/transport/verbs/tcp"
)

// A job's tcp devices run under golaunch with an idle-role watch served by the launcher's
// process (transport/verbs/tcp/watch.go). verbsperf measures the provider as ranks use it:
// with --idle-watch (the default) a third process, this program re-executed with the
// hidden --watcher flag, serves the watches of the parent's and the peer's tcp devices.
// It creates nothing itself: the parent creates both watches before it starts the peer
// and the watcher, and hands them over as inherited descriptors (3..6 for the watcher,
// watchFDs for the peer). The watcher exits when its stdin closes.

// watchEnv tells the peer that descriptors watchFDs hold its tcp device's watch.
const watchEnv = "VERBSPERF_IDLE_WATCH"

// watchFDs are the peer's descriptors of its watch: page and bell, after the flag memfd.
var watchFDs = [2]uintptr{flagFD + 1, flagFD + 2}

// watchers is the parent's end: the watcher process and the two watches.
type watchers struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	mine  *idlewatch.Files // for the parent's tcp device; nil once taken
	peer  idlewatch.Files  // for the peer; closed once the peer started
}

// startWatcher creates the two watches and the watcher process.
func startWatcher(stderr io.Writer) (*watchers, error) {
	var ws [2]idlewatch.Files
	for i := range ws {
		w, err := idlewatch.NewFiles()
		if err != nil {
			closeWatch(&ws[0])
			return nil, err
		}
		ws[i] = w
	}
	exe, err := os.Executable()
	if err == nil {
		cmd := exec.Command(exe, "--watcher")
		cmd.Stderr = stderr
		cmd.ExtraFiles = []*os.File{ws[0].Page, ws[0].Bell, ws[1].Page, ws[1].Bell}
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		var stdin io.WriteCloser
		if stdin, err = cmd.StdinPipe(); err == nil {
			if err = cmd.Start(); err == nil {
				return &watchers{cmd: cmd, stdin: stdin, mine: &ws[0], peer: ws[1]}, nil
			}
		}
	}
	closeWatch(&ws[0])
	closeWatch(&ws[1])
	return nil, fmt.Errorf("start the idle-role watcher process (--idle-watch=false runs without): %w", err)
}

// config gives cfg the parent's watch, once, for its tcp device.
func (w *watchers) config(provider string, cfg verbs.Config) verbs.Config {
	if w != nil && provider == "tcp" && w.mine != nil {
		o, _ := cfg.Provider.(tcp.Options)
		o.IdleWatch, w.mine = w.mine, nil
		cfg.Provider = o
	}
	return cfg
}

// stop ends the watcher process and closes what the parent still holds.
func (w *watchers) stop() {
	if w == nil {
		return
	}
	closeWatch(w.mine)
	closeWatch(&w.peer)
	w.stdin.Close()
	w.cmd.Wait()
}

func closeWatch(w *idlewatch.Files) {
	if w == nil {
		return
	}
	for _, f := range []*os.File{w.Page, w.Bell} {
		if f != nil {
			f.Close()
		}
	}
}

// runWatcher is the watcher process: it serves the watches on descriptors 3..6 until
// stdin closes.
func runWatcher(stdin io.Reader) error {
	w := idlewatch.NewWatcher(0)
	defer w.Close()
	for i := range 2 {
		files := idlewatch.Files{Page: os.NewFile(uintptr(3+2*i), "page"), Bell: os.NewFile(uintptr(4+2*i), "bell")}
		_, err := w.Watch(files)
		closeWatch(&files)
		if err != nil {
			return fmt.Errorf("watcher: %w", err)
		}
	}
	io.Copy(io.Discard, stdin)
	return nil
}

// peerWatch returns the peer's watch for its tcp device, once, if the parent gave it one.
func (ps *peerState) peerWatch(provider string) *idlewatch.Files {
	if provider != "tcp" || ps.watchTaken || os.Getenv(watchEnv) == "" {
		return nil
	}
	ps.watchTaken = true
	return &idlewatch.Files{Page: os.NewFile(watchFDs[0], "page"), Bell: os.NewFile(watchFDs[1], "bell")}
}
