package main

import (
	"os"
	"reflect"
	"testing"
)

func f64(v float64) *float64 { return &v }

func TestCells(t *testing.T) {
	for _, tc := range []struct {
		cell string
		v    *float64
		unit string
	}{
		{"0.12 us", f64(0.12), "us"},
		{"21878 MB/s", f64(21878), "MB/s"},
		{"0.302", f64(0.302), ""},
		{"-", nil, ""},
		{"", nil, ""},
	} {
		v, unit, err := quantity(tc.cell)
		if err != nil || !reflect.DeepEqual(v, tc.v) || unit != tc.unit {
			t.Errorf("quantity(%q) = %v, %q, %v; want %v, %q", tc.cell, v, unit, err, tc.v, tc.unit)
		}
	}
	if _, _, err := quantity("fast us"); err == nil {
		t.Error(`quantity("fast us"): want an error`)
	}
	for cell, want := range map[string]*float64{"0.75x": f64(0.75), "13.83x": f64(13.83), "< 0.01x": f64(0), "-": nil, "": nil} {
		if got, err := ratio(cell); err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("ratio(%q) = %v, %v; want %v", cell, got, err, want)
		}
	}
	if _, err := ratio("x"); err == nil {
		t.Error(`ratio("x"): want an error`)
	}
	yes, no := true, false
	for cell, want := range map[string]*Target{
		"<= 1.00x ok":   {Text: "<= 1.00x", OK: &yes},
		">= 1.00x MISS": {Text: ">= 1.00x", OK: &no},
		"< 0.6 us ok":   {Text: "< 0.6 us", OK: &yes},
		"(reference)":   {Text: "reference"},
		"not measured":  {Text: "not measured"},
		"":              nil,
	} {
		if got := target(cell); !reflect.DeepEqual(got, want) {
			t.Errorf("target(%q) = %+v, want %+v", cell, got, want)
		}
	}
}

func TestSplitHeading(t *testing.T) {
	for _, tc := range []struct{ in, title, unit, better string }{
		{"Allreduce, 2 ranks: latency (us, lower is better)", "Allreduce, 2 ranks: latency", "us", "lower"},
		{"put_bw (MB/s, higher is better)", "put_bw", "MB/s", "higher"},
		{"Barrier, 4 ranks (us)", "Barrier, 4 ranks", "us", ""},
		{"gorma with fresh buffers (--fresh) per call: bus bandwidth (GB/s)", "gorma with fresh buffers (--fresh) per call: bus bandwidth", "GB/s", ""},
		{"with a flag (--fresh)", "with a flag (--fresh)", "", ""},
		{"odd (us, faster is nicer)", "odd (us, faster is nicer)", "", ""},
		{"targets", "targets", "", ""},
	} {
		title, unit, better := splitHeading(tc.in)
		if title != tc.title || unit != tc.unit || better != tc.better {
			t.Errorf("splitHeading(%q) = %q, %q, %q; want %q, %q, %q", tc.in, title, unit, better, tc.title, tc.unit, tc.better)
		}
	}
}

