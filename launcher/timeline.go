package launcher

import (
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/gorma-hpc/gorma/internal/safefile"
	"github.com/gorma-hpc/gorma/internal/trace"
)

// The timeline of a job that did not end well. Under --trace (GORMA_TRACE) each agent
// gives every rank it starts a ring file: a memfd, which the rank maps as its flight
// recorder's memory (pmi.EnvTraceRing, internal/trace.MapRecorder). The agent keeps its
// own descriptor. When a rank ends without Finalize (a crash, a kill, an abort), the
// agent copies the ring file beside the timeline's file (ringPath), with the counter's
// rate measured on the rank's host (trace.MeasureRing), before it reports the rank's end
// (exitMsg.TraceRing). A copy is a plain write of the file's bytes: a job of many ranks
// reports its ends within the abort's grace. A rank that finalized handed its dump to
// the gatherer, which wrote the timeline; its ring is dropped.
//
// When the job failed and a rank ended without Finalize, the submitter merges the copies
// that the exit reports name and that it can read (a copy on another host needs a shared
// file system) into the timeline's file at the end (crashTimeline), one at a time
// (trace.ReadRing, trace.Merger), and says where it is. Under --ft the gatherer wrote the
// survivors' timeline at Finalize, and the submitter adds to it the copies of the ranks
// that failed (extendRings, trace.Continue). Either way a rank that died, not by its
// agent's signal nor after another rank's failure, has its process named with how it
// died, and otherData lists it under "died_ranks" (rankState.died). A rank's last hang dump gives it
// its open calls when the ring recorded nothing after it (stillOpen). The merge places the
// ranks by their wall clocks, from the earliest recorder's start: the clock offsets that
// align measured stay in rank 0's memory.

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

// ringPath names the copy of rank's ring file beside file, the timeline's.
func ringPath(file string, rank int) string { return file + "." + strconv.Itoa(rank) + ".ring" }

// saveRing copies ring, the ring file of rank, which has ended, beside file (ringPath),
// and returns the copy's path. The copy's header holds the counter's rate measured now.
func saveRing(ring *os.File, file string, rank int) (string, error) {
	st, err := ring.Stat()
	if err != nil {
		return "", err
	}
	h := make([]byte, trace.RingHeaderLen)
	if _, err := ring.ReadAt(h, 0); err != nil {
		return "", fmt.Errorf("the ring file's header: %w", err)
	}
	if _, _, err := trace.RingHeader(h); err != nil {
		return "", err // the rank never mapped it: not a gorma rank, or it ended first
	}
	trace.MeasureRing(h)
	path := ringPath(file, rank)
	out, err := safefile.Create(path, 0o644)
	if err != nil {
		return "", err
	}
	_, err = out.Write(h)
	if err == nil {
		_, err = io.Copy(out, io.NewSectionReader(ring, int64(len(h)), st.Size()-int64(len(h))))
	}
	if err != nil {
		out.Abort()
		return "", err
	}
	if err := out.Close(); err != nil {
		return "", err
	}
	return path, nil
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

// saveRingOf copies p's ring file when p ended without Finalize, drops the ring, and
// returns the copy's path ("" for none).
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
	path, err := saveRing(p.ring, p.traceFile, p.rank)
	if err != nil {
		j.a.log.Printf("job %s: rank %d's timeline: %v", j.spec.ID, p.rank, err)
		return ""
	}
	return path
}

// noteTrace records the ring file's copy an exit report names, and the timeline's file
// of its rank.
func (s *submitter) noteTrace(m *exitMsg) {
	if m.TraceRing == "" {
		return
	}
	if s.traceRings == nil {
		s.traceRings = make(map[int]string)
	}
	s.traceRings[m.Rank] = m.TraceRing
	if s.trace == "" {
		s.trace = m.Trace // GORMA_TRACE without --trace
	}
}

// crashTimeline writes the timeline of a job in which ranks ended without Finalize,
// from the ring files' copies the agents wrote (noteTrace), and says where it is. When
// the job failed, it merges the copies into the timeline's file (mergeRings). When it
// went on under --ft, the gatherer wrote the survivors' timeline, and the copies of the
// ranks that failed are added to it (extendRings); with no such timeline, they are
// merged alone. Each rank that died is named with how it died, the ranks the abort ended
// are not. Otherwise the ranks' own timeline stands and the copies are removed.
func (s *submitter) crashTimeline() {
	if len(s.traceRings) == 0 {
		return
	}
	crashed := slices.ContainsFunc(s.ranks, func(r rankState) bool { return !r.finalized })
	if !crashed || s.trace == "" {
		for _, p := range s.traceRings {
			os.Remove(p)
		}
		return
	}
	died := map[int]string{}
	for r, st := range s.ranks {
		if st.died != "" {
			died[r] = st.died
		}
	}
	var n int
	var missing []int
	var err error
	_, statErr := os.Stat(s.trace)
	extend := s.fail == nil && statErr == nil
	if extend {
		n, missing, err = extendRings(s.trace, s.traceRings, died)
	} else {
		n, missing, err = mergeRings(s.trace, s.traceRings, len(s.ranks), died)
	}
	for rank, p := range s.traceRings {
		os.Remove(p)
		os.Remove(trace.DumpPath(s.trace, rank))
	}
	spills, _ := filepath.Glob(s.trace + ".gather.*") // a gatherer's, which ended before its merge
	for _, p := range spills {
		os.Remove(p)
	}
	fmt.Fprintln(s.stderr, timelineLine(s.trace, extend, n, missing, err))
}

