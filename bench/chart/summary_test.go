package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func TestRatioText(t *testing.T) {
	for _, tc := range []struct {
		q    float64
		want string
	}{
		{0, "< 0.01x"}, {0.004, "< 0.01x"}, {0.006, "0.01x"}, {0.189, "0.19x"}, {1, "1.00x"}, {3, "3.00x"},
		{12.75, "12.75x"}, {math.NaN(), "-"}, {math.Inf(1), "-"},
	} {
		if got := ratioText(tc.q); got != tc.want {
			t.Errorf("ratioText(%v) = %q, want %q", tc.q, got, tc.want)
		}
	}
	for _, tc := range []struct {
		lo, hi float64
		want   string
	}{
		{0.45, 0.71, "0.45–0.71x"}, {0.5, 0.501, "0.50x"}, {0.001, 0.05, "< 0.01–0.05x"},
	} {
		if got := ratioRange(tc.lo, tc.hi); got != tc.want {
			t.Errorf("ratioRange(%v, %v) = %q, want %q", tc.lo, tc.hi, got, tc.want)
		}
	}
	if got := optRatio(nil); got != "-" {
		t.Errorf("optRatio(nil) = %q, want -", got)
	}
}

// TestSumCell: consecutive sizes or rank counts on one side make a range; a point of
// the other side, a tie or a named figure ends it; groups keep their first point's
// order; a higher-is-better figure leads above 1.
func TestSumCell(t *testing.T) {
	b := func(group string, x, q float64) sumPoint { return sumPoint{group: group, x: x, unit: unitBytes, q: q} }
	r := func(x, q float64) sumPoint { return sumPoint{group: "job wall", x: x, unit: unitRanks, q: q} }
	ps := []sumPoint{
		b("16 ranks", 8, 0.5), b("16 ranks", 1024, 0.7), b("16 ranks", 8192, 1.2), b("16 ranks", 65536, 0.9),
		{group: "16 ranks", label: "Barrier", q: 0.6},
		b("8 ranks", 8, 1.001), b("8 ranks", 1024, 0.4), b("8 ranks", 1<<20, 0.3),
		{label: "message rate 8 B", higher: true, q: 0.62}, {label: "1 MiB bandwidth", higher: true, q: 1.86},
		r(8, 0.19), r(16, 0.37), r(64, 1.14), r(128, 0.2),
	}
	for _, tc := range []struct {
		side int
		want string
	}{
		{1, "16 ranks: 8 B–1 KiB (0.50–0.70x), 64 KiB (0.90x), Barrier (0.60x); 8 ranks: 1 KiB–1 MiB (0.30–0.40x); " +
			"1 MiB bandwidth (1.86x); job wall: 8–16 ranks (0.19–0.37x), 128 ranks (0.20x)"},
		{-1, "16 ranks: 8 KiB (1.20x); message rate 8 B (0.62x); job wall: 64 ranks (1.14x)"},
	} {
		if got := sumCell(ps, tc.side); got != tc.want {
			t.Errorf("side %d:\n got %q\nwant %q", tc.side, got, tc.want)
		}
	}
	if got := sumCell(ps[:2], -1); got != "-" {
		t.Errorf("no point trails: %q, want -", got)
	}
}

