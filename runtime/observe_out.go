package runtime

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/gorma-hpc/gorma/internal/prof"
	"github.com/gorma-hpc/gorma/internal/safefile"
	"github.com/gorma-hpc/gorma/internal/trace"
)

// The outputs of observation. At Init, when the timeline is on, rank 0 measures every
// rank's clock against its own (align). At Finalize (finish), every rank writes its own
// profile files, then hands its profile and its flight recorder's dump to the gatherer:
// rank 0, or under GORMA_FT the lowest rank that has not failed (observe_gather.go). The
// gatherer writes the job's files: the profile's JSON, summary and heat map, and the
// merged timeline, each naming the ranks that failed. Gathering over the job's own
// connections needs no shared file system and works under every launcher.

// alignTag is the tag of align's rounds on Init's World's internal context.
const alignTag = MaxTag - 20

// alignRounds is how many round trips align makes to each rank; the shortest counts.
const alignRounds = 32

// align measures, at rank 0, the clock of one rank per host (the host's leader: its
// lowest rank) against rank 0's: offsets[l] is what rank 0's clock read when leader l's
// read 0, from the round trip of alignRounds with the shortest time. The error is at
// most half that round trip. The ranks of one host share its clock, so the merge places
// each rank against its leader by the wall clock of their recorders' start, which is
// exact there (writeTimeline); rank 0's host needs no round trip.
func (o *observer) align(ctx context.Context, w *World) error {
	if o.Obs == nil || o.Rec == nil || w.Size() < 2 {
		return nil
	}
	e := w.e
	ictx := w.ctx + 1
	var buf [8]byte
	leaders := hostLeaders(w)
	if e.rank != 0 {
		if leaders[e.rank] != e.rank {
			return nil
		}
		for range alignRounds {
			if _, err := e.recv(ctx, ictx, nil, 1, 0, alignTag, true); err != nil {
				return err
			}
			binary.LittleEndian.PutUint64(buf[:], uint64(o.Rec.Now()))
			if err := e.send(ctx, callNone, ictx, buf[:], 1, 0, alignTag); err != nil {
				return err
			}
		}
		return nil
	}
	o.offsets, o.leaders = make([]int64, w.Size()), leaders
	for r := 1; r < w.Size(); r++ {
		if leaders[r] != r {
			continue
		}
		best := int64(-1)
		for range alignRounds {
			t0 := o.Rec.Now()
			if err := e.send(ctx, callNone, ictx, nil, 1, r, alignTag); err != nil {
				return err
			}
			if _, err := e.recv(ctx, ictx, buf[:], 1, r, alignTag, true); err != nil {
				return err
			}
			t1 := o.Rec.Now()
			if rtt := t1 - t0; best < 0 || rtt < best {
				best = rtt
				o.offsets[r] = t0 + rtt/2 - int64(binary.LittleEndian.Uint64(buf[:]))
			}
		}
	}
	return nil
}

// hostLeaders returns, for each rank of w, the lowest rank of its host.
func hostLeaders(w *World) []int {
	first := map[string]int{}
	leaders := make([]int, w.Size())
	for r := range leaders {
		h := w.HostOf(r)
		if l, ok := first[h]; ok {
			leaders[r] = l
		} else {
			first[h], leaders[r] = r, r
		}
	}
	return leaders
}

