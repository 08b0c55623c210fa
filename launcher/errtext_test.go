package launcher

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// panicSummary matches golaunch's summary for rtprog's panic mode with victim rank 1.
func panicSummary(host string) *regexp.Regexp {
	return regexp.MustCompile(`^golaunch: rank 1 \(host ` + regexp.QuoteMeta(host) +
		`, pid \d+\) panicked: panic: rtprog: rank 1 panics on purpose; job aborted$`)
}

// A rank that panics: golaunch exits ExitPanic (not 2, its usage error) and its one summary
// line says "panicked" with the panic's first line, with the ranks' output on golaunch's
// stderr, in --output-dir files, and under agents (where the rank's agent recognises
// the panic).
func TestRankPanicked(t *testing.T) {
	prog := rtprog(t)
	check := func(t *testing.T, r result, host string) {
		t.Helper()
		sum := summaryLines(r.stderr)
		if r.code != ExitPanic || len(sum) != 1 || !panicSummary(host).MatchString(sum[0]) {
			t.Errorf("exit %d, summary lines %q; want exit %d and one line %q\nstderr:\n%s",
				r.code, sum, ExitPanic, panicSummary(host), r.stderr)
		}
	}
	t.Run("local", func(t *testing.T) {
		check(t, runGL(t, "", "-n", "3", prog, "panic", "1"), hostName())
	})
	t.Run("output-dir", func(t *testing.T) {
		dir := t.TempDir()
		r := runGL(t, "", "-n", "2", "--output-dir", dir, prog, "panic", "1")
		check(t, r, hostName())
		b, err := os.ReadFile(filepath.Join(dir, "rank.1.log"))
		if err != nil || !strings.Contains(string(b), "goroutine 1 [running]:") {
			t.Errorf("rank.1.log lacks the panic's trace (%v):\n%s", err, b)
		}
	})
	t.Run("agents", func(t *testing.T) {
		c := startCluster(t, 2, 1)
		check(t, runGL(t, "", c.submit("-n", "2", prog, "panic", "1")...), "a2")
	})
}

// A rank that exits right after Init while its peers send to it or dial it: each peer's error leads
// with the rank, its host and what became of it, and carries no transport detail (the
// /proc/PID/fd path of shm's attach, a work request id) unless GORMA_VERBOSE=1 asks.
func TestPeerGoneErrorText(t *testing.T) {
	prog := rtprog(t)
	for _, c := range []struct{ tr, call string }{{"shm", "send"}, {"tcp", "send"}, {"shm", "dial"}, {"tcp", "dial"}} {
		tr, call := c.tr, c.call
		for _, verbose := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/%s/verbose=%v", tr, call, verbose), func(t *testing.T) {
				args := []string{"-n", "3", "--transport", tr, "--grace", "20s"}
				if verbose {
					args = append(args, "-x", "GORMA_VERBOSE=1")
				}
				r := runGL(t, "", append(args, prog, "gone", "1", call)...)
				sum := summaryLines(r.stderr)
				want := regexp.MustCompile(`^golaunch: rank 1 \(host [^,]+, pid \d+\) exited with code 3; job aborted$`)
				if r.code != 3 || len(sum) != 1 || !want.MatchString(sum[0]) {
					t.Errorf("exit %d, summary lines %q; want exit 3 and %q\nstderr:\n%s", r.code, sum, want, r.stderr)
				}
				lead := regexp.MustCompile(`^\[(0|2)\] rtprog: rank (0|2): ` + call + `: rank 1 on host ` + regexp.QuoteMeta(hostName()) +
					` (failed: exited with code 3|is gone: its process exited|is gone: it stopped answering)`)
				for _, rank := range []int{0, 2} {
					// A rank still in Init when the job aborts fails there.
					prefix := fmt.Sprintf("[%d] rtprog: rank %d: %s: ", rank, rank, call)
					i := strings.Index(r.stderr, prefix)
					if init := fmt.Sprintf("[%d] rtprog: init: ", rank); i < 0 && strings.Contains(r.stderr, init) {
						i = strings.Index(r.stderr, init)
						line, _, _ := strings.Cut(r.stderr[i:], "\n")
						t.Logf("rank %d: %s", rank, line)
						if !strings.HasPrefix(line, init+"rank 1 on host "+hostName()+" failed: exited with code 3 (in init)") {
							t.Errorf("rank %d: %q does not lead with rank 1, its host and what became of it", rank, line)
						}
						continue
					}
					if i < 0 {
						t.Errorf("rank %d printed no send error:\n%s", rank, r.stderr)
						continue
					}
					line, _, _ := strings.Cut(r.stderr[i:], "\n")
					t.Logf("rank %d: %s", rank, line)
					if !lead.MatchString(line) {
						t.Errorf("rank %d: %q does not lead with rank 1, its host and what became of it", rank, line)
					}
					// The detail is what follows the reason and the call: the shm attach's open of
					// /proc/PID/fd/N, a flushed work request, a refused or reset connection, or
					// the launcher's report, whichever this rank saw first.
					detail := strings.Contains(line, "(in "+call+"): ")
					if detail != verbose || !verbose && (strings.Contains(line, "/proc/") || strings.Contains(line, "wrid")) {
						t.Errorf("rank %d: transport detail printed %v with GORMA_VERBOSE %v: %q", rank, detail, verbose, line)
					}
				}
			})
		}
	}
}

// TestPanicBlame: when rank 1 panics, golaunch aborts the job and ends the other ranks,
// and a survivor may see one of those go before its agent's word of rank 1 reaches it.
// Every survivor's error must still name rank 1, never a rank the abort ended (the
// runtime holds a failure its transport saw until the agent's word: agentWordWait).
// Rank 5 ignores SIGTERM, so it outlives the abort and prints its error in every run; the
// others print theirs when their Barrier fails before the SIGTERM ends them. A runtime
// that fails calls on its transport's word alone blames another rank in about 1 run in 4
// here, so 20 runs (GORMA_TEST_BLAME_RUNS) miss such a fault less than once in 300.
func TestPanicBlame(t *testing.T) {
	prog := rtprog(t)
	runs := envCount(t, "GORMA_TEST_BLAME_RUNS", 20)
	errLine := regexp.MustCompile(`(?m)^\[(\d)\] rtprog: rank \d: (.*)$`)
	want := regexp.MustCompile(`^rank 1 on host ` + regexp.QuoteMeta(hostName()) + ` (failed: panicked|is gone): `)
	for i := range runs {
		r := runGL(t, "", "-n", "6", "--grace", "2s", prog, "panic", "1", "5")
		if r.code != ExitPanic {
			t.Fatalf("run %d: exit %d, want %d\n%s", i+1, r.code, ExitPanic, r.stderr)
		}
		kept := false
		for _, m := range errLine.FindAllStringSubmatch(r.stderr, -1) {
			kept = kept || m[1] == "5"
			if !want.MatchString(m[2]) {
				t.Errorf("run %d: rank %s blamed another rank than 1: %q", i+1, m[1], m[2])
			}
		}
		if !kept {
			t.Errorf("run %d: rank 5, which ignores SIGTERM, printed no error:\n%s", i+1, r.stderr)
		}
		if t.Failed() {
			t.Fatalf("run %d of %d blamed the wrong rank or printed nothing\n%s", i+1, runs, r.stderr)
		}
	}
}
