package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDevice16Models checks collectives/design.md's memory models: at p = 16 and 16 MiB on
// a node copying 90 GB/s, the floor moves (3p-1)n bytes at 2C, about 4.4 ms.
func TestDevice16Models(t *testing.T) {
	n, p, c := 16<<20, 16, 90e9
	if got, want := floorUS(n, p, c), 47*float64(n)/(2*c)*1e6; math.Abs(got-want) > 1e-9 || math.Abs(got-4381) > 1 {
		t.Errorf("floorUS = %v, want %v (about 4381 us)", got, want)
	}
	if got := stagedUS(n, p, c) / floorUS(n, p, c); math.Abs(got-79.0/47) > 1e-12 {
		t.Errorf("staged / floor = %v, want 79/47", got)
	}
}

// TestDevice16Collect collects testdata/device16 (a dry run of scripts/device16.sh local:
// one repetition at p = 2, the ar_, cl_ and tw_ files of every system, gorma's at p = 1
// and the pf_ files) and renders its section.
func TestDevice16Collect(t *testing.T) {
	d, err := collectDevice16("testdata/device16")
	if err != nil {
		t.Fatal(err)
	}
	if d.Machine.Cores != 2 || d.Reps != 1 || len(d.Copy) == 0 {
		t.Fatalf("machine %+v, reps %d, copy %v", d.Machine, d.Reps, d.Copy)
	}
	if d.Commit != "0123abc-dirty" {
		t.Errorf("commit %q, want commit.txt's", d.Commit)
	}
	if strings.Join(d.Systems, ",") != "gorma,gorma1,gormago,ompi,mpich" {
		t.Errorf("systems %v, want every system of the job in the page's order", d.Systems)
	}
	if len(d.Ranks) != 2 || d.Ranks[0].P != 2 || d.Ranks[0].OneFree || d.Ranks[1].P != 1 || !d.Ranks[1].OneFree {
		t.Fatalf("ranks %+v, want p = 2 and gorma alone at p = 1", d.Ranks)
	}
	r := d.Ranks[0]
	var sizes []int
	for _, row := range r.Allreduce {
		sizes = append(sizes, row.Bytes)
		if len(row.US) != len(d.Systems) {
			t.Errorf("%d B: figures of %d systems, want %d", row.Bytes, len(row.US), len(d.Systems))
		}
	}
	if len(sizes) != 3 || sizes[0] != 8 || sizes[2] != 1<<20 {
		t.Errorf("sizes %v, want 8, 64K, 1M in order", sizes)
	}
	if len(r.Barrier.US) != len(d.Systems) || len(r.Threads) != len(d.Systems) {
		t.Errorf("barrier %v, threads %v: want every system", r.Barrier.US, r.Threads)
	}
	page, err := renderDevice16(d)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := d.copyRate(2)
	row := r.Allreduce[2]
	for _, want := range []string{
		"## 16-core node",
		"### Allreduce (float64 sum), 2 ranks: latency (us, lower is better)",
		"| 1M | " + d16Cell(row, "gorma") + " |",
		" | " + d16Ratio(row) + " | " + num(floorUS(1<<20, 2, c), 3) + " | " + num(stagedUS(1<<20, 2, c), 3) + " |",
		"| Barrier | ",
		"### Threads and context switches, 2 ranks",
		"| Open MPI | ",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("section lacks %q:\n%s", want, page)
		}
	}
	for _, cl := range d16Colls {
		rows := *cl.rows(&r)
		if len(rows) != 3 || rows[0].Bytes != 8 || rows[2].Bytes != 1<<20 {
			t.Errorf("%s: %d rows %+v, want 8, 64K, 1M", cl.heading, len(rows), rows)
			continue
		}
		for _, row := range rows {
			if len(row.US) != len(d.Systems) || len(row.CSW) != len(d.Systems) {
				t.Errorf("%s %d B: figures of %d systems, want %d", cl.heading, row.Bytes, len(row.US), len(d.Systems))
			}
		}
		want := "### " + cl.heading + ", 2 ranks: latency (us, lower is better)"
		line := "| 64K | " + d16Cell(rows[1], "gorma") + " | " + d16Cell(rows[1], "gorma1") + " | " + d16Cell(rows[1], "gormago") + " | " +
			d16Cell(rows[1], "ompi") + " | " + d16Cell(rows[1], "mpich") + " | " + d16Ratio(rows[1]) + " |\n"
		if i := strings.Index(page, want); i < 0 || !strings.Contains(page[i:], line) {
			t.Errorf("section lacks %q followed by %q:\n%s", want, line, page)
		}
	}
	if want := "Bcast, Reduce, Allgather, Alltoall, Gather and Scatter come from one more run of each system at each rank count " +
		"(`allreducebench --test bcast,reduce,allgather,alltoall,gather,scatter`, the cl_ files); their size is the vector for Bcast and Reduce " +
		"and each rank's block for Allgather, Alltoall, Gather and Scatter, as in OSU.\n"; !strings.Contains(page, want) {
		t.Errorf("section does not say where the tables of the cl_ files come from (%q):\n%s", want, page)
	}
	if strings.Contains(page, "| 64K | "+d16Cell(r.Allreduce[1], "gorma")+" | ") && strings.Contains(page, num(floorUS(64<<10, 2, c), 3)+" |") {
		t.Errorf("the 64K row shows a memory model; models start at 1M")
	}
	free := d.Ranks[1]
	for _, want := range []string{
		"### gorma with one core free: Allreduce at 2 ranks and at 1 (us, lower is better)",
		"| 2 ranks | 1 ranks | 2 / 1 |",
		"| 1M | " + d16Cell(row, "gorma") + " | " + d16Cell(free.Allreduce[2], "gorma") + " | ",
		"| Barrier | " + d16Cell(r.Barrier, "gorma") + " | " + d16Cell(free.Barrier, "gorma") + " | ",
		"### The whole machine's context switches during Allreduce, 2 ranks",
		"| size | gorma: per call (per s) | Open MPI: per call (per s) | MPICH: per call (per s) | gorma / best peer, per call |",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("section lacks %q:\n%s", want, page)
		}
	}
	if strings.Contains(page, "### Allreduce (float64 sum), 1 ranks") || strings.Contains(page, "These results lack") {
		t.Errorf("gorma's one-core-free runs get a section of their own, or the section says figures are absent:\n%s", page)
	}
}

