package trace

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// ring records a ring exchange on n ranks: each rank sends to the next and receives
// from the one before, rounds times, with a collective between rounds. Rank r's clock
// reads the reference clock minus skew[r]; the returned offsets undo that.
func ring(n, rounds, capacity int, skew []int64) ([]Dump, []int64) {
	recs := make([]*Recorder, n)
	for r := range recs {
		recs[r] = nsRecorder(r, capacity)
	}
	label := func(r int, s string) uint16 { l, _ := recs[r].Label(s); return l }
	sent := make([][]uint64, n) // sent[r][peer]: messages numbered so far
	for r := range sent {
		sent[r] = make([]uint64, n)
	}
	var t int64 = 1000
	for range rounds {
		for r := range n {
			to, from := (r+1)%n, (r+n-1)%n
			local := func(x int64) int64 { return x - skew[r] }
			sent[r][to]++
			recs[r].Record(Event{Kind: Send, Start: local(t + int64(r)*10), End: local(t + int64(r)*10 + 50),
				Bytes: 8, Flow: sent[r][to], Peer: int32(to), Tag: 0, Label: label(r, "Send")})
			// The receive call spans the exchange; its match starts after the sender's send.
			recs[r].Record(Event{Kind: Recv, Start: local(t), End: local(t + 400), Bytes: 8,
				Peer: int32(from), Tag: 0, Label: label(r, "Recv")})
			recs[r].Record(Event{Kind: Match, Start: local(t + int64(from)*10 + 100), End: local(t + int64(from)*10 + 120),
				Bytes: 8, Flow: sent[from][r] + boolInt(from >= r), Peer: int32(from), Tag: 0, Label: label(r, "Recv")})
		}
		t += 500
		for r := range n {
			recs[r].Record(Event{Kind: Collective, Start: t - skew[r], End: t + 200 - skew[r], Bytes: 64,
				Peer: NoPeer, Tag: -1, Label: label(r, "Allreduce recursive doubling")})
		}
		t += 300
	}
	dumps := make([]Dump, n)
	offsets := make([]int64, n)
	for r := range recs {
		dumps[r] = recs[r].Snapshot()
		offsets[r] = skew[r]
	}
	return dumps, offsets
}

// boolInt is 1 for true: rank r's Match of a message from a higher rank is recorded
// before that rank's Send in ring's loop, so it numbers the message one ahead.
func boolInt(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

type jsonEvent struct {
	Name string         `json:"name"`
	Cat  string         `json:"cat"`
	Ph   string         `json:"ph"`
	Ts   *float64       `json:"ts"`
	Dur  *float64       `json:"dur"`
	Pid  *int           `json:"pid"`
	Tid  *int           `json:"tid"`
	ID   *uint64        `json:"id"`
	Bp   string         `json:"bp"`
	Args map[string]any `json:"args"`
}

type jsonTrace struct {
	DisplayTimeUnit string      `json:"displayTimeUnit"`
	TraceEvents     []jsonEvent `json:"traceEvents"`
}

// ns converts a trace time back to nanoseconds as Perfetto's importer does.
func ns(us float64) int64 { return int64(us * 1000) }

func TestMergeStructure(t *testing.T) {
	const n = 4
	skew := []int64{0, 5_000_000, -3_000_000, 123_456_789}
	dumps, offsets := ring(n, 5, 1024, skew)
	var buf bytes.Buffer
	st, err := Merge(&buf, dumps, offsets)
	if err != nil {
		t.Fatal(err)
	}
	if st.Unpaired != 0 || st.Reversed != 0 || st.Flows != n*5 {
		t.Fatalf("stats %+v, want %d flows, none unpaired or reversed", st, n*5)
	}
	tr := parseTrace(t, buf.Bytes())
	checkTrace(t, tr, n)
	// Without the offsets the skewed clocks put receives before their sends.
	if st, err := Merge(&bytes.Buffer{}, dumps, make([]int64, n)); err != nil || st.Reversed == 0 {
		t.Errorf("merge on unaligned clocks: %+v, %v; want reversed flows", st, err)
	}
}

// TestMergeDropped merges rings too small to hold the run: flows whose other end was
// overwritten are left out, and every flow written still has both ends.
func TestMergeDropped(t *testing.T) {
	const n = 3
	dumps, offsets := ring(n, 10, 8, make([]int64, n))
	dumps[0].Events, dumps[0].Seqs = dumps[0].Events[3:], dumps[0].Seqs[3:] // as if overwritten
	var buf bytes.Buffer
	st, err := Merge(&buf, dumps, offsets)
	if err != nil {
		t.Fatal(err)
	}
	if st.Unpaired == 0 || st.Flows == 0 {
		t.Fatalf("stats %+v: want some flows and some unpaired ends", st)
	}
	tr := parseTrace(t, buf.Bytes())
	checkTrace(t, tr, n)
	if !strings.Contains(buf.String(), "earlier events dropped") {
		t.Error("process names do not say that events were dropped")
	}
}

func parseTrace(t *testing.T, b []byte) jsonTrace {
	t.Helper()
	var tr jsonTrace
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatalf("merged trace is not JSON: %v", err)
	}
	if err := json.Unmarshal(b, &tr); err != nil {
		t.Fatal(err)
	}
	if tr.DisplayTimeUnit != "ns" || len(tr.TraceEvents) == 0 {
		t.Fatalf("displayTimeUnit %q, %d events", tr.DisplayTimeUnit, len(tr.TraceEvents))
	}
	return tr
}

