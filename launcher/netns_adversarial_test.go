package launcher

import (
	"bytes"
	"context"
	"fmt"
	"net"
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

// Adversarial multi-host tests: concurrent jobs, agents killed or cut off at each phase
// of a job, restarted agents, lost submitters, and a misused cluster (wrong key, name
// clash, a host that left, too many ranks). Each host is a network namespace with at most
// one agent (gossip on port 7946 of its own address).

// netnsAgent starts `golaunch agent` named name on host h with slots, joining join
// (none when ""), and waits for its gossip line.
func netnsAgent(t *testing.T, ctx context.Context, h *netns.Host, name string, slots int, keyfile, join string) *running {
	t.Helper()
	return netnsAgentTo(t, ctx, h, name, slots, keyfile, join, nil)
}

// netnsAgentTo is netnsAgent with the agent's stderr on stderr (collected when nil).
func netnsAgentTo(t *testing.T, ctx context.Context, h *netns.Host, name string, slots int, keyfile, join string, stderr *os.File) *running {
	t.Helper()
	args := []string{"agent", "--bind", h.Addr + ":7946", "--slots", strconv.Itoa(slots), "--keyfile", keyfile, "--name", name}
	if join != "" {
		args = append(args, "--join", join)
	}
	cmd := h.Command(ctx, golaunchBin, args...)
	if stderr != nil {
		cmd.Stderr = stderr
	}
	a := startCmd(t, cmd)
	a.line(t, fmt.Sprintf("golaunch agent %s: gossip %s", name, h.Addr), 10*time.Second)
	return a
}

// netnsHosts makes n namespace hosts without agents, removed when the test ends.
func netnsHosts(t *testing.T, n int) *netns.Cluster {
	t.Helper()
	if ok, why := netns.Available(); !ok {
		testbudget.SkipEngine(t, "%s", why)
	}
	binaries(t)
	c, err := netns.New(n)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// marked returns the live processes whose command line contains marker, by their
// GOLAUNCH_RANK, with the job directory (of GOLAUNCH_AGENT_SOCK) of each.
func marked(marker string) (pids map[int]int, dirs map[string]bool) {
	pids, dirs = map[int]int{}, map[string]bool{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || !alive(pid) {
			continue
		}
		cmd, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if !bytes.Contains(cmd, []byte("\x00"+marker)) {
			continue
		}
		env, _ := os.ReadFile("/proc/" + e.Name() + "/environ")
		rank := -1
		for _, kv := range strings.Split(string(env), "\x00") {
			if v, ok := strings.CutPrefix(kv, "GOLAUNCH_RANK="); ok {
				rank, _ = strconv.Atoi(v)
			}
			if v, ok := strings.CutPrefix(kv, "GOLAUNCH_AGENT_SOCK="); ok {
				dirs[filepath.Dir(v)] = true
			}
		}
		if rank >= 0 {
			pids[rank] = pid
		}
	}
	return pids, dirs
}

// waitMarked waits until n ranks run with marker on their command line.
func waitMarked(t *testing.T, marker string, n int) (map[int]int, map[string]bool) {
	t.Helper()
	deadline := time.Now().Add(testbudget.Scale(20 * time.Second))
	for {
		pids, dirs := marked(marker)
		if len(pids) == n {
			return pids, dirs
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d ranks with %q running, want %d", len(pids), marker, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// requireDirsGone fails unless every job directory is gone within timeout scaled by the
// test slack.
func requireDirsGone(t *testing.T, dirs map[string]bool, timeout time.Duration) {
	t.Helper()
	timeout = testbudget.Scale(timeout)
	deadline := time.Now().Add(timeout)
	for d := range dirs {
		for {
			if _, err := os.Lstat(d); err != nil {
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("job directory %s still there %v after the job", d, timeout)
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// oneSummary checks that stderr has exactly one summary line, want, and exit code code.
func oneSummary(t *testing.T, r *running, gotCode, code int, want string) {
	t.Helper()
	sum := summaryLines(r.stderr.String())
	if gotCode != code || len(sum) != 1 || sum[0] != want {
		t.Errorf("exit %d, summary %q; want exit %d, summary %q; stderr:\n%s", gotCode, sum, code, want, r.stderr.String())
	}
}

// oneSummaryPrefix is oneSummary for a line that starts with prefix and ends with
// "; job aborted".
func oneSummaryPrefix(t *testing.T, r *running, gotCode, code int, prefix string) {
	t.Helper()
	sum := summaryLines(r.stderr.String())
	if gotCode != code || len(sum) != 1 || !strings.HasPrefix(sum[0], prefix) || !strings.HasSuffix(sum[0], "; job aborted") {
		t.Errorf("exit %d, summary %q; want exit %d, one summary %q...; job aborted; stderr:\n%s", gotCode, sum, code, prefix, r.stderr.String())
	}
}

// uniqueMarker is an argument no other process has: pmiprog ignores extra arguments.
func uniqueMarker(t *testing.T) string {
	return fmt.Sprintf("gorma-adv-%d-%s", os.Getpid(), strings.NewReplacer("/", "-", " ", "-").Replace(t.Name()))
}

// Two jobs run at once on one cluster (oversubscribing it: agents do not reserve slots).
// Their ranks get their own job directories; a rank of job B killed by SIGKILL aborts job
// B only (exit 137, its summary line), job A's ranks keep running; a third job C runs to
// success meanwhile, each rank on its planned host; then job A ends by SIGTERM to its
// golaunch (exit 143). No rank and no job directory is left.
func TestNetnsConcurrentJobs(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(60*time.Second))
	defer cancel()
	if ok, why := netns.Available(); !ok {
		testbudget.SkipEngine(t, "%s", why)
	}
	binaries(t)
	c := startNetnsCluster(t, ctx, 2, 2, 2)
	ma, mb := uniqueMarker(t)+"-A", uniqueMarker(t)+"-B"
	ga := c.submitFrom0(t, ctx, "-n", "6", "--grace", "500ms", pmiprogBin, "hang", ma)
	gb := c.submitFrom0(t, ctx, "-n", "6", "--grace", "500ms", pmiprogBin, "hang", mb)
	ga.readyPids(t, 6)
	gb.readyPids(t, 6)
	pa, da := waitMarked(t, ma, 6)
	pb, db := waitMarked(t, mb, 6)
	if len(da) != 3 || len(db) != 3 {
		t.Fatalf("job directories: A %v, B %v; want 3 each (one per host)", da, db)
	}
	for d := range da {
		if db[d] {
			t.Fatalf("jobs A and B share the job directory %s", d)
		}
	}

	syscall.Kill(pb[4], syscall.SIGKILL)
	code := gb.wait(t, 10*time.Second)
	oneSummary(t, gb, code, 128+9, fmt.Sprintf("golaunch: rank 4 (host h2, pid %d) killed by signal 9 (SIGKILL); job aborted", pb[4]))
	requireGone(t, pb, 5*time.Second)
	requireDirsGone(t, db, 5*time.Second)

	gc := c.submitFrom0(t, ctx, "-n", "6", "--transport", "tcp", pmiprogBin, "ok")
	if code := gc.wait(t, 30*time.Second); code != 0 {
		t.Fatalf("job C beside job A: exit %d\n%s", code, gc.stderr.String())
	}
	var out []string
	for l := range gc.lines {
		out = append(out, l)
	}
	for rank := range 6 {
		mustContain(t, "job C output", strings.Join(out, "\n"), fmt.Sprintf("[%d] rank %d/6 host h%d node %d/3 local %d/2 transport tcp secret 32 ok",
			rank, rank, rank/2, rank/2, rank%2))
	}

	for rank, pid := range pa {
		if !alive(pid) {
			t.Errorf("job A's rank %d (pid %d) died with job B", rank, pid)
		}
	}
	if strings.Contains(ga.stderr.String(), "job aborted") {
		t.Errorf("job A aborted with job B:\n%s", ga.stderr.String())
	}
	ga.cmd.Process.Signal(syscall.SIGTERM)
	code = ga.wait(t, 10*time.Second)
	oneSummary(t, ga, code, 143, "golaunch: received 15 (SIGTERM); job aborted")
	requireGone(t, pa, 5*time.Second)
	requireDirsGone(t, da, 5*time.Second)
}

// An agent lost while the job starts up: every rank has started, rank 5 (on h2) sleeps
// before PMI init and the others wait in the first fence. Killing agent h1 (SIGKILL: its
// control connection ends) or cutting h1's link (memberlist declares it dead) aborts the
// job with one summary line naming h1 and exit 125, within the detection bound (2 s for a
// kill; 1-2 s for a cut, checked as 5 s); every rank on every host ends, and every job
// directory but the killed agent's goes. The other agents then run the next job.
func TestNetnsAgentLostAtStartup(t *testing.T) {
	for _, how := range []string{"kill", "cut"} {
		t.Run(how, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(60*time.Second))
			defer cancel()
			if ok, why := netns.Available(); !ok {
				testbudget.SkipEngine(t, "%s", why)
			}
			binaries(t)
			c := startNetnsCluster(t, ctx, 2, 2, 2)
			m := uniqueMarker(t)
			gl := c.submitFrom0(t, ctx, "-n", "6", "--grace", "500ms", pmiprogBin, "late", "5", "30s", m)
			pids, dirs := waitMarked(t, m, 6)
			time.Sleep(300 * time.Millisecond) // ranks 0-4 reach their fence
			start := time.Now()
			bound := testbudget.Scale(2 * time.Second)
			if how == "kill" {
				c.agentList[1].cmd.Process.Kill()
			} else {
				bound = testbudget.Scale(5 * time.Second)
				if err := c.Hosts[1].Cut(); err != nil {
					t.Fatal(err)
				}
			}
			code := gl.wait(t, bound+5*time.Second)
			if took := time.Since(start); took > bound {
				t.Errorf("golaunch ended %v after agent h1 was lost, want within %v", took, bound)
			}
			oneSummaryPrefix(t, gl, code, ExitFailure, "golaunch: agent h1 unreachable (")
			requireGone(t, pids, bound+2*time.Second-time.Since(start))
			if how == "kill" {
				removeDirsOfDeadAgent(t, dirs)
			}
			requireDirsGone(t, dirs, 5*time.Second)

			next := c.submitFrom0(t, ctx, "-H", "h0:2,h2:2", pmiprogBin, "ok")
			if code := next.wait(t, 30*time.Second); code != 0 {
				t.Errorf("next job on h0 and h2: exit %d\n%s", code, next.stderr.String())
			}
		})
	}
}

// removeDirsOfDeadAgent drops from dirs the job directory of a SIGKILLed agent (one whose
// PMI socket nobody listens on) and removes it when the test ends: an agent started later
// sweeps it only once it is a minute old.
func removeDirsOfDeadAgent(t *testing.T, dirs map[string]bool) {
	for d := range dirs {
		if _, err := os.Lstat(filepath.Join(d, "agent.sock")); err != nil {
			continue
		}
		if c, err := net.DialTimeout("unix", filepath.Join(d, "agent.sock"), time.Second); err == nil {
			c.Close()
			continue
		}
		delete(dirs, d)
		t.Cleanup(func() { os.RemoveAll(d) })
	}
}

// An agent SIGKILLed mid-job and restarted with the same name and address, at once
// (before memberlist declares the old one dead) or after it was declared dead: it rejoins,
// and the next job runs ranks on it, at its own (new) control address.
func TestNetnsAgentRestarted(t *testing.T) {
	for _, when := range []string{"at-once", "after-death"} {
		t.Run(when, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(60*time.Second))
			defer cancel()
			if ok, why := netns.Available(); !ok {
				testbudget.SkipEngine(t, "%s", why)
			}
			binaries(t)
			c := startNetnsCluster(t, ctx, 2, 2, 2)
			m := uniqueMarker(t)
			gl := c.submitFrom0(t, ctx, "-n", "6", "--grace", "500ms", pmiprogBin, "hang", m)
			gl.readyPids(t, 6)
			pids, dirs := waitMarked(t, m, 6)
			c.agentList[2].cmd.Process.Kill()
			code := gl.wait(t, 5*time.Second)
			oneSummaryPrefix(t, gl, code, ExitFailure, "golaunch: agent h2 unreachable (")
			requireGone(t, pids, 5*time.Second)
			if when == "after-death" {
				time.Sleep(3 * time.Second) // declared dead in 1-2 s
			}
			// The killed agent's job directory stays until an agent started once it is a
			// minute old sweeps it (not checked: too slow); the others' go with the job.
			removeDirsOfDeadAgent(t, dirs)
			requireDirsGone(t, dirs, 2*time.Second)
			netnsAgent(t, ctx, c.Hosts[2], "h2", 2, c.keyfile, c.seed)

			// Gossip carries the restarted agent's new control address to the seed within
			// a few 50 ms rounds.
			time.Sleep(time.Second)
			next := c.submitFrom0(t, ctx, "-n", "6", pmiprogBin, "env", "GOLAUNCH_HOST", "GOLAUNCH_TCP_ADDR")
			if code := next.wait(t, 30*time.Second); code != 0 {
				t.Fatalf("job after the restart: exit %d\n%s", code, next.stderr.String())
			}
			var out []string
			for l := range next.lines {
				out = append(out, l)
			}
			all := strings.Join(out, "\n")
			mustContain(t, "output", all, "[5] env 5 GOLAUNCH_HOST=h2")
			mustContain(t, "output", all, "[5] env 5 GOLAUNCH_TCP_ADDR="+c.Hosts[2].Addr)
		})
	}
}

// The submitter runs on a host of its own (no agent) and is lost mid-job: SIGKILLed (the
// agents see their control connections end) or cut off (memberlist declares it dead on
// the agents). Either way every agent aborts its ranks by itself within the detection
// bound (2 s for a kill; 1-2 s for a cut, checked as 5 s) and removes its job directory;
// the agents then run the next job.
func TestNetnsSubmitterLost(t *testing.T) {
	for _, how := range []string{"kill", "cut"} {
		t.Run(how, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(60*time.Second))
			defer cancel()
			c := netnsHosts(t, 3)
			key := writeKey(t)
			seed := c.Hosts[0].Addr + ":7946"
			netnsAgent(t, ctx, c.Hosts[0], "h0", 2, key, "")
			netnsAgent(t, ctx, c.Hosts[1], "h1", 2, key, seed)
			m := uniqueMarker(t)
			gl := startCmd(t, c.Hosts[2].Command(ctx, golaunchBin, "--join", seed, "--keyfile", key,
				"-n", "4", "--grace", "500ms", pmiprogBin, "hang", m))
			gl.readyPids(t, 4)
			pids, dirs := waitMarked(t, m, 4)
			start := time.Now()
			bound := 2 * time.Second
			if how == "kill" {
				gl.cmd.Process.Kill()
			} else {
				bound = 5 * time.Second
				if err := c.Hosts[2].Cut(); err != nil {
					t.Fatal(err)
				}
			}
			requireGone(t, pids, bound)
			t.Logf("every rank gone %v after the submitter was lost", time.Since(start))
			requireDirsGone(t, dirs, 2*time.Second)
			if how == "cut" {
				code := gl.wait(t, 10*time.Second)
				oneSummaryPrefix(t, gl, code, ExitFailure, "golaunch: agent h")
			}
			next := startCmd(t, c.Hosts[0].Command(ctx, golaunchBin, "--join", seed, "--keyfile", key, "-n", "4", pmiprogBin, "ok"))
			if code := next.wait(t, 30*time.Second); code != 0 {
				t.Errorf("next job: exit %d\n%s", code, next.stderr.String())
			}
		})
	}
}

// A misused cluster of agents h0, h1, h2 (2 slots each), with a fourth host for
// intruders:
//   - more ranks than slots is a usage error naming the offer;
//   - a submitter with a stale key never joins (exit 125, "same key");
//   - an agent with the wrong key never joins, and -H naming it is a usage error;
//   - an agent that takes the name of a live agent (h1) is refused, and jobs for h1 keep
//     running on the real h1;
//   - -H naming an agent that left the cluster (SIGTERM) is a usage error, and the
//     others still run jobs.
func TestNetnsClusterMisuse(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(60*time.Second))
	defer cancel()
	c := netnsHosts(t, 4)
	key := writeKey(t)
	seed := c.Hosts[0].Addr + ":7946"
	var agents []*running
	for i := range 3 {
		join := seed
		if i == 0 {
			join = ""
		}
		agents = append(agents, netnsAgent(t, ctx, c.Hosts[i], fmt.Sprintf("h%d", i), 2, key, join))
	}
	submit := func(args ...string) (*running, int) {
		t.Helper()
		r := startCmd(t, c.Hosts[0].Command(ctx, golaunchBin, append([]string{"--join", seed, "--keyfile", key}, args...)...))
		return r, r.wait(t, 30*time.Second)
	}
	expect := func(code int, want string, args ...string) string {
		t.Helper()
		r, got := submit(args...)
		if got != code || !strings.Contains(r.stderr.String(), want) {
			t.Errorf("golaunch %q: exit %d, want %d with %q:\n%s", args, got, code, want, r.stderr.String())
		}
		var out []string
		for l := range r.lines {
			out = append(out, l)
		}
		return strings.Join(out, "\n")
	}

	expect(ExitUsage, "-n 7 needs 7 slots but the hosts offer 6 (h0:2, h1:2, h2:2)", "-n", "7", pmiprogBin, "ok")
	stale := startCmd(t, c.Hosts[0].Command(ctx, golaunchBin, "--join", seed, "--keyfile", writeKey(t), "-n", "2", pmiprogBin, "ok"))
	if code := stale.wait(t, 30*time.Second); code != ExitFailure || !strings.Contains(stale.stderr.String(), "same key") {
		t.Errorf("stale key: exit %d\n%s", code, stale.stderr.String())
	}

	wrong := startCmd(t, c.Hosts[3].Command(ctx, golaunchBin, "agent", "--bind", c.Hosts[3].Addr+":7946", "--slots", "2",
		"--keyfile", writeKey(t), "--name", "h3", "--join", seed))
	if code := wrong.wait(t, 30*time.Second); code == 0 || !strings.Contains(wrong.stderr.String(), "join") {
		t.Errorf("agent with the wrong key: exit %d\n%s", code, wrong.stderr.String())
	}
	expect(ExitUsage, `host "h3" is not an agent of the cluster`, "-H", "h3:1", pmiprogBin, "ok")

	// A job runs on h1 meanwhile: the clash must not touch it.
	m := uniqueMarker(t)
	onH1 := startCmd(t, c.Hosts[0].Command(ctx, golaunchBin, "--join", seed, "--keyfile", key,
		"-H", "h1:2", "--grace", "500ms", pmiprogBin, "hang", m))
	onH1.readyPids(t, 2)
	pids, dirs := waitMarked(t, m, 2)
	clash := startCmd(t, c.Hosts[3].Command(ctx, golaunchBin, "agent", "--bind", c.Hosts[3].Addr+":7946", "--slots", "2",
		"--keyfile", key, "--name", "h1", "--join", seed))
	select {
	case <-clash.done:
		if clash.code != ExitFailure || !strings.Contains(clash.stderr.String(), "golaunch agent: the name h1 is taken by the agent at "+c.Hosts[1].Addr+":7946") {
			t.Errorf("agent named like a live one: exit %d\n%s", clash.code, clash.stderr.String())
		}
	case <-time.After(testbudget.Scale(5 * time.Second)):
		t.Errorf("an agent named h1 like the live agent h1 still runs after %v:\n%s", testbudget.Scale(5*time.Second), clash.stderr.String())
		clash.cmd.Process.Signal(syscall.SIGTERM) // it leaves the cluster in h1's name
		clash.wait(t, 10*time.Second)
	}
	time.Sleep(time.Second)
	for rank, pid := range pids {
		if !alive(pid) {
			t.Errorf("rank %d on h1 (pid %d) died with the name clash", rank, pid)
		}
	}
	if strings.Contains(onH1.stderr.String(), "job aborted") {
		t.Errorf("the job on h1 aborted with the name clash:\n%s", onH1.stderr.String())
	}
	onH1.cmd.Process.Signal(syscall.SIGTERM)
	if code := onH1.wait(t, 10*time.Second); code != 143 {
		t.Errorf("job on h1 after SIGTERM: exit %d\n%s", code, onH1.stderr.String())
	}
	requireGone(t, pids, 5*time.Second)
	requireDirsGone(t, dirs, 5*time.Second)
	for range 3 {
		out := expect(0, "", "-H", "h1:2", pmiprogBin, "env", "GOLAUNCH_TCP_ADDR")
		mustContain(t, "output", out, "[1] env 1 GOLAUNCH_TCP_ADDR="+c.Hosts[1].Addr)
	}

	agents[2].cmd.Process.Signal(syscall.SIGTERM)
	if code := agents[2].wait(t, 10*time.Second); code != 0 {
		t.Errorf("agent h2 after SIGTERM: exit %d\n%s", code, agents[2].stderr.String())
	}
	expect(ExitUsage, `host "h2" is not an agent of the cluster`, "-H", "h2:1", pmiprogBin, "ok")
	expect(0, "", "-n", "4", pmiprogBin, "ok")
}
