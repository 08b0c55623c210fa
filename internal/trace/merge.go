package trace

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
)

// MergeStats counts what Merge wrote and what it could not join.
type MergeStats struct {
	Events   int // complete events ("X"), open calls among them
	Open     int // calls under way when their dump was taken, written as open slices
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

func (a flowKey) compare(b flowKey) int {
	if a.from != b.from {
		return cmp.Compare(a.from, b.from)
	}
	if a.to != b.to {
		return cmp.Compare(a.to, b.to)
	}
	return cmp.Compare(a.n, b.n)
}

// flowOut is the start of a flow: the Send slice's thread and the time the flow binds in
// it. ord is its place among the starts, in the order Add met them.
type flowOut struct {
	key flowKey
	at  int64
	tid int32
	ord uint32
}

// flowIn is the end of a flow: the Match slice's thread and its times.
type flowIn struct {
	key        flowKey
	start, end int64
	tid        int32
}

// placed is one event of the dump being added, on the aligned clock, with the lane Merge
// put it on.
type placed struct {
	ev    Event
	seq   uint64
	start int64 // aligned, rebased
	end   int64
	lane  int32
	open  bool // a call under way (Dump.Open)
}

// span is what the order of a dump's slices is sorted by: a placed's times and its index.
type span struct {
	start, end int64
	i          int32
}

// Job describes the job that a merge's dumps come from. The zero Job adds nothing.
type Job struct {
	Size   int   // the job's ranks; 0 when not known
	Failed []int // ranks without a dump: they failed before they handed it in, or it was lost
	// Died names the ranks that died before Finalize, with how each ended ("killed by
	// signal 9 (SIGKILL)"). A dead rank has the dump its flight recorder kept, or is among
	// Failed. The ranks a launcher ended after a death are not in it.
	Died map[int]string
}

// Merger writes one Chrome trace-event JSON document while the dumps come, one at a
// time: NewMerger, Add per dump, then Close. It keeps no dump after its Add, only the
// two ends of every flow (about 40 bytes each), so a job's timeline costs the memory of
// its largest dump. A Merger is not safe for concurrent use.
type Merger struct {
	w      *bufio.Writer
	base   int64
	stride int
	first  bool
	ranks  map[int]bool
	died   map[int]string // Job.Died, which names the processes of Add
	flows  flowEnds
	st     MergeStats
	err    error

	b      []byte    // one line
	evs    []placed  // the dump being added
	order  []span    // evs by start, longest first (assignLanes)
	stacks [][]int64 // per lane, the ends of the open slices (assignLanes)
	names  [][]byte  // the dump's labels as JSON strings, made on first use
}

// NewMerger starts a document on w. Its times are rebased to base: every time a dump's
// event has, plus the offset Add is given for it, must be at least base (Header.First
// plus the offset, at its least over the dumps). ranks bounds the ranks of the dumps
// and failed ranks (the job's size): the thread ids of rank r are r + 1 plus multiples
// of ranks, one per lane.
func NewMerger(w io.Writer, base int64, ranks int) *Merger {
	m := &Merger{w: bufio.NewWriterSize(w, 256<<10), base: base, stride: max(ranks, 1), first: true,
		ranks: make(map[int]bool)}
	m.w.WriteString(`{"displayTimeUnit":"ns","traceEvents":[`)
	return m
}

// flowEnds holds the ends of the flows until Close pairs them. Close numbers the flows
// it writes from after, the last id of a document that Continue copied.
type flowEnds struct {
	sends []flowOut
	ends  []flowIn
	after int
}

// Died names the ranks that died before Finalize, as Job.Died does: Add names a dead
// rank's process with how it ended. Call it before Add, with the Died of Close's Job.
func (m *Merger) Died(died map[int]string) { m.died = died }

// line writes one event of the document.
func (m *Merger) line(b []byte) {
	if !m.first {
		m.w.WriteString(",\n")
	}
	m.first = false
	m.w.Write(b)
}

// Add writes d's process, one complete event per event and per open call (the latter
// ending when d was taken, with "open":true in its args), and keeps the ends of d's
// flows for Close. offset is added to d's times to put it on the document's clock
// (design.md, "Clocks").
func (m *Merger) Add(d Dump, offset int64) error {
	if m.err != nil {
		return m.err
	}
	if d.Rank < 0 || d.Rank >= m.stride || m.ranks[d.Rank] {
		return fmt.Errorf("trace: rank %d given twice or not below %d", d.Rank, m.stride)
	}
	m.evs = m.evs[:0]
	held := heldMatches{labels: d.Labels, idx: [2]int{-1, -1}}
	for k, e := range d.Events {
		if err := checkEvent(e, len(d.Labels)); err != nil {
			return fmt.Errorf("trace: rank %d event %d: %v", d.Rank, k, err)
		}
		p := placed{ev: e}
		if k < len(d.Seqs) {
			p.seq = d.Seqs[k]
		}
		if e.Kind == Recv && e.Flow != 0 {
			m.evs = append(m.evs, m.place(held.of(p), offset))
			p.ev.Flow = 0
		}
		m.evs = append(m.evs, m.place(p, offset))
	}
	labels := held.labels
	for k, e := range d.Open {
		if err := checkEvent(e, len(d.Labels)); err != nil {
			return fmt.Errorf("trace: rank %d open call %d: %v", d.Rank, k, err)
		}
		m.evs = append(m.evs, m.place(placed{ev: e, open: true}, offset))
	}
	m.ranks[d.Rank] = true
	lanes := m.assignLanes()
	if top := uint64(max(lanes, 1)-1)*uint64(m.stride) + uint64(d.Rank) + 1; top > math.MaxInt32 {
		m.err = fmt.Errorf("trace: rank %d's %d lanes do not fit in tids", d.Rank, lanes)
		return m.err
	}
	m.st.Lanes = max(m.st.Lanes, lanes)
	pid := d.Rank + 1
	name := "rank " + strconv.Itoa(d.Rank)
	if how, ok := m.died[d.Rank]; ok {
		name += " (died before Finalize: " + how + ")"
	}
	if dr := d.Dropped(); dr > 0 {
		name += " (" + strconv.FormatUint(dr, 10) + " earlier events dropped)"
	}
	m.b = appendMeta(m.b[:0], "process_name", pid, m.tid(d.Rank, 0), "name", name)
	m.line(m.b)
	m.b = appendSortIndex(m.b[:0], pid, m.tid(d.Rank, 0), d.Rank)
	m.line(m.b)
	for l := range lanes {
		m.b = appendMeta(m.b[:0], "thread_name", pid, m.tid(d.Rank, l), "name", name+" lane "+strconv.Itoa(l))
		m.line(m.b)
	}
	m.names = m.names[:0]
	for range labels {
		m.names = append(m.names, nil)
	}
	for _, o := range m.order { // by start, longest first: parents before children
		p := &m.evs[o.i]
		tid := m.tid(d.Rank, int(p.lane))
		if m.names[p.ev.Label] == nil {
			m.names[p.ev.Label] = appendString(nil, labels[p.ev.Label])
		}
		m.b = appendSlice(m.b[:0], p, pid, tid, m.names[p.ev.Label])
		m.line(m.b)
		m.st.Events++
		switch {
		case p.open:
			m.st.Open++
		case p.ev.flowIn():
			m.flows.ends = append(m.flows.ends, flowIn{flowKey{p.ev.Peer, int32(d.Rank), p.ev.Flow}, p.start, p.end, int32(tid)})
		case p.ev.flowOut():
			m.flows.sends = append(m.flows.sends, flowOut{flowKey{int32(d.Rank), p.ev.Peer, p.ev.Flow}, inside(p.start, p.end), int32(tid),
				uint32(len(m.flows.sends))})
		}
	}
	return nil
}

// heldMatches makes the Matches that Recv events with a flow hold (MatchName): labels
// is the dump's, extended by the Matches' names where it lacks them, and idx their
// indexes (a user's, an internal one), -1 until needed.
type heldMatches struct {
	labels []string
	idx    [2]int
}

// of returns the Match that the Recv event p holds at its end, with p's flow.
func (h *heldMatches) of(p placed) placed {
	in := 0
	if strings.HasSuffix(h.labels[p.ev.Label], Internal) {
		in = 1
	}
	if h.idx[in] < 0 {
		name := MatchName + [2]string{"", Internal}[in]
		h.idx[in] = slices.Index(h.labels, name)
		if h.idx[in] < 0 && len(h.labels) < MaxLabels {
			h.idx[in] = len(h.labels)
			h.labels = append(slices.Clip(h.labels), name)
		}
	}
	p.ev.Kind = Match
	if h.idx[in] >= 0 { // else the table is full: the Match takes the Recv's name
		p.ev.Label = uint16(h.idx[in])
	}
	p.ev.Start = max(p.ev.Start, p.ev.End-heldMatchLen)
	return p
}

// place puts p's event on the document's clock.
func (m *Merger) place(p placed, offset int64) placed {
	p.start = max(p.ev.Start+offset-m.base, 0) // never below 0: a base above it was a caller's mistake
	p.end = max(p.ev.End+offset-m.base, p.start)
	return p
}

// tid is the thread id of rank's lane.
func (m *Merger) tid(rank, lane int) int { return lane*m.stride + rank + 1 }

// Close writes the flows, a process for each of job's failed ranks (which must have had
// no dump), the document's end with its otherData (producer, job's size, failed and
// dead ranks, the clock's zero), and flushes. It returns what the document holds.
func (m *Merger) Close(job Job) (MergeStats, error) {
	if m.err != nil {
		return m.st, m.err
	}
	for _, r := range job.Failed {
		if r < 0 || r >= m.stride || m.ranks[r] {
			return m.st, fmt.Errorf("trace: failed rank %d has a dump, is given twice or is not below %d", r, m.stride)
		}
		m.ranks[r] = true
		why := "failed before Finalize"
		if how, ok := job.Died[r]; ok {
			why = "died before Finalize: " + how
		}
		m.b = appendMeta(m.b[:0], "process_name", r+1, m.tid(r, 0), "name", "rank "+strconv.Itoa(r)+" ("+why+"; "+noTimeline)
		m.line(m.b)
		m.b = appendSortIndex(m.b[:0], r+1, m.tid(r, 0), r)
		m.line(m.b)
	}
	m.writeFlows()
	m.w.WriteString("\n],")
	m.b = appendOtherData(m.b[:0], job, m.base)
	m.w.Write(m.b)
	m.w.WriteString("}\n")
	return m.st, m.w.Flush()
}

// writeFlows pairs each Match with the Send of the same message, the first sent when
// more have its key, and writes a flow for each pair, numbered in the order of the
// Matches' starts.
func (m *Merger) writeFlows() {
	fl := &m.flows
	slices.SortFunc(fl.sends, func(a, b flowOut) int {
		if c := a.key.compare(b.key); c != 0 {
			return c
		}
		return cmp.Compare(a.ord, b.ord)
	})
	fl.sends = slices.CompactFunc(fl.sends, func(a, b flowOut) bool { return a.key == b.key })
	slices.SortFunc(fl.ends, func(a, b flowIn) int {
		if c := a.key.compare(b.key); c != 0 {
			return c
		}
		if a.start != b.start {
			return cmp.Compare(a.start, b.start)
		}
		return cmp.Compare(a.tid, b.tid)
	})
	type pair struct {
		s *flowOut
		f *flowIn
	}
	var pairs []pair
	i := 0
	for k := range fl.ends {
		f := &fl.ends[k]
		for i < len(fl.sends) && fl.sends[i].key.compare(f.key) < 0 {
			i++
		}
		if i < len(fl.sends) && fl.sends[i].key == f.key && (k == 0 || fl.ends[k-1].key != f.key) {
			pairs = append(pairs, pair{&fl.sends[i], f})
		}
	}
	m.st.Unpaired = len(fl.sends) + len(fl.ends) - 2*len(pairs)
	slices.SortFunc(pairs, func(a, b pair) int {
		if a.f.start != b.f.start {
			return cmp.Compare(a.f.start, b.f.start)
		}
		return a.f.key.compare(b.f.key)
	})
	for id, p := range pairs {
		sts := p.s.at
		fts := inside(p.f.start, p.f.end)
		if fts < sts && sts <= p.f.end {
			fts = sts
		}
		if fts < sts {
			m.st.Reversed++
		}
		m.b = appendFlow(m.b[:0], 's', fl.after+id+1, sts, int(p.s.key.from)+1, int(p.s.tid))
		m.line(m.b)
		m.b = appendFlow(m.b[:0], 'f', fl.after+id+1, fts, int(p.f.key.to)+1, int(p.f.tid))
		m.line(m.b)
		m.st.Flows++
	}
}

// MergeFiles reads the dump files at paths and merges them as Merge does, one file at a
// time: a file's header first (DecodeHeader), then its events.
func MergeFiles(w io.Writer, paths []string, offsets []int64) (MergeStats, error) {
	return MergeFilesJob(w, paths, offsets, Job{})
}

// MergeFilesJob is MergeFiles that also writes what job says (MergeJob).
func MergeFilesJob(w io.Writer, paths []string, offsets []int64, job Job) (MergeStats, error) {
	if offsets != nil && len(offsets) != len(paths) {
		return MergeStats{}, fmt.Errorf("trace: %d offsets for %d dumps", len(offsets), len(paths))
	}
	heads := make([]Header, len(paths))
	for i, p := range paths {
		h, err := readHeader(p)
		if err != nil {
			return MergeStats{}, err
		}
		heads[i] = h
	}
	offs := offsets
	if offs == nil {
		offs = make([]int64, len(paths))
		for i, h := range heads {
			offs[i] = h.Origin
		}
	}
	base, ranks := mergeBounds(heads, offs, job)
	m := NewMerger(w, base, ranks)
	m.Died(job.Died)
	for i, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return MergeStats{}, err
		}
		d, err := DecodeDump(b)
		if err != nil {
			return MergeStats{}, fmt.Errorf("%s: %w", p, err)
		}
		if err := m.Add(d, offs[i]); err != nil {
			return MergeStats{}, err
		}
	}
	return m.Close(job)
}

