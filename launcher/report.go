package launcher

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gorma-hpc/gorma/internal/hang"
	"github.com/gorma-hpc/gorma/internal/safefile"
	"github.com/gorma-hpc/gorma/internal/trace"
)

// Hang reports. golaunch asks every rank what it is blocked in (fReportReq to each
// agent, pmi.ReportAsked to each rank; each gorma rank answers with its runtime's
// records, internal/hang's text, through its agent in an fReport), and prints one line
// per rank and the cause internal/hang.Diagnose finds in them:
//
//   - on SIGUSR1 or SIGQUIT to golaunch (the job goes on);
//   - when --timeout expires, before the abort;
//   - after --hang-report of no progress: golaunch asks quietly every eighth of the
//     period (hangWatch.interval), and prints once the answers have shown every rank
//     blocked (or ended) and no rank's progress counter moving for the period, and again
//     only after the ranks moved. The heading says how long that was.
//
// A round waits at most reportWait for the answers; its agent answers for a rank that
// is stopped or no longer running (procstate.go), so that such a rank counts as blocked
// for the quiet check. It answers too for a rank that is no gorma rank, an MPI library's,
// with what its PMI servers saw of the rank's requests (foreignreport.go). A rank that
// gave no answer is "silent" (too busy, or its agent is slow), and a round no rank
// answered prints nothing. With --stacks the answers carry every rank's goroutine
// stacks, printed after the lines.
//
// A job of such foreign ranks gets a quiet report on facts alone: no rank's PMI progress
// (its served PMI and PMIx requests, and the ranks' exits) moved for the period, and a
// rank waits in a PMI fence or has ended while another runs. golaunch cannot see their
// MPI calls, so the report names no deadlock, and ranks that all run outside any fence
// may be computing: they get none.

// reportSignal reports whether sig asks golaunch for a hang report (SIGUSR1, SIGQUIT)
// rather than to stop.
func reportSignal(sig os.Signal) bool { return sig == syscall.SIGUSR1 || sig == syscall.SIGQUIT }

// reportWait bounds how long a round waits for the ranks' answers.
const reportWait = 2 * time.Second

// reportRound is a request for the ranks' reports under way.
type reportRound struct {
	why    string // the heading's reason; "" for a quiet check, printed only on a hang
	stacks bool
	asked  time.Time // when the ranks were asked: each answer shows the rank at or after it
	got    map[int]hang.Report
	timer  *time.Timer
	then   func() // after printing (the timeout's abort), or nil
}

// minQuietInterval bounds how often quiet checks ask the ranks under a short period.
const minQuietInterval = 100 * time.Millisecond

// hangWatch is the quiet-period check's state, owned by the submitter's loop. Every
// round's answers go through observe. A hang is due once every rank has been blocked or
// ended, and no progress counter has moved, for the period. Checks come every interval,
// an eighth of the period. The first round after the last progress starts within an
// interval of it, and the round that finds the period over within half another (due).
// So the report comes within 1.1875 periods of the last progress, plus the rounds'
// answer times and the loop's delays.
type hangWatch struct {
	every    time.Duration  // --hang-report; 0: off
	last     map[int]uint64 // each rank's progress counter in the rounds since since
	recs     map[int]string // each rank's records (recordsKey) in the rounds since since
	since    time.Time      // the start of the first round that showed last
	reported bool           // this hang was printed: wait for progress before printing again
}

// recordsKey is what a rank's report says it is blocked in, but for how long: the same
// key over the rounds of a quiet period means the same calls, waits and peers. A report
// names a deadlock or a mismatch only from records that stayed the same for the whole
// period.
func recordsKey(rep hang.Report) string {
	var b strings.Builder
	b.WriteString(rep.State.String())
	if rep.State == hang.Foreign {
		fmt.Fprintf(&b, "|%s %s %v", rep.PMI.Wire, rep.PMI.Wait, rep.PMI.Finalized)
	}
	for _, r := range rep.Records {
		fmt.Fprintf(&b, "|%s %s %d %d %d %d %d", r.Call, r.Comm, r.Seq, r.Peer, r.Tag, r.Root, r.Count)
	}
	return b.String()
}

// interval is how often the submitter starts a quiet check.
func (h *hangWatch) interval() time.Duration { return max(h.every/8, minQuietInterval) }

