package launcher

import (
	"io"
	"log"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
)

// A job whose roster names an agent that memberlist already declared dead or gone (its
// departure was delivered before the job is pushed: watchLeaves replays it). Agent b's
// control listener still answers (its gossip is what is gone, as behind a firewall that
// drops UDP, or its probes' acks wait behind a load). An agent that left fails the job at
// once, with the summary naming it, and no agent gets the job. An agent declared dead
// answers its dial, so the verdict is left to the connection's silence: the job runs.
func TestSubmitToDepartedAgent(t *testing.T) {
	key := randomKey(t)
	var agentLog lockedBuffer
	var agents []*Agent
	for _, name := range []string{"a", "b"} {
		a, err := startAgent(agentConfig{Name: name, Bind: "127.0.0.1:0", Slots: 1, Key: key,
			Log: log.New(&agentLog, name+": ", 0)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(a.close)
		agents = append(agents, a)
	}
	roster, err := PlanRanks([]HostSlots{{Name: "a", Slots: 1}, {Name: "b", Slots: 1}}, 2)
	if err != nil {
		t.Fatal(err)
	}
	for _, left := range []bool{false, true} {
		id, secret, err := newJobID()
		if err != nil {
			t.Fatal(err)
		}
		leaves := make(chan leaveEvent, 1)
		leaves <- leaveEvent{Name: "b", Left: left}
		var stderr lockedBuffer
		s := &submitter{
			spec: jobSpec{ID: id, Submitter: "tester", Program: "true", Secret: secret, Roster: roster,
				Transport: "auto", Grace: time.Second},
			roster: roster, addrs: []string{agents[0].controlAddr(), agents[1].controlAddr()}, key: agents[0].ckey,
			out: newOutputSink(io.Discard, io.Discard, true, true, ""), stderr: &stderr, grace: time.Second,
			leaves: leaves, tm: defaultTiming.scaled(testbudget.Scale),
		}
		start := time.Now()
		code := s.run()
		if !left {
			if code != 0 || strings.Contains(stderr.String(), "unreachable") {
				t.Errorf("declared dead, its control port live: exit %d, stderr %q; want 0 and no agent unreachable",
					code, stderr.String())
			}
			continue
		}
		want := "golaunch: agent b unreachable (" + leaveEvent{Left: left}.how() + "); job aborted\n"
		if code != ExitFailure || stderr.String() != want {
			t.Errorf("exit %d, stderr %q; want %d, %q", code, stderr.String(), ExitFailure, want)
		}
		if took := time.Since(start); took > testbudget.Scale(time.Second) {
			t.Errorf("run took %v, want at once", took)
		}
		time.Sleep(100 * time.Millisecond)
		if strings.Contains(agentLog.String(), id) {
			t.Errorf("an agent got the job:\n%s", agentLog.String())
		}
	}
}

// An agent that hangs (its kernel accepts the control connection, nobody answers the
// handshake) and that memberlist declares dead once golaunch has connected: the job fails
// deadDialTimeout after the verdict, stretched by the load's slack, long before the
// handshake deadline, with the summary naming the verdict first.
func TestSubmitAgentDeclaredDeadWhileDialing(t *testing.T) {
	key := randomKey(t)
	a := testAgent(t, "a", 1, key)
	hung, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer hung.Close()
	leaves := make(chan leaveEvent, 1)
	go func() {
		for {
			c, err := hung.Accept()
			if err != nil {
				return
			}
			defer c.Close()
			select {
			case leaves <- leaveEvent{Name: "b"}: // the verdict comes while the handshake waits
			default:
			}
		}
	}()
	roster, err := PlanRanks([]HostSlots{{Name: "a", Slots: 1}, {Name: "b", Slots: 1}}, 2)
	if err != nil {
		t.Fatal(err)
	}
	id, secret, err := newJobID()
	if err != nil {
		t.Fatal(err)
	}
	var stderr lockedBuffer
	s := &submitter{
		spec: jobSpec{ID: id, Submitter: "tester", Program: "true", Secret: secret, Roster: roster,
			Transport: "auto", Grace: time.Second},
		roster: roster, addrs: []string{a.controlAddr(), hung.Addr().String()}, key: a.ckey,
		out: newOutputSink(io.Discard, io.Discard, true, true, ""), stderr: &stderr, grace: time.Second,
		leaves: leaves,
	}
	s.tm = defaultTiming.scaled(testbudget.Scale)
	start := time.Now()
	code := s.run()
	took := time.Since(start)
	want := "golaunch: agent b unreachable (declared dead by memberlist (no answer to probes); control connection to " +
		hung.Addr().String() + ": no answer within " + s.tm.deadDial.String() + " of the verdict); job aborted\n"
	if code != ExitFailure || stderr.String() != want {
		t.Errorf("exit %d, stderr %q; want %d, %q", code, stderr.String(), ExitFailure, want)
	}
	// The bound: the verdict's deadDial, and a second of the load's slack for connecting
	// to agent a and printing the summary. The handshake deadline is five times deadDial.
	if bound := s.tm.deadDial + testbudget.Scale(time.Second); took > bound {
		t.Errorf("the job failed %v after its start; want within %v (the verdict's %v, plus slack), not at the handshake deadline (%v)",
			took.Round(time.Millisecond), bound, s.tm.deadDial, s.tm.handshake)
	}
	t.Logf("the job failed %v after its start (deadDial %v)", took.Round(time.Millisecond), s.tm.deadDial)
}
