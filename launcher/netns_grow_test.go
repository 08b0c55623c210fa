package launcher

import (
	"context"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
)

// A job grows onto a host that joined the cluster after it began: 2 ranks on h0 (an
// agent of 2 slots, full), then an agent on h1 joins, and the ranks spawn 2 more, which
// golaunch places on h1, the only free slots. Both sides merge, and an Allreduce over the
// 4 ranks (shm on each host, tcp between them, which h0's ranks open only now) is right
// at every rank. Before h1 joins, the same job's spawn is refused with the cluster's
// advice.
func TestNetnsGrow(t *testing.T) {
	c := netnsHosts(t, 2)
	prog := spawnprogProg.path(t)
	timeout := testbudget.Scale(60 * time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), timeout+testbudget.Scale(20*time.Second))
	defer cancel()
	key := writeKey(t)
	seed := c.Hosts[0].Addr + ":7946"
	netnsAgent(t, ctx, c.Hosts[0], "h0", 2, key, "")
	submit := func(flags ...string) *running {
		args := append([]string{"--join", seed, "--keyfile", key, "-n", "2", "--timeout", timeout.String(), prog}, flags...)
		cmd := c.Hosts[0].Command(ctx, golaunchBin, args...)
		return startCmd(t, cmd)
	}
	outOf := func(r *running) string {
		var out []string
		for l := range r.lines {
			out = append(out, l)
		}
		return strings.Join(out, "\n")
	}

	refused := submit("--refused")
	if code := refused.wait(t, 40*time.Second); code != 0 {
		t.Fatalf("refused spawn: exit %d\n%s", code, refused.stderr.String())
	}
	mustContain(t, "the refused job's output", outOf(refused),
		"no free slots for 2 ranks: 1 agent, full; start an agent with `golaunch agent --join "+seed+" ...` or pass --oversubscribe")

	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pw.Close()
	cmd := c.Hosts[0].Command(ctx, golaunchBin, "--join", seed, "--keyfile", key, "-n", "2", "--timeout", timeout.String(),
		prog, "--wait-stdin", "--retry", "100")
	cmd.Stdin = pr
	before := jobDirs()
	gl := startCmd(t, cmd)
	pr.Close()
	waitJobDirs(t, before, 1) // the job runs on h0
	netnsAgent(t, ctx, c.Hosts[1], "h1", 2, key, seed)
	if _, err := pw.Write([]byte("go\n")); err != nil {
		t.Fatal(err)
	}
	code := gl.wait(t, timeout)
	stdout := outOf(gl)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, gl.stderr.String())
	}
	mustContain(t, "spawnprog's output", stdout, "PASS spawnprog 4 ranks")
	for _, want := range []string{"parent, host h0", "child, host h1"} {
		if n := len(regexp.MustCompile(regexp.QuoteMeta(want)).FindAllString(stdout, -1)); n != 2 {
			t.Errorf("%d ranks say %q, want 2:\n%s", n, want, stdout)
		}
	}
	t.Logf("spawnprog's output:\n%s", stdout)
}
