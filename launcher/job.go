package launcher

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gorma-hpc/gorma/pmi"
)

// Submitter timing.
const (
	dialTimeout  = 5 * time.Second  // connecting and authenticating to one agent
	readyTimeout = 30 * time.Second // every agent set up its part of the job
	exitSlack    = 3 * time.Second  // after grace: how long an abort waits for exit reports
)

// submitter runs one job from the submitting side: it pushes the job to each agent of
// the roster, merges fences, forwards stdin, prints output and decides the job's end.
// Its state is owned by run's goroutine (the event loop); each agent connection has a
// reader goroutine that writes output to the sink and passes every other frame to the
// loop through events, in order.
type submitter struct {
	spec   jobSpec // the job, Node unset
	roster Roster
	addrs  []string // control address per roster host
	key    []byte   // control key
	out    *outputSink
	stderr io.Writer
	stdin  io.Reader // forwarded to rank 0; nil for none
	grace  time.Duration
	tm     ctlTiming // the control plane's deadlines; zero: defaultTiming (timing)
	trace  string    // --trace's file: a hang report merges the ranks' dumps there (report.go), and so does a crash (timeline.go)

	timeout, startup time.Duration
	leaves           <-chan leaveEvent
	unwatch          func() // ends the subscription of leaves (nil: none to end)
	signals          <-chan os.Signal

	events chan subEvent
	done   chan struct{} // closed when run returns: readers and the stdin pump stop
	links  []*agentLink

	// Event-loop state.
	ranks         []rankState
	ended         int // ranks ended (or lost with their agent)
	pmiJob        bool
	fail          *failure
	failAt        time.Time  // when fail was first set
	failed        []int      // --ft: the ranks whose failure the job went on after, in order
	firstFail     *failure   // --ft: the first of those, whose code is the job's if no rank survives
	obsLost       []lostRank // what ranks could not write of their observation (observe.go)
	interrupt     int
	round         map[int]bool     // multi-host fence: the ranks fenced this round
	blocks        [][]byte         // ... and the agents' card blocks of it (fencewire.go)
	rounds        int              // the job's fences completed, as its agents count them
	roundAt       int              // the highest round number a fence of the open round named
	tree          *tree            // the job's agent tree (treespec.go, treefence.go); nil: none
	gathered      []byte           // the last gathering round's fence-done payload, for fFenceAsk
	gatheredRound int              // ... and its round
	deadline      <-chan time.Time // after an abort: stop waiting for exit reports
	report        *reportRound     // hang reports asked for (report.go), or nil
	hang          hangWatch        // the quiet-period check (report.go)
	stacks        bool             // --stacks: reports carry the ranks' goroutine stacks

	reportBindings bool // --report-bindings: a line on stderr per rank as it starts

	// traceRings are the copies of ring files the agents wrote of ranks that ended
	// without Finalize, by rank (timeline.go).
	traceRings map[int]string

	grow growth       // the job's spawns (grow.go), owned by the event loop
	size atomic.Int64 // the roster's size, for the links' reader goroutines
}

type agentLink struct {
	idx    int
	host   string
	cc     *ctlConn
	lost   bool
	credit chan struct{} // stdin flow control: one token per frame in flight

	// memberlist declared the agent dead or gone (at suspectAt); its connection decides
	// (liveness.go). noted: the verdict on a live connection was noted on stderr.
	suspect   *leaveEvent
	suspectAt time.Time
	noted     bool
}

type rankState struct {
	pid                      int
	started, connected, done bool
	finalized                bool   // it ended after Finalize
	failed                   bool   // --ft: it failed and the job went on (tolerate)
	earlyExit                bool   // exited 0 without PMI before any rank reached PMI init
	end                      string // how its process ended (endText), once done
	died                     string // how it died before Finalize, not by its agent's signal nor after another's failure: "killed by signal 9 (SIGKILL)"
}

type subEvent struct {
	link int
	from *agentLink // the link whose reader sent it
	t    frameType
	msg  any
	err  error
}

func newJobID() (string, []byte, error) {
	id := make([]byte, 8)
	secret := make([]byte, 32)
	if _, err := rand.Read(id); err != nil {
		return "", nil, err
	}
	if _, err := rand.Read(secret); err != nil {
		return "", nil, err
	}
	return hex.EncodeToString(id), secret, nil
}

