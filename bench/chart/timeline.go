package main

import (
	"bufio"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/pflag"
)

// runTimeline is chart timeline: it draws a merged timeline (golaunch --trace) as an
// SVG on stdout.
func runTimeline(args []string, stdout io.Writer) error {
	fs := pflag.NewFlagSet("chart timeline", pflag.ContinueOnError)
	var o timelineOptions
	from := fs.Float64("from", math.NaN(), "start of the window in microseconds of the trace (default: its first event)")
	to := fs.Float64("to", math.NaN(), "end of the window in microseconds of the trace (default: its last event)")
	fs.IntVar(&o.width, "width", 1200, "width of the picture in pixels")
	fs.StringVar(&o.title, "title", "", "title (default: the file's name)")
	if err := fs.Parse(longFlags(fs, args)); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return errors.New("usage: chart timeline [--from US] [--to US] [--width PX] [--title S] FILE.json > out.svg")
	}
	o.from, o.to = usToNs(*from), usToNs(*to)
	if o.title == "" {
		o.title = filepath.Base(fs.Arg(0))
	}
	f, err := os.Open(fs.Arg(0))
	if err != nil {
		return err
	}
	defer f.Close()
	tl, err := readTimeline(f)
	if err != nil {
		return fmt.Errorf("%s: %w", fs.Arg(0), err)
	}
	_, err = drawTimeline(stdout, tl, o)
	return err
}

// longFlags returns args with each of fs's long flags written with one dash ("-from",
// as Go's flag package takes it) written with two.
func longFlags(fs *pflag.FlagSet, args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = a
		if a == "--" {
			copy(out[i:], args[i:])
			break
		}
		name, _, _ := strings.Cut(strings.TrimPrefix(a, "-"), "=")
		if strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && len(name) > 1 && fs.Lookup(name) != nil {
			out[i] = "-" + a
		}
	}
	return out
}

// noTime marks an unset end of the window.
const noTime = math.MinInt64

// usToNs turns microseconds (a trace's unit) into nanoseconds, truncating as Perfetto
// does; NaN gives noTime.
func usToNs(us float64) int64 {
	if math.IsNaN(us) {
		return noTime
	}
	return int64(us * 1000)
}

// traceEvent is one record of Chrome trace-event JSON, as far as the timeline uses it.
type traceEvent struct {
	Name string          `json:"name"`
	Cat  string          `json:"cat"`
	Ph   string          `json:"ph"`
	Ts   float64         `json:"ts"`
	Dur  float64         `json:"dur"`
	Pid  int             `json:"pid"`
	Tid  int             `json:"tid"`
	ID   json.RawMessage `json:"id"`
	Args struct {
		Name      string `json:"name"`       // process_name, thread_name
		SortIndex *int   `json:"sort_index"` // process_sort_index
		Seq       *int64 `json:"seq"`
		Peer      *int   `json:"peer"`
		Tag       *int64 `json:"tag"`
		Bytes     *int64 `json:"bytes"`
		Msg       *int64 `json:"msg"`
	} `json:"args"`
}

// tlSlice is one complete event: [start, end] in nanoseconds, at depth levels below the
// outermost slice of its thread.
type tlSlice struct {
	start, end int64
	name, cat  string
	depth      int
	info       string // the tooltip's details: peer, tag, bytes, message, seq
}

// tlThread is one tid: its slices by start, longest first, and how deep they nest.
type tlThread struct {
	tid    int
	name   string
	slices []tlSlice
}

// tlProc is one pid, a rank in gorma's traces.
type tlProc struct {
	pid     int
	name    string
	sort    int
	threads []*tlThread // by tid
}

// tlPoint is one end of a flow: a time on a thread.
type tlPoint struct {
	ts       int64
	pid, tid int
}

// tlFlow is one flow arrow, from its "s" to its "f".
type tlFlow struct{ from, to tlPoint }

// timeline is a trace as the picture uses it.
type timeline struct {
	procs      []*tlProc // by sort index, then pid
	flows      []tlFlow  // by start
	start, end int64     // the first start and the last end of a slice
}

// flowID keys a flow as Perfetto's v1 flows are keyed: by id, cat and name together.
type flowID struct{ id, cat, name string }

// readTimeline reads a Chrome trace-event JSON document: the object form
// ({"traceEvents": [...]}) or a bare array. It keeps the complete events ("X"), the
// names and sort indexes ("M") and the flows ("s" with "f"); it ignores other phases.
// It decodes one event at a time, so a large trace costs only its slices.
func readTimeline(r io.Reader) (*timeline, error) {
	dec := json.NewDecoder(bufio.NewReader(r))
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	b := newTimelineBuilder()
	switch tok {
	case json.Delim('['):
		err = b.readEvents(dec)
	case json.Delim('{'):
		found := false
		for dec.More() && err == nil {
			if tok, err = dec.Token(); err != nil {
				break
			}
			if tok == "traceEvents" {
				found = true
				if err = wantDelim(dec, '['); err == nil {
					err = b.readEvents(dec)
				}
			} else {
				err = dec.Decode(new(json.RawMessage))
			}
		}
		if err == nil && !found {
			err = errors.New(`no "traceEvents"`)
		}
	default:
		err = errors.New("not a trace: want an object or an array")
	}
	if err != nil {
		return nil, err
	}
	return b.finish()
}

func wantDelim(dec *json.Decoder, d json.Delim) error {
	tok, err := dec.Token()
	if err == nil && tok != d {
		err = fmt.Errorf("want %v, got %v", d, tok)
	}
	return err
}

