package launcher

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// ftSurvivors checks the output of pmiprog's ft mode: every rank of n not in failed
// completed the fence the failure was pending in, got exactly one ProcFailed event for
// each failed rank, finalized ("survived"); no failed rank did.
func ftSurvivors(t *testing.T, stdout string, n int, failed ...int) {
	t.Helper()
	for rank := range n {
		survived := strings.Contains(stdout, fmt.Sprintf("survived %d\n", rank))
		if slices.Contains(failed, rank) {
			if survived {
				t.Errorf("failed rank %d survived:\n%s", rank, stdout)
			}
			continue
		}
		if !survived {
			t.Errorf("rank %d did not survive:\n%s", rank, stdout)
			continue
		}
		m := regexp.MustCompile(fmt.Sprintf(`procfailed %d:((?: \d+)*)\n`, rank)).FindStringSubmatch(stdout)
		if m == nil {
			t.Errorf("rank %d printed no procfailed line:\n%s", rank, stdout)
			continue
		}
		var got []int
		for _, f := range strings.Fields(m[1]) {
			r, _ := strconv.Atoi(f)
			got = append(got, r)
		}
		slices.Sort(got)
		if !slices.Equal(got, failed) {
			t.Errorf("rank %d got ProcFailed events for ranks %v, want one for each of %v", rank, got, failed)
		}
	}
}

// rest returns what is left of r's stdout once it has ended.
func (r *running) rest() string {
	var b strings.Builder
	for l := range r.lines {
		b.WriteString(l + "\n")
	}
	return b.String()
}

