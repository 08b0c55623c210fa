package launcher

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// envCount reads a positive count from the environment variable name, or returns def.
func envCount(t *testing.T, name string, def int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a positive count", name, v)
	}
	return n
}

// TestBlameKilledRank runs rtprog's allreduce mode: 4 ranks loop over 32 MiB Allreduces
// and rank 2 SIGKILLs itself in the middle of one; every survivor whose Allreduce fails
// calls Abort(1), so the survivors' Aborts race the killed rank's report to golaunch.
// Every run must end with exit 137 and one summary line naming rank 2 as killed by
// SIGKILL, never a survivor's Abort: on one host (shm), and over two agents (tcp between
// them). golaunch's "note:" lines may come besides. GORMA_TEST_BLAME_RUNS sets the runs
// per case (default 6).
func TestBlameKilledRank(t *testing.T) {
	prog := rtprog(t)
	runs := envCount(t, "GORMA_TEST_BLAME_RUNS", 6)
	const n, victim = 4, 2
	cases := map[string]func() []string{
		"local": func() []string { return nil },
		"agents": func() []string {
			c := startCluster(t, 2, 2)
			return c.submit()
		},
	}
	for _, name := range []string{"local", "agents"} {
		t.Run(name, func(t *testing.T) {
			prefix := cases[name]()
			host := hostName()
			if name == "agents" {
				host = "a2" // rank 2 is the first rank of the second agent
			}
			took := make([]time.Duration, 0, runs)
			for i := range runs {
				args := append(append([]string(nil), prefix...), "-n", strconv.Itoa(n), "--grace", "2s", prog,
					"allreduce", strconv.Itoa(victim), "32")
				gl := startGL(t, args...)
				pids := gl.readyPids(t, n)
				start := time.Now()
				code := gl.wait(t, 60*time.Second)
				took = append(took, time.Since(start))
				stderr := gl.stderr.String()
				want := fmt.Sprintf("golaunch: rank %d (host %s, pid %d) killed by signal 9 (SIGKILL); job aborted", victim, host, pids[victim])
				checkRootCause(t, withoutNotes(summaryLines(stderr)), code, want, 137, stderr)
				requireGone(t, pids, 10*time.Second)
				if t.Failed() {
					t.Fatalf("run %d of %d blamed the wrong cause", i+1, runs)
				}
			}
			t.Logf("%d runs, each blamed rank %d's SIGKILL with exit 137; job durations after the ready lines: %v", runs, victim, took)
		})
	}
}

// withoutNotes returns the summary lines but golaunch's "golaunch: note: " lines, which
// docs/launcher.md documents beside a job's end: a memberlist verdict on an agent whose
// control connection stays live (a loaded host answers probes late), and the notes on
// flags printed before the job starts.
func withoutNotes(lines []string) []string {
	var out []string
	for _, l := range lines {
		if !strings.HasPrefix(l, "golaunch: note: ") {
			out = append(out, l)
		}
	}
	return out
}

// TestBlameWeights: which failure names a job's end, for each order in which reports can
// arrive (failWith; no agent links, so nothing is sent).
func TestBlameWeights(t *testing.T) {
	exit1 := func() *failure { return rankFailure(&exitMsg{Rank: 1, Pid: 11, Code: 1, Connected: true}, "h0", true) }
	abort1 := func() *failure { return abortFailure(&abortReqMsg{Rank: 0, Code: 1, Msg: "peer failed"}, "h0", 10) }
	killed := func(early bool) *failure {
		return rankFailure(&exitMsg{Rank: 2, Pid: 12, Code: -1, Signal: 9, Connected: true, Early: early}, "h1", true)
	}
	ownKill := func() *failure {
		return rankFailure(&exitMsg{Rank: 2, Pid: 12, Code: -1, Signal: 9, Connected: true, OwnSignal: true}, "h1", true)
	}
	panicked := func() *failure {
		return rankFailure(&exitMsg{Rank: 3, Pid: 13, Code: 2, Connected: true, Panic: "panic: boom"}, "h1", true)
	}
	consequence := func() *failure {
		return rankFailure(&exitMsg{Rank: 0, Pid: 10, Code: 4, Connected: true, PeerFailed: true}, "h0", true)
	}
	lostAgent := func() *failure { return agentFailure("h1", "control connection lost: EOF") }
	timeout := func() *failure { return jobFailure(ExitTimeout, "job timed out after 1s") }
	cases := []struct {
		name  string
		first *failure
		late  bool // the second report arrives after rootCauseWindow
		then  *failure
		code  int // the job's exit code
	}{
		{"exit, then abort", exit1(), false, abort1(), 1},
		{"abort, then kill from outside", abort1(), false, killed(false), 137},
		{"exit, then kill from outside", exit1(), false, killed(false), 137},
		{"abort, then agent lost", abort1(), false, lostAgent(), ExitFailure},
		{"abort, then the agent's own kill", abort1(), false, ownKill(), 1},
		{"kill from outside, then abort", killed(false), false, abort1(), 137},
		{"timeout, then kill from outside", timeout(), false, killed(true), ExitTimeout},
		{"abort, then a late kill from outside", abort1(), true, killed(false), 1},
		{"abort, then a late kill that came before the abort", abort1(), true, killed(true), 137},
		{"exit, then panic", exit1(), false, panicked(), ExitPanic},
		{"abort, then panic", abort1(), false, panicked(), ExitPanic},
		{"panic, then exit", panicked(), false, exit1(), ExitPanic},
		{"panic, then kill from outside", panicked(), false, killed(false), 137},
		{"exit, then a late panic", exit1(), true, panicked(), 1},
		{"a peer's consequence, then the exit it saw", consequence(), false, exit1(), 1},
		{"exit, then a peer's consequence", exit1(), false, consequence(), 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := &submitter{}
			s.failWith(c.first)
			if c.late {
				s.failAt = s.failAt.Add(-2 * rootCauseWindow)
			}
			s.failWith(c.then)
			if s.fail.code != c.code {
				t.Errorf("exit %d (%q), want %d", s.fail.code, s.fail.summary(), c.code)
			}
		})
	}
}
