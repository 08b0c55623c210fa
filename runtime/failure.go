package runtime

import (
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gorma-hpc/gorma/pmi"
	"github.com/gorma-hpc/gorma/transport/verbs"
)

// Failure handling. A peer is failed when its connection reports an error (a completion
// with an error status: RetryExcErr when the peer process died or closed its transport,
// WRFlushErr, RemAccessErr, ...; a malformed message) or when the launcher's agent reports
// it failed (pmi.ProcFailed). From then on every operation that involves the peer fails
// with a *ProcError wrapping ErrProcFailed:
//
//   - pending sends to it and receives from it complete with the error at once, and so do
//     later ones (a receive first takes any message from it that had already arrived);
//   - receives from AnySource (and AnySource probes) that are pending fail too, and a later
//     AnySource receive fails unless a matching message is already waiting. Once any peer
//     has failed, an AnySource receive never blocks (as ULFM's MPI_ERR_PROC_FAILED_PENDING,
//     without its acknowledge call; receive from named sources to go on);
//   - Barrier fails at every rank once any peer has failed (under golaunch the agent
//     reports every death to every rank), so that no rank waits for a live rank that left
//     the barrier with an error. So do receives on a Sibling World (the collectives'
//     traffic), which are not yet matched;
//   - operations that involve only live peers go on.
//
// Under golaunch without GORMA_FT, a peer gone that the transport saw is held until the
// agent tells of a failure, for at most agentWordWait, so that calls name the rank the
// launcher aborts the job for rather than a rank the abort ended.
//
// When the job is aborted (pmi.Aborted, or this rank's Abort) every pending and later
// call fails with a *ProcError wrapping ErrAborted that names the aborting rank. Losing
// the connection to the agent (outside Finalize) counts as an abort. Under golaunch, a
// peer failure the agent says nothing of for agentWordBound ends this process
// (watchEvents).

// peerFailedLocked marks p failed with cause, as the transport saw it, and fails
// everything that waits on it; or it holds the failure until the agent's word (holdLocked).
func (f *failures) peerFailedLocked(p *peer, cause error) {
	e := f.e
	why := transportWhy(cause)
	if f.holdLocked(p, why, cause) {
		return
	}
	e.peerFailedWhyLocked(p, why, cause)
}

// agentWordWait is how long a rank under golaunch holds a peer's failure that its
// transport saw (the peer is gone) while its agent has told of no failure. golaunch
// aborts a job at its first failure: every agent tells its ranks which rank failed
// (pmi.ProcFailed) and then ends them. So a survivor's transport may see another
// survivor go before the word reaches it. Held until the word, that casualty's failure
// comes after the failure of the rank golaunch names, and the calls that fail (a
// Barrier, a receive from the casualty) name that rank. A failure held this long is
// applied anyway: a transport fault between two live processes, which no agent reports.
// launcher's TestPanicBlame runs the race.
const agentWordWait = time.Second

// heldFailure is a peer's failure that its transport saw, held (holdLocked).
type heldFailure struct {
	p     *peer
	why   string
	cause error
	at    int64 // coarseNow when it was held
}

// holdLocked holds the failure of p that its transport saw, and reports whether it did:
// under golaunch's agent (watched), without GORMA_FT (where every failure gets its own
// word and ends no other rank), while the agent has told of no failure and the job is
// neither aborting nor finalizing, for a peer that is gone. Calls that wait on p wait
// until releaseHeldFailuresLocked fails it.
func (f *failures) holdLocked(p *peer, why string, cause error) bool {
	e := f.e
	if !f.watched || f.heard || e.ft.on || e.aborted != nil || e.finalizing || p.failed != nil ||
		!strings.HasPrefix(why, "is gone") {
		return false
	}
	for _, h := range f.held {
		if h.p == p {
			return true
		}
	}
	f.held = append(f.held, heldFailure{p: p, why: why, cause: cause, at: coarseNow()})
	return true
}

// releaseHeldFailuresLocked fails the peers whose failures are held: every one when all
// is set (the agent's word came, or the rank stops holding), else those held for
// agentWordWait.
func (f *failures) releaseHeldFailuresLocked(all bool) {
	e := f.e
	var due []heldFailure
	kept := f.held[:0]
	for _, h := range f.held {
		if all || sinceCoarse(h.at) >= agentWordWait {
			due = append(due, h)
		} else {
			kept = append(kept, h)
		}
	}
	clear(f.held[len(kept):])
	f.held = kept
	for _, h := range due {
		e.peerFailedWhyLocked(h.p, h.why, h.cause)
	}
}

