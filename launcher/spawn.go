package launcher

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gorma-hpc/gorma/pmi"
	"github.com/gorma-hpc/gorma/transport/verbs/idlewatch"
)

// outputDrain bounds how long a rank's exit report waits for its output pipes to reach
// EOF after the rank itself has exited (a descendant may still hold them open).
const outputDrain = 500 * time.Millisecond

// spawner starts processes from one goroutine locked to its OS thread for the job's
// lifetime. PR_SET_PDEATHSIG (SysProcAttr.Pdeathsig) fires when the thread that forked
// the child exits, not the process. Go may retire an idle thread at any time, so a child
// forked from an arbitrary goroutine could be killed mid-run, and one forked from a
// thread that survives forever would still die with the agent only by luck. With one
// locked thread that lives until every child is reaped, children get SIGKILL exactly when
// the agent process dies (even by SIGKILL) and never otherwise.
//
// start may be called from any goroutine; stop must be called once, after every child
// has been reaped (the thread then exits).
//
// The spawner also holds the job's idle-role watcher (idlewatch.Watcher), which gives each rank
// it starts a watch: ranks that use the tcp provider then leave CQ.Wait without waking their
// reader goroutines. This process hands idle reading roles back a tick later.
type spawner struct {
	reqs  chan spawnReq
	quit  chan struct{}
	done  chan struct{}
	dog   *watchdog          // kills the ranks' groups if this process dies first (watchdog.go); may be nil
	watch *idlewatch.Watcher // nil: ranks get no idle-role watch
}

type spawnReq struct {
	cmd  *exec.Cmd
	cpus []int // processors to bind the child to (bind.go); nil: the spawner's own
	res  chan error
}

// newSpawner starts a spawner; watch gives each rank an idle-role watch (for jobs that may
// use the tcp provider).
func newSpawner(watch bool) *spawner {
	s := &spawner{reqs: make(chan spawnReq), quit: make(chan struct{}), done: make(chan struct{}), dog: startWatchdog()}
	if watch {
		s.watch = idlewatch.NewWatcher(0)
	}
	go s.loop()
	return s
}

func (s *spawner) loop() {
	runtime.LockOSThread() // never unlocked: the thread exits with this goroutine
	defer close(s.done)
	for {
		select {
		case r := <-s.reqs:
			// The child inherits the forking thread's processor set: bind this thread
			// for the fork, then restore it.
			restore, err := pinThread(r.cpus)
			if err == nil {
				err = r.cmd.Start()
				restore()
			}
			if err == nil {
				s.dog.watch(r.cmd.Process.Pid) // each rank leads its own group
			}
			r.res <- err
		case <-s.quit:
			return
		}
	}
}

// start starts cmd on the spawner's thread, bound to cpus unless that is nil.
func (s *spawner) start(cmd *exec.Cmd, cpus []int) error {
	res := make(chan error, 1)
	select {
	case s.reqs <- spawnReq{cmd, cpus, res}:
		return <-res
	case <-s.done:
		return errors.New("spawner stopped")
	}
}

// stop ends the spawner's thread, its watchdog and its watcher.
func (s *spawner) stop() {
	close(s.quit)
	<-s.done
	s.dog.done()
	if s.watch != nil {
		s.watch.Close()
	}
}

// rankProc is one running rank on this agent.
type rankProc struct {
	rank, local int
	cmd         *exec.Cmd
	pid         int
	stdin       *os.File      // write end of rank 0's stdin, else nil
	outDone     chan struct{} // closed when both output pipes reached EOF
	ended       chan struct{} // closed once the exit is reported
	unwatch     func()        // ends the rank's idle-role watch; nil if it has none
	ring        *os.File      // the rank's flight recorder's ring file (timeline.go); nil if none
	traceFile   string        // the timeline's file its ring's dump goes beside
	panics      panicWatch    // looks for a Go panic, or another rank's failure, in the rank's stderr
}

// rankEnv builds a rank's environment: the agent's own (without GOLAUNCH_*, and without
// PMI_* and PMIX_*, which describe the process manager that started the agent, not the
// rank's), then the job's -x variables, then the contract, PMI_RANK and PMI_SIZE. The
// local rank and count as Hydra gives them (later entries win). spawnRank adds PMI_FD.
func rankEnv(base, extra []string, c pmi.Contract) []string {
	env := make([]string, 0, len(base)+len(extra)+16)
	for _, kv := range base {
		if !strings.HasPrefix(kv, "GOLAUNCH_") && !strings.HasPrefix(kv, "PMI_") && !strings.HasPrefix(kv, "PMIX_") {
			env = append(env, kv)
		}
	}
	env = append(env, extra...)
	env = append(env, c.Environ()...)
	itoa := strconv.Itoa
	return append(env, envPMIRank+"="+itoa(c.Rank), envPMISize+"="+itoa(c.Size),
		envLocalRankID+"="+itoa(c.LocalRank), envLocalNRanks+"="+itoa(c.LocalSize))
}

