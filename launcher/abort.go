package launcher

import (
	"fmt"
	"math"
	"syscall"
	"time"

	"github.com/gorma-hpc/gorma/pmi"
)

// Exit codes of golaunch (see the package documentation).
const (
	ExitOK         = 0   // every rank finalized and exited 0
	ExitUsage      = 2   // bad flags, hostfile, keyfile, or a program that is not there
	ExitPanic      = 123 // the failing rank crashed in Go: a panic or fatal error (exit 2, or SIGABRT under GOTRACEBACK=crash)
	ExitTimeout    = 124 // --timeout expired
	ExitFailure    = 125 // the job failed with no exit code of its own to report
	ExitSignalBase = 128 // + the signal that killed the first failing rank (or golaunch)
)

// failure is the first cause of a job's end: its one summary line and exit code.
type failure struct {
	code int
	what string // "rank 3 (host h1, pid 1234) exited with code 7", "job timed out after 10s", ...
	kill bool   // SIGKILL at once, no grace (a second Ctrl-C)
	kind pmi.EventKind
	rank int // the failed rank, or -1
	host string
	// weight ranks the failures of ranks and agents as root causes (failWith): a later
	// failure of greater weight that arrives within rootCauseWindow takes the place of the
	// first one. early, one that happened before its agent heard of the abort, whenever it
	// arrives.
	weight causeWeight
	early  bool
}

// causeWeight ranks how surely a failure is the root cause of a job's end rather than a
// consequence of another failure just before it.
type causeWeight int

const (
	// weightConsequence: a non-zero exit of a rank that printed another rank's failure
	// (exitMsg.PeerFailed): it gave up because that peer failed.
	weightConsequence causeWeight = iota
	// weightExit: a non-zero exit or a missing Finalize, which may be a rank giving up
	// because a peer failed.
	weightExit
	// weightAbort: a rank's Abort, which may be its reaction to a peer's failure (an MPI
	// program's error handler, apps/allreducebench).
	weightAbort
	// weightPanic: a rank's Go panic, a bug of its own more often than a reaction to a
	// peer's failure (which a Go program more often returns as an error and exits 1).
	weightPanic
	// weightOutside: a rank killed by a signal its agent did not send, or an agent lost: a
	// cause from outside the job; and the job's own causes (timeout, a signal to
	// golaunch), which no later failure replaces.
	weightOutside
)

// summary is the line golaunch prints on stderr.
func (f *failure) summary() string {
	if f.kill {
		return "golaunch: " + f.what + "; job killed"
	}
	return "golaunch: " + f.what + "; job aborted"
}

// rankLabel names a rank for a summary line: "rank 3 (host h1, pid 1234)".
func rankLabel(rank int, host string, pid int) string {
	if pid > 0 {
		return fmt.Sprintf("rank %d (host %s, pid %d)", rank, host, pid)
	}
	return fmt.Sprintf("rank %d (host %s)", rank, host)
}

// rankFailure judges how a rank ended. It returns nil for a clean end (exit 0 after
// Finalize, or exit 0 of a program that never used PMI in a job where no rank did:
// pmiJob tells whether any rank has reached PMI init; the caller re-judges such ranks if
// one does later).
func rankFailure(m *exitMsg, host string, pmiJob bool) *failure {
	f := &failure{kind: pmi.ProcFailed, rank: m.Rank, host: host, weight: weightExit}
	label := rankLabel(m.Rank, host, m.Pid)
	switch {
	case m.Err != "":
		f.code, f.what = ExitFailure, fmt.Sprintf("rank %d (host %s) could not be started: %s", m.Rank, host, m.Err)
	case m.Signal != 0 && m.Panic != "":
		// GOTRACEBACK=crash: the Go runtime raises SIGABRT after the trace.
		f.code, f.what = ExitPanic, fmt.Sprintf("%s panicked: %s (killed by signal %s)", label, m.Panic, describeSignal(m.Signal))
		f.weight = weightPanic
	case m.Signal != 0:
		f.code, f.what = ExitSignalBase+m.Signal, fmt.Sprintf("%s killed by signal %s", label, describeSignal(m.Signal))
		if !m.OwnSignal {
			f.weight, f.early = weightOutside, m.Early
		}
	case m.Code != 0 && m.Panic != "":
		// Told apart from the rank's own exit(2) and from golaunch's usage error (2).
		f.code, f.what = ExitPanic, fmt.Sprintf("%s panicked: %s", label, m.Panic)
		f.weight = weightPanic
	case m.Code != 0:
		f.code, f.what = m.Code&0xff, fmt.Sprintf("%s exited with code %d", label, m.Code)
		if f.code == 0 {
			f.code = ExitFailure
		}
		if m.PeerFailed {
			f.weight = weightConsequence
		}
	case m.Finalized || !m.Connected && !pmiJob:
		return nil
	default:
		f.code, f.what = ExitFailure, label+" "+noFinalize
	}
	return f
}