type thread struct{ pid, tid int }

// checkTrace checks the merged trace of n ranks: a named process per rank, slices that
// nest on every thread, and flows from each Send slice to a Match slice on the receiver.
func checkTrace(t *testing.T, tr jsonTrace, n int) {
	t.Helper()
	names := map[int]string{}
	slicesOf := map[thread][]jsonEvent{}
	type end struct {
		e     jsonEvent
		count int
	}
	starts := map[uint64]jsonEvent{}
	ends := map[uint64]*end{}
	for _, e := range tr.TraceEvents {
		if e.Pid == nil || e.Tid == nil || e.Ph == "" {
			t.Fatalf("event without ph, pid or tid: %+v", e)
		}
		switch e.Ph {
		case "M":
			if e.Name == "process_name" {
				names[*e.Pid], _ = e.Args["name"].(string)
			}
		case "X":
			if e.Ts == nil || e.Dur == nil || *e.Dur < 0 {
				t.Fatalf("complete event without ts or dur: %+v", e)
			}
			slicesOf[thread{*e.Pid, *e.Tid}] = append(slicesOf[thread{*e.Pid, *e.Tid}], e)
		case "s":
			if _, dup := starts[*e.ID]; dup {
				t.Fatalf("flow %d starts twice", *e.ID)
			}
			starts[*e.ID] = e
		case "f":
			if e.Bp != "e" {
				t.Errorf("flow end %d binds to %q, want the enclosing slice", *e.ID, e.Bp)
			}
			if ends[*e.ID] == nil {
				ends[*e.ID] = &end{e: e}
			}
			ends[*e.ID].count++
		default:
			t.Fatalf("unexpected phase %q", e.Ph)
		}
	}
	for r := range n {
		if !strings.HasPrefix(names[r+1], "rank ") {
			t.Errorf("pid %d named %q", r+1, names[r+1])
		}
	}
	for th, ss := range slicesOf {
		checkNesting(t, th, ss)
	}
	if len(starts) != len(ends) {
		t.Errorf("%d flow starts, %d flow ends", len(starts), len(ends))
	}
	for id, s := range starts {
		f := ends[id]
		if f == nil || f.count != 1 {
			t.Errorf("flow %d: %v ends, want 1", id, f)
			continue
		}
		if ns(*f.e.Ts) < ns(*s.Ts) {
			t.Errorf("flow %d ends at %v before its start at %v", id, *f.e.Ts, *s.Ts)
		}
		send := enclosing(t, slicesOf[thread{*s.Pid, *s.Tid}], ns(*s.Ts))
		match := enclosing(t, slicesOf[thread{*f.e.Pid, *f.e.Tid}], ns(*f.e.Ts))
		if send.Cat != "send" || match.Cat != "match" {
			t.Errorf("flow %d joins a %q slice to a %q slice", id, send.Cat, match.Cat)
			continue
		}
		if int(send.Args["peer"].(float64))+1 != *f.e.Pid || int(match.Args["peer"].(float64))+1 != *s.Pid {
			t.Errorf("flow %d: send on pid %d to peer %v, match on pid %d from peer %v",
				id, *s.Pid, send.Args["peer"], *f.e.Pid, match.Args["peer"])
		}
		if send.Args["msg"] != match.Args["msg"] {
			t.Errorf("flow %d joins message %v to message %v", id, send.Args["msg"], match.Args["msg"])
		}
	}
}

