package launcher

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/trace"
)

// TestSaveRing records into a recorder mapped onto a ring file as a rank does, copies the
// file as the agent does once the rank has ended, and merges the copy as golaunch does:
// the timeline holds the events, and the open call of the rank's last hang dump only
// while nothing was recorded after that dump.
func TestSaveRing(t *testing.T) {
	ring, err := newRing(4)
	if err != nil {
		t.Skip("no memfd here:", err)
	}
	defer ring.Close()
	rec, err := trace.MapRecorder(4, 64, ring)
	if err != nil {
		t.Fatal(err)
	}
	l, _ := rec.Label("Send")
	for i := range 3 {
		rec.Record(trace.Event{Kind: trace.Send, Start: rec.Stamp(), End: rec.Stamp(), Bytes: 8, Flow: uint64(i + 1),
			Peer: 0, Tag: 7, Label: l})
	}
	file := filepath.Join(t.TempDir(), "t.json")
	hang := rec.Snapshot()
	now := rec.Now()
	hang.Open = []trace.Event{{Kind: trace.Send, Start: now, End: now, Bytes: 1 << 20, Peer: 0, Tag: 7, Label: l}}
	b, err := trace.AppendDump(nil, hang)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(trace.DumpPath(file, 4), b, 0o644); err != nil {
		t.Fatal(err)
	}
	merge := func() (events, open int) {
		t.Helper()
		path, err := saveRing(ring, file, 4)
		if err != nil || path != ringPath(file, 4) {
			t.Fatalf("saveRing: %q, %v", path, err)
		}
		n, missing, err := mergeRings(file, map[int]string{4: path}, 6, nil)
		if err != nil || n != 1 || len(missing) != 5 {
			t.Fatalf("mergeRings: %d merged, missing %v, %v; want 1 merged and ranks 0-3, 5 missing", n, missing, err)
		}
		var doc struct {
			TraceEvents []traceEvent `json:"traceEvents"`
			OtherData   struct {
				Failed []int `json:"failed_ranks"`
			} `json:"otherData"`
		}
		b, err := os.ReadFile(file)
		if err == nil {
			err = json.Unmarshal(b, &doc)
		}
		if err != nil || len(doc.OtherData.Failed) != 5 {
			t.Fatalf("%v; failed ranks %v, want 5", err, doc.OtherData.Failed)
		}
		for _, e := range doc.TraceEvents {
			switch {
			case e.Ph != "X" || e.Pid != 5:
			case e.Args["open"] == true:
				open++
			default:
				events++
			}
		}
		return events, open
	}
	if events, open := merge(); events != 3 || open != 1 {
		t.Fatalf("%d events and %d open slices, want 3 and the hang dump's open Send", events, open)
	}
	time.Sleep(time.Millisecond)
	rec.Record(trace.Event{Kind: trace.Send, Start: rec.Stamp(), End: rec.Stamp(), Bytes: 8, Peer: 0, Tag: 8, Label: l})
	if events, open := merge(); events != 4 || open != 0 {
		t.Errorf("%d events and %d open slices, want 4 and none: the rank recorded after its hang dump", events, open)
	}
}

func TestTimelineFile(t *testing.T) {
	for _, c := range []struct {
		env       []string
		dir, want string
	}{
		{nil, "/w", ""},
		{[]string{"GORMA_TRACE=/a/t.json"}, "/w", "/a/t.json"},
		{[]string{"GORMA_TRACE=t.json", "X=1"}, "/w", "/w/t.json"},
		{[]string{"GORMA_TRACE=a.json", "GORMA_TRACE=b.json"}, "/w", "/w/b.json"},
	} {
		if got := timelineFile(c.env, c.dir); got != c.want {
			t.Errorf("timelineFile(%q, %q) = %q, want %q", c.env, c.dir, got, c.want)
		}
	}
}

func TestListRanks(t *testing.T) {
	many := make([]int, maxListed+3)
	for i := range many {
		many[i] = i
	}
	if got, want := listRanks([]int{0, 3, 5}), "0, 3, 5"; got != want {
		t.Errorf("listRanks = %q, want %q", got, want)
	}
	if got := listRanks(many); len(got) == 0 || got[len(got)-3:] != "..." {
		t.Errorf("listRanks of %d ranks = %q, want it cut short", len(many), got)
	}
}
