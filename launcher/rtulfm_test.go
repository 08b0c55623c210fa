package launcher

import (
	"fmt"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestRuntimeULFM runs tests/rtprog's ulfm mode under golaunch --ft and SIGKILLs rank 2
// while the ranks loop over an Allreduce, a Fence epoch, or AnySource receives, over shm
// and tcp. Each survivor's call must fail with the failure (none hangs), and the survivor
// then recovers with Revoke, AckFailed, Agree and Shrink: the shrunk World has 3 ranks
// whose Allreduce of their old ranks is 0+1+3, every survivor names rank 2 failed, and
// golaunch exits 0 with the --ft summary. This is the real-process form of runtime's
// ULFM tests: real processes, a real signal, golaunch's own reports.
func TestRuntimeULFM(t *testing.T) {
	const n, victim = 4, 2
	prog := rtprog(t)
	for _, what := range []string{"allreduce", "fence", "anysource"} {
		for _, tr := range []string{"shm", "tcp"} {
			t.Run(what+"/"+tr, func(t *testing.T) {
				gl := startGL(t, "--ft", "-n", fmt.Sprint(n), "--transport", tr, prog, "ulfm", what)
				pids := gl.readyPids(t, n)
				time.Sleep(100 * time.Millisecond) // some steps done: the kill strikes mid-loop
				if err := syscall.Kill(pids[victim], syscall.SIGKILL); err != nil {
					t.Fatal(err)
				}
				code := gl.wait(t, 60*time.Second)
				stdout, stderr := gl.rest(), gl.stderr.String()
				want := []string{
					fmt.Sprintf("golaunch: rank %d (host %s, pid %d) killed by signal 9 (SIGKILL); job continued (--ft)", victim, hostName(), pids[victim]),
					fmt.Sprintf("golaunch: --ft: 1 of %d ranks failed: %d", n, victim),
				}
				if sum := summaryLines(stderr); code != 0 || !slices.Equal(sum, want) {
					t.Fatalf("exit %d, summary %q; want 0 and %q\nstdout:\n%s\nstderr:\n%s", code, sum, want, stdout, stderr)
				}
				for _, r := range []int{0, 1, 3} {
					line := fmt.Sprintf("shrunk %d %d %d [%d]", r, n-1, 0+1+3, victim)
					if !strings.Contains(stdout, line+"\n") {
						t.Errorf("rank %d did not print %q\nstdout:\n%s\nstderr:\n%s", r, line, stdout, stderr)
					}
				}
			})
		}
	}
}

// TestRuntimeULFMShrinkAgree runs tests/rtprog's ulfm mode with the recovery orders that
// agree on the shrunk World, at 3 and 4 ranks, and SIGKILLs rank 0 or another rank
// mid-loop. The ranks split and freed halves before the loop, so Shrink's World lies in
// the Split block the halves left: a survivor may get a faster one's messages for the
// shrunk World while it still holds its freed half's state. Every survivor must
// complete the order's calls, the Agree on the shrunk World among them (1, no error),
// then the Allreduce on the shrunk World, and golaunch exits 0 with the --ft summary.
func TestRuntimeULFMShrinkAgree(t *testing.T) {
	prog := rtprog(t)
	for _, c := range []struct {
		n, victim int
		order     string
	}{
		{3, 0, "shrink-agree"}, {3, 1, "shrink-agree"}, {4, 0, "shrink-agree"}, {4, 2, "shrink-agree"},
		{3, 2, "agree-shrink-agree"}, {4, 0, "agree-shrink-agree"},
	} {
		t.Run(fmt.Sprintf("%s/n=%d/kill%d", c.order, c.n, c.victim), func(t *testing.T) {
			gl := startGL(t, "--ft", "-n", fmt.Sprint(c.n), prog, "ulfm", "allreduce", c.order)
			pids := gl.readyPids(t, c.n)
			time.Sleep(100 * time.Millisecond) // some steps done: the kill strikes mid-loop
			if err := syscall.Kill(pids[c.victim], syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			code := gl.wait(t, 60*time.Second)
			stdout, stderr := gl.rest(), gl.stderr.String()
			want := []string{
				fmt.Sprintf("golaunch: rank %d (host %s, pid %d) killed by signal 9 (SIGKILL); job continued (--ft)", c.victim, hostName(), pids[c.victim]),
				fmt.Sprintf("golaunch: --ft: 1 of %d ranks failed: %d", c.n, c.victim),
			}
			if sum := summaryLines(stderr); code != 0 || !slices.Equal(sum, want) {
				t.Fatalf("exit %d, summary %q; want 0 and %q\nstdout:\n%s\nstderr:\n%s", code, sum, want, stdout, stderr)
			}
			total := c.n*(c.n-1)/2 - c.victim
			for r := range c.n {
				if r == c.victim {
					continue
				}
				line := fmt.Sprintf("shrunk %d %d %d [%d]", r, c.n-1, total, c.victim)
				if !strings.Contains(stdout, line+"\n") {
					t.Errorf("rank %d did not print %q\nstdout:\n%s\nstderr:\n%s", r, line, stdout, stderr)
				}
			}
		})
	}
}