// checkNesting checks that the slices of one thread nest, in nanoseconds as Perfetto
// reads them: the JSON format allows no partial overlap.
func checkNesting(t *testing.T, th thread, ss []jsonEvent) {
	t.Helper()
	var stack []int64
	for _, s := range ss { // Merge writes each rank's slices by start, longest first
		start, end := ns(*s.Ts), ns(*s.Ts)+ns(*s.Dur)
		for len(stack) > 0 && stack[len(stack)-1] <= start {
			stack = stack[:len(stack)-1]
		}
		if len(stack) > 0 && stack[len(stack)-1] < end {
			t.Errorf("thread %v: slice %s [%d, %d] overlaps its parent ending at %d", th, s.Name, start, end, stack[len(stack)-1])
		}
		stack = append(stack, end)
	}
}

// enclosing returns the innermost slice of ss that contains ts.
func enclosing(t *testing.T, ss []jsonEvent, ts int64) jsonEvent {
	t.Helper()
	var best jsonEvent
	bestDur := int64(math.MaxInt64)
	for _, s := range ss {
		start, dur := ns(*s.Ts), ns(*s.Dur)
		if start <= ts && ts <= start+dur && dur < bestDur {
			best, bestDur = s, dur
		}
	}
	if bestDur == math.MaxInt64 {
		t.Errorf("no slice contains %d", ts)
	}
	return best
}

func TestAppendTimeExact(t *testing.T) {
	for _, v := range []int64{0, 1, 999, 1000, 1001, 123_456_789, 86_400_000_000_000, 1<<50 + 7} {
		b := appendTime(nil, v)
		var f float64
		if err := json.Unmarshal(b, &f); err != nil {
			t.Fatal(err)
		}
		if got := ns(f); got != v {
			t.Errorf("appendTime(%d) = %s, read back as %d", v, b, got)
		}
	}
}

func TestMergeRejects(t *testing.T) {
	d := sampleDump()
	if _, err := Merge(&bytes.Buffer{}, []Dump{d, d}, nil); err == nil {
		t.Error("two dumps of one rank merged")
	}
	if _, err := Merge(&bytes.Buffer{}, []Dump{d}, []int64{1, 2}); err == nil {
		t.Error("merged with more offsets than dumps")
	}
}

