package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestABI renders testdata/abi.json: a table per benchmark and rank count, a row per
// case in the order of the runs, each system's median and spread, gorma's ratio to each
// peer and, in the ping-pong table, gorma − MPICH judged against 0.2 us. The MPICH run
// of 4 ranks on 2 cores gives no ratio, a missing system prints "-", and the failed run
// is named.
func TestABI(t *testing.T) {
	a, err := loadABI("testdata/abi.json")
	if err != nil {
		t.Fatal(err)
	}
	page := renderABI(a)
	for _, want := range []string{
		"## MPICH programs on gorma's library\n\n",
		"From `scripts/compare-abi.sh 3`: 2 cores (AMD EPYC), 23 GiB, 1 NUMA node(s), go1.26.0, MPICH 4.0.2, Open MPI 4.1.4, 3 repetitions.",
		"Load average (1, 5, 15 min) on the 2 cores: 0.10 0.20 0.30 at the start, 0.50 0.40 0.30 at the end.",
		"Runs that failed (missing from the figures): rep 3: allreduce 4 mpich: exit 124.\n",
		"### Ping-pong latency, 2 ranks (us, lower is better)\n\n`bench/mpi/pingpong.c`'s latency test:",
		"| case | gorma | MPICH | Open MPI | gorma / MPICH | gorma / Open MPI | gorma − MPICH (≤ 0.2 us at 8 B) |\n" +
			"|---|---:|---:|---:|---:|---:|---:|\n",
		"| 8 B | 0.33 [0.31, 0.35] | 0.22 [0.2, 0.25] | 0.3 [0.3, 0.4] | 1.50x | 1.10x | 0.11 ok |\n",
		"| 1 KiB | 1.1 [1, 1.2] | 0.85 [0.8, 0.9] | 1.1 [1, 1.2] | 1.29x | 1.00x | - |\n",
		"### Allreduce (float64 sum), 2 ranks (us, lower is better)\n\n`bench/mpi/allreducebench.c`'s allreduce test:",
		"| case | gorma | MPICH | Open MPI | gorma / MPICH | gorma / Open MPI |\n|---|---:|---:|---:|---:|---:|\n",
		"| 8 B | 0.55 [0.5, 0.6] | 0.5 [0.5, 0.5] | 1.1 [1, 1.2] | 1.10x | 0.50x |\n",
		"### Allreduce (float64 sum), 4 ranks (us, lower is better)\n\n| case |",
		"| 8 B | 1.1 [1, 1.2] | 45 [40, 50] | 2.2 [2, 2.4] | -[^abi-1] | 0.50x |\n",
		"| acc_lat.float64 | 1 [0.9, 1.1] | 0.5 [0.5, 0.6] | - | 2.00x | - |\n",
		"| NPmpich2 | 45000 [44000, 46000] | 180000 [170000, 190000] | - | 0.25x | - |\n",
		"| hello | 41000 [40000, 42000] | 160000 [150000, 170000] | 82000 [80000, 84000] | 0.26x | 0.50x |\n",
		"[^abi-1]: MPICH with more ranks than the 2 cores",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the section lacks %q:\n%s", want, page)
		}
	}
	if n := strings.Count(page, "`bench/mpi/allreducebench.c`'s allreduce test"); n != 1 {
		t.Errorf("allreduce's figure is described %d times, want once", n)
	}
	if i, j := strings.Index(page, "| NPmpich2 |"), strings.Index(page, "| hello |"); i < 0 || j < i {
		t.Errorf("startup's cases are not in the order of the runs (NPmpich2 first):\n%s", page)
	}
	if !strings.HasSuffix(page, ".\n") || strings.HasSuffix(page, "\n\n") {
		t.Errorf("the section does not end with one newline after its footnote: %q", page[len(page)-20:])
	}
}

// TestABIDiff: gorma − MPICH is rounded to three decimals before it is judged, so that
// the verdict agrees with the figure, and never prints as -0.
func TestABIDiff(t *testing.T) {
	for _, c := range []struct {
		gorma, mpich []float64
		want         string
	}{
		{[]float64{0.51}, []float64{0.31}, "0.2 ok"},
		{[]float64{0.5011}, []float64{0.3}, "0.201 **MISS**"},
		{[]float64{0.3}, []float64{0.3000001}, "0 ok"},
		{[]float64{0.25}, []float64{0.3}, "-0.05 ok"},
		{[]float64{51.2}, []float64{50}, "1.2 **MISS**"},
		{nil, []float64{0.3}, "-"},
		{[]float64{0.3}, nil, "-"},
	} {
		if got := abiDiff(c.gorma, c.mpich); got != c.want {
			t.Errorf("abiDiff(%v, %v) = %q, want %q", c.gorma, c.mpich, got, c.want)
		}
	}
}

// TestABIStrict: an unknown field, benchmark, system or command is an error, and so is
// a run of a rank count the benchmarks do not list; a missing document is none, and
// chart page shows the section when the document lies beside the report.
func TestABIStrict(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ name, doc, want string }{
		{"field", `{"command": "x", "extra": 1}`, `unknown field "extra"`},
		{"cell", `{"command": "x", "benchmarks": [{"bench": "pingpong", "ranks": 2}], "runs": [{"bench": "pingpong", "ranks": 2, "system": "gorma", "case": "8 B", "us": [1], "bytes": 8}]}`, `unknown field "bytes"`},
		{"machine", `{"command": "x", "machine": {"cores": 2, "kernel": "6.1"}}`, `unknown field "kernel"`},
		{"bench", `{"command": "x", "benchmarks": [{"bench": "halo", "ranks": 2}]}`, `unknown benchmark "halo"`},
		{"system", `{"command": "x", "benchmarks": [{"bench": "pingpong", "ranks": 2}], "runs": [{"bench": "pingpong", "ranks": 2, "system": "mvapich", "case": "8 B", "us": [1]}]}`, `unknown system "mvapich"`},
		{"command", `{"command": "x", "benchmarks": [{"bench": "pingpong", "ranks": 2, "commands": {"gorma_off": "x"}}]}`, `unknown system "gorma_off"`},
		{"ranks", `{"command": "x", "benchmarks": [{"bench": "pingpong", "ranks": 2}], "runs": [{"bench": "pingpong", "ranks": 4, "system": "gorma", "case": "8 B", "us": [1]}]}`, "pingpong at 4 ranks, which the benchmarks do not list"},
	} {
		p := filepath.Join(dir, c.name+".json")
		if err := os.WriteFile(p, []byte(c.doc), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := loadABI(p); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
	if a, err := loadABI(filepath.Join(dir, "none.json")); a != nil || err != nil {
		t.Errorf("a missing document: %v, %v", a, err)
	}
	_, out := collectTestdata(t)
	var page strings.Builder
	if err := run([]string{"page", "--in", out}, &page); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(page.String(), "## "+abiTitle) {
		t.Error("chart page shows the section without abi.json beside the report")
	}
	b, err := os.ReadFile("testdata/abi.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(filepath.Dir(out), "abi.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	page.Reset()
	if err := run([]string{"page", "--in", out}, &page); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(page.String(), "\n\n## "+abiTitle+"\n\n") {
		t.Error("chart page does not show abi.json beside the report")
	}
	if tables := strings.Count(page.String(), "\n| case | gorma | MPICH | Open MPI |"); tables != 5 {
		t.Errorf("%d tables of the section on the page, want 5", tables)
	}
}
