package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLaunchersCharts draws the launchers section of testdata: a chart per rank count, a
// group of bars per launcher (srun's PMI named), a bar per program.
func TestLaunchersCharts(t *testing.T) {
	s, err := readSection("testdata/launchers.json")
	if err != nil {
		t.Fatal(err)
	}
	rep := &Report{Machine: Machine{Cores: 2}, Sections: []Section{s}}
	charts, err := sectionCharts(rep, s)
	if err != nil {
		t.Fatal(err)
	}
	if len(charts) != 2 || charts[0].File != "charts/launchers_p4.svg" || charts[1].File != "charts/launchers_p16.svg" {
		t.Fatalf("charts %+v, want launchers_p4.svg and launchers_p16.svg", charts)
	}
	p4, p16 := charts[0], charts[1]
	if got := strings.Join(p4.Categories, "|"); got != "srun\n--mpi=pmi2|srun\n--mpi=pmix|mpirun.openmpi|golaunch" {
		t.Errorf("4 ranks: categories %q", got)
	}
	var names []string
	for _, ss := range p4.Series {
		names = append(names, ss.Name)
	}
	if got := strings.Join(names, ","); got != "gorma,MPICH,Open MPI" {
		t.Errorf("4 ranks: series %s", got)
	}
	if got := strings.Join(p16.Categories, "|"); got != "mpirun.openmpi|golaunch" {
		t.Errorf("16 ranks: categories %q", got)
	}
	if !strings.Contains(p16.Title, "16 ranks on 2 cores") || !strings.Contains(p16.Note, "MPICH's busy-polling ranks") {
		t.Errorf("16 ranks: title %q, note %q", p16.Title, p16.Note)
	}
	page, err := renderSection(rep, s)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| mpirun.openmpi, 16 ranks | 260 | 610 | 0.43x | <= 1.00x ok |",
		"### Open MPI's hello: golaunch against mpirun.openmpi (ms, lower is better)",
		"| 4 ranks | 353 | 522 | 0.68x | <= 1.00x ok |",
		"| 16 ranks | 640 | 610 | 1.05x | <= 1.00x **MISS** |",
		"![startup under each launcher, 16 ranks](charts/launchers_p16.svg)",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the section lacks %q:\n%s", want, page)
		}
	}
}

// TestLaunchersMPICHOnly: a launchers section of MPICH's and gorma's cells alone (the
// format before Open MPI's cells) still renders, with its 4-rank chart.
func TestLaunchersMPICHOnly(t *testing.T) {
	s, err := readSection("testdata/launchers_mpich.json")
	if err != nil {
		t.Fatal(err)
	}
	rep := &Report{Machine: Machine{Cores: 2}, Sections: []Section{s}}
	charts, err := sectionCharts(rep, s)
	if err != nil {
		t.Fatal(err)
	}
	if len(charts) != 1 || charts[0].File != "charts/launchers_p4.svg" || strings.Join(charts[0].Categories, "|") != "golaunch|mpiexec.hydra" {
		t.Errorf("charts %+v, want the 4-rank chart of golaunch and mpiexec.hydra", charts)
	}
	text, err := renderSection(rep, s)
	if err != nil || !strings.Contains(text, "| golaunch, 4 ranks | 36 | 137 |") {
		t.Errorf("section: %v\n%s", err, text)
	}
}

// TestMerge: merging the committed report's own launchers section gives the committed
// report byte for byte; a new section of that id replaces it in place; a section of a new
// id follows the others. A merged section names its commit, its own or --commit's, and
// one without either is refused.
func TestMerge(t *testing.T) {
	committed, err := os.ReadFile(committedJSON)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := decodeReport(bytes.NewReader(committed))
	if err != nil {
		t.Fatal(err)
	}
	s, err := section(rep, "launchers")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	own := filepath.Join(dir, "own.json")
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(own, b, 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "benchmarks.json")
	if err := run([]string{"merge", "--in", committedJSON, "--out", out, "--section", own}, nil); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(out); !bytes.Equal(got, committed) {
		t.Errorf("merging the report's own section changed the report (first difference at line %d)", firstDiffLine(got, committed))
	}

	other := filepath.Join(dir, "other.json")
	if err := os.WriteFile(other, []byte(`{"id": "other", "title": "Other", "tables": []}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run([]string{"merge", "--in", out, "--section", other}, nil); err == nil || !strings.Contains(err.Error(), "names no commit") {
		t.Errorf("merging a section without a commit: error %v, want one that asks for --commit", err)
	}
	if err := run([]string{"merge", "--in", out, "--commit", "0123abc", "--section", "testdata/launchers.json", "--section", other}, nil); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	merged, err := decodeReport(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(merged.Sections) != len(rep.Sections)+1 {
		t.Fatalf("%d sections, want %d", len(merged.Sections), len(rep.Sections)+1)
	}
	for i, s := range rep.Sections {
		m := merged.Sections[i]
		if m.ID != s.ID {
			t.Errorf("section %d is %s, want %s", i, m.ID, s.ID)
		}
		if s.ID == "launchers" && (m.Intro != "Launchers intro." || m.Commit != "0123abc") {
			t.Errorf("launchers not replaced with --commit's: intro %q, commit %q", m.Intro, m.Commit)
		}
		if s.ID != "launchers" && m.Commit != s.Commit {
			t.Errorf("section %s: commit %q, want %q as it was", s.ID, m.Commit, s.Commit)
		}
		if s.ID != "launchers" && m.Title != s.Title {
			t.Errorf("section %s changed: title %q", s.ID, m.Title)
		}
	}
	if last := merged.Sections[len(merged.Sections)-1]; last.ID != "other" {
		t.Errorf("last section %s, want other", last.ID)
	}
	if merged.Run != rep.Run || merged.Machine != rep.Machine {
		t.Errorf("run or machine changed: %+v %+v", merged.Run, merged.Machine)
	}
	if err := run([]string{"merge", "--in", out}, nil); err == nil {
		t.Error("merge without --section: no error")
	}
}
