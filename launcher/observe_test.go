package launcher

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/prof"
	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/launcher/internal/netns"
)

var obsprogProg = &program{pkg: "../tests/obsprog"}

// traceFile is the part of a merged timeline that the tests read.
type traceFile struct {
	TraceEvents []traceEvent `json:"traceEvents"`
}

type traceEvent struct {
	Name string         `json:"name"`
	Cat  string         `json:"cat"`
	Ph   string         `json:"ph"`
	Ts   float64        `json:"ts"`
	Dur  float64        `json:"dur"`
	Pid  int            `json:"pid"`
	Tid  int            `json:"tid"`
	ID   int            `json:"id"`
	BP   string         `json:"bp"`
	Args map[string]any `json:"args"`
}

// readTrace reads and decodes the merged timeline at path.
func readTrace(t *testing.T, path string) *traceFile {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var tf traceFile
	if err := json.Unmarshal(b, &tf); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return &tf
}

func (e *traceEvent) arg(k string) int {
	v, ok := e.Args[k].(float64)
	if !ok {
		return -1
	}
	return int(v)
}

// enclosing returns the complete event of pid and tid that contains ts, the innermost.
func enclosing(evs []traceEvent, pid, tid int, ts float64) *traceEvent {
	var best *traceEvent
	for i := range evs {
		e := &evs[i]
		if e.Ph != "X" || e.Pid != pid || e.Tid != tid || ts < e.Ts || ts > e.Ts+e.Dur {
			continue
		}
		if best == nil || e.Dur < best.Dur {
			best = e
		}
	}
	return best
}

// checkFlows checks that every flow of the timeline joins a Send slice of its sender to
// the Match slice of its receiver for the same message, and returns the flows of user
// messages by (sender, receiver, tag).
func checkFlows(t *testing.T, tf *traceFile) map[[3]int]int {
	t.Helper()
	starts, ends := map[int]*traceEvent{}, map[int]*traceEvent{}
	for i := range tf.TraceEvents {
		e := &tf.TraceEvents[i]
		switch e.Ph {
		case "s":
			if starts[e.ID] != nil {
				t.Fatalf("flow %d starts twice", e.ID)
			}
			starts[e.ID] = e
		case "f":
			if ends[e.ID] != nil {
				t.Fatalf("flow %d ends twice", e.ID)
			}
			if e.BP != "e" {
				t.Errorf("flow %d ends without bp=e", e.ID)
			}
			ends[e.ID] = e
		}
	}
	if len(starts) != len(ends) {
		t.Fatalf("%d flow starts, %d flow ends", len(starts), len(ends))
	}
	byPair := map[[3]int]int{}
	for id, s := range starts {
		f := ends[id]
		if f == nil {
			t.Fatalf("flow %d has no end", id)
		}
		send := enclosing(tf.TraceEvents, s.Pid, s.Tid, s.Ts)
		match := enclosing(tf.TraceEvents, f.Pid, f.Tid, f.Ts)
		if send == nil || send.Cat != "send" || match == nil || match.Cat != "match" {
			t.Fatalf("flow %d joins %+v to %+v: want a send slice to a match slice", id, send, match)
		}
		from, to := s.Pid-1, f.Pid-1
		if send.arg("peer") != to || match.arg("peer") != from {
			t.Errorf("flow %d: rank %d's send to %d joins rank %d's match of a message from %d",
				id, from, send.arg("peer"), to, match.arg("peer"))
		}
		for _, k := range []string{"tag", "bytes", "msg"} {
			if send.arg(k) != match.arg(k) {
				t.Errorf("flow %d from rank %d to %d: send's %s %d, match's %d", id, from, to, k, send.arg(k), match.arg(k))
			}
		}
		if !strings.HasSuffix(send.Name, "(internal)") {
			byPair[[3]int{from, to, send.arg("tag")}]++
		}
	}
	return byPair
}

