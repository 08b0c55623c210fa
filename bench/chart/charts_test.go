package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// collectTestdata collects testdata with every section JSON and the stored charts, on a
// machine of 2 cores, and returns the report and the path of its JSON.
func collectTestdata(t *testing.T) (*Report, string) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "benchmarks.json")
	args := []string{"collect", "--dir", "testdata", "--out", out, "--cores", "2"}
	for _, f := range []string{"launchers", "sockets", "halo", "overlap"} {
		args = append(args, "--section", "testdata/"+f+".json")
	}
	args = append(args, "--chart", "rma:charts/rma_put_latency.svg:Put latency", "--chart", "allreduce:charts/allreduce_p2_latency.svg:Allreduce latency, 2 ranks")
	if err := run(args, nil); err != nil {
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
	return rep, out
}

// cells returns every value of a section's tables and every sample median.
func cells(s Section) map[float64]bool {
	m := map[float64]bool{}
	for _, t := range s.Tables {
		for _, r := range t.Rows {
			for _, v := range r.Values {
				if v != nil {
					m[*v] = true
				}
			}
		}
	}
	for _, sm := range s.Samples {
		m[sm.Median] = true
	}
	return m
}

// TestChartsShowTableMedians: every point of a chart drawn from a section is one of the
// section's table cells (or sample medians, which the tables repeat), for the
// committed report and for testdata; a stored chart that names a table agrees with it.
func TestChartsShowTableMedians(t *testing.T) {
	f, err := os.Open(committedJSON)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	committed, err := decodeReport(f)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := collectTestdata(t)
	for _, rep := range []*Report{committed, data} {
		for _, s := range rep.Sections {
			charts, err := sectionCharts(rep, s)
			if err != nil {
				t.Fatal(err)
			}
			m := cells(s)
			for _, c := range charts {
				if !c.derived {
					if err := agrees(s, c.Chart); err != nil {
						t.Error(err)
					}
					continue
				}
				n := 0
				for _, ss := range c.Series {
					for _, p := range ss.Points {
						n++
						if !m[p.Y] {
							t.Errorf("section %s, chart %s: %s's point %v is no cell of the section's tables", s.ID, c.File, ss.Name, p.Y)
						}
					}
				}
				if n == 0 {
					t.Errorf("section %s, chart %s: no points", s.ID, c.File)
				}
			}
		}
	}
}

// TestStoredChartDisagrees: a stored chart that names a table and differs from it at a
// size both have is refused, with the size and both figures in the error.
func TestStoredChartDisagrees(t *testing.T) {
	v := 0.302
	rep := &Report{Machine: Machine{Cores: 2}, Sections: []Section{{ID: "allreduce", Title: "A",
		Tables: []Table{{Title: "Allreduce, 2 ranks: latency", Key: "bytes", Columns: []string{"gorma"}, Rows: []Row{{Label: "8", Values: []*float64{&v}}}}},
		Charts: []Chart{{File: "charts/x.svg", Alt: "x", X: "bytes", Table: "Allreduce, 2 ranks: latency",
			Series: []ChartSeries{{Name: "gorma", Points: []Point{{X: 8, Y: 0.9}}}}}},
	}}}
	if _, err := renderPage(rep); err == nil || !strings.Contains(err.Error(), "at 8 is 0.9, the table") {
		t.Errorf("error %v, want the disagreement at 8", err)
	}
	rep.Sections[0].Charts[0].Series[0].Points[0].Y = 0.3021
	if _, err := renderPage(rep); err != nil {
		t.Errorf("a chart within the table's rounding: %v", err)
	}
}

// TestLoadPerSection: a section shows the load its step recorded; where none was
// recorded, or only at one end, the page says "not recorded".
func TestLoadPerSection(t *testing.T) {
	_, out := collectTestdata(t)
	var page bytes.Buffer
	if err := run([]string{"page", "--in", out}, &page); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"## Startup: wall time of a whole hello job\n\nLoad average (1, 5, 15 min) on the 2 cores: 0.10 0.20 0.30 at the start, 0.40 0.50 0.60 at the end.\n",
		"Load average (1, 5, 15 min) on the 2 cores: 1.00 0.50 0.25 at the start, 2.00 1.00 0.50 at the end.\n",
		"## One-sided (RMA), 2 ranks\n\nLoad average: not recorded.\n",
		"Overlap intro.\n\nLoad average (1, 5, 15 min) on the 2 cores: 3.00 2.00 1.00 at the start, not recorded at the end.\n",
		"| load average (1, 5, 15 min) | not recorded at the start, not recorded at the end |",
	} {
		if !strings.Contains(page.String(), want) {
			t.Errorf("the page lacks %q", want)
		}
	}
}

