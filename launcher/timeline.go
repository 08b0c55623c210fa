package launcher

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/gorma-hpc/gorma/internal/trace"
)

// The timeline of a job that did not end well. Under --trace (GORMA_TRACE) each agent
// gives every rank it starts a ring file: a memfd, which the rank maps as its flight
// recorder's memory (pmi.EnvTraceRing, internal/trace.MapRecorder). The agent keeps its
// own descriptor. When a rank ends without Finalize (a crash, a kill, an abort), the
// agent reads the ring and writes the rank's dump beside the timeline's file
// (trace.DumpPath), and its exit report names the dump (exitMsg.TraceDump). A rank that
// finalized handed its dump to the gatherer, which wrote the timeline; its ring is
// dropped.
//
// When the job failed and a rank ended without Finalize, the submitter merges the dumps
// that the exit reports name and that it can read (a dump of another host needs a shared
// file system) into the timeline's file at the end (crashTimeline), one at a time
// (trace.MergeFilesJob), and says where it is. The merge places the ranks by their
// wall clocks: the clock offsets align measured stay in rank 0's memory.

// ringSaves bounds how many ring files an agent reads and writes as dumps at once: each
// holds a copy of the ring in memory.
const ringSaves = 2

// newRing returns a ring file for a rank, or nil and why not.
func newRing(rank int) (*os.File, error) {
	fd, err := unix.MemfdCreate("gorma-trace-"+strconv.Itoa(rank), unix.MFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("memfd_create: %w", err)
	}
	return os.NewFile(uintptr(fd), "gorma-trace-ring"), nil
}

// ringFor returns a ring file for rank when env, its environment, asks for a timeline,
// and the timeline's file; nil and "" otherwise, or when no ring file can be made.
func (j *agentJob) ringFor(rank int, env []string, dir string) (*os.File, string) {
	file := timelineFile(env, dir)
	if file == "" {
		return nil, ""
	}
	ring, err := newRing(rank)
	if err != nil {
		j.a.log.Printf("job %s: rank %d: no ring file for its timeline: %v", j.spec.ID, rank, err)
		return nil, ""
	}
	return ring, file
}

// timelineFile returns the timeline's file that env (a rank's environment) asks for, made
// absolute against dir (the rank's working directory), or "".
func timelineFile(env []string, dir string) string {
	v := lastEnv(env, "GORMA_TRACE")
	if v == "" || filepath.IsAbs(v) {
		return v
	}
	if dir == "" {
		dir, _ = os.Getwd()
	}
	return filepath.Join(dir, v)
}

// saveRing writes the dump of ring, the ring file of rank, which has ended, beside file
// (trace.DumpPath) and returns its path. A dump already there from the rank's last hang
// report gives the new one its open calls, when the rank recorded nothing after that
// report: the calls were still blocked when the rank ended.
func saveRing(ring *os.File, file string, rank int) (string, error) {
	st, err := ring.Stat()
	if err != nil {
		return "", err
	}
	b := make([]byte, st.Size())
	if _, err := ring.ReadAt(b, 0); err != nil && err != io.EOF {
		return "", err
	}
	d, err := trace.ReadRing(b)
	if err != nil {
		return "", err
	}
	b = nil
	path := trace.DumpPath(file, rank)
	d.Open = stillOpen(path, d)
	enc, err := trace.AppendDump(nil, d)
	if err != nil {
		return "", err
	}
	return path, os.WriteFile(path, enc, 0o644)
}

// stillOpen returns the open calls of the hang dump at path when it is d's recorder's
// and d holds no event that ended after the dump was taken, else nil.
func stillOpen(path string, d trace.Dump) []trace.Event {
	old, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	h, err := trace.DecodeDump(old)
	if err != nil || h.Rank != d.Rank || h.Origin != d.Origin || len(h.Open) == 0 {
		return nil
	}
	taken := h.Open[0].End // every open call ends when its dump was taken
	for _, e := range d.Events {
		if e.End > taken {
			return nil
		}
	}
	return h.Open
}

// saveRingOf writes the dump of p's ring file when p ended without Finalize, drops the
// ring, and returns the dump's path ("" for none).
func (j *agentJob) saveRingOf(p *rankProc, finalized bool) string {
	if p.ring == nil {
		return ""
	}
	defer func() {
		p.ring.Close()
		p.ring = nil
	}()
	if finalized {
		return ""
	}
	j.saves <- struct{}{}
	defer func() { <-j.saves }()
	path, err := saveRing(p.ring, p.traceFile, p.rank)
	if err != nil {
		j.a.log.Printf("job %s: rank %d's timeline: %v", j.spec.ID, p.rank, err)
		return ""
	}
	return path
}

// noteTrace records the dump an exit report names, and the timeline's file of its rank.
func (s *submitter) noteTrace(m *exitMsg) {
	if m.TraceDump == "" {
		return
	}
	if s.traceDumps == nil {
		s.traceDumps = make(map[int]string)
	}
	s.traceDumps[m.Rank] = m.TraceDump
	if s.trace == "" {
		s.trace = m.Trace // GORMA_TRACE without --trace
	}
}

// crashTimeline merges the dumps the agents wrote (noteTrace) into the timeline's file
// when the job failed and some rank ended without Finalize, and says where it is.
// Otherwise the ranks' own timeline stands, and the dumps of ranks that failed under
// --ft are removed.
func (s *submitter) crashTimeline() {
	if len(s.traceDumps) == 0 {
		return
	}
	crashed := slices.ContainsFunc(s.ranks, func(r rankState) bool { return !r.finalized })
	if s.fail == nil || !crashed || s.trace == "" {
		for _, p := range s.traceDumps {
			os.Remove(p)
		}
		return
	}
	var paths []string
	var missing []int
	for rank := range s.ranks {
		if p := s.traceDumps[rank]; p != "" && fileExists(p) {
			paths = append(paths, p)
		} else {
			missing = append(missing, rank)
		}
	}
	if len(paths) == 0 {
		fmt.Fprintf(s.stderr, "golaunch: no rank's timeline can be read on this host: %s not written\n", s.trace)
		return
	}
	f, err := os.Create(s.trace)
	if err == nil {
		_, err = trace.MergeFilesJob(f, paths, nil, trace.Job{Size: len(s.ranks), Failed: missing})
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		fmt.Fprintf(s.stderr, "golaunch: merging the ranks' timelines into %s: %v\n", s.trace, err)
		return
	}
	for _, p := range paths {
		os.Remove(p)
	}
	line := fmt.Sprintf("golaunch: the timeline of %d ranks up to their end is in %s (open it in https://ui.perfetto.dev)", len(paths), s.trace)
	if len(missing) > 0 {
		line += "; ranks " + listRanks(missing) + " left no timeline here"
	}
	fmt.Fprintln(s.stderr, line)
}

// listRanks is "0, 3, 5", the first maxListed of ranks.
func listRanks(ranks []int) string {
	ranks = slices.Clone(ranks)
	var out []string
	for i, r := range ranks {
		if i == maxListed {
			out = append(out, "...")
			break
		}
		out = append(out, strconv.Itoa(r))
	}
	return strings.Join(out, ", ")
}