// TestObserve runs obsprog under --profile, --trace and --summary, over shm and tcp, and
// checks the outputs: every message's flow joins its send to its receive, and the
// profile counts each rank's point-to-point messages per peer in every file.
func TestObserve(t *testing.T) {
	bin := obsprogProg.path(t)
	const n = 4
	for _, transport := range []string{"shm", "tcp"} {
		t.Run(transport, func(t *testing.T) {
			dir := t.TempDir()
			pdir, tpath := filepath.Join(dir, "prof"), filepath.Join(dir, "trace.json")
			r := runGL(t, "", "--transport", transport, "--profile", pdir, "--trace", tpath, "--summary",
				"-n", fmt.Sprint(n), bin)
			if r.code != 0 || !strings.Contains(r.stdout, "obsprog: ok") {
				t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
			}
			if strings.Contains(r.stderr, "without their other end") {
				t.Errorf("the merge found flows without their other end:\n%s", r.stderr)
			}
			if !strings.Contains(r.stdout+r.stderr, "heaviest rank pairs") {
				t.Errorf("--summary printed no summary:\n%s\n%s", r.stdout, r.stderr)
			}
			tf := readTrace(t, tpath)
			pids := map[int]bool{}
			for _, e := range tf.TraceEvents {
				if e.Ph == "M" && e.Name == "process_name" {
					pids[e.Pid] = true
				}
			}
			if len(pids) != n {
				t.Errorf("the timeline has processes %v, want one per rank", pids)
			}
			regions := map[int]bool{}
			for _, e := range tf.TraceEvents {
				if e.Ph == "X" && e.Cat == "region" && e.Name == "reduce phase" {
					regions[e.Pid-1] = true
				}
			}
			if len(regions) != n {
				t.Errorf("ranks %v recorded the region \"reduce phase\", want all %d", regions, n)
			}
			flows := checkFlows(t, tf)
			for me := range n {
				right, left := (me+1)%n, (me+n-1)%n
				for tag := 1; tag <= 4; tag++ {
					if got := flows[[3]int{me, right, tag}]; got != 1 {
						t.Errorf("rank %d to %d tag %d: %d flows, want 1", me, right, tag, got)
					}
				}
				if flows[[3]int{me, right, 5}] != 1 || flows[[3]int{me, left, 5}] != 1 || flows[[3]int{me, me, 6}] != 1 ||
					flows[[3]int{me, right, 8}] != 1 || flows[[3]int{me, right, 9}] != 1 {
					t.Errorf("rank %d: Isend, self-send, Sendrecv or Ssend flows missing: %v", me, flows)
				}
			}
			checkWaitNames(t, tf)
			checkObsProfile(t, pdir, n)
		})
	}
}

// checkObsProfile checks obsprog's point-to-point counts in every rank's .prof file and
// in the job's JSON, and that the heat map is well-formed XML.
func checkObsProfile(t *testing.T, dir string, n int) {
	t.Helper()
	want := func(me, peer int) (bytes, msgs uint64) {
		right, left := (me+1)%n, (me+n-1)%n
		switch peer {
		case right:
			return 3*100 + 1<<20 + 8 + 4 + 4, 7
		case left:
			return 8, 1
		case me:
			return 16, 1
		}
		return 0, 0
	}
	for me := range n {
		f, err := os.Open(filepath.Join(dir, fmt.Sprintf("prof.%d.prof", me)))
		if err != nil {
			t.Fatal(err)
		}
		pf, err := prof.ParseOMPI(f)
		f.Close()
		if err != nil {
			t.Fatalf("prof.%d.prof: %v", me, err)
		}
		rk, err := pf.Rank(me, n)
		if err != nil {
			t.Fatal(err)
		}
		for peer := range n {
			b, m := want(me, peer)
			if rk.P2P.Bytes[peer] != b || rk.P2P.Msgs[peer] != m {
				t.Errorf("prof.%d.prof: to rank %d %d bytes in %d messages, want %d in %d",
					me, peer, rk.P2P.Bytes[peer], rk.P2P.Msgs[peer], b, m)
			}
		}
	}
	f, err := os.Open(filepath.Join(dir, "job.json"))
	if err != nil {
		t.Fatal(err)
	}
	job, err := prof.ReadJob(f)
	f.Close()
	if err != nil {
		t.Fatalf("job.json: %v", err)
	}
	m := job.Matrix(prof.P2P)
	for me := range n {
		for peer := range n {
			if b, _ := want(me, peer); m.Bytes[me][peer] != b {
				t.Errorf("job.json: p2p bytes %d -> %d = %d, want %d", me, peer, m.Bytes[me][peer], b)
			}
		}
	}
	svg, err := os.ReadFile(filepath.Join(dir, "matrix.svg"))
	if err != nil {
		t.Fatal(err)
	}
	if err := xml.Unmarshal(svg, new(struct{})); err != nil {
		t.Errorf("matrix.svg: %v", err)
	}
	if s, err := os.ReadFile(filepath.Join(dir, "summary.txt")); err != nil || !strings.Contains(string(s), "Send") {
		t.Errorf("summary.txt: %v\n%s", err, s)
	}
}