// observe takes the reports of a round whose ranks were asked at asked, and returns how
// long no rank has progressed with every rank blocked or ended: between the starts of
// the first round that showed the same counters and records and of this one. Each answer is read
// after its round's start and within the round's answer time (milliseconds), so the
// figure is short of the truth by at most the answer time of that first round. It is 0
// when a counter moved or a rank runs or is silent. A foreign rank (foreignreport.go)
// counts as blocked when a foreign rank waits in a PMI fence or a rank has ended: else
// every foreign rank may be computing.
func (h *hangWatch) observe(asked time.Time, reps []hang.Report) time.Duration {
	moved := h.last == nil
	blocked := true
	foreign, fence, ended := false, false, false
	progress := make(map[int]uint64, len(reps))
	recs := make(map[int]string, len(reps))
	for _, rep := range reps {
		progress[rep.Rank], recs[rep.Rank] = rep.Progress, recordsKey(rep)
		if p, ok := h.last[rep.Rank]; !ok || p != rep.Progress || h.recs[rep.Rank] != recs[rep.Rank] {
			moved = true
		}
		switch rep.State {
		case hang.Running, hang.Silent:
			blocked = false
		case hang.Foreign:
			foreign, fence = true, fence || rep.PMI.Wait != ""
		case hang.Finalized, hang.Exited:
			ended = true
		}
	}
	if foreign && !fence && !ended {
		blocked = false
	}
	switch {
	case !blocked: // a rank computes: count again from the next round that finds every rank blocked
		h.last, h.recs, h.reported = nil, nil, false
		return 0
	case moved:
		h.last, h.recs, h.since, h.reported = progress, recs, asked, false
		return 0
	}
	return max(asked.Sub(h.since), 0)
}

// due reports whether a quiet check that found no progress for quiet prints: once per
// hang, when quiet reached the period. The checks start an interval apart give or take
// the loop's delays, so the check that falls within half an interval of the period's end
// is the one that prints. Waiting for the period to the nanosecond would push most
// reports one interval later.
func (h *hangWatch) due(quiet time.Duration) bool {
	if h.every <= 0 || h.reported || quiet < h.every-h.interval()/2 {
		return false
	}
	h.reported = true
	return true
}

// askReports starts a round, unless one is under way (a request during a round joins
// it: a reason replaces a quiet check's, stacks are added).
func (s *submitter) askReports(why string, stacks bool, then func()) {
	if !s.pmiJob { // no rank reached PMI init: none would answer
		if then != nil {
			then()
		}
		return
	}
	if r := s.report; r != nil {
		if r.why == "" {
			r.why = why
		}
		if then != nil {
			r.then = then
		}
		if !stacks || r.stacks {
			return
		}
	}
	s.report = &reportRound{why: why, stacks: stacks, asked: time.Now(), got: make(map[int]hang.Report),
		timer: time.NewTimer(reportWait), then: then}
	s.broadcast(fReportReq, reportReqMsg{Stacks: stacks})
}

// reportDue is the current round's deadline, or nil.
func (s *submitter) reportDue() <-chan time.Time {
	if s.report == nil {
		return nil
	}
	return s.report.timer.C
}

// gotReport takes a rank's answer; the round ends once every rank still running answered.
func (s *submitter) gotReport(l *agentLink, m *reportMsg) {
	r := s.report
	if _, ok := s.localRank(l, m.Rank); !ok || r == nil {
		return
	}
	rep, err := hang.ParseReport(m.Text)
	if err != nil {
		rep = hang.Report{Rank: m.Rank, State: hang.Silent}
	}
	rep.Rank, rep.Host = m.Rank, l.host
	r.got[m.Rank] = rep
	for i := range s.ranks {
		if _, ok := r.got[i]; !ok && !s.ranks[i].done {
			return
		}
	}
	s.endReport()
}

// endReport ends the round: it prints the reports (a quiet check only when the job
// hangs), then runs the round's follow-up.
func (s *submitter) endReport() {
	r := s.report
	if r == nil {
		return
	}
	s.report = nil
	r.timer.Stop()
	foreign := false
	for _, rep := range r.got {
		foreign = foreign || rep.State == hang.Foreign
	}
	reps := make([]hang.Report, len(s.ranks))
	for i, st := range s.ranks {
		rep, ok := r.got[i]
		switch {
		case ok:
		case st.done && st.finalized:
			rep = hang.Report{Rank: i, State: hang.Finalized}
		case st.done:
			rep = hang.Report{Rank: i, State: hang.Exited}
		default:
			rep = hang.Report{Rank: i, State: hang.Silent}
		}
		if !ok && st.done && foreign {
			rep.Pid, rep.End = st.pid, st.end // the lines of foreign ranks name processes
		}
		reps[i] = rep
	}
	switch {
	case len(r.got) == 0:
		// No rank answered (none left): nothing to say.
	case r.why == "":
		if quiet := s.hang.observe(r.asked, reps); s.hang.due(quiet) {
			s.printReports(quietHeading(quiet, reps, foreign), reps, r.stacks)
			if f := mismatchFailure(hang.Mismatched(reps)); f != nil && s.fail == nil {
				s.failWith(f)
			}
		}
	default:
		s.hang.observe(r.asked, reps)
		s.printReports(r.why, reps, r.stacks)
	}
	if r.then != nil {
		r.then()
	}
}

