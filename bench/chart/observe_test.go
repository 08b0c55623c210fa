package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestObserve renders testdata/observe.json: per benchmark a row per size with every
// mode's median and spread, and the ratios to off judged against observeRatios'
// targets; Open MPI's monitoring ratio has none. A ratio is the median of the
// repetitions' own ratios, not the ratio of the medians.
func TestObserve(t *testing.T) {
	o, err := loadObserve("testdata/observe.json")
	if err != nil {
		t.Fatal(err)
	}
	page, err := renderObserve([]*Observe{o})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"## The cost of observation\n",
		"From `scripts/compare-observe.sh 3`: 2 cores (AMD EPYC), go1.26.0, Open MPI 4.1.4, 3 repetitions.",
		"Load average (1, 5, 15 min) on the 2 cores: 0.10 0.20 0.30 at the start, 1.50 0.40 0.35 at the end.",
		"On 2 cores, a ratio of sub-microsecond figures moves within 0.80x-1.20x from run to run",
		"| benchmark | bytes | gorma | gorma --profile | gorma --trace | Open MPI | Open MPI, monitoring | profile / off (≤ 1.05x) | trace / off (≤ 1.15x) | monitoring / off, Open MPI |\n" +
			"|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
		"| Ping-pong latency, 2 ranks | 8 | 0.5 [0.4, 0.6] | 0.52 [0.51, 0.9] | 0.6 [0.55, 0.65] | 0.25 [0.2, 0.3] | 0.3 [0.3, 0.3] | 1.27x **MISS** | 1.20x **MISS** | 1.20x |\n",
		"| Ping-pong latency, 2 ranks | 1M | 110 [100, 120] | 108 [104, 130] | 115 [112, 118] | 160 [150, 170] | 165 [150, 170] | 1.04x ok | 1.05x ok | 1.00x |\n",
		"| Allreduce (float64 sum), 4 ranks | 1K | 2 [2, 2] | 2.1 [2.1, 2.1] | 2.4 [2.4, 2.4] | 1 [1, 1] | 1.2 [1.1, 1.3] | 1.05x ok | 1.20x **MISS** | 1.20x |",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the section lacks %q:\n%s", want, page)
		}
	}
	if strings.Contains(page, "Runs that failed") {
		t.Errorf("the section names failures where none were:\n%s", page)
	}
}

// TestObservePartial: on more than 2 cores the noise sentence goes; a mode that never ran
// loses its column and its ratio is "-"; a failed run is named.
func TestObservePartial(t *testing.T) {
	o := &Observe{Command: "scripts/compare-observe.sh 1", Machine: D16Machine{Cores: 16, CPU: "Intel Xeon"}, Reps: 1,
		Runs: []ObserveCells{
			{Bench: "allreduce", System: "gorma", Mode: "off", Bytes: 8, US: []float64{4}},
			{Bench: "allreduce", System: "gorma", Mode: "profile", Bytes: 8, US: []float64{5}},
			{Bench: "allreduce", System: "ompi", Mode: "off", Bytes: 8, US: []float64{3}},
		},
		Benchmarks: []ObserveBench{{Bench: "allreduce", Ranks: 16}},
		Failed:     []string{"rep 1: allreduce gorma_trace: exit 1"}}
	page, err := renderObserve([]*Observe{o})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		", 1 repetition.",
		"Load average: not recorded.",
		"Runs that failed (missing from the figures): rep 1: allreduce gorma_trace: exit 1.\n",
		"| benchmark | bytes | gorma | gorma --profile | Open MPI | profile / off (≤ 1.05x) | trace / off (≤ 1.15x) | monitoring / off, Open MPI |\n",
		"| Allreduce (float64 sum), 16 ranks | 8 | 4 [4, 4] | 5 [5, 5] | 3 [3, 3] | 1.25x **MISS** | - | - |",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the section lacks %q:\n%s", want, page)
		}
	}
	for _, not := range []string{"from run to run", "Ping-pong"} {
		if strings.Contains(page, not) {
			t.Errorf("the section has %q:\n%s", not, page)
		}
	}
}