// timelineBuilder gathers a timeline's parts as readTimeline decodes them.
type timelineBuilder struct {
	tl      *timeline
	procs   map[int]*tlProc
	threads map[[2]int]*tlThread
	starts  map[flowID]tlPoint
	ends    map[flowID]tlPoint
}

func newTimelineBuilder() *timelineBuilder {
	return &timelineBuilder{
		tl:    &timeline{start: math.MaxInt64, end: math.MinInt64},
		procs: map[int]*tlProc{}, threads: map[[2]int]*tlThread{},
		starts: map[flowID]tlPoint{}, ends: map[flowID]tlPoint{},
	}
}

// readEvents decodes the events of an array whose '[' dec has read, and its ']'.
func (b *timelineBuilder) readEvents(dec *json.Decoder) error {
	for dec.More() {
		var e traceEvent
		if err := dec.Decode(&e); err != nil {
			return err
		}
		b.add(e)
	}
	return wantDelim(dec, ']')
}

func (b *timelineBuilder) proc(pid int) *tlProc {
	p := b.procs[pid]
	if p == nil {
		p = &tlProc{pid: pid, name: fmt.Sprintf("pid %d", pid), sort: pid}
		b.procs[pid] = p
	}
	return p
}

func (b *timelineBuilder) thread(pid, tid int) *tlThread {
	t := b.threads[[2]int{pid, tid}]
	if t == nil {
		t = &tlThread{tid: tid}
		b.threads[[2]int{pid, tid}] = t
		p := b.proc(pid)
		p.threads = append(p.threads, t)
	}
	return t
}

func (b *timelineBuilder) add(e traceEvent) {
	switch e.Ph {
	case "M":
		switch e.Name {
		case "process_name":
			b.proc(e.Pid).name = e.Args.Name
		case "process_sort_index":
			if e.Args.SortIndex != nil {
				b.proc(e.Pid).sort = *e.Args.SortIndex
			}
		case "thread_name":
			b.thread(e.Pid, e.Tid).name = e.Args.Name
		}
	case "X":
		s := tlSlice{start: usToNs(e.Ts), name: e.Name, cat: e.Cat, info: sliceInfo(e)}
		s.end = s.start + max(usToNs(e.Dur), 0)
		t := b.thread(e.Pid, e.Tid)
		t.slices = append(t.slices, s)
		b.tl.start = min(b.tl.start, s.start)
		b.tl.end = max(b.tl.end, s.end)
	case "s", "f":
		k := flowID{string(e.ID), e.Cat, e.Name}
		pt := tlPoint{usToNs(e.Ts), e.Pid, e.Tid}
		if e.Ph == "s" {
			b.starts[k] = pt
		} else {
			b.ends[k] = pt
		}
	}
}

// finish pairs the flows and orders everything.
func (b *timelineBuilder) finish() (*timeline, error) {
	tl := b.tl
	if tl.start > tl.end {
		return nil, errors.New(`no complete events ("ph":"X")`)
	}
	for k, s := range b.starts {
		if f, ok := b.ends[k]; ok {
			tl.flows = append(tl.flows, tlFlow{s, f})
		}
	}
	slices.SortFunc(tl.flows, func(a, b tlFlow) int {
		return cmp.Or(cmp.Compare(a.from.ts, b.from.ts), cmp.Compare(a.to.ts, b.to.ts),
			cmp.Compare(a.from.pid, b.from.pid), cmp.Compare(a.from.tid, b.from.tid),
			cmp.Compare(a.to.pid, b.to.pid), cmp.Compare(a.to.tid, b.to.tid))
	})
	for _, p := range b.procs {
		slices.SortFunc(p.threads, func(a, b *tlThread) int { return cmp.Compare(a.tid, b.tid) })
		for _, t := range p.threads {
			nest(t.slices)
		}
		tl.procs = append(tl.procs, p)
	}
	slices.SortFunc(tl.procs, func(a, b *tlProc) int { return cmp.Or(cmp.Compare(a.sort, b.sort), cmp.Compare(a.pid, b.pid)) })
	return tl, nil
}

// nest sorts one thread's slices by start, longest first, and gives each its depth: the
// number of earlier slices that are still open at its start. On a thread whose slices
// nest, as Merge writes them, that is its nesting depth.
func nest(ss []tlSlice) {
	slices.SortStableFunc(ss, func(a, b tlSlice) int {
		return cmp.Or(cmp.Compare(a.start, b.start), cmp.Compare(b.end, a.end))
	})
	var open []int64 // the ends of the enclosing slices
	for i := range ss {
		for len(open) > 0 && open[len(open)-1] <= ss[i].start {
			open = open[:len(open)-1]
		}
		ss[i].depth = len(open)
		open = append(open, ss[i].end)
	}
}

// sliceInfo is the tooltip's line of e's arguments.
func sliceInfo(e traceEvent) string {
	var parts []string
	a := e.Args
	if a.Peer != nil {
		parts = append(parts, fmt.Sprintf("peer %d", *a.Peer))
	}
	if a.Tag != nil {
		parts = append(parts, fmt.Sprintf("tag %d", *a.Tag))
	}
	if a.Bytes != nil {
		parts = append(parts, fmt.Sprintf("%d B", *a.Bytes))
	}
	if a.Msg != nil {
		parts = append(parts, fmt.Sprintf("msg %d", *a.Msg))
	}
	if a.Seq != nil {
		parts = append(parts, fmt.Sprintf("seq %d", *a.Seq))
	}
	return strings.Join(parts, ", ")
}