// readHeader reads the header of the dump file at path.
func readHeader(path string) (Header, error) {
	f, err := os.Open(path)
	if err != nil {
		return Header{}, err
	}
	defer f.Close()
	b := make([]byte, HeaderLen)
	if _, err := io.ReadFull(f, b); err != nil {
		return Header{}, fmt.Errorf("%s: %w: %v", path, ErrFormat, err)
	}
	h, err := DecodeHeader(b)
	if err != nil {
		return Header{}, fmt.Errorf("%s: %w", path, err)
	}
	return h, nil
}

// mergeBounds returns a merge's base (the earliest aligned start of any event) and the
// bound of its ranks, from the dumps' headers, their offsets and job.
func mergeBounds(heads []Header, offsets []int64, job Job) (base int64, ranks int) {
	base, ranks = math.MaxInt64, job.Size
	for i, h := range heads {
		if h.Events+h.Open > 0 {
			base = min(base, h.First+offsets[i])
		}
		ranks = max(ranks, h.Rank+1)
	}
	for _, r := range job.Failed {
		ranks = max(ranks, r+1)
	}
	if base == math.MaxInt64 {
		base = 0
	}
	return base, ranks
}

// Merge writes one Chrome trace-event JSON document of dumps to w: a process per rank,
// a complete event per Event and per open call, a flow from each Send to the Match of
// the same message. offsets[i] is added to dumps[i]'s times to put every rank on one
// clock (design.md, "Clocks"); with offsets nil, each dump's Origin is used, which aligns
// the ranks by their wall clocks. Times are rebased to the earliest event.
func Merge(w io.Writer, dumps []Dump, offsets []int64) (MergeStats, error) {
	return MergeJob(w, dumps, offsets, Job{})
}

