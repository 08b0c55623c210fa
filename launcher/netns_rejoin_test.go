package launcher

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/launcher/internal/netns"
)

// The seed agent (h0, started without --join) restarts at its address, still without
// --join, while h1 and h2 run:
//
//   - term: SIGTERM (it leaves the cluster), started again at once;
//   - kill: SIGKILL, started again once memberlist declared it dead;
//   - kill-at-once: SIGKILL, started again at once, before its death is noticed (the new
//     process answers the old one's probes).
//
// The cluster heals by itself (rejoin.go): the others try the address of the departed
// agent again (term, kill) or notice the new boot id in its acks (kill-at-once), within
// about a second. Checked as: within 10 s, a job of 6 ranks (all three hosts) runs when
// submitted through h0 and through h2, each time with ranks on h0. memberlist alone
// never healed the first two cases: h0 stayed a cluster of one.
func TestNetnsSeedRestarted(t *testing.T) {
	for _, how := range []string{"term", "kill", "kill-at-once"} {
		t.Run(how, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(60*time.Second))
			defer cancel()
			if ok, why := netns.Available(); !ok {
				testbudget.SkipEngine(t, "%s", why)
			}
			binaries(t)
			c := startNetnsCluster(t, ctx, 2, 2, 2)
			h0 := c.agentList[0]
			if how == "term" {
				h0.cmd.Process.Signal(syscall.SIGTERM)
			} else {
				h0.cmd.Process.Kill()
			}
			h0.wait(t, 10*time.Second)
			if how == "kill" {
				time.Sleep(3 * time.Second) // declared dead in 1-2 s
			}
			start := time.Now()
			netnsAgent(t, ctx, c.Hosts[0], "h0", 2, c.keyfile, "")
			for i, via := range []string{c.seed, c.Hosts[2].Addr + ":7946"} {
				out := submitUntil(t, ctx, c.Hosts[0], c.keyfile, via, 10*time.Second, "-n", "6", pmiprogBin, "env", "GOLAUNCH_HOST")
				mustContain(t, "output", out, "[0] env 0 GOLAUNCH_HOST=h0")
				mustContain(t, "output", out, "[5] env 5 GOLAUNCH_HOST=h2")
				if i == 0 {
					t.Logf("%s: healed %v after the seed restarted", how, time.Since(start))
				}
			}
		})
	}
}

