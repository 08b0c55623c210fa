package launcher

import (
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"
)

// The submitter's setup phase: before any rank starts, connect dials every agent of the
// roster and setup pushes the job and waits until every agent has set up its part. Both
// watch memberlist's verdicts on the roster's hosts (submitter.leaves) as the running job
// does. A host declared dead or gone fails the job with the same summary line, instead of
// after the ready timeout, once its connection has been silent for deadSilence
// (liveness.go). Before the connection exists, a host that left fails the job at once. A
// host declared dead fails it when its dial fails or has not succeeded deadDialTimeout
// after the verdict: on a loaded host memberlist declares live agents dead, and their
// dials still succeed within it.

// setupFailed prints the summary of a job that failed before any rank started, and
// returns its exit code and false.
func (s *submitter) setupFailed(f *failure) (int, bool) {
	fmt.Fprintln(s.stderr, f.summary())
	return f.code, false
}

// setupSignal handles a signal before any rank started: the job ends at once.
func (s *submitter) setupSignal(sig os.Signal) (int, bool) {
	fmt.Fprintf(s.stderr, "golaunch: %v during setup; no rank started\n", sig)
	return ExitSignalBase + int(sig.(syscall.Signal)), false
}

// hostIndex returns the index of host in the roster, or -1.
func (s *submitter) hostIndex(host string) int {
	for i, h := range s.roster.Hosts {
		if h == host {
			return i
		}
	}
	return -1
}

// departedHost returns the departure of a roster host that memberlist has already
// declared dead or gone (watchLeaves also delivers those that happened before the
// subscription), or false. It does not wait.
func (s *submitter) departedHost() (leaveEvent, bool) {
	for {
		select {
		case lv, ok := <-s.leaves:
			if !ok {
				s.leaves = nil
				return leaveEvent{}, false
			}
			if s.hostIndex(lv.Name) >= 0 {
				return lv, true
			}
		default:
			return leaveEvent{}, false
		}
	}
}

// connect dials every agent of the roster in parallel. A roster host that left the
// cluster, before or while dialing it, fails the job at once. A host declared dead is
// still dialed. The job fails, naming the verdict, when the dial fails or has not
// succeeded the timing's deadDial after the verdict (after the dial's start for a
// verdict that came first): that bounds the wait for a cut link or a hung agent. A dial
// that succeeds leaves the verdict to the connection's silence, as for a host already
// connected.
func (s *submitter) connect() (int, bool) {
	held := map[int]leaveEvent{}                // verdicts of death on hosts still dialing
	late := make(chan int, len(s.roster.Hosts)) // hosts held whose deadDial ran out
	var timers []*time.Timer
	dialing := false // the dials have started: a verdict held from now on arms at once
	defer func() {
		for _, t := range timers {
			t.Stop()
		}
	}()
	arm := func(i int) {
		timers = append(timers, time.AfterFunc(s.timing().deadDial, func() { late <- i }))
	}
	// hold records a verdict on a roster host still dialing, and arms its deadDial once
	// the dials have started. It returns false for a host that left: the job fails.
	// Verdicts on other members are passed over.
	hold := func(lv leaveEvent) bool {
		i := s.hostIndex(lv.Name)
		if i < 0 || lv.Left {
			return i < 0
		}
		if _, ok := held[i]; !ok {
			held[i] = lv
			if dialing {
				arm(i)
			}
		}
		return true
	}
	for lv, ok := s.departedHost(); ok; lv, ok = s.departedHost() {
		if !hold(lv) {
			return s.setupFailed(agentFailure(lv.Name, lv.how()))
		}
	}
	type dialed struct {
		idx int
		cc  *ctlConn
		err error
	}
	s.links = make([]*agentLink, len(s.roster.Hosts))
	results := make(chan dialed, len(s.links))
	for i, host := range s.roster.Hosts {
		s.links[i] = &agentLink{idx: i, host: host, credit: make(chan struct{}, stdinWindow)}
		go func() {
			cc, err := dialControl(s.addrs[i], s.key, s.timing())
			results <- dialed{i, cc, err}
		}()
	}
	dialing = true
	for i := range held {
		arm(i)
	}
	pending := len(s.links)
	abandon := func() {
		// The dials still running end within the timing's dial and handshake deadlines.
		go func(n int) {
			for range n {
				if d := <-results; d.cc != nil {
					d.cc.close()
				}
			}
		}(pending)
		for _, l := range s.links {
			if l.cc != nil {
				l.cc.close()
			}
		}
		s.links = nil
	}
	for pending > 0 {
		select {
		case d := <-results:
			pending--
			lv, dead := held[d.idx]
			if d.err != nil {
				abandon()
				how := fmt.Sprintf("control connection to %s: %v", s.addrs[d.idx], d.err)
				if dead {
					how = lv.how() + "; " + how
				}
				return s.setupFailed(agentFailure(s.roster.Hosts[d.idx], how))
			}
			s.links[d.idx].cc = d.cc
			if dead {
				s.suspectLink(lv) // the connection's silence judges the verdict from now on
			}
		case i := <-late:
			if s.links[i].cc != nil {
				break // connected in time: the connection's silence judges the verdict
			}
			abandon()
			how := fmt.Sprintf("%s; control connection to %s: no answer within %v of the verdict",
				held[i].how(), s.addrs[i], s.timing().deadDial)
			return s.setupFailed(agentFailure(s.roster.Hosts[i], how))
		case lv, ok := <-s.leaves:
			if !ok {
				s.leaves = nil
			} else if l, _, _ := s.suspectLink(lv); l == nil && !hold(lv) {
				// Still dialing a host that left: no connection vouches for the agent.
				abandon()
				return s.setupFailed(agentFailure(lv.Name, lv.how()))
			}
		case sig := <-s.signals:
			if reportSignal(sig) {
				break // no rank runs yet
			}
			abandon()
			return s.setupSignal(sig)
		}
	}
	for _, l := range s.links {
		go s.read(l)
		go l.cc.beat(s.done)
	}
	return 0, true
}