// MergeJob is Merge that also writes what job says: the job's size, its failed ranks and
// its dead ones in the document's otherData ("ranks", "failed_ranks", "died_ranks"), a
// process named for each failed rank, without events, and a dead rank's process named
// with how it ended. A failed rank must have no dump.
func MergeJob(w io.Writer, dumps []Dump, offsets []int64, job Job) (MergeStats, error) {
	if offsets != nil && len(offsets) != len(dumps) {
		return MergeStats{}, fmt.Errorf("trace: %d offsets for %d dumps", len(offsets), len(dumps))
	}
	heads := make([]Header, len(dumps))
	offs := make([]int64, len(dumps))
	for i, d := range dumps {
		heads[i] = Header{Rank: d.Rank, Events: len(d.Events), Open: len(d.Open), First: d.first()}
		offs[i] = d.Origin
		if offsets != nil {
			offs[i] = offsets[i]
		}
		if d.Rank < 0 || d.Rank > MaxRank {
			return MergeStats{}, fmt.Errorf("trace: rank %d out of range", d.Rank)
		}
	}
	base, ranks := mergeBounds(heads, offs, job)
	m := NewMerger(w, base, ranks)
	m.Died(job.Died)
	for i, d := range dumps {
		if err := m.Add(d, offs[i]); err != nil {
			return MergeStats{}, err
		}
	}
	return m.Close(job)
}