// run executes the job and returns golaunch's exit code, having printed the summary line
// of a failure.
func (s *submitter) run() int {
	s.events = make(chan subEvent, 64)
	s.done = make(chan struct{})
	defer close(s.done)
	s.ranks = make([]rankState, s.roster.Size)
	s.size.Store(int64(s.roster.Size))
	if code, ok := s.connect(); !ok {
		return code
	}
	defer s.closeLinks()
	if code, ok := s.setup(); !ok {
		return code
	}
	// Every agent gets its start before any is lost: under --ft losing one tells the others
	// of its ranks, which must not come before their start.
	var unstarted []*agentLink
	for _, l := range s.links {
		if l.cc.send(fStart, nil) != nil {
			unstarted = append(unstarted, l)
		}
	}
	for _, l := range unstarted {
		s.lose(l, "control connection lost at start")
	}
	if s.stdin != nil && s.fail == nil {
		go s.pumpStdin(s.links[s.roster.RankHost[0]])
	}
	var timeout, startup <-chan time.Time
	if s.timeout > 0 {
		t := time.NewTimer(s.timeout)
		defer t.Stop()
		timeout = t.C
	}
	var startupTimer *time.Timer
	if s.startup > 0 {
		startupTimer = time.NewTimer(s.startup)
		defer startupTimer.Stop()
		startup = startupTimer.C
	}
	check := time.NewTicker(heartbeatInterval)
	defer check.Stop()
	var quiet <-chan time.Time
	if s.hang.every > 0 {
		t := time.NewTicker(s.hang.interval())
		defer t.Stop()
		quiet = t.C
	}
	gone := s.out.gone
	for s.ended < s.roster.Size {
		select {
		case ev := <-s.events:
			s.handle(ev)
		case d := <-s.grow.dialed:
			s.agentDialed(d)
		case <-check.C:
			s.checkLinks()
			s.checkSpawn()
		case <-gone:
			// Like a pipeline's writer killed by SIGPIPE (exit 128+13), without leaving
			// the ranks running.
			gone = nil
			s.failWith(jobFailure(ExitSignalBase+int(syscall.SIGPIPE), "standard output was closed (broken pipe)"))
		case lv, ok := <-s.leaves:
			if ok {
				s.agentLeft(lv)
			} else {
				s.leaves = nil
			}
		case <-timeout:
			timeout = nil
			why := fmt.Sprintf("job timed out after %v", s.timeout)
			s.askReports(why, s.stacks, func() { s.failWith(jobFailure(ExitTimeout, why)) })
		case <-s.reportDue():
			s.endReport()
		case <-quiet:
			if s.report == nil && s.fail == nil && s.pmiJob {
				s.askReports("", false, nil)
			}
		case <-startup:
			if !s.checkStartup() {
				startupTimer.Reset(s.startup) // no rank uses PMI yet: check again later
			}
		case sig := <-s.signals:
			s.signal(sig.(syscall.Signal))
		case <-s.deadline:
			fmt.Fprintf(s.stderr, "golaunch: %d rank(s) did not report their end within %v of the abort\n",
				s.roster.Size-s.ended, s.grace+exitSlack)
			s.ended = s.roster.Size
		}
	}
	return s.finish()
}

// read is a link's reader goroutine.
func (s *submitter) read(l *agentLink) {
	for {
		t, p, err := l.cc.recv()
		var msg any
		switch {
		case err != nil:
		case t == fOutput:
			rank, stream, data, derr := decodeOutput(p)
			if derr == nil && rank < int(s.size.Load()) {
				s.out.write(rank, stream, data)
				continue
			}
			err = fmt.Errorf("bad output frame: %v", derr)
		case t == fStdinAck:
			select {
			case <-l.credit:
			default:
			}
			continue
		default:
			msg, err = decodeBody(t, p)
		}
		select {
		case s.events <- subEvent{link: l.idx, from: l, t: t, msg: msg, err: err}:
		case <-s.done:
			return
		}
		if err != nil {
			return
		}
	}
}

