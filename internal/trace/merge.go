package trace

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
)

// MergeStats counts what Merge wrote and what it could not join.
type MergeStats struct {
	Events   int // complete events ("X")
	Flows    int // flows written: pairs of "s" and "f"
	Unpaired int // Send and Match events with a flow whose other end no dump holds
	Reversed int // flows written whose receiving end lies before their start on the aligned clock
	Lanes    int // most lanes (tids) of one rank
}

// flowKey names one message: its sender, its receiver and its number on that pair.
type flowKey struct {
	from, to int32
	n        uint64
}

// placed is one event on the aligned clock, with the lane Merge put it on.
type placed struct {
	rank  int // index into the dumps
	ev    Event
	seq   uint64
	start int64 // aligned, rebased
	end   int64
	lane  int
}

// MergeFiles reads the dump files at paths and merges them as Merge does.
func MergeFiles(w io.Writer, paths []string, offsets []int64) (MergeStats, error) {
	dumps := make([]Dump, len(paths))
	for i, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return MergeStats{}, err
		}
		if dumps[i], err = DecodeDump(b); err != nil {
			return MergeStats{}, fmt.Errorf("%s: %w", p, err)
		}
	}
	return Merge(w, dumps, offsets)
}

// Job describes the job that a merge's dumps come from. The zero Job adds nothing.
type Job struct {
	Size   int   // the job's ranks; 0 when not known
	Failed []int // ranks that failed before they handed in their dumps
}

// Merge writes one Chrome trace-event JSON document of dumps to w: a process per rank,
// a complete event per Event, a flow from each Send to the Match of the same message.
// offsets[i] is added to dumps[i]'s times to put every rank on one clock (design.md,
// "Clocks"); with offsets nil, each dump's Origin is used, which aligns the ranks by
// their wall clocks.
func Merge(w io.Writer, dumps []Dump, offsets []int64) (MergeStats, error) {
	return MergeJob(w, dumps, offsets, Job{})
}

