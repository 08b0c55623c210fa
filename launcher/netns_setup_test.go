package launcher

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
)

// A host lost while a job is set up: the submitter has pushed the job, agents h0 and h2
// are ready, and h1 has prepared its part but not answered yet (its stderr is a stopped
// pipe, so its log line about the job blocks just before its answer).
//
//   - kill: h1's agent is killed (its control connection ends);
//   - cut: h1's link is cut (memberlist declares it dead);
//   - submitter-cut: the submitter runs on a host of its own (h3), which is cut.
//
// A lost agent aborts the job within the detection bound (checked as 10 s, well inside
// the 30 s ready timeout, whose message "agents not ready within 30s" names no host), with
// one summary line naming h1 and exit 125. A lost submitter makes the ready agents drop
// the job within the detection bound (checked as 10 s, not the 30 s start timeout).
// No rank starts anywhere, the job directories go (h1's once it can write again), and
// the next job runs; a cut h1 is back in the cluster soon after its link (checked as 10
// s; it never came back).
func TestNetnsHostLostDuringSetup(t *testing.T) {
	for _, how := range []string{"kill", "cut", "submitter-cut"} {
		t.Run(how, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(60*time.Second))
			defer cancel()
			c := netnsHosts(t, 4)
			key := writeKey(t)
			seed := c.Hosts[0].Addr + ":7946"
			netnsAgent(t, ctx, c.Hosts[0], "h0", 2, key, "")
			log1 := newStallPipe(t)
			h1 := netnsAgentTo(t, ctx, c.Hosts[1], "h1", 2, key, seed, log1.w)
			netnsAgent(t, ctx, c.Hosts[2], "h2", 2, key, seed)

			before := jobDirs()
			log1.stall(t)
			m := uniqueMarker(t)
			from := c.Hosts[0]
			if how == "submitter-cut" {
				from = c.Hosts[3]
			}
			gl := startCmd(t, from.Command(ctx, golaunchBin, "--join", seed, "--keyfile", key,
				"-n", "6", "--grace", "500ms", pmiprogBin, "hang", m))
			dirs := waitJobDirs(t, before, 3)  // every agent has prepared its part
			time.Sleep(100 * time.Millisecond) // h0 and h2 answer ready; h1 blocks
			select {
			case <-gl.done:
				t.Fatalf("the job ended before h1 answered: exit %d\n%s", gl.code, gl.stderr.String())
			default:
			}

			start := time.Now()
			switch how {
			case "kill":
				h1.cmd.Process.Kill()
			case "cut":
				if err := c.Hosts[1].Cut(); err != nil {
					t.Fatal(err)
				}
			case "submitter-cut":
				if err := c.Hosts[3].Cut(); err != nil {
					t.Fatal(err)
				}
				// h0's and h2's; h1's stays while h1 cannot write its log.
				waitDirsGone(t, dirs, 2, 10*time.Second)
				t.Logf("the ready agents dropped the job %v after the submitter was cut", time.Since(start))
			}
			code := gl.wait(t, 20*time.Second)
			took := time.Since(start)
			if bound := testbudget.Scale(10 * time.Second); took > bound {
				t.Errorf("golaunch ended %v after the host was lost during setup, want within %v", took, bound)
			}
			switch how {
			case "kill":
				oneSummaryPrefix(t, gl, code, ExitFailure, "golaunch: agent h1 unreachable (")
			case "cut":
				oneSummaryPrefix(t, gl, code, ExitFailure, "golaunch: agent h1 unreachable (declared dead by memberlist")
			case "submitter-cut":
				oneSummaryPrefix(t, gl, code, ExitFailure, "golaunch: agent h")
			}
			if pids, _ := marked(m); len(pids) != 0 {
				t.Errorf("ranks started although the job failed during setup: %v", pids)
			}
			if how == "kill" {
				removeDirsOfDeadAgent(t, dirs)
			}
			restored := time.Now()
			if how == "cut" {
				if err := c.Hosts[1].Restore(); err != nil {
					t.Fatal(err)
				}
			}
			log1.drain()
			requireDirsGone(t, dirs, 10*time.Second)
			if t.Failed() {
				t.Logf("agent h1's stderr:\n%s", log1.String())
			}
			t.Logf("golaunch ended %v after the host was lost (%q)", took, strings.TrimSpace(gl.stderr.String()))

			if how == "cut" {
				// h1 rejoins once its link is back (rejoin.go).
				submitUntil(t, ctx, c.Hosts[0], key, seed, 10*time.Second, "-n", "6", pmiprogBin, "ok")
				t.Logf("h1 back in the cluster %v after its link came back", time.Since(restored))
			}
			next := startCmd(t, c.Hosts[0].Command(ctx, golaunchBin, "--join", seed, "--keyfile", key,
				"-H", "h0:2,h2:2", pmiprogBin, "ok"))
			if code := next.wait(t, 30*time.Second); code != 0 {
				t.Errorf("next job on h0 and h2: exit %d\n%s", code, next.stderr.String())
			}
		})
	}
}

// waitDirsGone waits until at least n of dirs are gone, for timeout scaled by the test
// slack.
func waitDirsGone(t *testing.T, dirs map[string]bool, n int, timeout time.Duration) {
	t.Helper()
	timeout = testbudget.Scale(timeout)
	deadline := time.Now().Add(timeout)
	for {
		gone := 0
		for d := range dirs {
			if _, err := os.Lstat(d); err != nil {
				gone++
			}
		}
		if gone >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of the job directories %v gone after %v, want %d", gone, dirs, timeout, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