// TestMergeJob merges the dumps of ranks 0, 1 and 3 of a job of 4 whose rank 2 failed:
// otherData names the size and the failed rank, rank 2 is a named process without
// events, tids stay unique, and a failed rank that has a dump is refused.
func TestMergeJob(t *testing.T) {
	dumps, offsets := ring(4, 2, 1024, make([]int64, 4))
	dumps = append(dumps[:2], dumps[3])
	offsets = append(offsets[:2], offsets[3])
	var buf bytes.Buffer
	if _, err := MergeJob(&buf, dumps, offsets, Job{Size: 4, Failed: []int{2}}); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		OtherData struct {
			Producer string `json:"producer"`
			Ranks    int    `json:"ranks"`
			Failed   []int  `json:"failed_ranks"`
		} `json:"otherData"`
		TraceEvents []jsonEvent `json:"traceEvents"`
	}
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatalf("%v\n%s", err, buf.Bytes())
	}
	if o := doc.OtherData; o.Producer != "gorma" || o.Ranks != 4 || len(o.Failed) != 1 || o.Failed[0] != 2 {
		t.Errorf("otherData %+v, want producer gorma, 4 ranks, failed [2]", o)
	}
	names := map[int]string{}
	tids := map[int]int{}
	for _, e := range doc.TraceEvents {
		if e.Ph == "M" && e.Name == "process_name" {
			names[*e.Pid] = e.Args["name"].(string)
		}
		if e.Ph == "M" {
			if p, ok := tids[*e.Tid]; ok && p != *e.Pid {
				t.Errorf("tid %d is in processes %d and %d", *e.Tid, p, *e.Pid)
			}
			tids[*e.Tid] = *e.Pid
		}
		if e.Ph == "X" && *e.Pid == 3 {
			t.Errorf("failed rank 2 has an event: %+v", e)
		}
	}
	if len(names) != 4 || names[3] != "rank 2 (failed before Finalize; no timeline)" {
		t.Errorf("process names %v, want 4 with rank 2's saying it failed", names)
	}
	died := map[int]string{1: "killed by signal 9 (SIGKILL)", 2: "exited with code 3"}
	var dead bytes.Buffer
	if _, err := MergeJob(&dead, dumps, offsets, Job{Size: 4, Failed: []int{2}, Died: died}); err != nil {
		t.Fatal(err)
	}
	names = map[int]string{}
	for _, e := range parseTrace(t, dead.Bytes()).TraceEvents {
		if e.Ph == "M" && e.Name == "process_name" {
			names[*e.Pid] = e.Args["name"].(string)
		}
	}
	if names[2] != "rank 1 (died before Finalize: killed by signal 9 (SIGKILL))" ||
		names[3] != "rank 2 (died before Finalize: exited with code 3; no timeline)" || names[1] != "rank 0" {
		t.Errorf("process names %v: want ranks 1 and 2 named dead, 2 without a timeline, rank 0 plain", names)
	}
	if _, err := MergeJob(&bytes.Buffer{}, dumps, offsets, Job{Failed: []int{1}}); err == nil {
		t.Error("a failed rank with a dump merged")
	}
	if _, err := MergeJob(&bytes.Buffer{}, dumps, offsets, Job{Failed: []int{2, 2}}); err == nil {
		t.Error("a failed rank given twice merged")
	}
}

// TestMergeOpen: a dump's open calls become complete events that end when the dump was
// taken, with "open":true and no seq, nested on the rank's lanes like the others.
func TestMergeOpen(t *testing.T) {
	dumps, offsets := ring(2, 2, 64, make([]int64, 2))
	last := dumps[0].Events[len(dumps[0].Events)-1]
	dumps[0].Open = []Event{
		{Kind: Send, Start: last.End + 10, End: last.End + 5000, Bytes: 1 << 20, Peer: 1, Tag: 7, Label: 0},
		{Kind: Wait, Start: last.End + 20, End: last.End + 5000, Bytes: -1, Peer: 1, Tag: -1, Label: 0},
	}
	var buf bytes.Buffer
	st, err := Merge(&buf, dumps, offsets)
	if err != nil {
		t.Fatal(err)
	}
	tr := parseTrace(t, buf.Bytes())
	checkTrace(t, tr, 2)
	var open []jsonEvent
	for _, e := range tr.TraceEvents {
		if e.Ph == "X" && e.Args["open"] == true {
			open = append(open, e)
			if _, ok := e.Args["seq"]; ok || *e.Pid != 1 {
				t.Errorf("open slice %+v has a seq or is not rank 0's", e)
			}
		}
	}
	if st.Open != 2 || len(open) != 2 || open[0].Cat != "send" || ns(*open[0].Dur) != 4990 || open[0].Args["tag"] != 7.0 {
		t.Errorf("stats %+v, open slices %+v; want the Send of tag 7 lasting 4990 ns and the Wait", st, open)
	}
}