// setup pushes the job to every agent and waits until all are ready. It returns false
// (with the exit code) when one refused, was lost (its connection ended, or memberlist
// declared it dead or gone and its connection stayed silent for deadSilence: not after
// readyTimeout), or did not answer in time. Then no rank has started, and closeLinks
// tells the others to drop the job.
func (s *submitter) setup() (int, bool) {
	if k := s.spec.Fanout; k >= 2 {
		s.tree = newTree(len(s.links), k) // the spec and gathered puts go down the agent tree (treespec.go, treefence.go)
	}
	for i, l := range s.links {
		var err error
		if s.tree != nil && s.tree.parent(treePos(i)) != 0 {
			err = l.cc.send(fJobTree, jobTreeMsg{ID: s.spec.ID, Node: i})
		} else {
			spec := s.spec
			spec.Node, spec.Addrs = i, s.addrs
			err = l.cc.send(fJob, &spec)
		}
		if err != nil {
			return s.setupFailed(agentFailure(l.host, fmt.Sprintf("send job: %v", err)))
		}
	}
	// Wait for every agent's answer, then report the first refusal in host order (so the
	// message does not depend on which agent answered first). A lost agent fails the job
	// at once.
	answers := make([]*rejectMsg, len(s.links))
	ok := &rejectMsg{}
	pending := len(s.links)
	timer := time.NewTimer(s.timing().ready)
	defer timer.Stop()
	check := time.NewTicker(heartbeatInterval)
	defer check.Stop()
	lost := func(l *agentLink, why string) (int, bool) {
		l.lost = true
		return s.setupFailed(agentFailure(l.host, why))
	}
	for pending > 0 {
		select {
		case ev := <-s.events:
			l := s.links[ev.link]
			switch {
			case ev.err != nil && answers[ev.link] != ok && answers[ev.link] != nil:
				continue // a refusal, then the agent closed the connection
			case ev.err != nil:
				l.lost = true
				return s.setupFailed(agentFailure(l.host, "control connection lost: "+ev.err.Error()))
			case answers[ev.link] != nil:
				continue
			case ev.t == fReady:
				answers[ev.link] = ok
			case ev.t == fReject:
				answers[ev.link] = ev.msg.(*rejectMsg)
			default:
				answers[ev.link] = &rejectMsg{Msg: fmt.Sprintf("agent %s: unexpected %v frame during setup", l.host, ev.t)}
			}
			pending--
		case lv, open := <-s.leaves:
			if !open {
				s.leaves = nil
			} else if l, gone, why := s.suspectLink(lv); gone {
				return lost(l, why)
			}
		case <-check.C:
			for _, l := range s.links {
				if gone, why := s.checkLink(l); gone {
					return lost(l, why)
				}
			}
		case <-timer.C:
			var late []string
			for i, a := range answers {
				if a == nil {
					late = append(late, s.links[i].host)
				}
			}
			what := fmt.Sprintf("agent %s did not set up the job within %v", late[0], s.timing().ready)
			if len(late) > 1 {
				what += fmt.Sprintf(" (nor did %s)", strings.Join(late[1:], ", "))
			}
			return s.setupFailed(&failure{code: ExitFailure, what: what, rank: -1, host: late[0], weight: weightExit})
		case sig := <-s.signals:
			if reportSignal(sig) {
				break // no rank runs yet
			}
			return s.setupSignal(sig)
		}
	}
	for _, a := range answers {
		if a != ok {
			fmt.Fprintln(s.stderr, "golaunch: "+a.Msg)
			if a.Usage {
				return ExitUsage, false
			}
			return ExitFailure, false
		}
	}
	return 0, true
}
