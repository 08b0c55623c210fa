package launcher

import (
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// floodKinds are the fragments of the agent's log lines that a stranger's connections,
// packets and streams cause, or failing accepts: each kind is one line at once, then at
// most one summary per summaryEvery.
var floodKinds = []string{"control connection", "control listener", "gossip packet", "gossip stream", "gossip listener"}

// TestFloodAgent floods a real `golaunch agent`, whose RLIMIT_NOFILE is lowered, with
// more idle control connections than it may hold (so that its Accept fails with EMFILE,
// or, under a higher limit, so that it sheds connections beyond its handshake bound),
// and with garbage gossip datagrams and streams and idle gossip streams (more than it
// serves at once, so that it drops the rest); then it ends the flood and runs a job
// through the agent, which must succeed. The agent logs the flood in a few lines.
func TestFloodAgent(t *testing.T) {
	for _, tc := range []struct {
		name   string
		nofile int    // the agent's RLIMIT_NOFILE
		sign   string // in the agent's log once the flood has had its effect
	}{
		{"emfile", 64, "accept4: too many open files; retrying"},
		{"handshake-bound", 1024, fmt.Sprintf("silent, shed for a newer connection (%d handshakes pending)", maxHandshakes)},
	} {
		t.Run(tc.name, func(t *testing.T) { floodAgent(t, tc.nofile, tc.sign) })
	}
}

func floodAgent(t *testing.T, nofile int, sign string) {
	binaries(t)
	key := writeKey(t)
	cmd := exec.Command("sh", "-c", `ulimit -n "$0" && exec "$@"`, strconv.Itoa(nofile),
		golaunchBin, "agent", "--bind", "127.0.0.1:0", "--slots", "2", "--keyfile", key, "--name", "fa")
	a := startCmd(t, cmd)
	f := strings.Fields(a.line(t, "golaunch agent fa: gossip ", 10*time.Second))
	gossip, control := strings.TrimSuffix(f[4], ","), strings.TrimSuffix(f[6], ",")

	const nControl, nPackets, nStreams, nIdle = 300, 2000, 100, 2 * maxGossipStreams
	var flood []net.Conn
	defer func() {
		for _, c := range flood {
			c.Close()
		}
	}()
	for range nControl {
		c, err := net.Dial("tcp", control)
		if err != nil {
			t.Fatalf("flood connection %d: %v", len(flood), err)
		}
		flood = append(flood, c)
	}
	udp, err := net.Dial("udp", gossip)
	if err != nil {
		t.Fatal(err)
	}
	defer udp.Close()
	for i := range nPackets {
		udp.Write([]byte(fmt.Sprintf("garbage datagram %d", i)))
	}
	for i := range nStreams {
		c, err := net.Dial("tcp", gossip)
		if err != nil {
			continue // the agent's table may be full: its backlog may be too
		}
		fmt.Fprintf(c, "garbage stream %d\n", i)
		flood = append(flood, c)
	}
	// Idle gossip streams, each held by memberlist for the stream timeout: past
	// maxGossipStreams the agent drops them at once (where its table has room for them).
	for range nIdle {
		c, err := net.Dial("tcp", gossip)
		if err != nil {
			continue
		}
		flood = append(flood, c)
	}
	a.waitStderr(t, sign, 30*time.Second)
	if nofile > 2*maxGossipStreams+nControl+nIdle {
		a.waitStderr(t, fmt.Sprintf("%d streams already being served", maxGossipStreams), 30*time.Second)
	}
	for _, c := range flood {
		c.Close()
	}
	flood = nil

	r := runGL(t, "", "--join", gossip, "--keyfile", key, "-n", "2", pmiprogBinPath(t), "ok")
	if r.code != 0 {
		t.Fatalf("job after the flood: exit %d\n%s\n%s\nagent's log:\n%s", r.code, r.stdout, r.stderr, a.stderr.String())
	}
	for rank := range 2 {
		mustContain(t, "stdout", r.stdout, fmt.Sprintf("[%d] rank %d/2 host fa", rank, rank))
	}
	// Every kind's first line came at once; the datagrams' summary follows within an
	// interval.
	a.waitStderr(t, "gossip packets in "+summaryEvery.String(), 3*summaryEvery)
	log := a.stderr.String()
	for _, first := range []string{"refused control connection from ", "dropped gossip packet from ", "dropped gossip stream from "} {
		mustContain(t, "the agent's log", log, first)
	}
	n := 0
	for _, l := range strings.Split(log, "\n") {
		for _, k := range floodKinds {
			if strings.Contains(l, k) {
				n++
				break
			}
		}
	}
	if n > 20 {
		t.Errorf("the agent logged the flood (%d connections, %d datagrams, %d streams) in %d lines, want at most 20:\n%s",
			nControl, nPackets, nStreams, n, log)
	}
	t.Logf("the flood took %d lines of the agent's log:\n%s", n, log)
}
