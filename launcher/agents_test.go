package launcher

import (
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// testCluster is a set of `golaunch agent` processes on loopback.
type testCluster struct {
	keyfile string
	seed    string // gossip address of the first agent
	agents  map[string]*running
}

func writeKey(t *testing.T) string {
	p := filepath.Join(t.TempDir(), "cluster.key")
	if err := os.WriteFile(p, []byte(hex.EncodeToString(randomKey(t))+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// startCluster starts agents a1..an with slots each; a2.. join a1.
func startCluster(t *testing.T, n, slots int) *testCluster {
	t.Helper()
	c := &testCluster{keyfile: writeKey(t), agents: map[string]*running{}}
	for i := 1; i <= n; i++ {
		name := fmt.Sprintf("a%d", i)
		args := []string{"agent", "--bind", "127.0.0.1:0", "--slots", fmt.Sprint(slots), "--keyfile", c.keyfile, "--name", name}
		if c.seed != "" {
			args = append(args, "--join", c.seed)
		}
		a := startGL(t, args...)
		l := a.line(t, "golaunch agent "+name+": gossip ", 10*time.Second)
		if c.seed == "" {
			f := strings.Fields(l)
			c.seed = strings.TrimSuffix(f[4], ",")
		}
		c.agents[name] = a
	}
	return c
}

func (c *testCluster) submit(args ...string) []string {
	return append([]string{"--join", c.seed, "--keyfile", c.keyfile}, args...)
}

func TestAgentsJob(t *testing.T) {
	c := startCluster(t, 3, 2)
	r := runGL(t, "", c.submit("-n", "6", "--transport", "tcp", pmiprogBinPath(t), "ok")...)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	for rank := range 6 {
		node, local := rank/2, rank%2
		mustContain(t, "stdout", r.stdout, fmt.Sprintf("[%d] rank %d/6 host a%d node %d/3 local %d/2 transport tcp secret 32 ok",
			rank, rank, node+1, node, local))
	}
	t.Logf("6 ranks on 3 agents in %v", r.took)

	// -H picks and orders the hosts, with its own slots.
	r = runGL(t, "", c.submit("-H", "a3:1,a1:2", pmiprogBinPath(t), "env", "GOLAUNCH_HOST", "GOLAUNCH_NODE_RANK")...)
	if r.code != 0 {
		t.Fatalf("-H: exit %d\n%s", r.code, r.stderr)
	}
	for _, want := range []string{"[0] env 0 GOLAUNCH_HOST=a3", "[1] env 1 GOLAUNCH_HOST=a1", "[2] env 2 GOLAUNCH_HOST=a1", "[2] env 2 GOLAUNCH_NODE_RANK=1"} {
		mustContain(t, "stdout", r.stdout, want)
	}
}

func TestAgentsJobErrors(t *testing.T) {
	c := startCluster(t, 2, 1)
	tests := []struct {
		args []string
		code int
		want string
	}{
		{c.submit("-n", "3", pmiprogBin, "ok"), ExitUsage, "-n 3 needs 3 slots but the hosts offer 2 (a1:1, a2:1)"},
		{c.submit("-H", "a9:1", pmiprogBin, "ok"), ExitUsage, `host "a9" is not an agent of the cluster`},
		{c.submit("-n", "2", "no-such-program-gorma"), ExitUsage, `agent a1: program "no-such-program-gorma" not found in PATH`},
		{c.submit("-n", "2", "--transport", "shm", pmiprogBin, "ok"), ExitUsage, "--transport shm needs every rank on one host"},
		{[]string{"--join", c.seed, "--keyfile", writeKey(t), pmiprogBin}, ExitFailure, "same key"},
	}
	for _, tt := range tests {
		r := runGL(t, "", tt.args...)
		if r.code != tt.code || !strings.Contains(r.stderr, tt.want) {
			t.Errorf("golaunch %q: exit %d, want %d with %q:\n%s", tt.args, r.code, tt.code, tt.want, r.stderr)
		}
	}
}

func TestAgentWrongKeyNeverJoins(t *testing.T) {
	c := startCluster(t, 1, 1)
	r := runGL(t, "", "agent", "--bind", "127.0.0.1:0", "--keyfile", writeKey(t), "--name", "intruder", "--join", c.seed)
	if r.code == 0 || !strings.Contains(r.stderr, "join") {
		t.Errorf("an agent with another key: exit %d\n%s", r.code, r.stderr)
	}
	// The cluster still has one agent: a job of 2 ranks does not fit.
	r = runGL(t, "", c.submit("-n", "2", pmiprogBin, "ok")...)
	if r.code != ExitUsage || !strings.Contains(r.stderr, "offer 1 (a1:1)") {
		t.Errorf("exit %d\n%s", r.code, r.stderr)
	}
}

// Killing an agent aborts the job at once (its control connection ends), naming the
// host; its ranks die with it (Pdeathsig), the others are killed.
func TestAgentKilledAbortsJob(t *testing.T) {
	c := startCluster(t, 3, 2)
	gl := startGL(t, c.submit("-n", "6", pmiprogBinPath(t), "hang")...)
	pids := gl.readyPids(t, 6)
	start := time.Now()
	c.agents["a2"].cmd.Process.Kill()
	if code := gl.wait(t, 2*time.Second); code != ExitFailure {
		t.Errorf("exit %d, want %d", code, ExitFailure)
	}
	mustContain(t, "stderr", gl.stderr.String(), "golaunch: agent a2 unreachable (")
	requireGone(t, pids, 2*time.Second-time.Since(start))
	t.Logf("job ended %v after the agent was killed", time.Since(start))
}

// A hung agent (SIGSTOP: its TCP connections stay open) is declared dead by memberlist;
// the job aborts naming the host.
func TestAgentHungDetectedByMemberlist(t *testing.T) {
	c := startCluster(t, 3, 1)
	gl := startGL(t, c.submit("-n", "3", pmiprogBinPath(t), "hang")...)
	pids := gl.readyPids(t, 3)
	a3 := c.agents["a3"].cmd.Process
	start := time.Now()
	a3.Signal(syscall.SIGSTOP)
	defer a3.Kill()
	if code := gl.wait(t, 6*time.Second); code != ExitFailure {
		t.Errorf("exit %d, want %d", code, ExitFailure)
	}
	took := time.Since(start)
	mustContain(t, "stderr", gl.stderr.String(), "golaunch: agent a3 unreachable (declared dead by memberlist")
	t.Logf("hung agent detected after %v", took)
	stranded := map[int]int{2: pids[2]} // rank 2 runs under the stopped agent: it dies with it
	delete(pids, 2)
	requireGone(t, pids, time.Second)
	a3.Kill()
	requireGone(t, stranded, 2*time.Second)
}

// hello across two agents: shm within an agent's host, tcp between them, global fences.
func TestAgentsHello(t *testing.T) {
	c := startCluster(t, 2, 2)
	r := runGL(t, "", c.submit("-n", "4", hello(t))...)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	mustContain(t, "stdout", r.stdout, "[0] token came back around the ring of 4 ranks")
	mustContain(t, "stdout", r.stdout, "on host a2")
}

// SIGKILL of the submitter: every agent loses its control connection and aborts its ranks.
func TestSubmitterKilled(t *testing.T) {
	c := startCluster(t, 2, 2)
	gl := startGL(t, c.submit("-n", "4", "--grace", "200ms", pmiprogBinPath(t), "hang")...)
	pids := gl.readyPids(t, 4)
	gl.cmd.Process.Kill()
	requireGone(t, pids, 2*time.Second)
}