// handle processes one frame (or the loss) of a link.
func (s *submitter) handle(ev subEvent) {
	l := ev.from
	if s.freshAnswer(l, ev) {
		return
	}
	if ev.err != nil {
		s.lose(l, "control connection lost: "+ev.err.Error())
		return
	}
	if ev.t == fSpawnSync {
		s.spawnFence(l, ev.msg.(*fenceMsg))
		return
	}
	switch m := ev.msg.(type) {
	case *startedMsg:
		if r, ok := s.localRank(l, m.Rank); ok {
			r.pid, r.started = m.Pid, true
			if s.reportBindings {
				fmt.Fprintln(s.stderr, s.bindingLine(l.host, m))
			}
		}
	case *rankMsg: // fInit
		if r, ok := s.localRank(l, m.Rank); ok {
			r.connected = true
			s.reachedPMI()
		}
	case *agentFenceMsg:
		s.fence(l, m)
	case *fenceRoundMsg:
		if ev.t != fFenceAsk {
			s.lose(l, fmt.Sprintf("protocol error: unexpected %v frame", ev.t))
			return
		}
		s.fenceAsk(l, m)
	case *abortReqMsg:
		if r, ok := s.localRank(l, m.Rank); ok {
			s.failWith(abortFailure(m, l.host, r.pid))
		}
	case *exitMsg:
		s.rankEnded(l, m)
	case *reportMsg:
		s.gotReport(l, m)
	case *spawnReqMsg:
		if _, ok := s.localRank(l, m.Rank); ok {
			s.spawnRequest(l, m)
		}
	default:
		s.lose(l, fmt.Sprintf("protocol error: unexpected %v frame", ev.t))
	}
}

// localRank returns the state of rank if it runs on l's host.
func (s *submitter) localRank(l *agentLink, rank int) (*rankState, bool) {
	if rank < 0 || rank >= s.roster.Size || s.roster.RankHost[rank] != l.idx {
		return nil, false
	}
	return &s.ranks[rank], true
}

func (s *submitter) rankEnded(l *agentLink, m *exitMsg) {
	r, ok := s.localRank(l, m.Rank)
	if !ok || r.done {
		return
	}
	r.done, r.finalized, r.end = true, m.Finalized, endText(m)
	if m.Pid > 0 {
		r.pid = m.Pid
	}
	s.ended++
	s.out.flushRank(m.Rank)
	if m.ObsLost != "" {
		s.obsLost = append(s.obsLost, lostRank{rank: m.Rank, what: m.ObsLost})
	}
	s.noteTrace(m)
	f := rankFailure(m, l.host, s.pmiJob)
	if f != nil && s.interrupt > 0 && m.OwnSignal && m.Signal == int(syscall.SIGINT) {
		// The user's Ctrl-C, which golaunch forwarded: the job was interrupted, no rank failed.
		f = jobFailure(ExitSignalBase+int(syscall.SIGINT), "interrupted by SIGINT (Ctrl-C), which golaunch forwarded to the ranks")
	}
	if f == nil && !m.Finalized && !m.Connected {
		r.earlyExit = true
	}
	if f != nil && !m.Finalized && !m.OwnSignal && !m.PeerFailed {
		r.died = strings.TrimPrefix(strings.TrimPrefix(f.what, rankLabel(m.Rank, l.host, m.Pid)), " ")
	}
	switch {
	case f == nil && !m.Finalized:
		s.spawnedEnded(m.Rank, rankLabel(m.Rank, l.host, r.pid)+" exited")
	case f == nil:
	case s.tolerable(f) && !(m.Finalized && m.Signal == 0):
		// A rank that exits non-zero after Finalize says the job failed: the rules
		// without --ft apply to it.
		s.spawnedEnded(m.Rank, f.what)
		s.tolerate(f)
	default:
		s.spawnedEnded(m.Rank, f.what)
		s.failWith(f)
	}
}

// tolerable tells whether the job goes on after f, the end of a rank or the loss of an
// agent (--ft): a failure of ranks before anything aborted the job. Abort, a PMI
// protocol error, --timeout and signals to golaunch abort the job as without --ft; they
// never come here.
func (s *submitter) tolerable(f *failure) bool {
	return s.spec.FT && s.fail == nil && f.kind == pmi.ProcFailed
}

