package launcher

import (
	"context"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/launcher/internal/netns"
)

// TestNetnsFTHostKilled: a --ft job over three hosts (network namespaces), two ranks
// each; then one host dies (its agent and its ranks SIGKILLed) while the other ranks
// wait in a fence. The job goes on: the fence completes, the ranks on the other hosts each
// get one ProcFailed event for each rank of the dead host, finalize, and golaunch exits 0.
func TestNetnsFTHostKilled(t *testing.T) {
	if ok, why := netns.Available(); !ok {
		testbudget.SkipEngine(t, "%s", why)
	}
	binaries(t)
	ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(60*time.Second))
	defer cancel()
	c := startNetnsCluster(t, ctx, 2, 2, 2)
	gl := c.submitFrom0(t, ctx, "--ft", "-H", "h0:2,h1:2,h2:2", "-n", "6", pmiprogBin, "ft", "hang", "2,3")
	ftAgentKilled(t, gl, func() { c.agentList[1].cmd.Process.Kill() }, "h1")
}