// TestObserveHang checks that a hang report under --trace points into the timeline: each
// rank's report names its last event's seq and its dump, and golaunch merges the dumps
// into the trace file, where that seq names the rank's last message of the deadlock's
// first round (its own send, or the match of its left neighbour's) and the blocked Send
// of 1 MiB is an open slice. Once golaunch is told to stop, the file holds every rank's
// timeline up to its end.
func TestObserveHang(t *testing.T) {
	bin := obsprogProg.path(t)
	tpath := filepath.Join(t.TempDir(), "trace.json")
	gl := startGL(t, "--trace", tpath, "--hang-report", "1s", "--timeout", "2m", "-n", "3", bin, "deadlock")
	gl.waitStderr(t, "up to this report is in "+tpath, time.Minute)
	stderr := gl.stderr.String()
	tf := readTrace(t, tpath)
	for rank := range 3 {
		var seq int
		prefix := fmt.Sprintf("trace: rank %d last event seq=", rank)
		i := strings.Index(stderr, prefix)
		if i < 0 {
			t.Fatalf("no pointer for rank %d:\n%s", rank, stderr)
		}
		if _, err := fmt.Sscanf(stderr[i+len(prefix):], "%d", &seq); err != nil {
			t.Fatal(err)
		}
		var last, open *traceEvent
		for k := range tf.TraceEvents {
			e := &tf.TraceEvents[k]
			switch {
			case e.Ph != "X" || e.Pid != rank+1:
			case e.Args["open"] == true && e.Cat == "send":
				open = e
			case e.arg("seq") == seq:
				last = e
			}
		}
		if last == nil || (last.Cat != "send" && last.Cat != "match") || last.arg("tag") != 7 {
			t.Fatalf("rank %d's pointer seq=%d names %+v, want a send or match of tag 7", rank, seq, last)
		}
		if open == nil || open.Name != "Send" || open.arg("tag") != 7 || open.arg("bytes") != 1<<20 || open.arg("peer") != (rank+1)%3 {
			t.Errorf("rank %d: open send slice %+v, want the blocked Send of 1 MiB with tag 7 to rank %d", rank, open, (rank+1)%3)
		} else if usNs(open.Ts) < usNs(last.Ts)+usNs(last.Dur) {
			t.Errorf("rank %d: the blocked Send starts at %v, before its first send ends at %v", rank, open.Ts, last.Ts+last.Dur)
		}
	}
	if err := gl.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	gl.wait(t, time.Minute)
	mustContain(t, "stderr", gl.stderr.String(), "golaunch: the timeline of 3 ranks up to their end is in "+tpath)
	tf = readTrace(t, tpath)
	for rank := range 3 {
		big := false
		for _, e := range tf.TraceEvents {
			big = big || e.Ph == "X" && e.Pid == rank+1 && e.Cat == "send" && e.arg("bytes") == 1<<20
		}
		if !big {
			t.Errorf("rank %d: no Send of 1 MiB in the timeline up to its end", rank)
		}
	}
	checkNoDumps(t, tpath)
}

// TestObserveCrash: a rank of a job under --trace crashes after the pattern (a panic, or
// a write through a nil pointer), and the abort ends the others. golaunch merges every
// rank's flight recorder, which outlived its process, into the trace file and says
// where it is: the crashed rank's events up to the crash are there, and the others'.
// The crashed rank's process, and otherData, name it dead and how; the ranks the abort
// ended are not named dead.
func TestObserveCrash(t *testing.T) {
	bin := obsprogProg.path(t)
	for _, how := range []string{"panic", "nilwrite"} {
		t.Run(how, func(t *testing.T) {
			dir := t.TempDir()
			tpath := filepath.Join(dir, "crash.json")
			r := runGL(t, "", "--trace", tpath, "-n", "3", bin, "crash", "1", how)
			if r.code == 0 {
				t.Fatalf("exit 0, want the crash's\n%s\n%s", r.stdout, r.stderr)
			}
			mustContain(t, "stderr", r.stderr, "golaunch: the timeline of 3 ranks up to their end is in "+tpath+" (open it in")
			tf := readTrace(t, tpath)
			checkRanksTimeline(t, tf, 3)
			crashed := false
			for _, e := range tf.TraceEvents {
				crashed = crashed || e.Ph == "X" && e.Pid == 2 && e.Cat == "region" && e.Name == "before the crash"
			}
			if !crashed {
				t.Error("the crashed rank 1 has no region \"before the crash\" in the timeline")
			}
			checkDied(t, tpath, tf, 1, "panicked: panic: ")
			checkNoDumps(t, tpath)
		})
	}
}

// checkDied checks that the timeline at path, tf, names rank victim, and no other, dead
// with how it died, which starts with how: in its process's name and in otherData.
func checkDied(t *testing.T, path string, tf *traceFile, victim int, how string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var meta struct {
		OtherData struct {
			Died map[string]string `json:"died_ranks"`
		} `json:"otherData"`
	}
	if err := json.Unmarshal(b, &meta); err != nil {
		t.Fatal(err)
	}
	if d := meta.OtherData.Died; len(d) != 1 || !strings.HasPrefix(d[fmt.Sprint(victim)], how) {
		t.Errorf("otherData's died_ranks %q, want rank %d's only, %q", d, victim, how)
	}
	for _, e := range tf.TraceEvents {
		if e.Ph != "M" || e.Name != "process_name" {
			continue
		}
		name, _ := e.Args["name"].(string)
		dead := strings.Contains(name, "died")
		if want := fmt.Sprintf("rank %d (died before Finalize: %s", victim, how); e.Pid-1 == victim && !strings.HasPrefix(name, want) || e.Pid-1 != victim && dead {
			t.Errorf("rank %d's process is named %q; want only rank %d's to start %q", e.Pid-1, name, victim, want)
		}
	}
}