// TestDevice16Perf checks the pf_ figures of testdata/device16 against its files: per
// call is the median interval's rate over the JSON's calls per second.
func TestDevice16Perf(t *testing.T) {
	d, err := collectDevice16("testdata/device16")
	if err != nil {
		t.Fatal(err)
	}
	if d.PerfReps != 1 || len(d.Perf) != 3 {
		t.Fatalf("perf reps %d, rows %+v: want 1 repetition, 3 sizes", d.PerfReps, d.Perf)
	}
	for i, n := range []int{8, 64 << 10, 1 << 20} {
		r := d.Perf[i]
		if r.P != 2 || r.Bytes != n || len(r.CSWPerCall) != 3 || len(r.MigPerS) != 3 {
			t.Errorf("row %d: %+v, want p = 2, %d B, gorma, ompi and mpich", i, r, n)
		}
	}
	st, us, err := readPerfRun(filepath.Join("testdata/device16", "pf_ompi_p2_65536_1.txt"), 64<<10)
	if err != nil || us <= 0 {
		t.Fatalf("readPerfRun: %v, %v us", err, us)
	}
	rate, ok := st.rate("context-switches", d.Machine.Cores)
	if got := d.Perf[1].CSWPerCall["ompi"]; !ok || math.Abs(got-rate*us/1e6) > 1e-9*got {
		t.Errorf("Open MPI at 64K: %v per call, want %v (%v/s at %v us per call)", got, rate*us/1e6, rate, us)
	}
	page, err := renderDevice16(d)
	if err != nil {
		t.Fatal(err)
	}
	r := d.Perf[1]
	want := "| 64K | " + num(r.CSWPerCall["gorma"], 3) + " (" + num(r.CSWPerS["gorma"], 3) + ") | "
	if !strings.Contains(page, want) || !strings.Contains(page, perfRatio(r)+" | "+num(r.MigPerS["gorma"], 3)+" | ") {
		t.Errorf("section lacks %q and the ratio %s:\n%s", want, perfRatio(r), page)
	}
}