func TestParseMarkdown(t *testing.T) {
	in := "# run header\n## put_bw (MB/s, higher is better)\n| bytes | a | b | a/b |\n|---|---|---|---|\n| 8 | 1 | 2 | 0.50x |\n" +
		"\ntext between\n| figure | x |\n| r | 1 |\n"
	got := parseMarkdown(in)
	want := []mdTable{
		{Heading: "put_bw (MB/s, higher is better)", Header: []string{"bytes", "a", "b", "a/b"}, Rows: [][]string{{"8", "1", "2", "0.50x"}}},
		{Heading: "put_bw (MB/s, higher is better)", Header: []string{"figure", "x"}, Rows: [][]string{{"r", "1"}}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("parseMarkdown:\n%+v\nwant\n%+v", got, want)
	}
	st, err := sweepTable(got[0])
	if err != nil || st.Title != "put_bw" || st.Unit != "MB/s" || st.Better != "higher" ||
		!reflect.DeepEqual(st.Columns, []string{"a", "b"}) || !reflect.DeepEqual(st.Rows[0].Ratios, []*float64{f64(0.5)}) {
		t.Errorf("sweepTable: %+v, %v", st, err)
	}
	if _, err := targetTable(got[1], "T"); err == nil {
		t.Error("targetTable of a two-column table: want an error")
	}
	if _, err := sweepTable(mdTable{Header: []string{"bytes", "a", "b", "c", "a/b"}}); err == nil {
		t.Error("sweepTable with one ratio for three columns: want an error")
	}
}

func TestParseStartup(t *testing.T) {
	b, err := os.ReadFile("testdata/startup_p2.txt")
	if err != nil {
		t.Fatal(err)
	}
	run, err := parseStartup(string(b))
	if err != nil {
		t.Fatal(err)
	}
	yes := true
	want := startupRun{
		Samples: []Samples{
			{Label: "golaunch -n 2 apps/hello", Unit: "ms", Values: []float64{27, 25}, Median: 26},
			{Label: "mpirun -n 2 hello_mpi", Unit: "ms", Values: []float64{331, 319}, Median: 325},
			{Label: "mpiexec.mpich -n 2 hello_mpich", Unit: "ms", Values: []float64{42, 50}, Median: 46},
		},
		Ratios: []startupRatio{
			{Tool: "golaunch", Peer: "mpirun", Ratio: 0.08, Target: &Target{Text: "<= 1.00x", OK: &yes}},
			{Tool: "golaunch", Peer: "mpiexec.mpich", Ratio: 0.57, Target: &Target{Text: "<= 1.00x", OK: &yes}},
		},
	}
	if !reflect.DeepEqual(run, want) {
		t.Errorf("parseStartup:\n%+v\nwant\n%+v", run, want)
	}
	if _, err := parseStartup("golaunch -n 2 apps/hello: 27 25 ms; median 26 ms\n"); err == nil {
		t.Error("samples without a ratio: want an error")
	}
}

// FuzzParseMarkdown: the parsers never panic, and whatever they accept is a valid table.
func FuzzParseMarkdown(f *testing.F) {
	for _, name := range []string{"testdata/p2p.txt", "testdata/rma.txt", "testdata/allreduce.txt"} {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b))
	}
	f.Add("| bytes | a | a/ |\n| 8 | x | 1x |\n")
	f.Add("## h (\n| figure | gorma | peer | ratio | target |\n| a | 1 us | - | - | ok |\n")
	f.Fuzz(func(t *testing.T, in string) {
		for _, md := range parseMarkdown(in) {
			if tab, err := sweepTable(md); err == nil {
				if err := tab.validate(); err != nil {
					t.Errorf("sweepTable accepted an invalid table: %v", err)
				}
			}
			if tab, err := targetTable(md, "T"); err == nil {
				if err := tab.validate(); err != nil {
					t.Errorf("targetTable accepted an invalid table: %v", err)
				}
			}
		}
	})
}

// FuzzParseStartup: parseStartup never panics, and what it accepts has samples for every
// launcher and pairs every ratio with a launcher after the first.
func FuzzParseStartup(f *testing.F) {
	b, err := os.ReadFile("testdata/startup_p2.txt")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(string(b))
	f.Add("a: 1 ms; median 1 ms\nb: 2 ms; median 2 ms\nratio a/b: 0.5 (target <= 1.00x MISS)\n")
	f.Fuzz(func(t *testing.T, in string) {
		run, err := parseStartup(in)
		if err != nil {
			return
		}
		if len(run.Ratios) != len(run.Samples)-1 {
			t.Errorf("%d ratios for %d launchers", len(run.Ratios), len(run.Samples))
		}
		for _, s := range run.Samples {
			if len(s.Values) == 0 {
				t.Errorf("launcher %q without samples", s.Label)
			}
		}
	})
}