// finish writes this rank's outputs and hands its documents to the gatherer
// (observe_gather.go), which writes the job's files. A spawned rank writes its own
// outputs only. What this rank fails to write is reported on standard error, naming the
// rank and the path, and to golaunch (reportLost): it does not fail Finalize.
func (o *observer) finish(ctx context.Context, w *World) {
	if o.Obs == nil {
		return
	}
	e := w.e
	cfg := &e.cfg
	var lost []string
	loss := func(err error) {
		if err != nil {
			o.warn(e.rank, err)
			lost = append(lost, err.Error())
		}
	}
	var profDoc, dump []byte
	if o.Prof != nil {
		e.mu.Lock()
		o.Fold() // the engine's counts, and the layers' (collectives')
		e.mu.Unlock()
		var b bytes.Buffer
		o.Prof.Snapshot().WriteJSON(&b)
		profDoc = b.Bytes()
		if cfg.profDir != "" {
			loss(writeRankProfile(cfg.profDir, e.rank, o.Prof, profDoc))
		}
	}
	if o.Rec != nil {
		o.FlushBatches() // the layers' (collectives')
		e.mu.Lock()
		o.flushLocked()
		e.mu.Unlock()
		os.Remove(trace.DumpPath(cfg.traceFile, e.rank)) // a hang report's, now out of date
		var err error
		if dump, err = trace.AppendDump(nil, o.Rec.Snapshot()); err != nil {
			loss(fmt.Errorf("its timeline: %w", err))
		}
	}
	if e.spawn.group.Count > 0 {
		// A spawned rank: the job's files are those of the ranks the job started with.
		o.reportLost(ctx, e, lost)
		return
	}
	var tl *timeline
	if o.Rec != nil {
		tl = &timeline{path: cfg.traceFile, offsets: o.offsets, leaders: o.leaders}
		if w.Rank() != 0 {
			tl.offsets, tl.leaders = nil, nil // align measured at rank 0 only
		}
	}
	g, err := o.handIn(ctx, w, profDoc, dump, tl)
	loss(err)
	if g != nil {
		loss(o.writeGathered(cfg, w, g, tl))
	}
	o.reportLost(ctx, e, lost)
}

// writeGathered writes the job's profile from the gathered documents and ends its
// timeline, and reports the ranks whose documents did not come.
func (o *observer) writeGathered(cfg *config, w *World, g *gathered, tl *timeline) error {
	e := w.e
	if len(g.failed) > 0 {
		o.warn(e.rank, fmt.Errorf("no profile or timeline from ranks %v: they failed before Finalize", g.failed))
	}
	var errs []error
	if len(g.missing) > 0 {
		errs = append(errs, fmt.Errorf("the profiles and timelines of ranks %v: %s", g.missing, g.why))
	}
	if o.Prof != nil {
		errs = append(errs, writeJob(cfg, g.profs, g.failed))
	}
	if tl != nil {
		if err := tl.close(trace.Job{Size: w.Size(), Failed: g.failed}); err != nil {
			errs = append(errs, err)
		} else {
			o.late = tl // merged once the other ranks are free to go (mergeTimeline)
		}
	}
	return errors.Join(errs...)
}

// mergeTimeline writes the job's timeline at the gatherer, from the dumps it gathered,
// at the end of Finalize: the other ranks have passed its fence and may exit meanwhile.
func (o *observer) mergeTimeline(rank int) {
	if o.late != nil {
		o.late.merge(rank)
		o.late = nil
	}
}

// warn reports err, if any, on standard error.
func (o *observer) warn(rank int, err error) {
	if err == nil {
		return
	}
	for line := range strings.SplitSeq(err.Error(), "\n") {
		fmt.Fprintf(os.Stderr, "gorma: rank %d: observation: %s\n", rank, line)
	}
}

// keyObserveLost is the PMI key under which a rank tells golaunch's agent what of its
// observation it could not write (launcher/observe.go reads it). It travels with the
// puts of Finalize's fence.
const keyObserveLost = "gorma-observe-lost"

// maxLost bounds the text of keyObserveLost.
const maxLost = 1 << 10

// reportLost tells golaunch's agent what this rank could not write, so that golaunch
// exits non-zero and names it. A foreign process manager is not told: the lines on
// standard error say it.
func (o *observer) reportLost(ctx context.Context, e *engine, lost []string) {
	if len(lost) == 0 || e.pm == nil {
		return
	}
	if _, golaunch := e.pm.(eventSource); !golaunch {
		return
	}
	v := strings.ReplaceAll(strings.Join(lost, "; "), "\n", "; ")
	if len(v) > maxLost {
		v = v[:maxLost-3] + "..."
	}
	if err := e.pm.Put(ctx, keyObserveLost, []byte(v)); err != nil {
		o.warn(e.rank, fmt.Errorf("telling golaunch what was lost: %w", err))
	}
}