// TestObserveStrict: an unknown field, benchmark, system or mode is an error, a missing
// document is none, and chart page shows the section when the document lies beside the
// report.
func TestObserveStrict(t *testing.T) {
	dir := t.TempDir()
	for name, doc := range map[string]string{
		"field":   `{"command": "x", "extra": 1}`,
		"cell":    `{"command": "x", "runs": [{"bench": "pingpong", "system": "gorma", "mode": "off", "bytes": 8, "us": [1], "iters": 5}]}`,
		"bench":   `{"command": "x", "runs": [{"bench": "bcast", "system": "gorma", "mode": "off", "bytes": 8, "us": [1]}]}`,
		"system":  `{"command": "x", "runs": [{"bench": "pingpong", "system": "mpich", "mode": "off", "bytes": 8, "us": [1]}]}`,
		"mode":    `{"command": "x", "runs": [{"bench": "pingpong", "system": "ompi", "mode": "trace", "bytes": 8, "us": [1]}]}`,
		"command": `{"command": "x", "benchmarks": [{"bench": "pingpong", "ranks": 2, "commands": {"gorma_summary": "x"}}]}`,
		"listed":  `{"command": "x", "benchmarks": [{"bench": "halo", "ranks": 2}]}`,
	} {
		p := filepath.Join(dir, name+".json")
		if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := loadObserve(p); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if o, err := loadObserve(filepath.Join(dir, "none.json")); o != nil || err != nil {
		t.Errorf("a missing document: %v, %v", o, err)
	}
	_, out := collectTestdata(t)
	b, err := os.ReadFile("testdata/observe.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(filepath.Dir(out), "observe.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	var page strings.Builder
	if err := run([]string{"page", "--in", out}, &page); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(page.String(), "\n\n## The cost of observation\n\n") {
		t.Error("chart page does not show observe.json beside the report")
	}
}

// TestObserveMachines: two runs, one per machine, share the section's description; each
// gets a heading that names its machine, its own "From" line and its own table, in the
// order given.
func TestObserveMachines(t *testing.T) {
	two, err := loadObserve("testdata/observe.json")
	if err != nil {
		t.Fatal(err)
	}
	sixteen := *two
	sixteen.Command, sixteen.Machine = "RANKS=16 scripts/compare-observe.sh 3", D16Machine{Cores: 16, CPU: "Intel Xeon"}
	page, err := renderObserve([]*Observe{&sixteen, two})
	if err != nil {
		t.Fatal(err)
	}
	at := func(s string) int {
		i := strings.Index(page, s)
		if i < 0 {
			t.Fatalf("the section lacks %q:\n%s", s, page)
		}
		return i
	}
	order := []int{at("gorma's programs run through golaunch"), at("### 16 cores (Intel Xeon)\n\nFrom `RANKS=16 scripts/compare-observe.sh 3`: 16 cores"),
		at("### 2 cores (AMD EPYC)\n\nFrom `scripts/compare-observe.sh 3`: 2 cores")}
	if !slices.IsSorted(order) {
		t.Errorf("description and machines out of order (%v):\n%s", order, page)
	}
	if n := strings.Count(page, "| benchmark | bytes |"); n != 2 {
		t.Errorf("%d tables, want 2:\n%s", n, page)
	}
	if n := strings.Count(page, "gorma's programs run through golaunch"); n != 1 {
		t.Errorf("the description is there %d times, want once", n)
	}
	if n := strings.Count(page, "from run to run: inside that band"); n != 1 {
		t.Errorf("the 2-core noise sentence is there %d times, want once (the 2-core run's)", n)
	}
}

// TestObserveClock: the section says which clock the run's timeline read, by the rule
// the recorder applies (trace.CounterUsable) to the recorded clock sources and flags,
// and keeps to the current source where the run recorded no more.
func TestObserveClock(t *testing.T) {
	for _, c := range []struct {
		current, available, flags, want string
	}{
		{"tsc", "tsc kvm-clock", "constant_tsc nonstop_tsc",
			"The kernel's clock source was tsc (available: tsc kvm-clock), and the processor reports constant_tsc nonstop_tsc: the timeline read the time-stamp counter. "},
		{"kvm-clock", "kvm-clock tsc acpi_pm", "constant_tsc nonstop_tsc", "the timeline read the time-stamp counter. "},
		{"kvm-clock", "kvm-clock acpi_pm", "constant_tsc nonstop_tsc", "the timeline read Go's monotonic clock. "},
		{"kvm-clock", "kvm-clock tsc", "", "the processor reports neither constant_tsc nor nonstop_tsc: the timeline read Go's monotonic clock. "},
		{"tsc", "", "", "The kernel's clock source was tsc: the timeline reads the time-stamp counter where"},
		{"", "", "", ""},
	} {
		got := clockText(&Observe{Clock: c.current, Clocks: c.available, TSCFlags: c.flags})
		if !strings.Contains(got, c.want) || (c.want == "") != (got == "") {
			t.Errorf("%q, %q, %q: %q, want it to hold %q", c.current, c.available, c.flags, got, c.want)
		}
	}
}
