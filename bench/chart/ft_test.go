package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFTCollect collects testdata/ftbench (hand-made documents of apps/ftbench,
// allreducebench and rmabench, in scripts/ftbench.sh's names) and renders the section.
func TestFTCollect(t *testing.T) {
	f, err := collectFT("testdata/ftbench")
	if err != nil {
		t.Fatal(err)
	}
	if f.Cores != 2 || f.LoadEnd != [3]float64{1, 0.9, 0.8} || len(f.Failed) != 1 || len(f.Recovery) != 2 || len(f.Cost) != 2 {
		t.Fatalf("collected %+v", f)
	}
	kill, join := f.Recovery[0], f.Recovery[1]
	if kill.Case != "kill_rank" || kill.Strikes != 3 || kill.Recover != (FTStat{0.02, 0.03}) || kill.Detect == nil || kill.Spawn != nil {
		t.Errorf("kill_rank %+v", kill)
	}
	if join.Case != "join" || join.Before != 4 || join.After != 6 || join.Spawn == nil || join.Spawn.Max != 0.4 || join.Detect != nil {
		t.Errorf("join %+v", join)
	}
	if v := f.Verdicts; v == nil || *v != (FTVerdicts{Jobs: 100, Burners: 8, Load: [3]float64{9.52, 5.2, 3.69}, Memberlist: 2}) {
		t.Errorf("verdicts %+v", v)
	}
	ar := f.Cost[0]
	if ar.Runs != 3 || ar.BaseUS != 4.5 || ar.FTUS != 4.6 || math.Abs(ar.FTSpread-9/4.6) > 1e-12 {
		t.Errorf("allreduce cost %+v", ar)
	}
	page, err := renderFT(f)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| kill -9 of a rank | 4 → 3 | 1 → 1 | 3 | 1.0 / 1.0 | 5.0 / 5.0 | 20.0 / 30.0 | ≤ 100 ms |",
		"| a host joins (its agent starts; network namespaces) | 4 → 6 | 2 → 3 | 1 | - | 400.0 / 400.0 | 500.0 / 500.0 | ≤ 1 s |",
		"| Allreduce 8 B (allreducebench, mean) | 3 | 4.5 (1.11x) | 4.6 (1.96x) | 1.02x | ≤ 1.10x |",
		"horovod#3556", "dynamic_rendezvous.py", "False failure verdicts: 0 in 100 `--ft` jobs", "Runs that failed (missing from the figures): join 2: golaunch exited 1.",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("section lacks %q:\n%s", want, page)
		}
	}
	// The document round-trips through loadFT's strict decoder.
	b, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "ft.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if g, err := loadFT(path); err != nil || g.Recovery[0].Recover != kill.Recover {
		t.Errorf("loadFT: %+v, %v", g, err)
	}
}

// TestFTCostElsewhere: chart ft --cost takes the cost and its machine from another run.
func TestFTCostElsewhere(t *testing.T) {
	out := filepath.Join(t.TempDir(), "ft.json")
	if err := runFT([]string{"--in", "testdata/ftbench", "--cost", "testdata/ftbench", "--out", out}); err != nil {
		t.Fatal(err)
	}
	f, err := loadFT(out)
	if err != nil {
		t.Fatal(err)
	}
	if f.CostOn == nil || f.CostOn.Cores != 2 || len(f.Cost) != 2 || len(f.Failed) != 2 {
		t.Fatalf("collected %+v", f)
	}
	page, err := renderFT(f)
	if err != nil {
		t.Fatal(err)
	}
	if want := "on another machine (`make ftbench`, CASES=cost: 2 cores, test CPU;"; !strings.Contains(page, want) {
		t.Errorf("section lacks %q:\n%s", want, page)
	}
}

func TestFTVerdictsMalformed(t *testing.T) {
	if _, err := parseVerdicts([]byte("--- FAIL: TestNetnsLoadFTNoFalseVerdicts\n")); err == nil {
		t.Fatal("a log without the summary line parsed")
	}
}

func TestFTCostValueErrors(t *testing.T) {
	if _, err := ftCostValue("cost_ar", []byte(`{"allreduce":[{"bytes":16,"avg_us":1}]}`)); err == nil {
		t.Error("a document without an 8-byte row gave a value")
	}
	if _, err := ftCostValue("cost_x", []byte(`{}`)); err == nil {
		t.Error("an unknown operation gave a value")
	}
}
