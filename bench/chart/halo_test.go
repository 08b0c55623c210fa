package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCollectHaloSection appends the section JSON that scripts/compare-halo.sh writes
// (testdata/halo.json: one row met its target, one has a cell not measured) and renders
// it: the section follows the steps' ones, its table has every system's column, the
// ratios and the target.
func TestCollectHaloSection(t *testing.T) {
	out := filepath.Join(t.TempDir(), "benchmarks.json")
	if err := run([]string{"collect", "--dir", "testdata", "--cores", "2", "--out", out, "--section", "testdata/halo.json"}, nil); err != nil {
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
	if last.ID != "halo" || len(last.Tables) != 1 || len(last.Tables[0].Rows) != 2 {
		t.Fatalf("last section %q with %d tables, want halo with one table of 2 rows", last.ID, len(last.Tables))
	}
	var page bytes.Buffer
	if err := run([]string{"page", "--in", out}, &page); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"## Halo column exchange with a vector datatype, 2 ranks\n\nHalo intro.\n",
		"### One exchange (us, lower is better)",
		"| matrix | gorma | gorma --manual | Open MPI | MPICH | gorma / gorma --manual | gorma / Open MPI | gorma / MPICH | target |",
		"| N=64 (512 B columns) | 117 | 115 | 1.28 | 1.2 | 1.01x | 91.28x | 97.44x | gorma <= 1.00x Open MPI, <= 1.00x MPICH **MISS** |",
		"| N=256 (2 KiB columns) | 120 | 118 | 2.74 | - | 1.02x | 43.91x | - | gorma <= 1.00x Open MPI, <= 1.00x MPICH |",
	} {
		if !strings.Contains(page.String(), want) {
			t.Errorf("the page lacks %q", want)
		}
	}
}