// peerFailedWhyLocked marks p failed with why (ProcError.Why) and cause, and fails
// everything that waits on it.
func (f *failures) peerFailedWhyLocked(p *peer, why string, cause error) {
	e := f.e
	if p.failed != nil {
		return
	}
	pe := &ProcError{Rank: p.rank, Host: p.host, Err: ErrProcFailed, Why: why, Cause: cause}
	p.failed = pe
	p.fin.off.Store(true)
	if e.failed == nil {
		e.failed = pe
	}
	p.wakeLocked()
	if p.qp != nil && !p.dev.closed {
		p.qp.ToErr() // no more DMA into our buffers once this returns; flushes are ignored
	}
	for p.out.n > 0 {
		op := *p.out.front()
		p.out.pop()
		if op.r != nil && op.kind != opRead {
			op.r.outQueued = false
			e.completeLocked(op.r, pe)
		}
	}
	for _, r := range e.match.table.slots {
		if r != nil && ((r.kind == reqSend && r.peer == p.rank) || (r.kind == reqRecv && r.status.Source == p.rank)) {
			e.completeLocked(r, pe)
		}
	}
	e.releasePeerLocked(p, pe)
	e.ft.peerFailedLocked(p.rank)
	e.ft.wakeCollectiveSendsLocked(p.rank)
	e.failQueueLocked(&e.match.posted, p.rank, pe)
	e.failQueueLocked(&e.match.probes, p.rank, pe)
	e.rma.failCountersLocked(p)
	e.poll.kickLocked()
}

// failQueueLocked fails the requests of q that name rank or AnySource.
func (f *failures) failQueueLocked(q *reqQueue, rank int, err error) {
	e := f.e
	for r := range q.All() {
		if rank < 0 || r.peer == rank || (r.peer == AnySource || r.anyFail) && e.ft.scopeHasLocked(r, rank) {
			q.Remove(&r.link)
			e.completeLocked(r, err)
		}
	}
}

// failAllLocked fails every pending request with err (abort, finalize).
func (f *failures) failAllLocked(err error) {
	e := f.e
	for _, p := range e.links.peers {
		if p == nil {
			continue
		}
		for p.out.n > 0 {
			op := *p.out.front()
			p.out.pop()
			if op.r != nil && op.kind != opRead {
				op.r.outQueued = false
				e.completeLocked(op.r, err)
			}
		}
	}
	for _, r := range e.match.table.slots {
		if r != nil {
			e.completeLocked(r, err)
		}
	}
	e.failHeldLocked(err)
	e.failQueueLocked(&e.match.posted, -1, err)
	e.failQueueLocked(&e.match.probes, -1, err)
	e.rma.failAllCountersLocked(err)
	e.poll.kickLocked()
}

// sourceFailedLocked returns the error receive (or probe) r must fail with when nothing
// matching is waiting, or nil.
func (f *failures) sourceFailedLocked(r *Request) error {
	e := f.e
	src := r.peer
	if err := e.ft.revokedForLocked(r); err != nil {
		return err
	}
	switch {
	case e.aborted != nil:
		return e.aborted
	case src == AnySource || r.anyFail:
		if e.failed != nil && e.ft.on {
			return e.ft.failedForLocked(r)
		}
		if e.failed != nil {
			return e.failed
		}
	case src != e.rank:
		if p := e.links.peers[src]; p != nil && p.failed != nil {
			return p.failed
		}
	}
	return nil
}

// deviceFailedLocked fails every peer of d (its CQ failed: overrun, closed under us).
func (f *failures) deviceFailedLocked(d *device, err error) {
	e := f.e
	d.broken = true
	for _, p := range e.links.peers {
		if p != nil && p.dev == d {
			e.peerFailedLocked(p, fmt.Errorf("%s device failed: %w", d.name, err))
		}
	}
}

// eventSource is a process manager that pushes events: golaunch's agent (*pmi.Client).
// A foreign PMI server pushes none (PMI-1 and PMI-2 are lock-step), so under Slurm, Hydra
// or Flux a peer's death is seen by the transport alone, and the PM ends the job.
type eventSource interface {
	Events() <-chan pmi.Event
}

