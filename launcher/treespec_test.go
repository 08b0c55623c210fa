package launcher

import (
	"fmt"
	"io"
	"log"
	"net"
	"strings"
	"testing"
	"time"
)

// TestAgentsTreeSpec runs a job over five agents with fan-out 2: the submitter sends the
// spec to agents a1 and a2 only, a1 passes it to a3 and a4, a2 to a5 (treespec.go), and
// every rank runs where the roster places it.
func TestAgentsTreeSpec(t *testing.T) {
	c := startCluster(t, 5, 1)
	r := runGL(t, "", c.submit("--tree-fanout", "2", "-n", "5", "--transport", "tcp", pmiprogBinPath(t), "ok")...)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	for rank := range 5 {
		mustContain(t, "stdout", r.stdout, fmt.Sprintf("[%d] rank %d/5 host a%d node %d/5 local 0/1 transport tcp secret 32 ok",
			rank, rank, rank+1, rank))
	}
	for agent, want := range map[string]string{"a1": "passed its spec to a3, a4 (the job's tree)", "a2": "passed its spec to a5 (the job's tree)"} {
		mustContain(t, agent+"'s log", c.agents[agent].stderr.String(), want)
	}
	for _, agent := range []string{"a3", "a4", "a5"} {
		if log := c.agents[agent].stderr.String(); strings.Contains(log, "passed its spec") {
			t.Errorf("leaf %s passed the spec on:\n%s", agent, log)
		}
	}
	r = runGL(t, "", c.submit("--tree-fanout", "1", "-n", "5", pmiprogBinPath(t), "ok")...)
	if r.code != ExitUsage || !strings.Contains(r.stderr, "--tree-fanout 1: want 2 to 1024 agents") {
		t.Fatalf("--tree-fanout 1: exit %d\n%s", r.code, r.stderr)
	}
}

// TestPassSpecFailure: an agent that cannot reach a child in the job's tree names the
// child, its address and itself; a child that can be reached gets the spec's bytes.
func TestPassSpecFailure(t *testing.T) {
	key := controlKey(make([]byte, 32))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan []byte, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		cc, err := serverHandshake(c, key)
		if err != nil {
			c.Close()
			return
		}
		defer cc.close()
		if ft, p, err := cc.recv(); err == nil && ft == fTreeSpec {
			got <- p
		}
	}()
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadAddr := dead.Addr().String()
	dead.Close()
	a := &Agent{name: "h0", ckey: key, log: log.New(io.Discard, "", 0)}
	roster, err := Place([]HostSlots{{Name: "h0", Slots: 1}, {Name: "h1", Slots: 1}, {Name: "h2", Slots: 1}, {Name: "h3", Slots: 1}},
		4, Placement{MapBy: MapCore})
	if err != nil {
		t.Fatal(err)
	}
	// Fan-out 2: h0 and h1 are the submitter's children; h2 and h3 are h0's.
	spec := &jobSpec{ID: "j1", Roster: roster, Node: 0, Fanout: 2,
		Addrs: []string{"unused:1", "unused:2", ln.Addr().String(), deadAddr}}
	tm := ctlTiming{dial: 2 * time.Second, handshake: 2 * time.Second}
	err = a.passSpec(spec, []byte(`{"ID":"j1"}`), tm)
	if err == nil || !strings.Contains(err.Error(), "agent h0 could not pass the job to agent h3, its child in the job's tree") ||
		!strings.Contains(err.Error(), deadAddr) {
		t.Fatalf("passSpec: %v", err)
	}
	select {
	case p := <-got:
		if string(p) != `{"ID":"j1"}` {
			t.Fatalf("h2 got %q", p)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("h2 got no spec")
	}
}
