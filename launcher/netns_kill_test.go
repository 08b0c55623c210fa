package launcher

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/launcher/internal/netns"
)

// A job over 4 hosts (network namespaces), 2 ranks each; then one host dies: its agent
// and its ranks are SIGKILLed. The submitter loses that agent's control connection at
// once: the job aborts within 2 s with one summary line naming the host, exit 125, and
// every rank on every host ends. With pmiprog the other ranks just wait; with rtprog
// they are blocked in the runtime's Barrier (over shm and tcp) and ignore SIGTERM, so
// they must notice the dead host's ranks by themselves.
func TestNetnsHostKilled(t *testing.T) {
	if ok, why := netns.Available(); !ok {
		testbudget.SkipEngine(t, "%s", why)
	}
	binaries(t)
	progs := map[string][]string{
		"pmiprog": {"--grace", "500ms", pmiprogBin, "hang"},
		"runtime": {"--grace", "20s", rtprog(t), "barrier", "4"},
	}
	for _, name := range []string{"pmiprog", "runtime"} {
		t.Run(name, func(t *testing.T) { netnsHostKilled(t, progs[name]) })
	}
}

func netnsHostKilled(t *testing.T, job []string) {
	ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(60*time.Second))
	defer cancel()
	c := startNetnsCluster(t, ctx, 2, 2, 2, 2)
	agents := c.agentList
	gl := c.submitFrom0(t, ctx, append([]string{"-n", "8"}, job...)...)
	pids := gl.readyPids(t, 8)
	time.Sleep(200 * time.Millisecond) // let the ranks block

	start := time.Now()
	// The agent first: were its ranks killed first, it would report them itself.
	agents[2].cmd.Process.Kill()
	syscall.Kill(pids[4], syscall.SIGKILL)
	syscall.Kill(pids[5], syscall.SIGKILL)
	code := gl.wait(t, 5*time.Second)
	took := time.Since(start)
	if bound := testbudget.Scale(2 * time.Second); took > bound {
		t.Errorf("golaunch ended %v after the host died, want within %v", took, bound)
	}
	stderr := gl.stderr.String()
	sum := summaryLines(stderr)
	if len(sum) == 1 && strings.HasPrefix(sum[0], "golaunch: agent h2 unreachable (") && strings.HasSuffix(sum[0], "; job aborted") {
		if code != ExitFailure {
			t.Errorf("exit %d, want %d", code, ExitFailure)
		}
	} else {
		checkRootCause(t, sum, code, "golaunch: agent h2 unreachable (...); job aborted", ExitFailure, stderr)
	}
	requireGone(t, pids, max(0, 2*time.Second-time.Since(start)))
	t.Logf("golaunch ended %v after the host died (%q); every rank gone after %v", took, sum, time.Since(start))
}
