package launcher

import (
	"context"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/launcher/internal/netns"
)

// TestNetnsHangReport: a deadlocked job over two hosts (network namespaces, one rank
// each): at --timeout golaunch prints where each rank is blocked, the answers having
// crossed both agents' control connections, and names the deadlock; exit 124.
func TestNetnsHangReport(t *testing.T) {
	if ok, why := netns.Available(); !ok {
		testbudget.SkipEngine(t, "%s", why)
	}
	binaries(t)
	ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(60*time.Second))
	defer cancel()
	c := startNetnsCluster(t, ctx, 1, 1)
	gl := c.submitFrom0(t, ctx, "-n", "2", "--timeout", "4s", rtprog(t), "deadlock")
	if code := gl.wait(t, 30*time.Second); code != ExitTimeout {
		t.Fatalf("exit %d, want %d\n%s", code, ExitTimeout, gl.stderr.String())
	}
	log := gl.stderr.String()
	for _, want := range []string{
		"golaunch: where the ranks are (job timed out after 4s):\n",
		"golaunch:   rank 0: Recv(src=1, tag=0, World) for ",
		"golaunch:   rank 1: Finalize for ",
		"golaunch: deadlock: rank 0 waits for rank 1 in Recv; rank 1 waits in Finalize\n",
	} {
		mustContain(t, "stderr", log, want)
	}
}