// tolerate records the failure of a rank of a fault-tolerant job, which goes on: one line
// on stderr, and every agent gives its ranks a pmi.ProcFailed event naming the rank and
// fences without it (fProcFailed). A pending multi-host fence may complete now. The ranks
// of a lost agent go in one frame instead (lose, fHostFailed).
func (s *submitter) tolerate(f *failure) {
	if !s.noteFailed(f) {
		return
	}
	s.broadcast(fProcFailed, procFailedMsg{Rank: f.rank, Host: f.host, Code: f.code, Cause: f.what})
	s.completeRound()
}

// noteFailed records f, a rank's failure in a fault-tolerant job, and prints its line on
// stderr. It returns false when the rank had failed already.
func (s *submitter) noteFailed(f *failure) bool {
	r := &s.ranks[f.rank]
	if r.failed {
		return false
	}
	r.failed = true
	s.failed = append(s.failed, f.rank)
	if s.firstFail == nil {
		s.firstFail = f
	}
	fmt.Fprintf(s.stderr, "golaunch: %s; job continued (--ft)\n", f.what)
	return true
}

// ftSummary is the last line of a fault-tolerant job that lost ranks: "golaunch: --ft:
// 2 of 8 ranks failed: 3, 5", the ranks in order, the first maxListed of them.
func (s *submitter) ftSummary() string {
	ranks := slices.Sorted(slices.Values(s.failed))
	var b strings.Builder
	fmt.Fprintf(&b, "golaunch: --ft: %d of %d ranks failed: ", len(ranks), s.roster.Size)
	for i, r := range ranks {
		if i == maxListed {
			b.WriteString(", ...")
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Itoa(r))
	}
	if len(ranks) == s.roster.Size {
		b.WriteString(" (no rank survived)")
	}
	return b.String()
}

// maxListed bounds the failed ranks ftSummary names.
const maxListed = 16

// reachedPMI notes that the job uses PMI: a rank that exited 0 without it has failed.
func (s *submitter) reachedPMI() {
	if s.pmiJob {
		return
	}
	s.pmiJob = true
	for rank, r := range s.ranks {
		if r.earlyExit {
			h := s.roster.Hosts[s.roster.RankHost[rank]]
			f := &failure{code: ExitFailure, what: rankLabel(rank, h, r.pid) + " " + noFinalize,
				kind: pmi.ProcFailed, rank: rank, host: h, weight: weightExit}
			if !s.tolerable(f) {
				s.failWith(f)
				return
			}
			s.ranks[rank].earlyExit = false
			s.tolerate(f)
		}
	}
}

// checkStartup fails the job when, at a startup check, some ranks reached PMI init and a
// running rank has not. It returns false when no rank has reached PMI init yet (a program
// that does not use PMI, or a slow start). The caller checks again one --startup-timeout
// later, so a late start still gets a full period after the first init.
func (s *submitter) checkStartup() bool {
	if !s.pmiJob {
		return false
	}
	if s.fail != nil {
		return true
	}
	first, late := -1, 0
	for rank, r := range s.ranks {
		if !r.connected && !r.done {
			if first < 0 {
				first = rank
			}
			late++
		}
	}
	if first < 0 {
		return true
	}
	h := s.roster.Hosts[s.roster.RankHost[first]]
	what := fmt.Sprintf("%s did not reach PMI init within %v", rankLabel(first, h, s.ranks[first].pid), s.startup)
	if late > 1 {
		what += fmt.Sprintf(" (nor did %d other ranks)", late-1)
	}
	s.failWith(&failure{code: ExitFailure, what: what, kind: pmi.ProcFailed, rank: first, host: h, weight: weightExit})
	return true
}

// fence collects an agent's part of a multi-host round (fencewire.go). A rank that
// failed (--ft) is no longer waited for, and its late fence is dropped.
func (s *submitter) fence(l *agentLink, m *agentFenceMsg) {
	if s.fail != nil {
		return
	}
	if s.round == nil {
		s.round = make(map[int]bool)
	}
	for _, rank := range m.Ranks {
		r, ok := s.localRank(l, rank)
		if !ok {
			s.lose(l, fmt.Sprintf("protocol error: a fence names rank %d, which runs on another host", rank))
			return
		}
		if s.round[rank] {
			s.lose(l, fmt.Sprintf("protocol error: rank %d fenced twice in one round", rank))
			return
		}
		if !r.failed {
			s.round[rank] = true
		}
	}
	if len(m.Block) > 0 {
		s.blocks = append(s.blocks, m.Block)
	}
	s.roundAt = max(s.roundAt, m.Round)
	s.completeRound()
}