// timelineLine is crashTimeline's line: where the timeline is, of how many ranks, and
// which ranks left none here; extend says the copies were added to the gatherer's.
func timelineLine(file string, extend bool, n int, missing []int, err error) string {
	switch {
	case err != nil && extend:
		return fmt.Sprintf("golaunch: adding the failed ranks' timelines to %s: %v", file, err)
	case err != nil:
		return fmt.Sprintf("golaunch: merging the ranks' timelines into %s: %v", file, err)
	case n == 0 && extend:
		return fmt.Sprintf("golaunch: no failed rank's timeline can be read on this host: %s holds the survivors' only", file)
	case n == 0:
		return fmt.Sprintf("golaunch: no rank's timeline can be read on this host: %s not written", file)
	}
	line := fmt.Sprintf("golaunch: the timeline of %d ranks up to their end is in %s (open it in https://ui.perfetto.dev)", n, file)
	if extend {
		line = fmt.Sprintf("golaunch: the timeline of %d failed ranks up to their end is added to the survivors' in %s", n, file)
	}
	if len(missing) > 0 {
		line += "; ranks " + listRanks(missing) + " left no timeline here"
	}
	return line
}

// extendRings adds the ring files' copies at rings (by rank) to the timeline the gatherer
// wrote at file (trace.Continue), for the ranks it names failed, one copy at a time, each
// placed by its wall clock. died names the ranks that died and how. It returns how many
// it added and the failed ranks still without a timeline.
func extendRings(file string, rings map[int]string, died map[int]string) (int, []int, error) {
	in, err := os.Open(file)
	if err != nil {
		return 0, nil, err
	}
	defer in.Close()
	out, err := safefile.Create(file, 0o644)
	if err != nil {
		return 0, nil, err
	}
	done := false
	defer func() {
		if !done {
			out.Abort()
		}
	}()
	m, doc, err := trace.Continue(out, in, slices.Sorted(maps.Keys(rings)))
	if err != nil {
		return 0, nil, err
	}
	m.Died(died)
	var missing []int
	n := 0
	for _, rank := range doc.Failed {
		d, err := readRingCopy(rings[rank], rank)
		if err != nil {
			missing = append(missing, rank)
			continue
		}
		d.Open = stillOpen(trace.DumpPath(file, rank), d)
		if err := m.Add(d, d.Origin); err != nil {
			return 0, nil, err
		}
		n++
	}
	if _, err := m.Close(trace.Job{Size: doc.Size, Failed: missing, Died: died}); err != nil {
		return 0, nil, err
	}
	done = true
	return n, missing, out.Close()
}

// readRingCopy reads the ring file's copy at path, which must be rank's.
func readRingCopy(path string, rank int) (trace.Dump, error) {
	if _, err := ringOrigin(path, rank); err != nil {
		return trace.Dump{}, err
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return trace.Dump{}, err
	}
	d, err := trace.ReadRing(b)
	if err != nil {
		return trace.Dump{}, fmt.Errorf("%s: %w", path, err)
	}
	return d, nil
}

// mergeRings merges the ring files' copies at rings (by rank) into file, for a job of
// size ranks, one copy at a time, and returns how many it merged and the ranks it has no
// timeline of. died names the ranks that died and how. Times count from the earliest
// recorder's start.
func mergeRings(file string, rings map[int]string, size int, died map[int]string) (int, []int, error) {
	var ranks, missing []int
	base := int64(math.MaxInt64)
	for rank := range size {
		origin, err := ringOrigin(rings[rank], rank)
		if err != nil {
			missing = append(missing, rank)
			continue
		}
		ranks = append(ranks, rank)
		base = min(base, origin)
	}
	if len(ranks) == 0 {
		return 0, missing, nil
	}
	f, err := safefile.Create(file, 0o644)
	if err != nil {
		return 0, nil, err
	}
	done := false
	defer func() {
		if !done {
			f.Abort()
		}
	}()
	m := trace.NewMerger(f, base, size)
	m.Died(died)
	for _, rank := range ranks {
		d, err := readRingCopy(rings[rank], rank)
		if err != nil {
			return 0, nil, err
		}
		d.Open = stillOpen(trace.DumpPath(file, rank), d)
		if err := m.Add(d, d.Origin); err != nil {
			return 0, nil, err
		}
	}
	job := trace.Job{Size: size, Failed: missing, Died: died}
	if _, err := m.Close(job); err != nil {
		return 0, nil, err
	}
	done = true
	return len(ranks), missing, f.Close()
}

// ringOrigin returns the origin of the ring file's copy at path, which must be rank's.
func ringOrigin(path string, rank int) (int64, error) {
	if path == "" {
		return 0, os.ErrNotExist
	}
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	h := make([]byte, trace.RingHeaderLen)
	if _, err := io.ReadFull(f, h); err != nil {
		return 0, err
	}
	r, origin, err := trace.RingHeader(h)
	if err == nil && r != rank {
		err = fmt.Errorf("%s holds rank %d's ring", path, r)
	}
	return origin, err
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