// The PMI-1 variables every rank gets (an MPI library's PMI client reads them), and
// Hydra's names for the rank's place on its host (some libraries read those).
const (
	envPMIRank     = "PMI_RANK"
	envPMISize     = "PMI_SIZE"
	envLocalRankID = "MPI_LOCALRANKID"
	envLocalNRanks = "MPI_LOCALNRANKS"
)

// pmiSocketpair returns the two ends of a new socketpair: the agent's as a net.Conn, the
// rank's as a file to inherit (close-on-exec here; exec gives the child its own copy).
func pmiSocketpair() (net.Conn, *os.File, error) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("PMI socketpair: %w", err)
	}
	ours := os.NewFile(uintptr(fds[0]), "pmi-agent")
	conn, err := net.FileConn(ours)
	ours.Close()
	if err != nil {
		syscall.Close(fds[1])
		return nil, nil, fmt.Errorf("PMI socketpair: %w", err)
	}
	return conn, os.NewFile(uintptr(fds[1]), "pmi-rank"), nil
}

// spawnRank starts one rank with its stdout and stderr on pipes read by forward (which
// gets stream 1 or 2 and a chunk it may keep; p.panics sees stderr first), in its own
// process group, and in its own session when ownSession says so (session.go), with
// Pdeathsig, bound to cpus unless that is nil. Rank 0 also gets a stdin
// pipe. pmiEnd, the rank's end of its PMI socketpair, becomes its PMI_FD; spawnRank
// closes it.
func spawnRank(sp *spawner, path string, args, env []string, dir string, rank, local int, cpus []int,
	pmiEnd, ring *os.File, forward func(stream int, data []byte)) (*rankProc, error) {
	cmd := exec.Command(path, args...)
	cmd.Args[0] = path
	cmd.Env = env
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if ownSession(path) {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL} // a new session leads a new group
	}
	p := &rankProc{rank: rank, local: local, cmd: cmd, outDone: make(chan struct{}), ended: make(chan struct{}),
		panics: panicWatch{rank: rank}}
	childEnds := []*os.File{pmiEnd}
	var ours []*os.File
	closeAll := func(fs []*os.File) {
		for _, f := range fs {
			f.Close()
		}
	}
	pipe := func() (r, w *os.File, err error) {
		r, w, err = os.Pipe()
		return
	}
	outR, outW, err := pipe()
	if err != nil {
		pmiEnd.Close()
		return nil, err
	}
	errR, errW, err := pipe()
	if err != nil {
		closeAll([]*os.File{outR, outW, pmiEnd})
		return nil, err
	}
	childEnds, ours = append(childEnds, outW, errW), append(ours, outR, errR)
	cmd.Stdout, cmd.Stderr = outW, errW
	if rank == 0 {
		inR, inW, err := pipe()
		if err != nil {
			closeAll(append(childEnds, ours...))
			return nil, err
		}
		childEnds, ours = append(childEnds, inR), append(ours, inW)
		cmd.Stdin, p.stdin = inR, inW
	}
	var watch *idlewatch.Watch
	if sp.watch != nil {
		// Best effort: without a watch the rank's tcp device wakes its readers itself.
		if files, h, err := sp.watch.Add(); err == nil {
			cmd.ExtraFiles = []*os.File{files.Page, files.Bell} // descriptors 3 and 4
			cmd.Env = append(cmd.Env, pmi.EnvIdleWatch+"=3,4")
			childEnds = append(childEnds, files.Page, files.Bell)
			watch, p.unwatch = h, h.Remove
		}
	}
	cmd.ExtraFiles = append(cmd.ExtraFiles, pmiEnd) // the descriptor after those above
	cmd.Env = append(cmd.Env, pmi.EnvPMIFD+"="+strconv.Itoa(2+len(cmd.ExtraFiles)))
	if ring != nil { // the agent keeps its own descriptor of it
		cmd.ExtraFiles = append(cmd.ExtraFiles, ring)
		cmd.Env = append(cmd.Env, pmi.EnvTraceRing+"="+strconv.Itoa(2+len(cmd.ExtraFiles)))
	}
	err = sp.start(cmd, cpus)
	closeAll(childEnds)
	if err != nil {
		if p.unwatch != nil {
			p.unwatch()
		}
		closeAll(ours)
		return nil, err
	}
	if watch != nil {
		watch.Signal(cmd.Process)
	}
	p.pid = cmd.Process.Pid
	outs := make(chan struct{}, 2)
	go pump(outR, 1, forward, outs)
	go pump(errR, 2, func(stream int, data []byte) {
		p.panics.write(data) // before forward, which may keep data
		forward(stream, data)
	}, outs)
	go func() {
		<-outs
		<-outs
		close(p.outDone)
	}()
	return p, nil
}