// completeRound ends the multi-host round once every rank has fenced in it or failed
// (--ft): every agent gets the same payload, the round's number and every agent's card
// block. The number is the highest an agent named: an agent that ran its job alone
// counted its rounds itself, and a spawn's fresh agent learns the count from the first
// round it joins (pmi.Exchange.Complete).
func (s *submitter) completeRound() {
	if len(s.round) == 0 || s.fail != nil {
		return
	}
	n := len(s.round)
	for _, rank := range s.failed {
		if _, ok := s.round[rank]; !ok {
			n++
		}
	}
	if n < s.roster.Size {
		return
	}
	blocks := s.blocks
	s.round, s.blocks = nil, nil // before a send fails: losing an agent may fail ranks and come back here
	s.rounds, s.roundAt = max(s.rounds+1, s.roundAt), 0
	done := appendFenceDone(nil, s.rounds, blocks)
	var ref []byte // a gathering round goes down the tree (treefence.go)
	if len(blocks) > 0 && s.tree != nil {
		s.gathered, s.gatheredRound = done, s.rounds
		ref = binary.AppendUvarint(nil, uint64(s.rounds))
	}
	// The payloads first, so the tree starts passing them on before the references go.
	for _, direct := range []bool{true, false} {
		for _, dst := range s.links {
			if dst.lost || (ref == nil || s.fenceDirect(dst.idx)) != direct {
				continue
			}
			t, body := fFenceDone, done
			if !direct {
				t, body = fFenceRef, ref
			}
			if err := dst.cc.send(t, body); err != nil {
				s.lose(dst, "control connection lost: "+err.Error())
			}
		}
	}
}

// fenceDirect reports whether the agent of roster host i gets a gathering round's
// payload from the submitter: its parent in the job's tree is the submitter or lost, or
// it joined the job in a spawn and is not in the tree.
func (s *submitter) fenceDirect(i int) bool {
	if s.tree == nil || i >= s.tree.agents {
		return true
	}
	p := (treePos(i) - 1) / s.tree.fanout // the static parent, which passes the payload on
	return p == 0 || s.links[treeHost(p)].lost
}

// fenceAsk answers an agent that holds a reference to the last gathering round but not
// its payload: its parent in the tree was lost, or slow.
func (s *submitter) fenceAsk(l *agentLink, m *fenceRoundMsg) {
	if s.gathered == nil || m.Round != s.gatheredRound {
		s.lose(l, fmt.Sprintf("protocol error: asked for round %d's payload (the last gathering round is %d)", m.Round, s.gatheredRound))
		return
	}
	if err := l.cc.send(fFenceDone, s.gathered); err != nil {
		s.lose(l, "control connection lost: "+err.Error())
	}
}

// timing returns the job's control deadlines.
func (s *submitter) timing() ctlTiming {
	if s.tm == (ctlTiming{}) {
		return defaultTiming
	}
	return s.tm
}

// agentLeft handles memberlist's verdict on a member: the agent is lost when its control
// connection has been silent for deadSilence, now or at a later check (checkLinks).
func (s *submitter) agentLeft(ev leaveEvent) {
	if l, lost, why := s.suspectLink(ev); lost {
		s.lose(l, why)
	}
}

// suspectLink records memberlist's verdict ev on a roster host's link, and returns the
// link (nil when it has no connection or is lost already) and whether it is lost now,
// and why.
func (s *submitter) suspectLink(ev leaveEvent) (*agentLink, bool, string) {
	i := s.hostIndex(ev.Name)
	if i < 0 || i >= len(s.links) || s.links[i].lost || s.links[i].cc == nil {
		return nil, false, ""
	}
	l := s.links[i]
	if l.suspect == nil {
		l.suspect, l.suspectAt = &ev, time.Now()
	}
	lost, why := s.checkLink(l)
	return l, lost, why
}