// mismatchFailure is the job's failure when a quiet check found ranks blocked at one
// collective call number in calls that disagree (line, hang.Mismatched), or nil for "".
// No rank can go on, so the job fails at once (ExitFailure) with the mismatch as its
// cause, instead of waiting for --timeout.
func mismatchFailure(line string) *failure {
	m, ok := strings.CutPrefix(line, "mismatch: ")
	if !ok {
		return nil
	}
	return jobFailure(ExitFailure, "mismatched collective calls ("+m+")")
}

// quietHeading is the heading of a quiet check's report: how long nothing moved and, for
// a job of foreign ranks, the facts of the reports.
func quietHeading(quiet time.Duration, reps []hang.Report, foreign bool) string {
	q := quiet.Round(100 * time.Millisecond)
	if foreign {
		return fmt.Sprintf("no PMI or PMIx call has completed for %v; %s", q, hang.ForeignSummary(reps))
	}
	return fmt.Sprintf("no rank has made progress for %v", q)
}

// endText says how a rank's process ended, for the report lines: "exit 0", "signal 9
// (SIGKILL)", "not started".
func endText(m *exitMsg) string {
	switch {
	case m.Err != "":
		return "not started"
	case m.Signal != 0:
		return "signal " + describeSignal(m.Signal)
	}
	return "exit " + strconv.Itoa(m.Code)
}

// printReports prints a round: a heading, one line per rank, the causes, the stacks.
func (s *submitter) printReports(why string, reps []hang.Report, stacks bool) {
	var b strings.Builder
	fmt.Fprintf(&b, "golaunch: where the ranks are (%s):\n", why)
	for _, rep := range reps {
		fmt.Fprintf(&b, "golaunch:   %s\n", rep.Line())
	}
	for _, c := range hang.Diagnose(reps) {
		fmt.Fprintf(&b, "golaunch: %s\n", c)
	}
	s.mergeHangDumps(&b, reps)
	if stacks {
		for _, rep := range reps {
			if rep.Stacks != "" {
				fmt.Fprintf(&b, "golaunch: rank %d's goroutines:\n%s\n", rep.Rank, strings.TrimRight(rep.Stacks, "\n"))
			}
		}
	}
	fmt.Fprint(s.stderr, b.String())
}

// mergeHangDumps prints each rank's pointer into its timeline and, under --trace, merges
// the dumps the ranks named with their reports into the trace file, so that the user
// opens the timeline up to the hang, finds each rank's last event by its seq, and the
// calls it is blocked in as open slices. A rank that runs names no dump. Dumps that are
// not on this host (ranks of other hosts without a shared file system) are left out; the
// pointer lines still name them.
func (s *submitter) mergeHangDumps(b *strings.Builder, reps []hang.Report) {
	var paths []string
	for _, rep := range reps {
		if rep.Trace == "" {
			continue
		}
		fmt.Fprintf(b, "golaunch:   %s\n", rep.Trace)
		if s.trace == "" {
			continue
		}
		if p := trace.DumpPath(s.trace, rep.Rank); strings.HasSuffix(rep.Trace, "(dump "+p+")") && fileExists(p) {
			paths = append(paths, p)
		}
	}
	if len(paths) == 0 {
		return
	}
	f, err := safefile.Create(s.trace, 0o644)
	if err == nil {
		if _, err = trace.MergeFiles(f, paths, nil); err != nil {
			f.Abort()
		} else {
			err = f.Close()
		}
	}
	if err != nil {
		fmt.Fprintf(b, "golaunch: merging the ranks' timelines into %s: %v\n", s.trace, err)
		return
	}
	fmt.Fprintf(b, "golaunch: the timeline of %d ranks up to this report is in %s (open it in https://ui.perfetto.dev)\n", len(paths), s.trace)
}

// fileExists reports whether path names a regular file.
func fileExists(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular()
}