// usNs converts a time of the timeline to nanoseconds, as Perfetto reads it.
func usNs(us float64) int64 { return int64(us * 1000) }

// checkRanksTimeline checks a timeline of obsprog's pattern on n ranks: each rank has its
// process, its region "reduce phase", and its flows to its right neighbour, and every
// flow joins its ends.
func checkRanksTimeline(t *testing.T, tf *traceFile, n int) {
	t.Helper()
	regions := map[int]bool{}
	events := map[int]int{}
	for _, e := range tf.TraceEvents {
		if e.Ph == "X" {
			events[e.Pid-1]++
			regions[e.Pid-1] = regions[e.Pid-1] || e.Cat == "region" && e.Name == "reduce phase"
		}
	}
	flows := checkFlows(t, tf)
	for r := range n {
		if events[r] == 0 || !regions[r] {
			t.Errorf("rank %d: %d events, region \"reduce phase\" %v; want both", r, events[r], regions[r])
		}
		if flows[[3]int{r, (r + 1) % n, 4}] != 1 {
			t.Errorf("rank %d to %d: no flow of the 1 MiB message: %v", r, (r+1)%n, flows)
		}
	}
}

// checkNoDumps checks that no rank's dump, nor copy of its ring file, is left beside the
// timeline at path.
func checkNoDumps(t *testing.T, path string) {
	t.Helper()
	left, _ := filepath.Glob(path + ".*.gtrc")
	rings, _ := filepath.Glob(path + ".*.ring")
	if left = append(left, rings...); len(left) > 0 {
		t.Errorf("files left beside the timeline: %v", left)
	}
}

// TestNetnsObserve runs obsprog over two netns hosts of two ranks each under --profile and
// --trace: the ranks of the second host send their profiles and timelines to rank 0 over
// tcp, every flow joins its send to its match, and on the clocks aligned at Init no match
// starts before its send.
func TestNetnsObserve(t *testing.T) {
	if ok, why := netns.Available(); !ok {
		t.Skip(why)
	}
	bin := obsprogProg.path(t)
	ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(2*time.Minute))
	defer cancel()
	c := startNetnsCluster(t, ctx, 2, 2)
	dir := t.TempDir()
	pdir, tpath := filepath.Join(dir, "prof"), filepath.Join(dir, "trace.json")
	gl := c.submitFrom0(t, ctx, "--profile", pdir, "--trace", tpath, "-n", "4",
		"--timeout", testbudget.Scale(60*time.Second).String(), bin)
	if code := gl.wait(t, 90*time.Second); code != 0 {
		t.Fatalf("exit %d\n%s", code, gl.stderr.String())
	}
	tf := readTrace(t, tpath)
	flows := checkFlows(t, tf)
	if flows[[3]int{1, 2, 4}] != 1 || flows[[3]int{3, 0, 4}] != 1 {
		t.Errorf("the rendezvous messages across the hosts have no flow: %v", flows)
	}
	// The hosts' clocks are aligned to within half the shortest round trip of the
	// runtime's align between their leaders, which on a loaded machine exceeds the
	// latency of the fastest messages: a flow may end before its start by up to that
	// error. A single flow may end before its start by more: its sender reads its clock
	// once the message is posted, and a sender descheduled in between reads it after
	// the match (trace.MergeStats.Reversed). An offset that is wrong moves every flow
	// between two ranks: the median of each pair's flows shows it.
	const alignErrorUs = 25
	starts := map[int]traceEvent{}
	for _, e := range tf.TraceEvents {
		if e.Ph == "s" {
			starts[e.ID] = e
		}
	}
	lags := map[[2]int][]float64{} // by (sender, receiver) process: end - start, µs
	for _, e := range tf.TraceEvents {
		if s, ok := starts[e.ID]; ok && e.Ph == "f" {
			lags[[2]int{s.Pid, e.Pid}] = append(lags[[2]int{s.Pid, e.Pid}], e.Ts-s.Ts)
		}
	}
	for pair, l := range lags {
		slices.Sort(l)
		if med := l[len(l)/2]; med < -alignErrorUs {
			t.Errorf("the flows from rank %d to rank %d end a median %.1f us before their start (%d flows): the clocks are not aligned",
				pair[0]-1, pair[1]-1, -med, len(l))
		}
	}
	checkObsProfile(t, pdir, 4)
}