// agentWordBound is how long a rank under golaunch waits, after its transport reported a
// peer failed, for any word of the failure from its agent (a ProcFailed or Aborted
// event). A peer failure under golaunch always aborts the job, and a live agent tells
// every rank and then ends it. An agent that stays silent this long is stopped or hung
// (SIGSTOP, a frozen host), and would leave this rank running after the rest of its job
// is gone, so the rank exits by itself (agentSilent). TestAgentSilentAfterPeerFailure and
// launcher's TestNetnsLoadStoppedAgent check it.
const agentWordBound = 10 * time.Second

// agentCheckEvery is how often the event watcher looks for a peer failure the agent has
// said nothing of.
const agentCheckEvery = 500 * time.Millisecond

// watchEvents applies the agent's events until the connection ends or the World stops,
// and ends this process when a peer failure seen by the transport gets no word from the
// agent within agentWordBound.
func (f *failures) watchEvents(events <-chan pmi.Event) {
	e := f.e
	defer e.bg.Done()
	tick := time.NewTicker(agentCheckEvery)
	defer tick.Stop()
	clock := time.NewTicker(clockTick)
	defer clock.Stop()
	var since time.Time // when the watcher first saw a peer failure the agent has not told of
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				e.agentLost()
				return
			}
			if ev.Kind == pmi.ReportAsked {
				e.watch.answerReport(ev.Stacks)
				continue
			}
			e.onEvent(ev)
			tick.Stop() // the agent is alive: it ends the job itself
			since = time.Time{}
		case <-clock.C:
			tickClock()
		case <-tick.C:
			pe := e.unheardFailure()
			switch {
			case pe == nil:
				since = time.Time{}
			case since.IsZero():
				since = time.Now()
			case time.Since(since) >= agentWordBound:
				e.agentSilent(pe, time.Since(since))
				return
			}
		case <-e.stop.Done():
			return
		}
	}
}

// unheardFailure applies the failures held for agentWordWait, and returns the first peer
// failure while the job has not been aborted and this rank is not finalizing, or nil.
func (f *failures) unheardFailure() *ProcError {
	e := f.e
	e.mu.Lock()
	defer e.mu.Unlock()
	e.releaseHeldFailuresLocked(e.finalizing || e.aborted != nil)
	if e.finalizing || e.aborted != nil {
		return nil
	}
	return e.failed
}

// agentSilent ends this process (exit code 1) after a peer failure pe its agent has said
// nothing of for d, naming both on stderr.
func (f *failures) agentSilent(pe *ProcError, d time.Duration) {
	e := f.e
	fmt.Fprintf(os.Stderr, "gorma: rank %d (host %s): %v, and the launcher's agent has said nothing of it for %v "+
		"(is the agent stopped or hung?): exiting, as golaunch aborts the rest of the job\n",
		e.rank, e.host, pe, d.Round(time.Millisecond))
	e.exit(1)
}

func (f *failures) onEvent(ev pmi.Event) {
	e := f.e
	e.mu.Lock()
	defer e.mu.Unlock()
	switch ev.Kind {
	case pmi.ProcFailed:
		if ev.Rank >= 0 && ev.Rank < e.links.known() && ev.Rank != e.rank {
			p := e.links.peers[ev.Rank]
			if p == nil {
				p = e.links.placeholderLocked(ev.Rank)
			}
			e.peerFailedWhyLocked(p, "failed: "+launcherWhy(ev.Rank, eventCause(ev)),
				fmt.Errorf("launcher reports: %s", eventCause(ev)))
			// The failure golaunch aborts the job for, which this rank's transport may
			// have seen after a casualty of it: later AnySource receives and Barriers
			// name it.
			e.failed = p.failed
		}
	case pmi.Aborted:
		if e.aborted == nil {
			why := eventCause(ev)
			if ev.Rank >= 0 {
				why = "aborted the job: " + launcherWhy(ev.Rank, why)
			}
			e.aborted = &ProcError{Rank: ev.Rank, Host: ev.Host, Err: ErrAborted, Why: why, Cause: abortCause(ev.Code, ev.Cause)}
			e.failAllLocked(e.aborted)
		}
	}
	if ev.Kind == pmi.ProcFailed || ev.Kind == pmi.Aborted {
		// The failure the agent names came first; the held ones follow it.
		e.heard = true
		e.releaseHeldFailuresLocked(true)
	}
}

