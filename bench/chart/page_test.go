package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const (
	committedJSON = "../../docs/benchmarks.json"
	committedPage = "../../docs/benchmarks.md"
	maxPageLines  = 900 // the summary, every section's load line and charts, the 16-core node's sections (point to point and windows too), the cost of observation on both machines, MPICH programs on gorma's library, and the launcher's studies at scale (control plane, gossip, timeline, real programs)
)

// TestCommittedPage renders the committed report and compares it with the committed
// page byte for byte: the page is generated, never edited by hand.
func TestCommittedPage(t *testing.T) {
	f, err := os.Open(committedJSON)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rep, err := decodeReport(f)
	if err != nil {
		t.Fatalf("%s: %v", committedJSON, err)
	}
	if err := loadBeside(rep, filepath.Dir(committedJSON)); err != nil {
		t.Fatal(err)
	}
	got, err := renderPage(rep)
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(committedPage)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("docs/benchmarks.md is not the page rendered from docs/benchmarks.json (first difference at line %d): "+
			"do not edit it by hand; run `go run ./bench/chart page --in docs/benchmarks.json --out docs/benchmarks.md` "+
			"after changing the template, or `make compare` for new figures", firstDiffLine(got, want))
	}
	if n := bytes.Count(got, []byte("\n")); n > maxPageLines {
		t.Errorf("the page has %d lines, want at most %d: it is a reference, keep it short", n, maxPageLines)
	}
}

func firstDiffLine(a, b []byte) int {
	la, lb := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
	for i := range min(len(la), len(lb)) {
		if la[i] != lb[i] {
			return i + 1
		}
	}
	return min(len(la), len(lb)) + 1
}

func TestDecodeReportStrict(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"unknown field", `{"command": "make compare", "extra": 1}`, "unknown field"},
		{"unknown nested field", `{"sections": [{"id": "a", "title": "A", "tables": [], "chart": []}]}`, "unknown field"},
		{"trailing data", `{"command": "x"} {}`, "after the document"},
		{"values do not fit", `{"sections": [{"id": "a", "title": "A", "tables": [{"title": "T", "key": "k", "columns": ["x", "y"],
			"rows": [{"label": "r", "values": [1]}]}]}]}`, "1 values for 2 columns"},
		{"ratios do not fit", `{"sections": [{"id": "a", "title": "A", "tables": [{"title": "T", "key": "k", "columns": ["x", "y"],
			"rows": [{"label": "r", "values": [1, 2], "ratios": [0.5, 1]}]}]}]}`, "2 ratios"},
		{"section without id", `{"sections": [{"title": "A", "tables": []}]}`, "id and a title"},
	} {
		_, err := decodeReport(strings.NewReader(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
	if _, err := decodeReport(strings.NewReader(`{"command": "make compare", "sections": []}`)); err != nil {
		t.Errorf("a minimal report: %v", err)
	}
}

// TestCollectTestdata collects the step outputs of testdata, checks the sections, and
// renders a page from them that stays within the line budget.
func TestCollectTestdata(t *testing.T) {
	docs := t.TempDir()
	out := filepath.Join(docs, "benchmarks.json")
	args := []string{"collect", "--dir", "testdata", "--out", out, "--commit", "0123abc", "--cpu", "AMD EPYC", "--cores", "2", "--start", "2026-01-02T03:04:05Z",
		"--load-start", "1 2 3", "--intro", "p2p=Intro.", "--section", "testdata/sockets.json", "--chart", "rma:charts/rma_put_latency.svg:A chart", "--chart", "rma:charts/missing.svg:gone"}
	if err := run(args, nil); err != nil {
		t.Fatal(err)
	}
	var page bytes.Buffer
	if err := run([]string{"page", "--in", out}, &page); err != nil {
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
	ids := []string{}
	for _, s := range rep.Sections {
		ids = append(ids, s.ID)
		if s.Failed != "" || len(s.Tables) == 0 {
			t.Errorf("section %s: failed %q, %d tables", s.ID, s.Failed, len(s.Tables))
		}
	}
	if strings.Join(ids, ",") != "startup,p2p,rma,allreduce,sockets" {
		t.Errorf("sections %v", ids)
	}
	if rep.Commit != "0123abc" {
		t.Errorf("commit %q, want --commit's", rep.Commit)
	}
	rma := rep.Sections[2]
	if len(rma.Charts) != 1 || rma.Charts[0].File != "charts/rma_put_latency.svg" || len(rma.Charts[0].Series) != 2 {
		t.Errorf("rma charts %+v, want the one with points (testdata/chart_rma_put_latency.json)", rma.Charts)
	}
	for _, want := range []string{
		"| 2 ranks, golaunch vs mpirun | 26 ms | 325 ms | 0.08x | <= 1.00x ok |",
		"| 8 B half RTT, shm vs Open MPI | 0.11 us | 0.14 us | 0.79x | <= 1.00x ok |",
		"| Get 8 B + Flush (vs osc/sm) | - | - | - | not measured |",
		"| alloc_free.allocate, 1 MiB | 24.6 us | 67.7 us | 1567 us | 502 us | 0.36x | 0.02x | 0.05x |",
		"### Barrier; bus bandwidth at 64 MiB over 24 MiB",
		"| bus bandwidth 64 MiB / 24 MiB, 4 ranks | 1.20x | 0.64x | 0.82x | - | -[^allreduce-1] | gorma >= 0.80x ok |",
		"repetitions of each comparison (its start time is `run.start` in docs/benchmarks.json) |",
		"Intro.\n",
		"| 2 cores, AMD EPYC | Allreduce and Barrier | 2 ranks: ",
		" | `commit=0123abc` |\n",
		"![A chart](charts/rma_put_latency.svg)\n\n*From one sweep, 2000 operations a size, a run apart from the tables.*\n",
		"## net.Conn: gorma's sockets, Unix and TCP sockets, shmipc-go\n\nSockets intro.\n",
		"| figure | gorma-shm | gorma-tcp | unix | tcp | shmipc | gorma-shm / gorma-tcp | gorma-shm / unix | gorma-shm / tcp | gorma-shm / shmipc | target |",
		"| 64 B | 4 | - | 20 | 25 | 10 | - | 0.20x | 0.16x | 0.40x | gorma-shm <= 0.50x unix, < 1.00x shmipc ok |",
		"| 1 MiB | - | - | 300 | 250 | 280 | - | - | - | - |  |",
		"| HTTP requests, 16 clients | 30000 req/s | 28000 req/s | 20000 req/s | 10000 req/s | 17000 req/s | 1.07x | 1.50x | 3.00x | 1.76x | gorma-tcp >= 1.50x tcp **MISS** |",
	} {
		if !strings.Contains(page.String(), want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if n := strings.Count(page.String(), "\n"); n > maxPageLines {
		t.Errorf("page of %d lines", n)
	}
}

// TestCollectFailedStep: a step without output gives a section that says so.
func TestCollectFailedStep(t *testing.T) {
	rep, err := collect(collectOptions{dir: t.TempDir(), out: filepath.Join(t.TempDir(), "b.json")})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range rep.Sections {
		if s.Failed == "" {
			t.Errorf("section %s: no failure noted", s.ID)
		}
	}
	page, err := renderPage(rep)
	if err != nil || !bytes.Contains(page, []byte("No result in this run: ")) {
		t.Errorf("page: %v\n%s", err, page)
	}
}