// TestMergeFilesStreams: merging dump files, one at a time, writes what merging the
// same dumps in memory writes.
func TestMergeFilesStreams(t *testing.T) {
	const n = 3
	skew := []int64{0, 7_000_000, -2_000_000}
	dumps, offsets := ring(n, 4, 64, skew)
	dumps[1].Open = []Event{{Kind: Recv, Start: 9_000, End: 9_500, Bytes: 8, Peer: 0, Tag: 0, Label: 0}}
	dir := t.TempDir()
	var paths []string
	for i, d := range dumps {
		b, err := AppendDump(nil, d)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, strconv.Itoa(i))
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	job := Job{Size: n + 1, Failed: []int{n}}
	var mem, files bytes.Buffer
	if _, err := MergeJob(&mem, dumps, offsets, job); err != nil {
		t.Fatal(err)
	}
	if _, err := MergeFilesJob(&files, paths, offsets, job); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(mem.Bytes(), files.Bytes()) {
		t.Errorf("merged from files:\n%s\nin memory:\n%s", files.Bytes(), mem.Bytes())
	}
	checkTrace(t, parseTrace(t, files.Bytes()), n)
}

func TestPointer(t *testing.T) {
	d := sampleDump()
	if got, want := Pointer(3, d, 95+31_200_000_000), "trace: rank 3 last event seq=9, 31.2s ago"; got != want {
		t.Errorf("Pointer = %q, want %q", got, want)
	}
	if got, want := Pointer(1, Dump{}, 0), "trace: rank 1 recorded no event"; got != want {
		t.Errorf("Pointer = %q, want %q", got, want)
	}
}

// TestMergeHeldMatch: a Recv event with a flow holds its message's Match at its end. The
// merge writes that Match, named MatchName (with Internal after an internal Recv's name)
// whether the dump's labels hold the name or not, and flows end on it.
func TestMergeHeldMatch(t *testing.T) {
	sender, receiver := nsRecorder(0, 64), nsRecorder(1, 64)
	label := func(r *Recorder, s string) uint16 { l, _ := r.Label(s); return l }
	sender.Record(Event{Kind: Send, Start: 1000, End: 1050, Bytes: 8, Flow: 1, Peer: 1, Label: label(sender, "Send")})
	sender.Record(Event{Kind: Send, Start: 2000, End: 2050, Bytes: 16, Flow: 2, Peer: 1, Tag: -1,
		Label: label(sender, "Send"+Internal)})
	label(receiver, MatchName+Internal) // the internal Match's name is in the table; the user's is not
	receiver.Record(Event{Kind: Recv, Start: 900, End: 1400, Bytes: 8, Flow: 1, Peer: 0, Label: label(receiver, "Recv")})
	receiver.Record(Event{Kind: Recv, Start: 1900, End: 2400, Bytes: 16, Flow: 2, Peer: 0, Tag: -1,
		Label: label(receiver, "Recv"+Internal)})
	var buf bytes.Buffer
	st, err := Merge(&buf, []Dump{sender.Snapshot(), receiver.Snapshot()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if st.Flows != 2 || st.Unpaired != 0 || st.Reversed != 0 {
		t.Fatalf("stats %+v, want 2 flows, none unpaired or reversed", st)
	}
	tr := parseTrace(t, buf.Bytes())
	checkTrace(t, tr, 2)
	got := map[string][2]int64{}
	for _, e := range tr.TraceEvents {
		if e.Ph == "X" && *e.Pid == 2 {
			got[e.Cat+" "+e.Name] = [2]int64{ns(*e.Ts), ns(*e.Ts + *e.Dur)}
		}
	}
	// Times come back through Perfetto's truncation: within a nanosecond.
	near := func(a, b int64) bool { return a-b <= 1 && b-a <= 1 }
	for _, in := range []string{"", Internal} {
		recv, okr := got["recv Recv"+in]
		match, okm := got["match "+MatchName+in]
		if !okr || !okm || !near(recv[1]-recv[0], 500) || !near(match[1], recv[1]) || !near(match[1]-match[0], heldMatchLen) {
			t.Errorf("Recv%s at %v (%v), its Match at %v (%v): want a Match of %d ns at the end of a Recv of 500",
				in, recv, okr, match, okm, heldMatchLen)
		}
	}
}