func (f *failures) agentLost() {
	e := f.e
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.finalizing || e.aborted != nil {
		return
	}
	e.aborted = &ProcError{Rank: -1, Err: ErrAborted, Cause: errors.New("lost the connection to the launcher's agent")}
	e.failAllLocked(e.aborted)
	e.releaseHeldFailuresLocked(true)
}

// agentErr gives an error of the agent's protocol the runtime's sentinel. The agent's
// pmi.ErrAborted (the job is being aborted, or a rank left without Finalize, during
// Finalize's fence) becomes a *ProcError wrapping ErrAborted, so that callers can test
// Finalize's error with errors.Is(err, ErrAborted) like every other call's. When the
// agent's text carries golaunch's account of a rank ("rank 1 (host vm, pid 5) exited
// with code 3"), the error names that rank and its host.
func agentErr(err error) error {
	if !errors.Is(err, pmi.ErrAborted) {
		return err
	}
	pe := &ProcError{Rank: -1, Err: ErrAborted, Cause: err}
	if m := labelIn.FindStringSubmatch(err.Error()); m != nil {
		pe.Rank, _ = strconv.Atoi(m[1])
		pe.Host, pe.Why = m[2], "failed: "+m[3]
		if strings.HasPrefix(m[3], "called Abort(") {
			pe.Why = "aborted the job: " + m[3]
		}
	}
	return pe
}

// labelIn finds golaunch's account of a rank within a longer text: rank, host, and what
// became of the rank.
var labelIn = regexp.MustCompile(`rank (\d+) \(host ([^,)]+)(?:, pid \d+)?\) (.+)$`)

func eventCause(ev pmi.Event) string {
	if ev.Cause != "" {
		return ev.Cause
	}
	return fmt.Sprintf("exit code %d", ev.Code)
}

// rankLabel matches the name golaunch gives a rank at the start of a failure's text:
// "rank 3 (host h1, pid 1234) ".
var rankLabel = regexp.MustCompile(`^rank (\d+) \([^)]*\) `)

// launcherWhy is the launcher's account of rank's end (golaunch's summary text, "rank 3
// (host h1, pid 1234) exited with code 7") without the rank's name, which ProcError
// prints itself: "exited with code 7".
func launcherWhy(rank int, cause string) string {
	if m := rankLabel.FindStringSubmatch(cause); m != nil && m[1] == strconv.Itoa(rank) {
		return cause[len(m[0]):]
	}
	return cause
}

// errPeerExited is the cause of a peer failure found by checking the peer's process.
var errPeerExited = errors.New("its process exited")

// transportWhy puts what the transport saw of a peer's failure in a user's words
// (ProcError.Why), or returns "" when it cannot, and the cause is then printed as is.
// The causes that mean the peer's process is gone: a connection flushed (WRFlushErr) or
// ended (EOF, a reset, a broken pipe), its listener refusing connections, its process or
// its /proc/PID/fd entry not there (ESRCH, ENOENT at attach).
func transportWhy(cause error) string {
	var se *verbs.StatusError
	if errors.As(cause, &se) {
		switch se.Status {
		case verbs.WRFlushErr:
			return "is gone: its process exited or closed its transport"
		case verbs.RetryExcErr:
			return "is gone: it stopped answering (its process died, or the network failed)"
		}
		return ""
	}
	for _, gone := range []error{errPeerExited, io.EOF, io.ErrUnexpectedEOF, syscall.ENOENT, syscall.ESRCH,
		syscall.ECONNREFUSED, syscall.ECONNRESET, syscall.EPIPE} {
		if errors.Is(cause, gone) {
			return "is gone: its process exited"
		}
	}
	return ""
}

// abortWhy is ProcError.Why of a rank's own Abort(code, msg).
func abortWhy(code int, msg string) string {
	if msg == "" {
		return fmt.Sprintf("aborted the job: called Abort(%d)", code)
	}
	return fmt.Sprintf("aborted the job: called Abort(%d): %s", code, msg)
}

func abortCause(code int, msg string) error {
	if msg == "" {
		return fmt.Errorf("abort with code %d", code)
	}
	return fmt.Errorf("abort with code %d: %s", code, msg)
}
