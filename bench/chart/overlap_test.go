package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCollectOverlapSection appends the section JSON that scripts/compare-overlap.sh
// writes (testdata/overlap.json: times in us, the overlap in % with no ratios, a target
// met and one missed) and renders it: each row in its own unit, the targets beside.
func TestCollectOverlapSection(t *testing.T) {
	out := filepath.Join(t.TempDir(), "benchmarks.json")
	if err := run([]string{"collect", "--dir", "testdata", "--cores", "2", "--out", out, "--section", "testdata/overlap.json"}, nil); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rep, err := decodeReport(f)
	if err != nil {
		t.Fatal(err)
	}
	last := rep.Sections[len(rep.Sections)-1]
	if last.ID != "overlap" || len(last.Tables) != 1 || len(last.Tables[0].Rows) != 5 {
		t.Fatalf("last section %q with %d tables, want overlap with one table of 5 rows", last.ID, len(last.Tables))
	}
	var page bytes.Buffer
	if err := run([]string{"page", "--in", out}, &page); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"## Nonblocking Allreduce beside a computation, 2 ranks\n\nOverlap intro.\n",
		"| figure | gorma | Open MPI | MPICH | gorma / Open MPI | gorma / MPICH | target |",
		"| Allreduce alone (t_coll) | 474 us | 158 us | 224 us | 3.00x | 2.12x |  |",
		"| Iallreduce + compute + Wait (t_ovl) | 1604 us | 2011 us | 1251 us | 0.80x | 1.28x | gorma below its blocking sum **MISS** |",
		"| overlap | -97.6 % | -1067 % | -358 % | - | - | gorma >= Open MPI, >= MPICH ok |",
	} {
		if !strings.Contains(page.String(), want) {
			t.Errorf("the page lacks %q", want)
		}
	}
}