// TestSummary renders the summary of a report and a 16-core document: the best peer of
// each figure, without an oversubscribed MPICH run or gorma's variants, and each
// section's commit or the report's.
func TestSummary(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	rep := &Report{Commit: "abc1234", Machine: Machine{Cores: 2, CPU: "AMD EPYC"}, Sections: []Section{
		{ID: "allreduce", Title: "Allreduce", Tables: []Table{
			{Title: "Allreduce, 4 ranks: latency", Key: "bytes", Unit: "us", Better: "lower", Columns: []string{"gorma", "Open MPI", "MPICH"}, Rows: []Row{
				{Label: "8", Values: []*float64{f(3), f(4), f(6000)}},
				{Label: "1K", Values: []*float64{f(10), f(8), f(7000)}},
			}},
			{Title: "Barrier; bus bandwidth at 64 MiB over 24 MiB", Key: "figure", Columns: []string{"gorma", "Open MPI", "MPICH"}, Rows: []Row{
				{Label: "Barrier, 4 ranks", Unit: "us", Values: []*float64{f(2), f(4), f(1)}},
				{Label: "bus bandwidth 64 MiB / 24 MiB, 4 ranks", Values: []*float64{f(0.9), f(0.7), f(0.8)}},
			}},
		}},
		{ID: "sockets", Title: "net.Conn", Commit: "def5678", Tables: []Table{
			{Title: "Round trip", Key: "figure", Unit: "us", Better: "lower", Columns: []string{"gorma-shm", "gorma-tcp", "unix", "shmipc"}, Rows: []Row{
				{Label: "64 B", Values: []*float64{f(1), f(0.5), f(10), f(20)}},
			}},
			{Title: "Throughput and rates (higher is better)", Key: "figure", Columns: []string{"gorma-shm", "gorma-tcp", "unix", "shmipc"}, Rows: []Row{
				{Label: "stream, 64 KiB writes", Unit: "MB/s", Values: []*float64{f(300), f(900), f(200), f(100)}},
			}},
		}},
		{ID: "halo", Title: "Halo", Failed: "no output"},
	}}
	rep.Device16 = &Device16{Machine: D16Machine{Cores: 16, CPU: "Xeon"}, Ranks: []D16Ranks{{
		P:         16,
		Allreduce: []D16Row{{Bytes: 8, US: map[string]float64{"gorma": 1, "ompi": 2, "mpich": 4}}},
		Barrier:   D16Row{US: map[string]float64{"gorma": 3, "ompi": 2}},
	}}}
	got := renderSummary(rep)
	for _, want := range []string{
		"## Where gorma leads and trails\n\n",
		" On 2 cores, a sub-microsecond ratio within 0.80x-1.20x is a tie (Method).",
		"| machine | figures | gorma leads | gorma trails | measured |\n|---|---|---|---|---|\n" +
			"| 2 cores, AMD EPYC | Allreduce and Barrier | 4 ranks: 8 B (0.75x), Barrier (0.50x) | 4 ranks: 1 KiB (1.25x) | `commit=abc1234` |\n" +
			"| 2 cores, AMD EPYC | net.Conn, gorma-shm | round trip: 64 B (0.10x); stream: 64 KiB writes (1.50x) | - | `commit=def5678` |\n" +
			"| 16 cores, Xeon | Allreduce and Barrier | 16 ranks: 8 B (0.50x) | 16 ranks: Barrier (1.50x) | not recorded |\n\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the summary lacks %q:\n%s", want, got)
		}
	}
	if got := renderSummary(&Report{}); got != "" {
		t.Errorf("a report without figures: summary %q, want none", got)
	}
}

// TestCommittedSummary: the committed page opens with the summary of both machines, each
// row naming the commit its run measured, and shows the 16-core node's section.
func TestCommittedSummary(t *testing.T) {
	page, err := os.ReadFile(committedPage)
	if err != nil {
		t.Fatal(err)
	}
	text := string(page)
	sum, run := strings.Index(text, "## Where gorma leads and trails\n"), strings.Index(text, "## How to run\n")
	if sum < 0 || run < sum || strings.Count(text[:sum], "\n## ") > 0 {
		t.Fatalf("the page does not open with the summary (at byte %d, How to run at %d)", sum, run)
	}
	d, err := loadDevice16(filepath.Join(filepath.Dir(committedJSON), "device16.json"))
	if err != nil || d == nil {
		t.Fatalf("docs/device16.json: %v", err)
	}
	for _, want := range []string{
		"| 2 cores, ", fmt.Sprintf("| %d cores, %s | Allreduce and Barrier | ", d.Machine.Cores, d.Machine.CPU),
		"\n## 16-core node\n", "\n### Allreduce (float64 sum), 16 ranks: latency (us, lower is better)\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	for _, line := range strings.Split(text[sum:run], "\n") {
		if strings.HasPrefix(line, "| ") && !strings.HasPrefix(line, "| machine ") && !strings.HasSuffix(line, "` |") {
			t.Errorf("a summary row names no commit: %s", line)
		}
	}
}

// TestCommittedRatios: every ratio on the committed page prints as 0.19x: two decimals
// and an x, never a percentage, a multiplication sign or a leading x.
func TestCommittedRatios(t *testing.T) {
	page, err := os.ReadFile(committedPage)
	if err != nil {
		t.Fatal(err)
	}
	good := regexp.MustCompile(`^\d+\.\d\dx$`)
	for i, line := range strings.Split(string(page), "\n") {
		for _, m := range regexp.MustCompile(`\d[\d.]*x\b`).FindAllString(line, -1) {
			if !good.MatchString(m) {
				t.Errorf("line %d: ratio %q is not written as 0.19x", i+1, m)
			}
		}
		if m := regexp.MustCompile(`×|\bx\d`).FindString(line); m != "" {
			t.Errorf("line %d: %q: a ratio is written as 0.19x", i+1, m)
		}
	}
}