// TestNoRatioAgainstOversubscribedPeer: where MPICH ran more ranks than cores, its
// cells stay but no ratio is printed, a target against it is not judged, and a
// footnote says why; a run within the cores keeps its ratio.
func TestNoRatioAgainstOversubscribedPeer(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	yes := true
	m := Machine{Cores: 2}
	for _, tc := range []struct {
		name  string
		s     Section
		t     Table
		wants []string
	}{
		{"4 ranks", Section{ID: "ar", Title: "Allreduce"},
			Table{Title: "Allreduce, 4 ranks: latency", Key: "bytes", Columns: []string{"gorma", "Open MPI", "MPICH"},
				Rows: []Row{{Label: "8", Values: []*float64{f(3), f(4), f(6003)}, Ratios: []*float64{f(0.7), f(0)}}}},
			[]string{"| 8 | 3 | 4 | 6003 | 0.70x | -[^ar-1] |", "[^ar-1]"}},
		{"2 ranks", Section{ID: "ar", Title: "Allreduce"},
			Table{Title: "Allreduce, 2 ranks: latency", Key: "bytes", Columns: []string{"gorma", "Open MPI", "MPICH"},
				Rows: []Row{{Label: "8", Values: []*float64{f(0.4), f(0.5), f(0.8)}, Ratios: []*float64{f(0.8), f(0.5)}}}},
			[]string{"| 8 | 0.4 | 0.5 | 0.8 | 0.80x | 0.50x |"}},
		{"peer named in the label", Section{ID: "st", Title: "Startup"},
			Table{Title: "Medians", Key: "figure", Columns: []string{"golaunch", "peer"},
				Rows: []Row{{Label: "4 ranks, golaunch vs mpiexec.mpich", Unit: "ms", Values: []*float64{f(33), f(159)}, Ratios: []*float64{f(0.21)}, Target: &Target{Text: "<= 1.00x", OK: &yes}},
					{Label: "4 ranks, golaunch vs mpirun", Unit: "ms", Values: []*float64{f(33), f(365)}, Ratios: []*float64{f(0.09)}, Target: &Target{Text: "<= 1.00x", OK: &yes}}}},
			[]string{"| 4 ranks, golaunch vs mpiexec.mpich | 33 ms | 159 ms | -[^st-1] | <= 1.00x not judged[^st-1] |",
				"| 4 ranks, golaunch vs mpirun | 33 ms | 365 ms | 0.09x | <= 1.00x ok |"}},
		{"ratio columns of a scale table", Section{ID: "sc", Title: "Scale"},
			Table{Title: "Scale: time", Key: "ranks", Columns: []string{"wall (s): gorma", "Open MPI", "MPICH", "gorma / Open MPI", "gorma / MPICH"},
				Rows: []Row{{Label: "8", Values: []*float64{f(0.09), f(0.44), f(4.3), f(0.21), f(0.02)}, Target: &Target{Text: "wall < 1.00x Open MPI, < 1.00x MPICH", OK: &yes}}}},
			[]string{"| 8 | 0.09 | 0.44 | 4.3 | 0.21x | -[^sc-1] | wall < 1.00x Open MPI, < 1.00x MPICH not judged[^sc-1] |"}},
	} {
		notes := footnotes{id: tc.s.ID}
		got := renderTable(m, tc.s, tc.t, &notes)
		for _, want := range tc.wants {
			if want == "[^"+tc.s.ID+"-1]" {
				if len(notes.texts) != 1 || !strings.Contains(notes.texts[0], "more ranks than the 2 cores") {
					t.Errorf("%s: footnotes %q", tc.name, notes.texts)
				}
				continue
			}
			if !strings.Contains(got, want) {
				t.Errorf("%s: the table lacks %q:\n%s", tc.name, want, got)
			}
		}
	}
	for q, want := range map[float64]string{0: "< 0.01x", 0.004: "< 0.01x", 0.006: "0.01x", 1.5: "1.50x"} {
		if got := ratioText(q); got != want {
			t.Errorf("ratioText(%v) = %q, want %q", q, got, want)
		}
	}
}