// pump forwards everything read from r as stream's output, then closes r.
func pump(r *os.File, stream int, forward func(int, []byte), done chan<- struct{}) {
	defer func() { done <- struct{}{} }()
	defer r.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			forward(stream, buf[:n])
		}
		if err != nil {
			return
		}
	}
}

// wait reaps the rank and waits (briefly) for its output to drain. It returns the exit
// code (or -1) and the killing signal (or 0).
func (p *rankProc) wait() (code, sig int) {
	p.cmd.Wait()
	if p.unwatch != nil {
		p.unwatch()
	}
	select {
	case <-p.outDone:
	case <-time.After(outputDrain):
	}
	return exitStatus(p.cmd.ProcessState)
}

func exitStatus(ps *os.ProcessState) (code, sig int) {
	if ps == nil {
		return -1, 0
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return -1, int(ws.Signal())
	}
	return ps.ExitCode(), 0
}

// signalGroup sends sig to the process group of pid (each rank leads its own group), then
// SIGCONT so that a stopped rank handles a SIGTERM at once.
func signalGroup(pid int, sig syscall.Signal) {
	if pid <= 0 {
		return
	}
	syscall.Kill(-pid, sig)
	if sig != syscall.SIGKILL && sig != syscall.SIGCONT && sig != syscall.SIGINT {
		syscall.Kill(-pid, syscall.SIGCONT)
	}
}

// resolveProgram finds prog as exec would (a name without a slash is looked up in PATH)
// and checks that it is an executable file. The error names the problem for the user.
func resolveProgram(prog string) (string, error) {
	path, err := exec.LookPath(prog)
	if err != nil {
		var ee *exec.Error
		switch {
		case errors.Is(err, exec.ErrDot):
			return "", fmt.Errorf("program %q resolves to the current directory through PATH; run it as ./%s", prog, prog)
		case errors.As(err, &ee) && errors.Is(ee.Err, exec.ErrNotFound):
			return "", fmt.Errorf("program %q not found in PATH", prog)
		}
		st, serr := os.Stat(prog)
		switch {
		case serr != nil:
			return "", fmt.Errorf("program %q not found", prog)
		case st.IsDir():
			return "", fmt.Errorf("program %q is a directory", prog)
		default:
			return "", fmt.Errorf("program %q is not executable (mode %04o)", prog, st.Mode().Perm())
		}
	}
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return "", fmt.Errorf("program %q is a directory", prog)
	}
	return path, nil
}

// describeSignal names a signal: "9 (SIGKILL)".
func describeSignal(sig int) string {
	name := signalNames[syscall.Signal(sig)]
	if name == "" {
		return fmt.Sprintf("%d", sig)
	}
	return fmt.Sprintf("%d (%s)", sig, name)
}

var signalNames = map[syscall.Signal]string{
	syscall.SIGHUP: "SIGHUP", syscall.SIGINT: "SIGINT", syscall.SIGQUIT: "SIGQUIT",
	syscall.SIGILL: "SIGILL", syscall.SIGTRAP: "SIGTRAP", syscall.SIGABRT: "SIGABRT",
	syscall.SIGBUS: "SIGBUS", syscall.SIGFPE: "SIGFPE", syscall.SIGKILL: "SIGKILL",
	syscall.SIGUSR1: "SIGUSR1", syscall.SIGSEGV: "SIGSEGV", syscall.SIGUSR2: "SIGUSR2",
	syscall.SIGPIPE: "SIGPIPE", syscall.SIGALRM: "SIGALRM", syscall.SIGTERM: "SIGTERM",
	syscall.SIGXCPU: "SIGXCPU", syscall.SIGXFSZ: "SIGXFSZ", syscall.SIGSYS: "SIGSYS",
}
