package trace

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// TestContinue merges a ring exchange of four ranks without rank 2, as the gatherer does
// when rank 2 died, and continues the document with rank 2's dump, as golaunch does
// with the flight recorder that outlived it. The result holds every rank's events and
// every flow, rank 2 named dead, and no rank failed.
func TestContinue(t *testing.T) {
	const n, rounds = 4, 3
	dumps, offsets := ring(n, rounds, 1024, make([]int64, n))
	var first bytes.Buffer
	kept := []Dump{dumps[0], dumps[1], dumps[3]}
	st, err := MergeJob(&first, kept, []int64{offsets[0], offsets[1], offsets[3]}, Job{Size: n, Failed: []int{2}})
	if err != nil {
		t.Fatal(err)
	}
	if st.Flows != (n-2)*rounds {
		t.Fatalf("the first merge wrote %d flows, want %d", st.Flows, (n-2)*rounds)
	}
	var out bytes.Buffer
	m, doc, err := Continue(&out, bytes.NewReader(first.Bytes()), []int{2})
	if err != nil {
		t.Fatal(err)
	}
	if doc.Size != n || len(doc.Failed) != 1 || doc.Failed[0] != 2 {
		t.Fatalf("Continue read %+v, want %d ranks and failed [2]", doc, n)
	}
	died := map[int]string{2: "killed by signal 9 (SIGKILL)"}
	m.Died(died)
	if err := m.Add(dumps[2], offsets[2]); err != nil {
		t.Fatal(err)
	}
	st, err = m.Close(Job{Size: n, Died: died})
	if err != nil {
		t.Fatal(err)
	}
	if st.Flows != 2*rounds || st.Unpaired != 0 {
		t.Errorf("Continue's stats %+v, want the %d flows to and from rank 2, none unpaired", st, 2*rounds)
	}
	tr := parseTrace(t, out.Bytes())
	checkTrace(t, tr, n)
	flows, names := 0, map[int]string{}
	for _, e := range tr.TraceEvents {
		switch {
		case e.Ph == "s":
			flows++
		case e.Ph == "M" && e.Name == "process_name":
			names[*e.Pid] = e.Args["name"].(string)
		}
	}
	if flows != n*rounds {
		t.Errorf("%d flows, want %d", flows, n*rounds)
	}
	if want := "rank 2 (died before Finalize: killed by signal 9 (SIGKILL))"; len(names) != n || names[3] != want {
		t.Errorf("process names %v, want %d with pid 3 %q", names, n, want)
	}
	var od struct {
		OtherData struct {
			Failed []int             `json:"failed_ranks"`
			Died   map[string]string `json:"died_ranks"`
		} `json:"otherData"`
	}
	if err := json.Unmarshal(out.Bytes(), &od); err != nil {
		t.Fatal(err)
	}
	if o := od.OtherData; len(o.Failed) != 0 || o.Died["2"] != died[2] {
		t.Errorf("otherData %+v, want no failed rank and rank 2 dead", o)
	}
}

// TestContinueRejects: Continue takes only a document of gorma's merge with its job's
// size, and its Merger only ranks the document has no events of.
func TestContinueRejects(t *testing.T) {
	dumps, offsets := ring(2, 1, 64, make([]int64, 2))
	var doc bytes.Buffer
	if _, err := MergeJob(&doc, dumps, offsets, Job{Size: 2}); err != nil {
		t.Fatal(err)
	}
	var plain bytes.Buffer
	if _, err := Merge(&plain, dumps, offsets); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		doc  string
		add  []int
	}{
		{"not a document", `{"traceEvents":[]}`, nil},
		{"cut short", doc.String()[:doc.Len()/2], nil},
		{"no job size", plain.String(), nil},
	} {
		if _, _, err := Continue(&bytes.Buffer{}, strings.NewReader(c.doc), c.add); err == nil {
			t.Errorf("%s: Continue took it", c.name)
		}
	}
	m, _, err := Continue(&bytes.Buffer{}, bytes.NewReader(doc.Bytes()), []int{1})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Add(dumps[1], offsets[1]); err == nil {
		t.Error("Add took a second dump of a rank the document has events of")
	}
}