// writeRankProfile writes prof.<rank>.prof and prof.<rank>.json into dir.
func writeRankProfile(dir string, rank int, c *prof.Counters, doc []byte) error {
	lost := func(err error) error {
		return fmt.Errorf("its profile (prof.%d.prof, prof.%d.json in %s): %w", rank, rank, dir, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return lost(err)
	}
	name := filepath.Join(dir, "prof."+strconv.Itoa(rank))
	var b bytes.Buffer
	if err := c.WriteOMPI(&b); err != nil {
		return lost(err)
	}
	if err := safefile.WriteFile(name+".prof", b.Bytes(), 0o644); err != nil {
		return lost(err)
	}
	if err := safefile.WriteFile(name+".json", doc, 0o644); err != nil {
		return lost(err)
	}
	return nil
}

// writeJob merges the ranks' profiles and writes the job's files into cfg.profDir, and
// the summary on standard error under cfg.summary. failed names the ranks that failed
// before they handed in their profiles.
func writeJob(cfg *config, docs [][]byte, failed []int) error {
	var ranks []*prof.Rank
	for _, d := range docs {
		if d == nil {
			continue
		}
		r, err := prof.ReadRank(bytes.NewReader(d))
		if err != nil {
			return fmt.Errorf("the job's profile: %w", err)
		}
		ranks = append(ranks, r)
	}
	job, err := prof.Merge(ranks)
	if err == nil {
		err = job.SetFailed(failed)
	}
	if err != nil {
		return fmt.Errorf("the job's profile: %w", err)
	}
	if cfg.summary {
		fmt.Fprintf(os.Stderr, "gorma: profile of %d ranks\n", job.Size)
		job.WriteSummary(os.Stderr, summaryPairs)
	}
	if cfg.profDir == "" {
		return nil
	}
	lost := func(err error) error {
		return fmt.Errorf("the job's profile (job.json, summary.txt, matrix.svg in %s): %w", cfg.profDir, err)
	}
	if err := os.MkdirAll(cfg.profDir, 0o755); err != nil {
		return lost(err)
	}
	write := func(name string, f func(io.Writer) error) error {
		var b bytes.Buffer
		if err := f(&b); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		return safefile.WriteFile(filepath.Join(cfg.profDir, name), b.Bytes(), 0o644)
	}
	err = errors.Join(
		write("job.json", job.WriteJSON),
		write("summary.txt", func(w io.Writer) error { return job.WriteSummary(w, summaryPairs) }),
		write("matrix.svg", func(w io.Writer) error {
			title := fmt.Sprintf("bytes sent, rank to rank, all kinds (%d ranks)", job.Size)
			return prof.HeatMap(w, job.Bytes(), title, "bytes")
		}))
	if err != nil {
		return lost(err)
	}
	return nil
}

// summaryPairs is how many of the heaviest rank pairs the summary lists.
const summaryPairs = 10

// timeline writes the job's timeline at the gatherer (observe_gather.go). begin takes
// every rank's hand-in head: the dumps' headers give each rank's offset and the file is
// created. add writes each dump, as it comes, to a file of its own beside the timeline
// (spillPath), so that the gatherer holds one dump at a time. close ends the gather. merge
// runs once Finalize's fence has let the other ranks exit: it merges the files into the
// timeline one at a time (trace.MergeFilesJob) and removes them. offsets and leaders are
// align's (nil when it did not run: the job grew, the timeline of a rank of one, or a
// gatherer other than rank 0); each rank is then placed by the wall clock of its
// recorder's start. A nil *timeline takes nothing. After an error it takes the dumps
// without writing them, so that every rank's hand-in still completes.
type timeline struct {
	path     string
	offsets  []int64
	leaders  []int
	f        *safefile.File // the timeline's file, named at merge's Close
	offs     map[int]int64  // by rank: what the merge adds to its times
	spills   []string       // the dumps' files, in the order they came
	spillOff []int64        // their offsets
	dropped  uint64         // events the dumps lack (trace.Dump.Dropped)
	job      trace.Job
	err      error
}

// spillPath names the file that holds rank's dump at the gatherer until the merge.
func spillPath(file string, rank int) string { return file + ".gather." + strconv.Itoa(rank) }

// begin creates the timeline's file and places each rank, from heads, the hand-in heads
// by rank (nil where none came).
func (t *timeline) begin(heads [][]byte) {
	if t == nil {
		return
	}
	hs := make(map[int]trace.Header)
	for _, h := range heads {
		if len(h) == headLen && binary.LittleEndian.Uint64(h[8:]) > 0 {
			if th, err := trace.DecodeHeader(h[16:]); err == nil {
				hs[th.Rank] = th
			}
		}
	}
	// Rank r's clock plus offsets[l] reads rank 0's for a leader l; a rank of l's host is
	// placed against l by their recorders' start on their common wall clock.
	t.offs = make(map[int]int64, len(hs))
	for r, h := range hs {
		t.offs[r] = h.Origin
		l := r
		if r < len(t.leaders) {
			l = t.leaders[r]
		}
		if lo, ok := hs[l]; ok && l < len(t.offsets) {
			t.offs[r] = hs[0].Origin + t.offsets[l] + h.Origin - lo.Origin
		}
	}
	t.f, t.err = safefile.Create(t.path, 0o644)
}

// add writes one rank's dump, the document it handed in, to its file.
func (t *timeline) add(doc []byte) {
	if t == nil || t.err != nil || len(doc) == 0 {
		return
	}
	h, err := trace.DecodeHeader(doc)
	if err != nil {
		t.err = fmt.Errorf("a rank's dump: %w", err)
		return
	}
	path := spillPath(t.path, h.Rank)
	if t.err = safefile.WriteFile(path, doc, 0o644); t.err != nil {
		return
	}
	t.spills, t.spillOff = append(t.spills, path), append(t.spillOff, t.offs[h.Rank])
	t.dropped += h.Total - uint64(h.Events)
}

// close ends the gather of the timeline, whose job names the failed ranks, and returns
// what went wrong so far.
func (t *timeline) close(job trace.Job) error {
	t.job = job
	if t.err != nil {
		if t.f != nil {
			t.f.Abort()
			t.f = nil
		}
		t.remove()
		return fmt.Errorf("the job's timeline %s: %w", t.path, t.err)
	}
	return nil
}

// merge writes the timeline from the gathered dumps, and reports on standard error what
// it lacks or what went wrong: the job's ranks have passed Finalize's fence, so golaunch
// is not told.
func (t *timeline) merge(rank int) {
	if t == nil || t.err != nil {
		return
	}
	st, err := trace.MergeFilesJob(t.f, t.spills, t.spillOff, t.job)
	if err != nil {
		t.f.Abort()
	} else {
		err = t.f.Close()
	}
	t.remove()
	if err != nil {
		fmt.Fprintf(os.Stderr, "gorma: rank %d: observation: the job's timeline %s: %v\n", rank, t.path, err)
		return
	}
	if t.dropped > 0 || st.Unpaired > 0 {
		fmt.Fprintf(os.Stderr, "gorma: timeline %s: %d events overwritten in the flight recorders (GORMA_TRACE_EVENTS), %d flows without their other end\n",
			t.path, t.dropped, st.Unpaired)
	}
}

// remove removes the dumps' files.
func (t *timeline) remove() {
	for _, p := range t.spills {
		os.Remove(p)
	}
	t.spills = nil
}

// aligned returns what runs after Init joined a job: for Init's World, with the
// timeline on, align. A failed alignment fails Init.
func aligned(ctx context.Context) func(*World, error) (*World, error) {
	return func(w *World, err error) (*World, error) {
		if err != nil || w != w.e.root {
			return w, err
		}
		if err := w.e.obs.align(ctx, w); err != nil {
			return nil, fmt.Errorf("runtime: init rank %d: aligning the timeline's clocks: %w", w.e.rank, err)
		}
		return w, nil
	}
}