// checkLink tells whether l is lost (liveness.go), and why. A verdict that has stood for
// deadSilence on a connection that stayed live is noted once on stderr: the cluster is
// flaky, and the job goes on.
func (s *submitter) checkLink(l *agentLink) (bool, string) {
	lost, why := verdict(l.suspect, l.cc, s.timing())
	if !lost && l.suspect != nil && !l.noted && time.Since(l.suspectAt) >= s.timing().dead {
		l.noted = true
		fmt.Fprintln(s.stderr, "golaunch: note: "+liveNote("agent "+l.host, *l.suspect, l.cc))
	}
	return lost, why
}

// checkLinks loses every agent whose control connection has been silent too long
// (liveness.go): deadSilence after memberlist's verdict on it, maxSilence otherwise.
func (s *submitter) checkLinks() {
	for _, l := range s.links {
		if l.lost || l.cc == nil {
			continue
		}
		if lost, why := s.checkLink(l); lost {
			s.lose(l, why)
		}
	}
}

// lose marks an agent unreachable: its ranks count as ended, and the job fails unless
// every rank there had already ended. Under --ft each of those ranks failed instead, and
// the job goes on.
func (s *submitter) lose(l *agentLink, how string) {
	if l.lost {
		return
	}
	l.lost = true
	if l.cc != nil {
		l.cc.close()
	}
	f := agentFailure(l.host, how)
	var live []int
	for rank := range s.ranks {
		if s.roster.RankHost[rank] == l.idx && !s.ranks[rank].done {
			s.ranks[rank].done = true
			s.ended++
			live = append(live, rank)
		}
	}
	switch {
	case len(live) == 0:
	case s.tolerable(f):
		m := hostFailedMsg{Host: l.host, Code: f.code, Why: f.what}
		for _, rank := range live {
			if s.noteFailed(&failure{code: f.code, what: rankLabel(rank, l.host, s.ranks[rank].pid) + " lost: " + f.what,
				kind: pmi.ProcFailed, rank: rank, host: l.host, weight: weightOutside}) {
				m.Ranks, m.Pids = append(m.Ranks, rank), append(m.Pids, s.ranks[rank].pid)
			}
		}
		if len(m.Ranks) > 0 {
			s.broadcast(fHostFailed, m)
			s.completeRound()
		}
	default:
		s.failWith(f)
	}
}

// signal handles a signal to golaunch: SIGINT is forwarded to the ranks, a second one
// kills them; SIGTERM and SIGHUP abort the job.
func (s *submitter) signal(sig syscall.Signal) {
	if sig == syscall.SIGUSR1 || sig == syscall.SIGQUIT {
		if s.fail == nil {
			s.askReports(signalNames[sig]+" to golaunch", s.stacks, nil)
		}
		return
	}
	if sig == syscall.SIGINT {
		s.interrupt++
		if s.interrupt == 1 {
			fmt.Fprintln(s.stderr, "golaunch: forwarding SIGINT to the ranks (Ctrl-C again to kill them)")
			s.broadcast(fSignal, signalMsg{Signal: int(syscall.SIGINT)})
			return
		}
		f := jobFailure(ExitSignalBase+int(syscall.SIGINT), "interrupted twice")
		f.kill = true
		s.failWith(f)
		return
	}
	s.failWith(jobFailure(ExitSignalBase+int(sig), fmt.Sprintf("received %s", describeSignal(int(sig)))))
}

// rootCauseWindow is how long after a job's first failure a failure of a rank or an
// agent that is more surely a root cause (causeWeight) may still take its place in the
// summary and the exit code. Survivors of a killed rank see the failure within
// milliseconds over the transport and exit non-zero or call Abort, and their reports race
// the killed rank's own report, which its agent sends once it has reaped the rank. A rank
// killed from outside that its agent reaped before it heard of the abort (exitMsg.Early)
// takes the place whenever its report arrives: it died before the job was aborted. No
// report is waited for: the job ends only once every rank's end is reported anyway, and
// this only decides which report names the cause (TestBlameKilledRank provokes the race).
const rootCauseWindow = time.Second