// noTimeline ends the name of the process Close writes for a rank without a dump, which
// Continue recognizes.
const noTimeline = "no timeline)"

// appendOtherData appends the document's otherData: the producer, the clock's reading at
// time 0 (base), and job's size, failed and dead ranks when known.
func appendOtherData(b []byte, job Job, base int64) []byte {
	b = append(b, `"otherData":{"producer":"gorma","clock_zero_ns":`...)
	b = strconv.AppendInt(b, base, 10)
	if job.Size > 0 {
		b = append(b, `,"ranks":`...)
		b = strconv.AppendInt(b, int64(job.Size), 10)
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
	if len(job.Died) > 0 {
		b = append(b, `,"died_ranks":{`...)
		for i, r := range slices.Sorted(maps.Keys(job.Died)) {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, '"')
			b = strconv.AppendInt(b, int64(r), 10)
			b = append(b, `":`...)
			b = appendString(b, job.Died[r])
		}
		b = append(b, '}')
	}
	return append(b, '}')
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

// assignLanes orders m.evs by start, longest first (m.order), and puts each on the lowest
// lane where it nests in the events before it. It returns how many lanes it used. A lane
// is a stack of the events that contain the next one; an event that overlaps without
// nesting goes to another lane.
func (m *Merger) assignLanes() int {
	m.order = m.order[:0]
	for i, p := range m.evs {
		m.order = append(m.order, span{p.start, p.end, int32(i)})
	}
	slices.SortFunc(m.order, func(a, b span) int {
		if a.start != b.start {
			return cmp.Compare(a.start, b.start)
		}
		if a.end != b.end {
			return cmp.Compare(b.end, a.end)
		}
		return cmp.Compare(a.i, b.i)
	})
	stacks := m.stacks[:0]
	for _, o := range m.order {
		on := -1
		for l, s := range stacks {
			for len(s) > 0 && s[len(s)-1] <= o.start {
				s = s[:len(s)-1]
			}
			stacks[l] = s
			if len(s) == 0 || s[len(s)-1] >= o.end {
				on = l
				break
			}
		}
		if on < 0 {
			on = len(stacks)
			if on < cap(stacks) {
				stacks = stacks[:on+1]
				stacks[on] = stacks[on][:0]
			} else {
				stacks = append(stacks, nil)
			}
		}
		stacks[on] = append(stacks[on], o.end)
		m.evs[o.i].lane = int32(on)
	}
	m.stacks = stacks
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
	b = append(b, `","ph":"M","pid":`...)
	b = strconv.AppendInt(b, int64(pid), 10)
	b = append(b, `,"tid":`...)
	b = strconv.AppendInt(b, int64(tid), 10)
	b = append(b, `,"args":{"`...)
	b = append(b, key...)
	b = append(b, `":`...)
	b = appendString(b, val)
	return append(b, "}}"...)
}

func appendSortIndex(b []byte, pid, tid, index int) []byte {
	b = append(b, `{"name":"process_sort_index","ph":"M","pid":`...)
	b = strconv.AppendInt(b, int64(pid), 10)
	b = append(b, `,"tid":`...)
	b = strconv.AppendInt(b, int64(tid), 10)
	b = append(b, `,"args":{"sort_index":`...)
	b = strconv.AppendInt(b, int64(index), 10)
	return append(b, "}}"...)
}

// appendSlice appends p as a complete event named by name, a JSON string.
func appendSlice(b []byte, p *placed, pid, tid int, name []byte) []byte {
	b = append(b, `{"name":`...)
	b = append(b, name...)
	b = append(b, `,"cat":"`...)
	b = append(b, p.ev.Kind.String()...)
	b = append(b, `","ph":"X","ts":`...)
	b = appendTime(b, p.start)
	b = append(b, `,"dur":`...)
	b = appendTime(b, p.end-p.start)
	b = append(b, `,"pid":`...)
	b = strconv.AppendInt(b, int64(pid), 10)
	b = append(b, `,"tid":`...)
	b = strconv.AppendInt(b, int64(tid), 10)
	if p.open {
		b = append(b, `,"args":{"open":true`...)
	} else {
		b = append(b, `,"args":{"seq":`...)
		b = strconv.AppendUint(b, p.seq, 10)
	}
	if p.ev.Peer != NoPeer {
		b = append(b, `,"peer":`...)
		b = strconv.AppendInt(b, int64(p.ev.Peer), 10)
	}
	if p.ev.Tag >= 0 {
		b = append(b, `,"tag":`...)
		b = strconv.AppendInt(b, int64(p.ev.Tag), 10)
	}
	if p.ev.Bytes >= 0 {
		b = append(b, `,"bytes":`...)
		b = strconv.AppendInt(b, p.ev.Bytes, 10)
	}
	if p.ev.Flow != 0 {
		b = append(b, `,"msg":`...)
		b = strconv.AppendUint(b, p.ev.Flow, 10)
	}
	return append(b, "}}"...)
}

// appendFlow appends a flow event of phase ph ('s' or 'f'). Both ends share name and cat,
// since Perfetto keys a flow by id, cat and name; the end binds to its enclosing slice.
func appendFlow(b []byte, ph byte, id int, ts int64, pid, tid int) []byte {
	b = append(b, `{"name":"message","cat":"flow","ph":"`...)
	b = append(b, ph)
	b = append(b, `","id":`...)
	b = strconv.AppendInt(b, int64(id), 10)
	b = append(b, `,"ts":`...)
	b = appendTime(b, ts)
	b = append(b, `,"pid":`...)
	b = strconv.AppendInt(b, int64(pid), 10)
	b = append(b, `,"tid":`...)
	b = strconv.AppendInt(b, int64(tid), 10)
	if ph == 'f' {
		b = append(b, `,"bp":"e"`...)
	}
	return append(b, '}')
}