// TestChartsDrawn: chart page draws the charts of startup, launchers, halo, overlap,
// sockets and Allreduce from the report, and the stored ones, and links each; a
// chart without points is listed as not recorded.
func TestChartsDrawn(t *testing.T) {
	rep, out := collectTestdata(t)
	rep.Sections[2].Charts = append(rep.Sections[2].Charts, Chart{File: "charts/gone.svg", Alt: "gone"})
	b, err := rep.encode()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(out, b, 0o644); err != nil {
		t.Fatal(err)
	}
	docs := t.TempDir()
	page := filepath.Join(docs, "benchmarks.md")
	if err := run([]string{"page", "--in", out, "--out", page}, nil); err != nil {
		t.Fatal(err)
	}
	text, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	for file, legend := range map[string]string{
		"startup.svg":              ">mpiexec.mpich<",
		"launchers_p4.svg":         ">Open MPI<",
		"launchers_p16.svg":        ">gorma<",
		"halo.svg":                 ">gorma --manual<",
		"overlap.svg":              ">Open MPI<",
		"sockets_rtt.svg":          ">shmipc<",
		"allreduce_p2_latency.svg": ">Open MPI<",
		"rma_put_latency.svg":      "a run apart from the tables",
	} {
		svg, err := os.ReadFile(filepath.Join(docs, "charts", file))
		if err != nil {
			t.Errorf("%s: %v", file, err)
			continue
		}
		if !bytes.Contains(svg, []byte("<svg")) || !bytes.Contains(svg, []byte(legend)) {
			t.Errorf("%s lacks %q", file, legend)
		}
		if !bytes.Contains(text, []byte("](charts/"+file+")")) {
			t.Errorf("the page does not show %s", file)
		}
	}
	if !bytes.Contains(text, []byte("Charts not recorded (docs/benchmarks.json holds no points for them): gone.")) {
		t.Error("the page does not list the chart without points")
	}
	if _, err := os.Stat(filepath.Join(docs, "charts", "gone.svg")); err == nil {
		t.Error("a chart without points was drawn")
	}
}

// TestCommittedCharts: every chart the committed page shows is the one chart page draws
// from the committed report, and docs/charts holds no other.
func TestCommittedCharts(t *testing.T) {
	page, err := os.ReadFile(committedPage)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(committedJSON)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rep, err := decodeReport(f)
	if err != nil {
		t.Fatal(err)
	}
	docs := t.TempDir()
	if err := drawCharts(rep, docs); err != nil {
		t.Fatal(err)
	}
	var linked []string
	for _, m := range regexp.MustCompile(`\]\((charts/[^)]+\.svg)\)`).FindAllSubmatch(page, -1) {
		linked = append(linked, string(m[1]))
	}
	for _, file := range linked {
		want, err1 := os.ReadFile(filepath.Join(docs, file))
		got, err2 := os.ReadFile(filepath.Join(filepath.Dir(committedPage), file))
		if err1 != nil || err2 != nil || !bytes.Equal(got, want) {
			t.Errorf("docs/%s is not the chart drawn from docs/benchmarks.json (%v, %v): run `go run ./bench/chart page --in docs/benchmarks.json --out docs/benchmarks.md`", file, err1, err2)
		}
	}
	committed, _ := filepath.Glob(filepath.Join(filepath.Dir(committedPage), "charts", "*.svg"))
	for _, c := range committed {
		if file := "charts/" + filepath.Base(c); !slices.Contains(linked, file) {
			t.Errorf("docs/%s: no chart of the page", file)
		}
	}
}

func TestCoincides(t *testing.T) {
	a := ChartSeries{Name: "a", Points: []Point{{X: 1, Y: 10}, {X: 2, Y: 20}}}
	b := ChartSeries{Name: "b", Points: []Point{{X: 1, Y: 10.2}, {X: 2, Y: 19.8}}}
	c := ChartSeries{Name: "c", Points: []Point{{X: 1, Y: 10}, {X: 2, Y: 30}}}
	if got := coincides(b, []ChartSeries{a}); got != "a" {
		t.Errorf("b on a: %q", got)
	}
	if got := coincides(c, []ChartSeries{a}); got != "" {
		t.Errorf("c apart from a: %q", got)
	}
}
