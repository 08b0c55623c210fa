package launcher

import (
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
)

// freeLoopbackPort returns a port that nothing listens on at the moment (TCP and UDP).
func freeLoopbackPort(t *testing.T) int {
	t.Helper()
	for range 20 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		u, err := net.ListenPacket("udp", fmt.Sprintf("127.0.0.1:%d", port))
		l.Close()
		if err == nil {
			u.Close()
			return port
		}
	}
	t.Fatal("no free loopback port")
	return 0
}

// TestAgentJoinRetry: an agent started before the agent it joins keeps trying with
// --join-retry and is in the cluster once the seed is up (a job then spans both); without
// a seed it gives up after the duration, saying so; and --join-retry needs --join.
func TestAgentJoinRetry(t *testing.T) {
	key := writeKey(t)
	seed := fmt.Sprintf("127.0.0.1:%d", freeLoopbackPort(t))
	early := startGL(t, "agent", "--bind", "127.0.0.1:0", "--slots", "1", "--keyfile", key, "--name", "b1",
		"--join", seed, "--join-retry", "30s")
	early.waitStderr(t, "retrying every second for 30s (--join-retry)", 10*time.Second)
	time.Sleep(1500 * time.Millisecond) // a failed attempt or two more
	a := startGL(t, "agent", "--bind", seed, "--slots", "1", "--keyfile", key, "--name", "a1")
	a.line(t, "golaunch agent a1: gossip ", 10*time.Second)
	if l := early.line(t, "golaunch agent b1: gossip ", 15*time.Second); !strings.HasSuffix(l, "2 members") {
		t.Errorf("the late join: %q, want 2 members\nb1's log:\n%s\na1's log:\n%s", l, early.stderr.String(), a.stderr.String())
	}
	r := runGL(t, "", "--join", seed, "--keyfile", key, "-n", "2", pmiprogBinPath(t), "env", "GOLAUNCH_HOST")
	if r.code != 0 {
		t.Fatalf("job over both agents: exit %d\n%s", r.code, r.stderr)
	}
	mustContain(t, "stdout", r.stdout, "GOLAUNCH_HOST=a1")
	mustContain(t, "stdout", r.stdout, "GOLAUNCH_HOST=b1")

	// Nobody there: it gives up after the duration, naming it.
	start := time.Now()
	lone := runGL(t, "", "agent", "--bind", "127.0.0.1:0", "--keyfile", key, "--name", "c1",
		"--join", fmt.Sprintf("127.0.0.1:%d", freeLoopbackPort(t)), "--join-retry", "2s")
	if lone.code != ExitFailure || !strings.Contains(lone.stderr, "gave up after --join-retry 2s") {
		t.Errorf("join-retry with no seed: exit %d\n%s", lone.code, lone.stderr)
	}
	if took := time.Since(start); took < 2*time.Second || took > testbudget.Scale(10*time.Second) {
		t.Errorf("join-retry 2s gave up after %v", took)
	}

	// A usage error without --join.
	u := runGL(t, "", "agent", "--bind", "127.0.0.1:0", "--keyfile", key, "--join-retry", "5s")
	if u.code != ExitUsage || !strings.Contains(u.stderr, "--join-retry") {
		t.Errorf("--join-retry without --join: exit %d\n%s", u.code, u.stderr)
	}
}
