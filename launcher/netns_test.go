package launcher

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/launcher/internal/netns"
)

// A job over 4 hosts (network namespaces on a bridge), 2 ranks each: shm within a host,
// tcp between hosts. Then cutting one host's link aborts the job naming that host, and
// every rank on every host ends (the cut host's agent loses the submitter and kills its
// own ranks).
func TestNetnsHosts(t *testing.T) {
	if ok, why := netns.Available(); !ok {
		testbudget.SkipEngine(t, "%s", why)
	}
	binaries(t)
	helloPath := hello(t)
	ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(60*time.Second))
	defer cancel()
	c := startNetnsCluster(t, ctx, 2, 2, 2, 2)
	submit := func(args ...string) *running { return c.submitFrom0(t, ctx, args...) }

	gl := submit("-n", "8", helloPath)
	if code := gl.wait(t, 30*time.Second); code != 0 {
		t.Fatalf("hello over 4 hosts: exit %d\n%s", code, gl.stderr.String())
	}
	var out []string
	for l := range gl.lines {
		out = append(out, l)
	}
	all := strings.Join(out, "\n")
	for rank := range 8 {
		next := "shm"
		if rank%2 == 1 {
			next = "tcp"
		}
		mustContain(t, "hello output", all, fmt.Sprintf("[%d] hello from rank %d of 8 on host h%d", rank, rank, rank/2))
		mustContain(t, "hello output", all, fmt.Sprintf("local rank %d of 2, transport to the next rank: %s)", rank%2, next))
	}

	gl = submit("-n", "8", "--grace", "500ms", pmiprogBin, "hang")
	pids := gl.readyPids(t, 8)
	start := time.Now()
	if err := c.Hosts[2].Cut(); err != nil {
		t.Fatal(err)
	}
	if code := gl.wait(t, 10*time.Second); code != ExitFailure {
		t.Errorf("exit %d, want %d", code, ExitFailure)
	}
	t.Logf("cut link detected after %v", time.Since(start))
	mustContain(t, "stderr", gl.stderr.String(), "golaunch: agent h2 unreachable (declared dead by memberlist")
	requireGone(t, pids, 10*time.Second)
	t.Logf("every rank gone %v after the cut", time.Since(start))
}
