package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStartup16 renders testdata/startup16.json: a row per rank count with every
// system's median and spread, and golaunch over mpirun judged against <= 1.00x.
func TestStartup16(t *testing.T) {
	s, err := loadStartup16("testdata/startup16.json")
	if err != nil {
		t.Fatal(err)
	}
	page, err := renderStartup16(s)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"## Startup on a 16-core node\n",
		"16 cores (Intel Xeon), 128 GiB, 1 NUMA node(s)",
		"Open MPI 4.1.4 from the bundle",
		"Medians of 3 repetitions",
		"The machine has no lstopo of its own; golaunch gave Open MPI's ranks the node's topology from `.devb/hwloc/lstopo-no-graphics (2.9.0)`",
		"Load average (1, 5, 15 min) on the 16 cores: 0.10 0.20 0.30 at the start, 1.50 0.40 0.35 at the end.",
		"| ranks | Open MPI's hello, golaunch | Open MPI's hello, golaunch without lstopo | Open MPI's hello, mpirun | gorma's hello, golaunch | golaunch / mpirun, Open MPI's hello | target |\n|---|---:|---:|---:|---:|---:|---|\n",
		"| 4 | 120 (110-130) | 200 (190-210) | 150 (140-160) | 30 (29-31) | 0.80x | <= 1.00x ok |\n",
		"| 16 | 400 (380-1200) | 910 (900-950) | 350 (340-360) | 60 (58-62) | 1.14x | <= 1.00x **MISS** |\n",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the section lacks %q:\n%s", want, page)
		}
	}
}

// TestStartup16Partial: a machine with an lstopo of its own, no cell without lstopo, and
// an mpirun cell that failed: its column stays, the target is not measured, and the
// failure is named.
func TestStartup16Partial(t *testing.T) {
	s := &Startup16{Command: "scripts/device16-startup.sh", Machine: D16Machine{Cores: 16}, Reps: 1,
		Lstopo: "/usr/bin/lstopo (2.7.0)", HostLstopo: "/usr/bin/lstopo (2.7.0)",
		Runs: []StartupCells{{System: "golaunch_ompi", Ranks: 16, MS: []float64{500}}, {System: "mpirun_ompi", Ranks: 4, MS: []float64{100}},
			{System: "golaunch_ompi", Ranks: 4, MS: []float64{90}}},
		Failed: []string{"mpirun_ompi -n 16: exit 1, 0 of the 16 ranks saw a world of 16"}}
	page, err := renderStartup16(s)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"The machine's own lstopo is `/usr/bin/lstopo (2.7.0)`; golaunch gave",
		"Not measured: mpirun_ompi -n 16: exit 1, 0 of the 16 ranks saw a world of 16.\n",
		"| ranks | Open MPI's hello, golaunch | Open MPI's hello, mpirun | golaunch / mpirun, Open MPI's hello | target |\n",
		"| 4 | 90 (90-90) | 100 (100-100) | 0.90x | <= 1.00x ok |\n",
		"| 16 | 500 (500-500) | - | - | <= 1.00x not measured |\n",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the section lacks %q:\n%s", want, page)
		}
	}
	s.Lstopo = ""
	if page, _ := renderStartup16(s); !strings.Contains(page, "golaunch found none, so each Open MPI rank discovered the node's topology itself") {
		t.Errorf("without lstopo the section does not say so:\n%s", page)
	}
}

// TestStartup16Strict: an unknown field or system is an error, a missing document is
// none, and chart page shows the section when the document lies beside the report.
func TestStartup16Strict(t *testing.T) {
	dir := t.TempDir()
	for name, doc := range map[string]string{
		"field":  `{"command": "x", "extra": 1}`,
		"system": `{"command": "x", "runs": [{"system": "srun_ompi", "ranks": 4, "ms": [1]}]}`,
	} {
		p := filepath.Join(dir, name+".json")
		if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := loadStartup16(p); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if s, err := loadStartup16(filepath.Join(dir, "none.json")); s != nil || err != nil {
		t.Errorf("a missing document: %v, %v", s, err)
	}
	_, out := collectTestdata(t)
	b, err := os.ReadFile("testdata/startup16.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(filepath.Dir(out), "startup16.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	var page strings.Builder
	if err := run([]string{"page", "--in", out}, &page); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(page.String(), "## Startup on a 16-core node\n") {
		t.Error("chart page does not show startup16.json beside the report")
	}
}
