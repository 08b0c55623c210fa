package launcher

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/launcher/internal/netns"
)

// apps/elastic on network-namespace hosts under --ft: a host dies mid-run, or one joins.
// Each test first runs the same job undisturbed; the struck job must end with its loss
// within 1e-6 relative. apps/elastic's own tests cover one host.

var elasticProg = &program{pkg: "../apps/elastic"}

// elasticArgs are the elastic flags of these tests, before --steps and --state-dir.
var elasticArgs = []string{"--dim", "7", "--batch", "24", "--samples", "600", "--pause", "20ms"}

const elasticSteps = 400

// elasticJob is apps/elastic started through golaunch on host h0 of a cluster.
type elasticJob struct {
	*running
	dir string // --state-dir
}

// startElastic submits elastic from h0 through the agent at seed with golaunch's flags
// gl and elastic's extra flags.
func startElastic(t *testing.T, ctx context.Context, h0 *netns.Host, seed, keyfile string, gl []string, extra ...string) *elasticJob {
	t.Helper()
	j := &elasticJob{dir: t.TempDir()}
	args := append([]string{"--join", seed, "--keyfile", keyfile, "--tag-output=false", "--timeout", testbudget.Scale(2 * time.Minute).String()}, gl...)
	args = append(append(args, elasticProg.path(t)), elasticArgs...)
	args = append(args, "--steps", strconv.Itoa(elasticSteps), "--state-dir", j.dir)
	j.running = startCmd(t, h0.Command(ctx, golaunchBin, append(args, extra...)...))
	return j
}

// result waits for the job's result line and exit 0, and returns its ranks and loss.
func (j *elasticJob) result(t *testing.T) (ranks int, loss float64) {
	t.Helper()
	l := j.line(t, "elastic: steps=", 2*time.Minute)
	if code := j.wait(t, 30*time.Second); code != 0 {
		t.Fatalf("golaunch exited %d after %q:\n%s", code, l, j.stderr.String())
	}
	var steps int
	if _, err := fmt.Sscanf(l, "elastic: steps=%d ranks=%d loss=%g", &steps, &ranks, &loss); err != nil || steps != elasticSteps {
		t.Fatalf("result line %q (%v): want steps=%d", l, err, elasticSteps)
	}
	return ranks, loss
}

// stepAtLeast waits until rank 0 has committed step n.
func (j *elasticJob) stepAtLeast(t *testing.T, n int) {
	t.Helper()
	budget := testbudget.Scale(60 * time.Second)
	for deadline := time.Now().Add(budget); ; time.Sleep(5 * time.Millisecond) {
		b, _ := os.ReadFile(filepath.Join(j.dir, "step"))
		if s, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && s >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no step %d within %v:\n%s", n, budget, j.stderr.String())
		}
	}
}

// killHost kills agent a (host name) and then every rank of the job on that host, with
// SIGKILL: the host died.
func (j *elasticJob) killHost(t *testing.T, a *running, name string) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(j.dir, "rank*.pid"))
	var pids []int
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var pid int
		var host string
		if _, err := fmt.Sscan(string(b), &pid, &host); err != nil {
			t.Fatalf("%s %q: %v", f, b, err)
		}
		if host == name {
			pids = append(pids, pid)
		}
	}
	if len(pids) == 0 {
		t.Fatalf("no rank on host %s in %v", name, files)
	}
	a.cmd.Process.Kill()
	for _, pid := range pids {
		syscall.Kill(pid, syscall.SIGKILL)
	}
}

// TestNetnsElasticHostKilled: 6 ranks on 3 hosts of 2 slots; host h1 dies mid-run (its
// agent and its 2 ranks, SIGKILL). The 4 survivors go on, their buddies on h2 holding
// h1's ranks' momentum, and end with the undisturbed loss.
func TestNetnsElasticHostKilled(t *testing.T) {
	if ok, why := netns.Available(); !ok {
		testbudget.SkipEngine(t, "%s", why)
	}
	binaries(t)
	ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(4*time.Minute))
	defer cancel()
	c := startNetnsCluster(t, ctx, 2, 2, 2)
	gl := []string{"--ft", "-n", "6"}
	_, want := startElastic(t, ctx, c.Hosts[0], c.seed, c.keyfile, gl).result(t)
	j := startElastic(t, ctx, c.Hosts[0], c.seed, c.keyfile, gl)
	j.stepAtLeast(t, 10)
	j.killHost(t, c.agentList[1], "h1")
	ranks, loss := j.result(t)
	if ranks != 4 || math.Abs(loss-want) > 1e-6*math.Abs(want) {
		t.Errorf("ranks=%d loss=%.12g; want 4 and the undisturbed %.12g", ranks, loss, want)
	}
}

// TestNetnsElasticJoin: 4 ranks with --refill on h0 and h1 (2 slots each); h1 dies
// mid-run, so the 2 survivors on h0 go on and find no room to Spawn. Then an agent on h2
// joins the cluster: the next step's Spawn places 2 ranks there, and the job ends with 4
// ranks and the undisturbed loss.
func TestNetnsElasticJoin(t *testing.T) {
	if ok, why := netns.Available(); !ok {
		testbudget.SkipEngine(t, "%s", why)
	}
	binaries(t)
	ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(4*time.Minute))
	defer cancel()
	c, err := netns.New(3)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	key, seed := writeKey(t), c.Hosts[0].Addr+":7946"
	netnsAgent(t, ctx, c.Hosts[0], "h0", 2, key, "")
	h1 := netnsAgent(t, ctx, c.Hosts[1], "h1", 2, key, seed)
	gl := []string{"--ft", "-n", "4"}
	_, want := startElastic(t, ctx, c.Hosts[0], seed, key, gl).result(t)
	j := startElastic(t, ctx, c.Hosts[0], seed, key, gl, "--refill")
	j.stepAtLeast(t, 10)
	j.killHost(t, h1, "h1")
	j.waitStderr(t, "spawn of 2 ranks:", 30*time.Second) // no room: h0 is full
	netnsAgent(t, ctx, c.Hosts[2], "h2", 2, key, seed)
	ranks, loss := j.result(t)
	if ranks != 4 || math.Abs(loss-want) > 1e-6*math.Abs(want) {
		t.Errorf("ranks=%d loss=%.12g; want 4 and the undisturbed %.12g; stderr:\n%s", ranks, loss, want, j.stderr.String())
	}
}