// failWith records the job's first failure and aborts the job on every agent. A later
// killing failure (second Ctrl-C) still escalates to SIGKILL, and a rank's or an agent's
// failure of greater weight arriving within rootCauseWindow (or an early one) replaces
// the reported cause.
func (s *submitter) failWith(f *failure) {
	if s.fail != nil {
		if f.kill && !s.fail.kill {
			s.broadcast(fSignal, signalMsg{Signal: int(syscall.SIGKILL)})
		}
		if f.host != "" && f.weight > s.fail.weight && (f.early || time.Since(s.failAt) < rootCauseWindow) {
			f.kill = f.kill || s.fail.kill
			s.fail = f
		}
		return
	}
	s.fail, s.failAt = f, time.Now()
	s.broadcast(fAbort, abortMsg{Kind: int(f.kind), Rank: f.rank, Host: f.host, Code: f.code, Cause: f.what})
	if f.kill {
		s.broadcast(fSignal, signalMsg{Signal: int(syscall.SIGKILL)})
	}
	s.deadline = time.After(s.grace + exitSlack)
}

// broadcast sends every live agent the frame of v, encoded once.
func (s *submitter) broadcast(t frameType, v any) {
	body, encErr := json.Marshal(v)
	for _, l := range s.links {
		if l.lost {
			continue
		}
		err := encErr
		if err == nil {
			err = l.cc.send(t, body)
		}
		if err != nil {
			s.lose(l, "control connection lost: "+err.Error())
		}
	}
}

// outputStall bounds how long a failed job waits, at its end, for golaunch's own stdout
// or stderr to take the ranks' last output. A consumer that stopped reading (a pager left
// open, `| slow`) holds the sink's lock in a blocked write, and must not keep golaunch
// alive after the job was aborted. A job that succeeded waits for its output as long as
// it takes, unless golaunch gets a signal meanwhile.
const outputStall = 2 * time.Second

// finish prints the summary and returns the exit code.
func (s *submitter) finish() int {
	flushed := make(chan error, 1)
	go func() { flushed <- s.out.close() }()
	var stall <-chan time.Time
	if s.fail != nil {
		stall = time.After(outputStall)
	}
	var err error
wait:
	for {
		select {
		case err = <-flushed:
		case <-stall:
		case sig := <-s.signals:
			if reportSignal(sig) {
				continue // no ranks left to ask
			}
			if s.fail == nil {
				s.fail = jobFailure(ExitSignalBase+int(sig.(syscall.Signal)),
					fmt.Sprintf("received %s while writing the ranks' output", describeSignal(int(sig.(syscall.Signal)))))
			}
		}
		break wait
	}
	s.crashTimeline()
	if dir := profileDir(s.spec.Env, s.spec.Dir); dir != "" && s.fail != nil {
		if line := crashProfile(dir, s.ranks); line != "" {
			fmt.Fprintln(s.stderr, line)
		}
	}
	if len(s.failed) > 0 {
		fmt.Fprintln(s.stderr, s.ftSummary())
	}
	lost := lostLine(s.obsLost)
	if lost != "" {
		fmt.Fprintln(s.stderr, lost)
	}
	if s.fail != nil {
		fmt.Fprintln(s.stderr, s.fail.summary())
		return s.fail.code
	}
	if len(s.failed) == s.roster.Size {
		return s.firstFail.code // no rank survived
	}
	if err != nil {
		fmt.Fprintf(s.stderr, "golaunch: writing rank output: %v\n", err)
		return ExitFailure
	}
	if lost != "" {
		return ExitFailure // the job ran, but what --profile or --trace asked for is not all there
	}
	return ExitOK
}

func (s *submitter) closeLinks() {
	for _, l := range s.links {
		if l != nil && l.cc != nil {
			if !l.lost {
				l.cc.send(fDone, nil)
			}
			l.cc.close()
		}
	}
}

// pumpStdin forwards golaunch's stdin to rank 0's agent, at most stdinWindow frames in
// flight, until EOF or the end of the job.
func (s *submitter) pumpStdin(l *agentLink) {
	buf := make([]byte, 32<<10)
	for {
		n, err := s.stdin.Read(buf)
		if n > 0 {
			select {
			case l.credit <- struct{}{}:
			case <-s.done:
				return
			}
			if l.cc.send(fStdin, buf[:n]) != nil {
				return
			}
		}
		if err != nil {
			l.cc.send(fStdinEOF, nil)
			return
		}
	}
}