// TestFTRankKilled: a rank SIGKILLed (by the test) while the others wait in a fence.
// With --ft the fence completes without it, the others each get one ProcFailed event
// naming it (code 137, cause the line golaunch prints), finalize, and golaunch exits 0
// after a line for the rank and the --ft summary. Without --ft the job is aborted as
// ever: exit 137, one summary line, no rank left.
func TestFTRankKilled(t *testing.T) {
	binaries(t)
	for _, ft := range []bool{true, false} {
		t.Run(fmt.Sprintf("ft=%v", ft), func(t *testing.T) {
			args := []string{"-n", "4", pmiprogBin, "ft", "hang", "2"}
			if ft {
				args = append([]string{"--ft"}, args...)
			}
			gl := startGL(t, args...)
			pids := gl.readyPids(t, 4)
			if err := syscall.Kill(pids[2], syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			code := gl.wait(t, 60*time.Second)
			stdout, stderr := gl.rest(), gl.stderr.String()
			what := fmt.Sprintf("rank 2 (host %s, pid %d) killed by signal 9 (SIGKILL)", hostName(), pids[2])
			sum := summaryLines(stderr)
			if !ft {
				checkRootCause(t, sum, code, "golaunch: "+what+"; job aborted", 137, stderr)
				requireGone(t, pids, time.Second)
				return
			}
			want := []string{"golaunch: " + what + "; job continued (--ft)", "golaunch: --ft: 1 of 4 ranks failed: 2"}
			if code != 0 || !slices.Equal(sum, want) {
				t.Fatalf("exit %d, summary lines %q; want 0 and %q\nstdout:\n%s\nstderr:\n%s", code, sum, want, stdout, stderr)
			}
			ftSurvivors(t, stdout, 4, 2)
			for _, rank := range []int{0, 1, 3} {
				mustContain(t, "stderr", stderr, fmt.Sprintf("event %d kind=1 rank=2 host=%s code=137 cause=%s\n", rank, hostName(), what))
			}
		})
	}
}

// TestFTRankExits: under --ft a rank that exits 3 without Finalize is a failure the job
// goes on after; a rank that calls Abort aborts the job as without --ft.
func TestFTRankExits(t *testing.T) {
	binaries(t)
	r := runGL(t, "", "--ft", "-n", "4", pmiprogBin, "ft", "exit3", "1")
	sum := summaryLines(r.stderr)
	line := regexp.MustCompile(`^golaunch: rank 1 \(host \S+, pid \d+\) exited with code 3; job continued \(--ft\)$`)
	if r.code != 0 || len(sum) != 2 || !line.MatchString(sum[0]) || sum[1] != "golaunch: --ft: 1 of 4 ranks failed: 1" {
		t.Fatalf("exit %d, summary lines %q\nstdout:\n%s\nstderr:\n%s", r.code, sum, r.stdout, r.stderr)
	}
	ftSurvivors(t, r.stdout, 4, 1)

	r = runGL(t, "", "--ft", "-n", "4", pmiprogBin, "ft", "abort", "1")
	sum = summaryLines(r.stderr)
	abort := regexp.MustCompile(`^golaunch: rank 1 \(host \S+, pid \d+\) called Abort\(3\): pmiprog abort; job aborted$`)
	if r.code != 3 || len(sum) != 1 || !abort.MatchString(sum[0]) {
		t.Fatalf("Abort under --ft: exit %d, summary lines %q, want 3 and the abort\nstderr:\n%s", r.code, sum, r.stderr)
	}
	if strings.Contains(r.stdout, "survived") {
		t.Errorf("a rank finalized in an aborted job:\n%s", r.stdout)
	}
}

// TestFTNoSurvivor: every rank of a --ft job dies: golaunch exits with the first
// failure's code, and its summary says no rank survived.
func TestFTNoSurvivor(t *testing.T) {
	binaries(t)
	r := runGL(t, "", "--ft", "-n", "3", pmiprogBin, "ft", "kill", "all")
	sum := summaryLines(r.stderr)
	if r.code != 137 || len(sum) != 4 || sum[3] != "golaunch: --ft: 3 of 3 ranks failed: 0, 1, 2 (no rank survived)" {
		t.Fatalf("exit %d, summary lines %q, want 137 and the ranks' lines and the summary\nstderr:\n%s", r.code, sum, r.stderr)
	}
}

// TestFTAgentKilled: a --ft job over three agents (on loopback) whose second agent is
// SIGKILLed, with its ranks, while the other ranks wait in a fence: the fence completes,
// the ranks on the other agents each get one ProcFailed event for each rank of the lost
// agent, and the job ends with exit 0.
func TestFTAgentKilled(t *testing.T) {
	c := startCluster(t, 3, 2)
	gl := startGL(t, c.submit("--ft", "-H", "a1:2,a2:2,a3:2", "-n", "6", pmiprogBin, "ft", "hang", "2,3")...)
	ftAgentKilled(t, gl, func() { c.agents["a2"].cmd.Process.Kill() }, "a2")
}

// ftAgentKilled runs the end of the agent tests: gl runs pmiprog's ft mode over three
// agents of two ranks each, whose ranks 2 and 3 hang on agent host; kill kills that agent.
func ftAgentKilled(t *testing.T, gl *running, kill func(), host string) {
	t.Helper()
	pids := gl.readyPids(t, 6)
	// The agent first: were its ranks killed first, it would report them itself.
	kill()
	syscall.Kill(pids[2], syscall.SIGKILL)
	syscall.Kill(pids[3], syscall.SIGKILL)
	code := gl.wait(t, 60*time.Second)
	stdout, stderr := gl.rest(), gl.stderr.String()
	sum := summaryLines(stderr)
	ok := code == 0 && len(sum) == 3 && sum[2] == "golaunch: --ft: 2 of 6 ranks failed: 2, 3"
	for i, rank := range []int{2, 3} {
		prefix := fmt.Sprintf("golaunch: rank %d (host %s, pid %d) lost: agent %s unreachable (", rank, host, pids[rank], host)
		ok = ok && strings.HasPrefix(sum[i], prefix) && strings.HasSuffix(sum[i], "); job continued (--ft)")
	}
	if !ok {
		t.Fatalf("exit %d, summary lines %q; want 0, a line for ranks 2 and 3 lost with agent %s, the --ft summary\nstdout:\n%s\nstderr:\n%s",
			code, sum, host, stdout, stderr)
	}
	ftSurvivors(t, stdout, 6, 2, 3)
	t.Logf("%s", strings.Join(sum, "\n"))
}

// TestFTEnv: --ft gives every rank GORMA_FT=1, over a -x of its own; without --ft golaunch
// sets nothing.
func TestFTEnv(t *testing.T) {
	binaries(t)
	t.Setenv("GORMA_FT", "") // golaunch's own environment, which the ranks inherit
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--ft", "-x", "GORMA_FT=0"}, "GORMA_FT=1"},
		{nil, "GORMA_FT="},
	} {
		args := append(append(c.args, "-n", "2", "--tag-output=false"), pmiprogBin, "env", "GORMA_FT")
		r := runGL(t, "", args...)
		if r.code != 0 {
			t.Fatalf("golaunch %q: exit %d\n%s", args, r.code, r.stderr)
		}
		for rank := range 2 {
			mustContain(t, fmt.Sprintf("golaunch %q: stdout", args), r.stdout, fmt.Sprintf("env %d %s\n", rank, c.want))
		}
	}
}