// MergeJob is Merge that also writes what job says: the job's size and its failed ranks
// in the document's otherData ("ranks", "failed_ranks"), and a process named for each
// failed rank, without events. A failed rank must have no dump.
func MergeJob(w io.Writer, dumps []Dump, offsets []int64, job Job) (MergeStats, error) {
	if offsets != nil && len(offsets) != len(dumps) {
		return MergeStats{}, fmt.Errorf("trace: %d offsets for %d dumps", len(offsets), len(dumps))
	}
	var st MergeStats
	perRank := make([][]*placed, len(dumps))
	base := int64(math.MaxInt64)
	seen := make(map[int]bool, len(dumps)+len(job.Failed))
	for _, d := range dumps {
		if seen[d.Rank] || d.Rank < 0 || d.Rank > MaxRank {
			return st, fmt.Errorf("trace: rank %d given twice or out of range", d.Rank)
		}
		seen[d.Rank] = true
	}
	for _, r := range job.Failed {
		if seen[r] || r < 0 || r > MaxRank {
			return st, fmt.Errorf("trace: failed rank %d has a dump, is given twice or is out of range", r)
		}
		seen[r] = true
	}
	for i, d := range dumps {
		off := d.Origin
		if offsets != nil {
			off = offsets[i]
		}
		for k, e := range d.Events {
			if err := checkEvent(e, len(d.Labels)); err != nil {
				return st, fmt.Errorf("trace: rank %d event %d: %v", d.Rank, k, err)
			}
			p := &placed{rank: i, ev: e, start: e.Start + off, end: e.End + off}
			if k < len(d.Seqs) {
				p.seq = d.Seqs[k]
			}
			base = min(base, p.start)
			perRank[i] = append(perRank[i], p)
		}
	}
	lanes := make([]int, len(dumps))
	for i := range perRank {
		for _, p := range perRank[i] {
			p.start -= base
			p.end -= base
		}
		lanes[i] = assignLanes(perRank[i])
		st.Lanes = max(st.Lanes, lanes[i])
	}
	stride := max(st.Lanes, 1)
	if uint64(len(dumps))*uint64(stride)+uint64(len(job.Failed)) >= math.MaxUint32 {
		return st, fmt.Errorf("trace: %d ranks of %d lanes do not fit in tids", len(dumps), stride)
	}
	tid := func(p *placed) int { return p.rank*stride + p.lane + 1 }

	bw := bufio.NewWriter(w)
	bw.Write(appendHeader(nil, job))
	first := true
	line := func(b []byte) {
		if !first {
			bw.WriteString(",\n")
		}
		first = false
		bw.Write(b)
	}
	var b []byte
	for k, r := range job.Failed {
		tid := len(dumps)*stride + k + 1
		b = appendMeta(b[:0], "process_name", r+1, tid, "name", "rank "+strconv.Itoa(r)+" (failed before Finalize: no timeline)")
		line(b)
		b = fmt.Appendf(b[:0], `{"name":"process_sort_index","ph":"M","pid":%d,"tid":%d,"args":{"sort_index":%d}}`, r+1, tid, r)
		line(b)
	}
	for i, d := range dumps {
		pid := d.Rank + 1
		name := "rank " + strconv.Itoa(d.Rank)
		if dr := d.Dropped(); dr > 0 {
			name += " (" + strconv.FormatUint(dr, 10) + " earlier events dropped)"
		}
		b = appendMeta(b[:0], "process_name", pid, i*stride+1, "name", name)
		line(b)
		b = fmt.Appendf(b[:0], `{"name":"process_sort_index","ph":"M","pid":%d,"tid":%d,"args":{"sort_index":%d}}`,
			pid, i*stride+1, d.Rank)
		line(b)
		for l := range lanes[i] {
			b = appendMeta(b[:0], "thread_name", pid, i*stride+l+1, "name", name+" lane "+strconv.Itoa(l))
			line(b)
		}
	}
	sends := make(map[flowKey]*placed)
	var ends []*placed
	for _, evs := range perRank { // by start, longest first: parents before children
		for _, p := range evs {
			d := dumps[p.rank]
			b = appendSlice(b[:0], p, d.Rank+1, tid(p), d.Labels[p.ev.Label])
			line(b)
			st.Events++
			if p.ev.flowIn() {
				ends = append(ends, p)
			}
			if !p.ev.flowOut() {
				continue
			}
			k := flowKey{int32(d.Rank), p.ev.Peer, p.ev.Flow}
			if _, dup := sends[k]; !dup {
				sends[k] = p
			}
		}
	}
	slices.SortFunc(ends, func(a, b *placed) int { return cmp.Compare(a.start, b.start) })
	id := 0
	for _, r := range ends {
		k := flowKey{r.ev.Peer, int32(dumps[r.rank].Rank), r.ev.Flow}
		s, ok := sends[k]
		if !ok {
			st.Unpaired++
			continue
		}
		delete(sends, k)
		id++
		sts := inside(s.start, s.end)
		fts := inside(r.start, r.end)
		if fts < sts && sts <= r.end {
			fts = sts
		}
		if fts < sts {
			st.Reversed++
		}
		b = appendFlow(b[:0], 's', id, sts, dumps[s.rank].Rank+1, tid(s))
		line(b)
		b = appendFlow(b[:0], 'f', id, fts, dumps[r.rank].Rank+1, tid(r))
		line(b)
		st.Flows++
	}
	st.Unpaired += len(sends)
	bw.WriteString("]}\n")
	return st, bw.Flush()
}

// appendHeader appends the document's opening up to its list of events: the display
// unit and otherData, with job's size and failed ranks when known.
func appendHeader(b []byte, job Job) []byte {
	b = append(b, `{"displayTimeUnit":"ns","otherData":{"producer":"gorma"`...)
	if job.Size > 0 {
		b = fmt.Appendf(b, `,"ranks":%d`, job.Size)
	}
	if len(job.Failed) > 0 {
		b = append(b, `,"failed_ranks":[`...)
		for i, r := range job.Failed {
			if i > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendInt(b, int64(r), 10)
		}
		b = append(b, ']')
	}
	return append(b, `},"traceEvents":[`...)
}

