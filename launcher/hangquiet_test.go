package launcher

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/hang"
	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/pmi"
)

// testSlack is the factor by which this file's tests scale their time budgets:
// GORMA_TEST_SLACK, a number of at least 1 (default 1).
func testSlack(t *testing.T) float64 {
	t.Helper()
	v := strings.TrimSpace(os.Getenv("GORMA_TEST_SLACK"))
	if v == "" {
		return 1
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || !(f >= 1) || f > 1e6 {
		t.Fatalf("GORMA_TEST_SLACK=%q: want a number of at least 1", v)
	}
	return f
}

// The quiet check's decision over a sequence of rounds: it reports once no counter has
// moved, with every rank blocked or ended, for the period (less half a check interval,
// the checks' jitter), measured between the starts of the first round that showed the
// counters and of the current one; a moving counter, records that change (another call
// under way), a running or silent rank start the count again; it reports once per hang.
func TestHangWatchQuiet(t *testing.T) {
	blocked := func(progress ...uint64) []hang.Report {
		reps := make([]hang.Report, len(progress))
		for i, p := range progress {
			reps[i] = hang.Report{Rank: i, State: hang.Blocked, Progress: p}
		}
		return reps
	}
	running := []hang.Report{{Rank: 0, State: hang.Blocked, Progress: 5}, {Rank: 1, State: hang.Running, Progress: 7}}
	at := func(progress uint64, call string, seq uint64) []hang.Report { // two ranks in call seq, unmoved counters
		reps := blocked(progress, progress)
		for i := range reps {
			reps[i].Records = []hang.Record{{Call: call, Comm: "World", Seq: seq, Peer: hang.NoRank, Root: -1, Count: -1}}
		}
		return reps
	}
	ended := []hang.Report{{Rank: 0, State: hang.Blocked, Progress: 5}, {Rank: 1, State: hang.Finalized}}
	type round struct {
		at    time.Duration // the round's start
		reps  []hang.Report
		quiet time.Duration
		due   bool
	}
	const ms = time.Millisecond
	for _, tt := range []struct {
		name   string
		rounds []round
	}{
		{"quiet from the first round", []round{
			{0, blocked(5, 7), 0, false},
			{500 * ms, blocked(5, 7), 500 * ms, false},
			{875 * ms, blocked(5, 7), 875 * ms, false},
			{999 * ms, blocked(5, 7), 999 * ms, true}, // a check a little early still counts
			{1500 * ms, blocked(5, 7), 1500 * ms, false},
		}},
		{"progress starts it again", []round{
			{0, blocked(5, 7), 0, false},
			{900 * ms, blocked(5, 8), 0, false},
			{1500 * ms, blocked(5, 8), 600 * ms, false},
			{2025 * ms, blocked(5, 8), 1125 * ms, true},
			{2150 * ms, blocked(6, 8), 0, false},
			{3150 * ms, blocked(6, 8), 1000 * ms, true},
		}},
		{"a running rank is no hang", []round{
			{0, running, 0, false},
			{2000 * ms, running, 0, false},
			{3000 * ms, blocked(5, 7), 0, false},
			{3500 * ms, blocked(5, 7), 500 * ms, false},
			{4000 * ms, blocked(5, 7), 1000 * ms, true},
		}},
		{"an ended rank waits with the others", []round{
			{0, ended, 0, false},
			{1000 * ms, ended, 1000 * ms, true},
		}},
		{"records that change are progress", []round{
			{0, at(7, "Barrier", 580842), 0, false},
			{500 * ms, at(7, "Allreduce", 580843), 0, false},
			{1000 * ms, at(7, "Barrier", 580844), 0, false},
			{1500 * ms, at(7, "Barrier", 580844), 500 * ms, false},
			{2000 * ms, at(7, "Barrier", 580844), 1000 * ms, true},
		}},
	} {
		h := hangWatch{every: time.Second}
		base := time.Unix(1000, 0)
		for i, r := range tt.rounds {
			asked := base.Add(r.at)
			quiet := h.observe(asked, r.reps)
			if due := h.due(quiet); quiet != r.quiet || due != r.due {
				t.Errorf("%s, round %d at %v: quiet %v, due %v; want %v, %v", tt.name, i, r.at, quiet, due, r.quiet, r.due)
			}
		}
	}
	if got := (&hangWatch{every: 30 * time.Second}).interval(); got != 30*time.Second/8 {
		t.Errorf("interval at 30s: %v", got)
	}
	if got := (&hangWatch{every: 200 * time.Millisecond}).interval(); got != minQuietInterval {
		t.Errorf("interval at 200ms: %v", got)
	}
}

// The quiet check of a job of foreign ranks (MPI programs): it reports once no rank's PMI
// progress (its served requests, and the ranks' ends) moved for the period while a rank
// waits in a PMI fence or has ended. Ranks that all run outside any fence may be
// computing: no report, however long. A fence a rank enters is progress. The heading
// states the facts.
func TestHangWatchForeign(t *testing.T) {
	const ms = time.Millisecond
	run := func(rank, pid int, done uint64, last string) hang.Report {
		return hang.Report{Rank: rank, Pid: pid, State: hang.Foreign, Progress: done,
			PMI: hang.PMICalls{Wire: "PMIx", Last: last, Since: time.Second}}
	}
	fence := func(rank, pid int, done uint64) hang.Report {
		r := run(rank, pid, done, "fence")
		r.PMI.Wait = "fence"
		return r
	}
	fin := hang.Report{Rank: 0, Pid: 4241, State: hang.Finalized, End: "exit 0"}
	type round struct {
		at    time.Duration
		reps  []hang.Report
		quiet time.Duration
		due   bool
	}
	for _, tt := range []struct {
		name    string
		rounds  []round
		heading string // of the round that is due
	}{
		{"all run outside a fence: computing", []round{
			{0, []hang.Report{run(0, 4241, 9, "fence"), run(1, 4242, 9, "fence")}, 0, false},
			{1000 * ms, []hang.Report{run(0, 4241, 9, "fence"), run(1, 4242, 9, "fence")}, 0, false},
			{60000 * ms, []hang.Report{run(0, 4241, 9, "fence"), run(1, 4242, 9, "fence")}, 0, false},
		}, ""},
		{"one waits in a fence for the period", []round{
			{0, []hang.Report{run(0, 4241, 9, "fence"), run(1, 4242, 9, "fence")}, 0, false},
			{500 * ms, []hang.Report{run(0, 4241, 9, "fence"), fence(1, 4242, 9)}, 0, false},
			{1000 * ms, []hang.Report{run(0, 4241, 9, "fence"), fence(1, 4242, 9)}, 500 * ms, false},
			{1500 * ms, []hang.Report{run(0, 4241, 9, "fence"), fence(1, 4242, 9)}, 1000 * ms, true},
			{2000 * ms, []hang.Report{run(0, 4241, 9, "fence"), fence(1, 4242, 9)}, 1500 * ms, false},
		}, "no PMI or PMIx call has completed for 1s; rank 1 (pid 4242) waits in a PMIx fence and rank 0 (pid 4241) still runs"},
		{"a request served starts it again", []round{
			{0, []hang.Report{run(0, 4241, 9, "fence"), fence(1, 4242, 9)}, 0, false},
			{900 * ms, []hang.Report{run(0, 4241, 10, "get"), fence(1, 4242, 9)}, 0, false},
			{1900 * ms, []hang.Report{run(0, 4241, 10, "get"), fence(1, 4242, 9)}, 1000 * ms, true},
		}, "no PMI or PMIx call has completed for 1s; rank 1 (pid 4242) waits in a PMIx fence and rank 0 (pid 4241) still runs"},
		{"an ended rank beside a running one", []round{
			{0, []hang.Report{run(0, 4241, 9, "finalize"), run(1, 4242, 9, "fence")}, 0, false},
			{500 * ms, []hang.Report{fin, run(1, 4242, 9, "fence")}, 0, false},
			{1500 * ms, []hang.Report{fin, run(1, 4242, 9, "fence")}, 1000 * ms, true},
		}, "no PMI or PMIx call has completed for 1s; rank 0 finalized (exit 0) and rank 1 (pid 4242) still runs"},
	} {
		h := hangWatch{every: time.Second}
		base := time.Unix(1000, 0)
		dues := 0
		for i, r := range tt.rounds {
			quiet := h.observe(base.Add(r.at), r.reps)
			due := h.due(quiet)
			if quiet != r.quiet || due != r.due {
				t.Errorf("%s, round %d at %v: quiet %v, due %v; want %v, %v", tt.name, i, r.at, quiet, due, r.quiet, r.due)
			}
			if due {
				dues++
				if got := quietHeading(quiet, r.reps, true); got != tt.heading {
					t.Errorf("%s: heading\n%q\nwant\n%q", tt.name, got, tt.heading)
				}
			}
		}
		if tt.heading == "" && dues != 0 {
			t.Errorf("%s: %d reports, want none", tt.name, dues)
		}
	}
}

// What an agent reports of a rank's PMI requests: the fence it waits in and for how
// long, or its last request and how long ago.
func TestForeignCalls(t *testing.T) {
	now := time.Unix(1000, 0)
	for _, tt := range []struct {
		c    pmi.Calls
		want hang.PMICalls
	}{
		{pmi.Calls{Wire: pmi.WirePMIx, Done: 9, Last: "get", LastAt: now.Add(-2 * time.Second), Fence: "fence", FenceAt: now.Add(-31 * time.Second)},
			hang.PMICalls{Wire: "PMIx", Wait: "fence", Last: "get", Since: 31 * time.Second}},
		{pmi.Calls{Wire: pmi.WirePMI1, Done: 4, Last: "get", LastAt: now.Add(-40 * time.Second)},
			hang.PMICalls{Wire: "PMI-1", Last: "get", Since: 40 * time.Second}},
		{pmi.Calls{Wire: pmi.WirePMIx, Done: 12, Last: "finalize", LastAt: now.Add(-time.Second), Finalized: true},
			hang.PMICalls{Wire: "PMIx", Last: "finalize", Since: time.Second, Finalized: true}},
	} {
		if got := foreignCalls(tt.c, now); got != tt.want {
			t.Errorf("foreignCalls(%+v) = %+v, want %+v", tt.c, got, tt.want)
		}
	}
}

// A real job that deadlocks gets its quiet-period report within 1.25 periods plus half a
// second of both ranks blocking, once, and the report says how long no rank progressed:
// the period, give or take the checks' jitter.
func TestHangReportQuietPeriod(t *testing.T) {
	prog := rtprog(t)
	const period = 4 * time.Second
	slack := testSlack(t)
	budget := time.Duration(float64(period+period/4+500*time.Millisecond) * slack)
	start := time.Now()
	gl := startGL(t, "-n", "2", "--hang-report", period.String(), "--timeout", "120s", prog, "deadlock")
	gl.line(t, "ready", 30*time.Second)
	gl.line(t, "ready", 30*time.Second)
	blocked := time.Now() // both ranks are about to enter their calls, which never return
	heading := regexp.MustCompile(`golaunch: where the ranks are \(no rank has made progress for (\S+)\):\n`)
	var m []string
	for m == nil {
		m = heading.FindStringSubmatch(gl.stderr.String())
		if m != nil {
			break
		}
		if waited := time.Since(blocked); waited > budget {
			t.Fatalf("no quiet-period report within %v of both ranks blocking (a budget of %v at "+
				"GORMA_TEST_SLACK %g, for --hang-report %v); stderr:\n%s",
				waited.Round(time.Millisecond), budget, slack, period, gl.stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	took := time.Since(blocked)
	quiet, err := time.ParseDuration(m[1])
	least := period - period/16 // half a check interval early absorbs the checks' jitter
	if err != nil || quiet < least || quiet > time.Since(start) {
		t.Errorf("the report says no progress for %q: want a duration of at least %v and at most the job's %v",
			m[1], least, time.Since(start).Round(time.Millisecond))
	}
	mustContain(t, "stderr", gl.stderr.String(), "golaunch: deadlock: rank 0 waits for rank 1 in Recv; rank 1 waits in Finalize\n")
	t.Logf("reported %v after both ranks blocked, saying %s", took.Round(time.Millisecond), m[1])

	// Once per hang: nothing more while the ranks stay where they are, over several checks.
	time.Sleep(period / 2)
	if n := strings.Count(gl.stderr.String(), "no rank has made progress"); n != 1 {
		t.Errorf("%d quiet-period reports for one hang, want 1:\n%s", n, gl.stderr.String())
	}
	gl.cmd.Process.Signal(syscall.SIGTERM)
	if code := gl.wait(t, 30*time.Second); code != 143 {
		t.Errorf("golaunch exited %d after SIGTERM, want 143", code)
	}
}

// The state letter of /proc/PID/stat lines, whose command names may hold spaces and
// parentheses, and what the agent reports for each state.
func TestProcStalled(t *testing.T) {
	for _, tt := range []struct {
		stat  string
		state byte
		ok    bool
	}{
		{"1234 (rtprog) T 1 1234 1234 0 -1", 'T', true},
		{"1234 (a b) (c)) S 1 2", 'S', true},
		{"1234 (x) t 1", 't', true},
		{"1234 (x)", 0, false},
		{"1234 x R 1", 0, false},
		{"", 0, false},
	} {
		if c, ok := statState(tt.stat); c != tt.state || ok != tt.ok {
			t.Errorf("statState(%q) = %q, %v; want %q, %v", tt.stat, c, ok, tt.state, tt.ok)
		}
	}
	for _, tt := range []struct {
		state byte
		want  hang.State
		ok    bool
	}{
		{'T', hang.Stopped, true}, {'t', hang.Stopped, true}, {'Z', hang.Exited, true}, {'X', hang.Exited, true},
		{'R', 0, false}, {'S', 0, false}, {'D', 0, false}, {'I', 0, false},
	} {
		if s, ok := stalledState(tt.state); s != tt.want || ok != tt.ok {
			t.Errorf("stalledState(%q) = %v, %v; want %v, %v", tt.state, s, ok, tt.want, tt.ok)
		}
	}
	if s, ok := procStalled(os.Getpid()); ok {
		t.Errorf("this running test process reads as %v", s)
	}
}

// A real job whose rank 1 is SIGSTOPped while the others block in a Barrier gets its
// quiet-period report, naming the stopped rank, within 1.25 periods plus a second of the
// stop (scaled by the tests' slack).
func TestHangReportStoppedRank(t *testing.T) {
	prog := rtprog(t)
	const period = 2 * time.Second
	budget := testbudget.Scale(period + period/4 + time.Second)
	gl := startGL(t, "-n", "3", "--hang-report", period.String(), "--timeout", "120s", "--grace", "200ms",
		prog, "barrier", "1")
	victim := gl.readyPids(t, 3)[1]
	if err := syscall.Kill(victim, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer syscall.Kill(victim, syscall.SIGCONT)
	stopped := time.Now()
	for !strings.Contains(gl.stderr.String(), "no rank has made progress") {
		if waited := time.Since(stopped); waited > budget {
			t.Fatalf("no quiet-period report within %v of stopping rank 1 (pid %d; a budget of %v for "+
				"--hang-report %v); stderr:\n%s", waited.Round(time.Millisecond), victim, budget, period, gl.stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	out := gl.stderr.String()
	mustContain(t, "stderr", out, "golaunch:   rank 1: stopped (SIGSTOP or a debugger)\n")
	t.Logf("reported %v after the stop:\n%s", time.Since(stopped).Round(time.Millisecond), out)
	gl.cmd.Process.Signal(syscall.SIGTERM)
	if code := gl.wait(t, 30*time.Second); code != 143 {
		t.Errorf("golaunch exited %d after SIGTERM, want 143\n%s", code, gl.stderr.String())
	}
}

// A healthy job whose only traffic is shared memory gets no hang report: 45 s of 8-byte
// Allreduces and Barriers, then Fence epochs with a Put, under a quiet period of 5 s.
// Every rank is inside a call at almost every check, and no message completes: each call
// that ends moves the rank's progress, and records that change are no hang.
func TestHangReportBusySharedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("45 s of a busy job")
	}
	prog := rtprog(t)
	const run = 45 * time.Second
	gl := startGL(t, "-n", "2", "--hang-report", "5s", "--timeout", testbudget.Scale(run+120*time.Second).String(),
		prog, "busy", fmt.Sprint(run.Seconds()))
	for range 2 {
		gl.line(t, "ready", 30*time.Second)
	}
	for range 2 {
		l := gl.line(t, "busy ", run+60*time.Second)
		t.Log(l)
	}
	select {
	case <-gl.done:
	case <-time.After(testbudget.Scale(60 * time.Second)):
		t.Fatalf("the job did not end after its ranks' last line; stderr:\n%s", gl.stderr.String())
	}
	if gl.code != 0 {
		t.Errorf("golaunch exited %d; stderr:\n%s", gl.code, gl.stderr.String())
	}
	if strings.Contains(gl.stderr.String(), "where the ranks are") {
		t.Errorf("a healthy job got a hang report:\n%s", gl.stderr.String())
	}
}