// submitUntil submits args from host h to the agent at via until the job succeeds, for
// at most timeout scaled by the test slack, and returns its output.
func submitUntil(t *testing.T, ctx context.Context, h *netns.Host, keyfile, via string, timeout time.Duration, args ...string) string {
	t.Helper()
	timeout = testbudget.Scale(timeout)
	deadline := time.Now().Add(timeout)
	for {
		r := startCmd(t, h.Command(ctx, golaunchBin, append([]string{"--join", via, "--keyfile", keyfile}, args...)...))
		code := r.wait(t, 30*time.Second)
		if code == 0 {
			var out []string
			for l := range r.lines {
				out = append(out, l)
			}
			return strings.Join(out, "\n")
		}
		if time.Now().After(deadline) {
			t.Fatalf("a job through %s still fails %v later: exit %d\n%s", via, timeout, code, r.stderr.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Two agents with one name after both joined. The cluster probes one address per name;
// the agent it does not probe gives up as an agent whose name is taken at join does: exit
// 125, "the name h1 is taken by the agent at ADDR", without a goodbye in that name (which
// would make the cluster drop the other). The other keeps the name and its jobs.
//
//   - cut-replaced-restored: h1's link is cut, memberlist declares h1 dead, and an agent
//     named h1 starts on h3 and joins; jobs for h1 then run on h3. When h1's link comes
//     back, h1 rejoins (it tries its --join address while no other agent is live to it),
//     finds its name held by h3, and gives up. (The failure it guards against: the new
//     h1 unknown to the cluster for 15 s or more, and the old h1 never back.)
//   - stopped-replaced-resumed: h1's agent is stopped (SIGSTOP) and, once the cluster
//     suspects it, an agent named h1 starts on h3 and joins (memberlist reports no clash
//     with a suspected or freshly dead member). h1 is resumed at once and refutes its
//     suspicion: the cluster keeps probing h1, and the agent on h3 gives up. (Before, it
//     kept running, outside the cluster, and only logged the clash.)
func TestNetnsNameClashAfterJoin(t *testing.T) {
	for _, how := range []string{"cut-replaced-restored", "stopped-replaced-resumed"} {
		t.Run(how, func(t *testing.T) { netnsNameClash(t, how) })
	}
}

func netnsNameClash(t *testing.T, how string) {
	ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(60*time.Second))
	defer cancel()
	c := netnsHosts(t, 4)
	key := writeKey(t)
	seed := c.Hosts[0].Addr + ":7946"
	h0 := netnsAgent(t, ctx, c.Hosts[0], "h0", 2, key, "")
	old := netnsAgent(t, ctx, c.Hosts[1], "h1", 2, key, seed)
	h2 := netnsAgent(t, ctx, c.Hosts[2], "h2", 2, key, seed)
	if how == "cut-replaced-restored" {
		if err := c.Hosts[1].Cut(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second) // suspected, soon dead
	} else {
		old.cmd.Process.Signal(syscall.SIGSTOP)
		defer old.cmd.Process.Signal(syscall.SIGCONT)
	}
	var repl *running
	for deadline := time.Now().Add(testbudget.Scale(10 * time.Second)); ; {
		// Refused at join (exit 125, name taken) while the cluster holds h1 as alive.
		repl = startCmd(t, c.Hosts[3].Command(ctx, golaunchBin, "agent", "--bind", c.Hosts[3].Addr+":7946",
			"--slots", "2", "--keyfile", key, "--name", "h1", "--join", seed))
		if l, ok := <-repl.lines; ok && strings.HasPrefix(l, "golaunch agent h1: gossip "+c.Hosts[3].Addr) {
			break
		}
		if code := repl.wait(t, 10*time.Second); time.Now().After(deadline) {
			t.Fatalf("no agent named h1 could join within %v: exit %d\n%s", testbudget.Scale(10*time.Second), code, repl.stderr.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	defer func() {
		if t.Failed() {
			t.Logf("agent h0:\n%s\nagent h2:\n%s\nold agent h1:\n%s\nnew agent h1:\n%s", h0.stderr, h2.stderr, old.stderr, repl.stderr)
		}
	}()
	owner, loser, ownerAddr := repl, old, c.Hosts[3].Addr
	start := time.Now()
	if how == "cut-replaced-restored" {
		// A join within memberlist's reclaim time of the old h1's death leaves the name
		// with the dead h1 until the new one is found unprobed (3 s) and rejoins.
		out := submitUntil(t, ctx, c.Hosts[0], key, seed, 10*time.Second, "-H", "h1:1", pmiprogBin, "env", "GOLAUNCH_TCP_ADDR")
		mustContain(t, "output", out, "env 0 GOLAUNCH_TCP_ADDR="+c.Hosts[3].Addr)
		start = time.Now()
		if err := c.Hosts[1].Restore(); err != nil {
			t.Fatal(err)
		}
	} else {
		old.cmd.Process.Signal(syscall.SIGCONT)
		owner, loser, ownerAddr = old, repl, c.Hosts[1].Addr
	}
	code := loser.wait(t, 20*time.Second)
	want := fmt.Sprintf("golaunch agent: the name h1 is taken by the agent at %s:7946; pick another --name", ownerAddr)
	if code != ExitFailure || !strings.Contains(loser.stderr.String(), want) {
		t.Errorf("the agent that lost the name: exit %d, want %d with %q:\n%s", code, ExitFailure, want, loser.stderr.String())
	}
	t.Logf("%s: the agent that lost the name h1 gave up %v later", how, time.Since(start))
	time.Sleep(500 * time.Millisecond) // had it said goodbye, the owner would now be gone
	select {
	case <-owner.done:
		t.Fatalf("the agent that kept the name h1 ended: exit %d\n%s", owner.code, owner.stderr.String())
	default:
	}
	for _, via := range []string{seed, c.Hosts[2].Addr + ":7946", ownerAddr + ":7946"} {
		out := submitUntil(t, ctx, c.Hosts[0], key, via, 5*time.Second, "-H", "h1:2", pmiprogBin, "env", "GOLAUNCH_TCP_ADDR")
		mustContain(t, "output through "+via, out, "[1] env 1 GOLAUNCH_TCP_ADDR="+ownerAddr)
	}
}