// inside returns the time a flow event binds to the slice [start, end] at: one
// nanosecond after its start when the slice is long enough, so that the viewer has
// opened the slice whichever of the two it reads first.
func inside(start, end int64) int64 {
	if end-start >= 2 {
		return start + 1
	}
	return start
}

// assignLanes puts each of evs on a lane where it nests in the events before it, the
// lowest such lane, and returns how many lanes it used. A lane is a stack of the events
// that contain the next one; an event that overlaps without nesting goes to another lane.
func assignLanes(evs []*placed) int {
	slices.SortStableFunc(evs, func(a, b *placed) int {
		if c := cmp.Compare(a.start, b.start); c != 0 {
			return c
		}
		return cmp.Compare(b.end, a.end)
	})
	var stacks [][]int64 // per lane, the ends of the open events
	for _, p := range evs {
		placedOn := -1
		for l, s := range stacks {
			for len(s) > 0 && s[len(s)-1] <= p.start {
				s = s[:len(s)-1]
			}
			stacks[l] = s
			if len(s) == 0 || s[len(s)-1] >= p.end {
				placedOn = l
				break
			}
		}
		if placedOn < 0 {
			placedOn = len(stacks)
			stacks = append(stacks, nil)
		}
		stacks[placedOn] = append(stacks[placedOn], p.end)
		p.lane = placedOn
	}
	return len(stacks)
}

// appendTime appends ns nanoseconds as microseconds with four decimals, the last one 5:
// a reader that multiplies by 1000 and truncates (Perfetto's JSON importer) gets ns back.
func appendTime(b []byte, ns int64) []byte {
	b = strconv.AppendInt(b, ns/1000, 10)
	r := ns % 1000
	return append(b, '.', byte('0'+r/100), byte('0'+r/10%10), byte('0'+r%10), '5')
}

// appendString appends s as a JSON string.
func appendString(b []byte, s string) []byte {
	q, _ := json.Marshal(s) // a string always marshals
	return append(b, q...)
}

func appendMeta(b []byte, name string, pid, tid int, key, val string) []byte {
	b = append(b, `{"name":"`...)
	b = append(b, name...)
	b = fmt.Appendf(b, `","ph":"M","pid":%d,"tid":%d,"args":{"%s":`, pid, tid, key)
	b = appendString(b, val)
	return append(b, "}}"...)
}

func appendSlice(b []byte, p *placed, pid, tid int, label string) []byte {
	b = append(b, `{"name":`...)
	b = appendString(b, label)
	b = append(b, `,"cat":"`...)
	b = append(b, p.ev.Kind.String()...)
	b = append(b, `","ph":"X","ts":`...)
	b = appendTime(b, p.start)
	b = append(b, `,"dur":`...)
	b = appendTime(b, p.end-p.start)
	b = fmt.Appendf(b, `,"pid":%d,"tid":%d,"args":{"seq":%d`, pid, tid, p.seq)
	if p.ev.Peer != NoPeer {
		b = fmt.Appendf(b, `,"peer":%d`, p.ev.Peer)
	}
	if p.ev.Tag >= 0 {
		b = fmt.Appendf(b, `,"tag":%d`, p.ev.Tag)
	}
	if p.ev.Bytes >= 0 {
		b = fmt.Appendf(b, `,"bytes":%d`, p.ev.Bytes)
	}
	if p.ev.Flow != 0 {
		b = fmt.Appendf(b, `,"msg":%d`, p.ev.Flow)
	}
	return append(b, "}}"...)
}

// appendFlow appends a flow event of phase ph ('s' or 'f'). Both ends share name and cat,
// since Perfetto keys a flow by id, cat and name; the end binds to its enclosing slice.
func appendFlow(b []byte, ph byte, id int, ts int64, pid, tid int) []byte {
	b = fmt.Appendf(b, `{"name":"message","cat":"flow","ph":"%c","id":%d,"ts":`, ph, id)
	b = appendTime(b, ts)
	b = fmt.Appendf(b, `,"pid":%d,"tid":%d`, pid, tid)
	if ph == 'f' {
		b = append(b, `,"bp":"e"`...)
	}
	return append(b, '}')
}
