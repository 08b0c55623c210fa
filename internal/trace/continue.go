package trace

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// Doc is what a document's otherData says of its job.
type Doc struct {
	Size   int   // the job's ranks
	Failed []int // the ranks without a dump
	Zero   int64 // the clock's reading at time 0: Unix nanoseconds in golaunch's and the runtime's merges
}

// docHead opens every document a Merger writes.
const docHead = `{"displayTimeUnit":"ns","traceEvents":[`

// docTail opens the line that ends the events and holds otherData.
const docTail = `],"otherData":`

// Continue copies a document that a Merger wrote, read from r, to w, and returns a
// Merger that goes on with it: Add the dumps of ranks in add that the document names
// failed (Doc.Failed), then Close with the Job that names the ranks still without a dump. The copy leaves out the processes Close wrote for the failed
// ranks; Close writes those that remain. Add places a dump on the document's clock with
// the offset it is given: a dump's Origin, when Doc.Zero is a wall-clock time. An event
// that starts before time 0 is cut at 0. Close pairs the flows between the added ranks
// and those of the document, which the document names in the "msg" and "peer" args of
// its Send and Match events, and numbers them after the document's.
//
// Continue reads the document one line at a time; it keeps the ends of the flows to and
// from the ranks in add.
func Continue(w io.Writer, r io.Reader, add []int) (*Merger, Doc, error) {
	m := &Merger{w: bufio.NewWriterSize(w, 256<<10), first: true, ranks: make(map[int]bool)}
	m.w.WriteString(docHead)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	var doc Doc
	peers := make([][]byte, len(add)) // an event's args naming a rank of add as its peer
	for i, a := range add {
		peers[i] = []byte(`"peer":` + strconv.Itoa(a) + `,`)
	}
	dropPid := 0 // the pid of the failed rank's process name just left out
	head, tail := false, false
	for sc.Scan() {
		line := sc.Bytes()
		if !head {
			if !bytes.HasPrefix(line, []byte(docHead)) {
				return nil, doc, fmt.Errorf("trace: not a document of gorma's merge (it does not begin %s)", docHead)
			}
			line, head = line[len(docHead):], true
		}
		if bytes.HasPrefix(line, []byte(docTail)) {
			var err error
			if doc, err = readOtherData(line[len(docTail):]); err != nil {
				return nil, doc, err
			}
			tail = true
			break
		}
		line = bytes.TrimSuffix(line, []byte(","))
		if len(line) == 0 {
			continue
		}
		ev, err := readDocEvent(line, peers)
		if err != nil {
			return nil, doc, err
		}
		switch {
		case ev.Name == "process_name" && strings.HasSuffix(ev.Args.Name, noTimeline):
			dropPid = ev.Pid
			continue
		case ev.Name == "process_sort_index" && ev.Pid == dropPid:
			continue
		case ev.Name == "process_name":
			m.ranks[ev.Pid-1] = true
		case ev.Ph == "s" || ev.Ph == "f":
			m.flows.after = max(m.flows.after, ev.ID)
		case ev.Ph == "X" && ev.Args.Msg != 0 && ev.Args.Peer != nil && slices.Contains(add, int(*ev.Args.Peer)):
			if err := m.keepEnd(ev); err != nil {
				return nil, doc, err
			}
		}
		dropPid = 0
		m.line(line)
	}
	if err := sc.Err(); err != nil {
		return nil, doc, err
	}
	if !tail {
		return nil, doc, fmt.Errorf("trace: the document ends before its otherData")
	}
	m.base, m.stride = doc.Zero, doc.Size
	return m, doc, nil
}

// docEvent is what Continue reads of one event of a document.
type docEvent struct {
	Name, Cat, Ph string
	Ts, Dur       json.Number
	Pid, Tid, ID  int
	Args          struct {
		Name string
		Peer *int32
		Msg  uint64
	}
}

// readDocEvent reads the line of one event, decoding it only when it may matter to
// Continue: a metadata event, a flow, or an event with a message's number whose args
// hold one of peers.
func readDocEvent(line []byte, peers [][]byte) (docEvent, error) {
	var ev docEvent
	keep := bytes.Contains(line, []byte(`"ph":"M"`)) || bytes.Contains(line, []byte(`"cat":"flow"`)) ||
		bytes.Contains(line, []byte(`"msg":`)) && slices.ContainsFunc(peers, func(p []byte) bool { return bytes.Contains(line, p) })
	if !keep {
		return ev, nil
	}
	if err := json.Unmarshal(line, &ev); err != nil {
		return ev, fmt.Errorf("trace: an event of the document: %w", err)
	}
	return ev, nil
}

// keepEnd keeps the end of a flow that ev, a Send or Match event of the document, holds.
func (m *Merger) keepEnd(ev docEvent) error {
	start, err1 := parseTime(ev.Ts)
	dur, err2 := parseTime(ev.Dur)
	if err1 != nil || err2 != nil {
		return fmt.Errorf("trace: the times %s, %s of an event of the document", ev.Ts, ev.Dur)
	}
	me := int32(ev.Pid - 1)
	switch ev.Cat {
	case Send.String():
		key := flowKey{me, *ev.Args.Peer, ev.Args.Msg}
		m.flows.sends = append(m.flows.sends, flowOut{key, inside(start, start+dur), int32(ev.Tid), uint32(len(m.flows.sends))})
	case Match.String():
		key := flowKey{*ev.Args.Peer, me, ev.Args.Msg}
		m.flows.ends = append(m.flows.ends, flowIn{key, start, start + dur, int32(ev.Tid)})
	}
	return nil
}

// parseTime reads a time appendTime wrote, in nanoseconds.
func parseTime(n json.Number) (int64, error) {
	us, frac, ok := strings.Cut(string(n), ".")
	if !ok || len(frac) < 3 {
		return 0, fmt.Errorf("trace: time %q", n)
	}
	a, err := strconv.ParseInt(us, 10, 64)
	if err != nil {
		return 0, err
	}
	b, err := strconv.ParseInt(frac[:3], 10, 64)
	if err != nil {
		return 0, err
	}
	return a*1000 + b, nil
}

// readOtherData reads the end of a document: its otherData, then "}".
func readOtherData(b []byte) (Doc, error) {
	var od struct {
		Producer string
		Ranks    int
		Failed   []int  `json:"failed_ranks"`
		Zero     *int64 `json:"clock_zero_ns"`
	}
	d := json.NewDecoder(bytes.NewReader(b))
	if err := d.Decode(&od); err != nil {
		return Doc{}, fmt.Errorf("trace: the document's otherData: %w", err)
	}
	if od.Producer != "gorma" || od.Ranks <= 0 || od.Zero == nil {
		return Doc{}, fmt.Errorf("trace: the document's otherData names no job size or clock zero (producer %q)", od.Producer)
	}
	return Doc{Size: od.Ranks, Failed: od.Failed, Zero: *od.Zero}, nil
}