// TestDevice16Old: results without pf_ files and without gorma's one-core-free runs
// render, and the section says what they lack.
func TestDevice16Old(t *testing.T) {
	dir := t.TempDir()
	ents, err := os.ReadDir("testdata/device16")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		f := e.Name()
		if strings.HasPrefix(f, "pf_") || strings.Contains(f, "_p1_") {
			continue
		}
		b, err := os.ReadFile(filepath.Join("testdata/device16", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	d, err := collectDevice16(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Ranks) != 1 || len(d.Perf) != 0 {
		t.Fatalf("ranks %d, perf %+v: want p = 2 only, no perf rows", len(d.Ranks), d.Perf)
	}
	page, err := renderDevice16(d)
	if err != nil {
		t.Fatal(err)
	}
	want := "These results lack the whole machine's context switches (no pf_ files) and gorma with one core free (no runs at one rank fewer)."
	if !strings.Contains(page, want) || strings.Contains(page, "### The whole machine's") || strings.Contains(page, "one core free: ") {
		t.Errorf("section lacks %q or shows an empty table:\n%s", want, page)
	}
}

// TestParsePerfStat reads perf stat -x, output with and without -I.
func TestParsePerfStat(t *testing.T) {
	for _, tc := range []struct {
		name, in  string
		totals    map[string]float64
		intervals int
		rate      float64 // context switches per second on 16 cores
	}{
		{"totals", "# started on Fri Nov 27 03:22:40 2026\n\n" +
			"5142796,,context-switches,30012345678,100.00,,\n" +
			"<not supported>,,cpu-migrations,0,100.00,,\n" +
			"480000.00,msec,task-clock,480000000000,100.00,16.000,CPUs utilized\n",
			map[string]float64{"context-switches": 5142796, "task-clock": 480000}, 0, 5142796.0 / 30},
		{"intervals", "     0.250,46,,context-switches,501906166,100.00,91.650,/sec\n" +
			"     0.250,4,,cpu-migrations,501908068,100.00,7.970,/sec\n" +
			"     0.250,501.91,msec,task-clock,501910179,100.00,2.008,CPUs utilized\n" +
			"     0.500,<not counted>,,context-switches,0,100.00,,\n" +
			"     0.500,3,,cpu-migrations,502916621,100.00,5.965,/sec\n" +
			"     0.750,26,,context-switches,503506723,100.00,51.638,/sec\n" +
			"     1.000,29,,context-switches,497271890,100.00,58.318,/sec\n",
			map[string]float64{"context-switches": 101, "cpu-migrations": 7, "task-clock": 501.91}, 4, 4 * 29},
		{"garbage", "perf: not a count\n,,\n1,2\nx,,context-switches\n", map[string]float64{}, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := parsePerfStat(strings.NewReader(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if len(s.Totals) != len(tc.totals) || len(s.Intervals) != tc.intervals {
				t.Errorf("totals %v, %d intervals; want %v, %d", s.Totals, len(s.Intervals), tc.totals, tc.intervals)
			}
			for ev, n := range tc.totals {
				if math.Abs(s.Totals[ev]-n) > 1e-9 {
					t.Errorf("%s: %v, want %v", ev, s.Totals[ev], n)
				}
			}
			r, ok := s.rate("context-switches", 16)
			if ok != (tc.rate > 0) || math.Abs(r-tc.rate) > 1e-6*tc.rate {
				t.Errorf("rate %v (%v), want %v", r, ok, tc.rate)
			}
		})
	}
}

// FuzzParsePerfStat: any input parses without a panic, and every interval holds a count
// of an event that the totals hold too.
func FuzzParsePerfStat(f *testing.F) {
	f.Add("5142796,,context-switches,30012345678,100.00,,\n480000.00,msec,task-clock,480000000000,100.00,16.000,CPUs utilized\n")
	f.Add("     0.250,46,,context-switches,501906166,100.00,91.650,/sec\n     0.500,<not counted>,,context-switches,0,100.00,,\n")
	f.Add("# started\n<not supported>,,cpu-migrations,0,100.00,,\n")
	f.Fuzz(func(t *testing.T, in string) {
		s, err := parsePerfStat(strings.NewReader(in))
		if err != nil {
			return
		}
		for _, iv := range s.Intervals {
			if len(iv.Counts) == 0 {
				t.Fatalf("an empty interval at %v", iv.End)
			}
			for ev := range iv.Counts {
				if _, ok := s.Totals[ev]; !ok {
					t.Fatalf("interval event %q missing from the totals %v", ev, s.Totals)
				}
			}
		}
		s.rate("context-switches", 16)
	})
}

// TestDevice16CollsOnly: a results folder with cl_ files but no ar_ files still collects,
// with empty Allreduce tables and the collectives' tables.
func TestDevice16CollsOnly(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"machine.txt", "parcopy.txt", "cl_gorma_p2_1.json", "cl_ompi_p2_1.json"} {
		b, err := os.ReadFile(filepath.Join("testdata/device16", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	d, err := collectDevice16(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Ranks) != 1 || len(d.Ranks[0].Allreduce) != 0 || len(d.Ranks[0].Alltoall) != 3 {
		t.Fatalf("ranks %+v: want p = 2 with no Allreduce rows and 3 Alltoall rows", d.Ranks)
	}
	page, err := renderDevice16(d)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(page, "### Alltoall (float64, size per block), 2 ranks") || strings.Contains(page, "| Barrier |") {
		t.Errorf("section:\n%s", page)
	}
}

// TestDevice16NoGather: cl_ files of a job that ran no Gather or Scatter (documents
// without "gather" and "scatter") render without their tables, and the section names only
// the collectives that ran.
func TestDevice16NoGather(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"machine.txt", "parcopy.txt", "cl_gorma_p2_1.json", "cl_ompi_p2_1.json"} {
		b, err := os.ReadFile(filepath.Join("testdata/device16", f))
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(f, "cl_") {
			var doc map[string]json.RawMessage
			if err := json.Unmarshal(b, &doc); err != nil {
				t.Fatal(err)
			}
			delete(doc, "gather")
			delete(doc, "scatter")
			if b, err = json.Marshal(doc); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	d, err := collectDevice16(dir)
	if err != nil {
		t.Fatal(err)
	}
	if r := d.Ranks[0]; len(r.Alltoall) != 3 || len(r.Gather) != 0 || len(r.Scatter) != 0 {
		t.Fatalf("ranks %+v: want 3 Alltoall rows, no Gather or Scatter rows", d.Ranks)
	}
	page, err := renderDevice16(d)
	if err != nil {
		t.Fatal(err)
	}
	want := "Bcast, Reduce, Allgather and Alltoall come from one more run of each system at each rank count " +
		"(`allreducebench --test bcast,reduce,allgather,alltoall`, the cl_ files); their size is the vector for Bcast and Reduce " +
		"and each rank's block for Allgather and Alltoall, as in OSU.\n"
	if !strings.Contains(page, want) || strings.Contains(page, "### Gather") || strings.Contains(page, "### Scatter") {
		t.Errorf("section lacks %q or shows a Gather or Scatter table:\n%s", want, page)
	}
}

func TestAndList(t *testing.T) {
	for _, tc := range []struct {
		in   []string
		want string
	}{
		{nil, ""}, {[]string{"A"}, "A"}, {[]string{"A", "B"}, "A and B"}, {[]string{"A", "B", "C"}, "A, B and C"},
	} {
		if got := andList(tc.in); got != tc.want {
			t.Errorf("andList(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