// noFinalize is what became of a rank that reached PMI init and exited 0 without
// Finalize, with what its program must do.
const noFinalize = "exited without calling Finalize (call w.Finalize(ctx), or MPI_Finalize, before the program exits)"

// Codes of the abort requests an agent sends for a rank that did not call Abort. A rank's
// own Abort never carries them (pmiHandler.Abort).
const (
	// abortProtocol: the rank broke the PMI protocol (pmiHandler.ProtocolError); Msg is
	// the error.
	abortProtocol = math.MinInt32
	// abortRefused: the rank asked for what golaunch refuses, and the refusal would leave
	// the job's other ranks waiting for ever (pmiHandler.RefusedSpawn); Msg says what
	// the rank did, why that ends the job and what to do instead.
	abortRefused = math.MinInt32 + 1
)

// abortFailure is a rank's Abort(code, msg), its PMI protocol error, or its request that
// golaunch refuses and that ends the job.
func abortFailure(m *abortReqMsg, host string, pid int) *failure {
	switch m.Code {
	case abortProtocol, abortRefused:
		// The rank's own bug, like a panic: it outranks the exits of the ranks that
		// gave up after it.
		sep := ": "
		if m.Code == abortRefused {
			sep = " "
		}
		return &failure{code: ExitFailure, what: rankLabel(m.Rank, host, pid) + sep + m.Msg,
			kind: pmi.ProcFailed, rank: m.Rank, host: host, weight: weightPanic}
	}
	code := m.Code
	if code <= 0 || code > 255 {
		code = 1 // an aborted job never exits 0; codes beyond 255 do not survive exit(2)
	}
	what := fmt.Sprintf("%s called Abort(%d)", rankLabel(m.Rank, host, pid), m.Code)
	if m.Msg != "" {
		what += ": " + m.Msg
	}
	return &failure{code: code, what: what, kind: pmi.Aborted, rank: m.Rank, host: host, weight: weightAbort}
}

// agentFailure is an agent that became unreachable.
func agentFailure(host, how string) *failure {
	return &failure{code: ExitFailure, what: fmt.Sprintf("agent %s unreachable (%s)", host, how),
		kind: pmi.ProcFailed, rank: -1, host: host, weight: weightOutside}
}

// jobFailure is a cause that is no rank's (timeout, signal to golaunch).
func jobFailure(code int, what string) *failure {
	return &failure{code: code, what: what, kind: pmi.Aborted, rank: -1, weight: weightOutside}
}

// abort ends the agent's part of a job: the ranks get ev through PMI, fences fail, every
// live rank's process group gets SIGTERM, and SIGKILL after grace (at once when grace
// is 0). Only the first call acts; a later call with grace 0 still kills at once.
func (j *agentJob) abort(ev pmi.Event, grace time.Duration) {
	j.mu.Lock()
	first := !j.aborting
	if first {
		j.aborting, j.abortCause = true, ev.Cause
	}
	j.mu.Unlock()
	if !first {
		if grace == 0 {
			j.signalAll(syscall.SIGKILL)
		}
		return
	}
	j.a.log.Printf("job %s: aborting: %s", j.spec.ID, ev.Cause)
	j.srv.Notify(-1, ev)
	j.x.Fail(fmt.Errorf("%s", ev.Cause))
	j.stopGrowth()
	if grace == 0 {
		j.signalAll(syscall.SIGKILL)
		return
	}
	j.signalAll(syscall.SIGTERM)
	j.mu.Lock()
	j.killTimer = time.AfterFunc(grace, func() { j.signalAll(syscall.SIGKILL) })
	j.mu.Unlock()
}

// signalAll sends sig to the process group of every rank not yet reaped.
func (j *agentJob) signalAll(sig syscall.Signal) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.sent == nil {
		j.sent = make(map[int]bool)
	}
	j.sent[int(sig)] = true
	for _, p := range j.procs {
		select {
		case <-p.ended:
		default:
			signalGroup(p.pid, sig)
		}
	}
}
