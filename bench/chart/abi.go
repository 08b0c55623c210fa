package main

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// ABI is one run of scripts/compare-abi.sh, as the script wrote it: docs/abi.json, the
// source of the page's section "MPICH programs on gorma's library". chart page takes
// the medians, the spread and the ratios from its runs.
type ABI struct {
	Command    string     `json:"command"`
	Machine    D16Machine `json:"machine"`
	Go         string     `json:"go"`
	MPICH      string     `json:"mpich"`   // the version MPICH's mpichversion reports
	OpenMPI    string     `json:"openmpi"` // the version mpirun.openmpi reports
	Reps       int        `json:"reps"`
	Load       *Load      `json:"load,omitempty"`
	Benchmarks []ABIBench `json:"benchmarks"` // in the page's order
	Runs       []ABICells `json:"runs"`
	Failed     []string   `json:"failed,omitempty"`
}

// ABIBench is one table of the section: a benchmark at one rank count, and the command
// of each system, by the ids of abiSystems.
type ABIBench struct {
	Bench    string            `json:"bench"` // an id of abiBenches
	Ranks    int               `json:"ranks"`
	Commands map[string]string `json:"commands"`
}

// ABICells is every run of one case of a benchmark on one system: its figure, in us.
type ABICells struct {
	Bench  string    `json:"bench"`
	Ranks  int       `json:"ranks"`
	System string    `json:"system"` // an id of abiSystems
	Case   string    `json:"case"`   // a size ("8 B"), an RMA case, a program
	US     []float64 `json:"us"`
}

// abiTitle is the heading of the section.
const abiTitle = "MPICH programs on gorma's library"

// abiSlack is the ping-pong target: gorma's latency at abiSlackCase is at most MPICH's
// plus this, in us.
const (
	abiSlack     = 0.2
	abiSlackCase = "8 B"
)

// abiBenches are the benchmarks the section knows: the id, the table's title and what
// its figure is.
var abiBenches = []struct{ id, title, figure string }{
	{"pingpong", "Ping-pong latency", "`bench/mpi/pingpong.c`'s latency test: the half round trip, a mean over the round trips"},
	{"allreduce", "Allreduce (float64 sum)", "`bench/mpi/allreducebench.c`'s allreduce test: each rank's mean per call, averaged over the ranks"},
	{"bcast", "Bcast", "`bench/mpi/allreducebench.c`'s bcast test: each rank's mean per call, averaged over the ranks"},
	{"alltoall", "Alltoall", "`bench/mpi/allreducebench.c`'s alltoall test: each rank's mean per call, averaged over the ranks; the size is each rank's block"},
	{"rma", "One-sided (RMA)", "`bench/mpi/rmabench.c`: per case, the median over its batches of the mean per operation (a batch is up to 256 operations)"},
	{"startup", "Startup", "The wall time of a whole job of the case's program, from the launcher's start to its exit"},
}

// abiSystems are the systems, in the page's column order: the id and the column's name.
var abiSystems = []struct{ id, name string }{
	{"gorma", "gorma"},
	{"mpich", "MPICH"},
	{"ompi", "Open MPI"},
}

// loadABI reads path strictly, or returns nil when it does not exist. A benchmark,
// system or command it does not know is an error, and so is a run of a benchmark and
// rank count that the document does not list.
func loadABI(path string) (*ABI, error) {
	a, err := loadStrict[ABI](path)
	if a == nil || err != nil {
		return nil, err
	}
	for _, b := range a.Benchmarks {
		if abiBench(b.Bench) < 0 {
			return nil, fmt.Errorf("%s: unknown benchmark %q", path, b.Bench)
		}
		for id := range b.Commands {
			if abiSystem(id) < 0 {
				return nil, fmt.Errorf("%s: benchmark %s: unknown system %q", path, b.Bench, id)
			}
		}
	}
	for _, c := range a.Runs {
		if abiSystem(c.System) < 0 {
			return nil, fmt.Errorf("%s: unknown system %q", path, c.System)
		}
		if !slices.ContainsFunc(a.Benchmarks, func(b ABIBench) bool { return b.Bench == c.Bench && b.Ranks == c.Ranks }) {
			return nil, fmt.Errorf("%s: a run of %s at %d ranks, which the benchmarks do not list", path, c.Bench, c.Ranks)
		}
	}
	return a, nil
}

// abiBench returns the index of id in abiBenches, or -1.
func abiBench(id string) int {
	return slices.IndexFunc(abiBenches, func(b struct{ id, title, figure string }) bool { return b.id == id })
}

// abiSystem returns the index of id in abiSystems, or -1.
func abiSystem(id string) int {
	return slices.IndexFunc(abiSystems, func(s struct{ id, name string }) bool { return s.id == id })
}

// cell returns the runs of case c of bench at ranks on system, or nil.
func (a *ABI) cell(bench ABIBench, system, c string) []float64 {
	for _, r := range a.Runs {
		if r.Bench == bench.Bench && r.Ranks == bench.Ranks && r.System == system && r.Case == c && len(r.US) > 0 {
			return r.US
		}
	}
	return nil
}

// cases returns the cases of bench, in the order they first appear in the runs.
func (a *ABI) cases(bench ABIBench) []string {
	var out []string
	for _, r := range a.Runs {
		if r.Bench == bench.Bench && r.Ranks == bench.Ranks && !slices.Contains(out, r.Case) {
			out = append(out, r.Case)
		}
	}
	return out
}

// renderABI writes the section "MPICH programs on gorma's library": what the systems
// are and the run's machine, then a table per benchmark and rank count, and the
// footnotes of its tables.
func renderABI(a *ABI) string {
	var b strings.Builder
	b.WriteString("## " + abiTitle + "\n\n")
	b.WriteString(abiIntro(a))
	notes := footnotes{id: "abi"}
	var described []string
	for _, bench := range a.Benchmarks {
		first := !slices.Contains(described, bench.Bench)
		described = append(described, bench.Bench)
		b.WriteString(renderABITable(a, bench, first, &notes) + "\n")
	}
	for i, text := range notes.texts {
		fmt.Fprintf(&b, "[^%s-%d]: %s\n\n", notes.id, i+1, text)
	}
	return strings.TrimRight(b.String(), "\n") + "\n"
}

// abiIntro is the section's introduction: the systems, the method, the run, its load
// and the runs that failed.
func abiIntro(a *ABI) string {
	var b strings.Builder
	b.WriteString("MPICH's programs run unchanged on gorma's `libmpich.so.12` (docs/abi.md). " +
		"One binary of each program (the C twins of `bench/mpi` built once with `mpicc.mpich`, the startup's program as Debian ships it) " +
		"runs on gorma's library under golaunch (gorma) and on Debian's MPICH library under `mpiexec.hydra` (MPICH). " +
		"The twins' Open MPI build (`mpicc.openmpi`) runs under `mpirun.openmpi` (Open MPI). " +
		"Medians of the repetitions, in us (lower is better); in brackets the fastest and the slowest run. " +
		"A ratio is gorma's median over the peer's; \"-\" marks a system that did not run a case.\n\n")
	m := a.Machine
	fmt.Fprintf(&b, "From `%s`: %d cores (%s), %d GiB, %d NUMA node(s), %s, MPICH %s, Open MPI %s, %s. ",
		a.Command, m.Cores, m.CPU, m.MemoryGiB, m.NUMANodes, a.Go, a.MPICH, a.OpenMPI, plural(a.Reps, "repetition"))
	b.WriteString(loadText(a.Load, m.Cores))
	if m.Cores > 0 && m.Cores <= 2 {
		fmt.Fprintf(&b, " On %d cores, a sub-microsecond ratio within %s-%s is a tie (Method).", m.Cores, ratioText(0.8), ratioText(1.2))
	}
	b.WriteString("\n\n")
	if len(a.Failed) > 0 {
		fmt.Fprintf(&b, "Runs that failed (missing from the figures): %s.\n\n", strings.Join(a.Failed, "; "))
	}
	return b.String()
}

// abiTable is the table of bench as the page's rule on oversubscribed peers
// (oversubscribed) reads it: its title names the rank count, its columns are the
// systems, the ratios and, for the ping-pong, gorma − MPICH against abiSlack.
func abiTable(bench ABIBench) Table {
	t := Table{Title: fmt.Sprintf("%s, %d ranks", abiBenches[abiBench(bench.Bench)].title, bench.Ranks), Key: "case", Unit: "us", Better: "lower"}
	for _, s := range abiSystems {
		t.Columns = append(t.Columns, s.name)
	}
	for _, s := range abiSystems[1:] {
		t.Columns = append(t.Columns, abiSystems[0].name+" / "+s.name)
	}
	if bench.Bench == "pingpong" {
		t.Columns = append(t.Columns, fmt.Sprintf("gorma − MPICH (≤ %s us at %s)", num(abiSlack, 3), abiSlackCase))
	}
	return t
}

// renderABITable writes the table of bench: a row per case, a column per system, and
// the derived columns of abiTable. With first, the figure's description heads it. A
// derived column from an MPICH run that oversubscribed the cores is "-" with a footnote.
func renderABITable(a *ABI, bench ABIBench, first bool, notes *footnotes) string {
	t := abiTable(bench)
	var b strings.Builder
	fmt.Fprintf(&b, "### %s (%s, %s is better)\n\n", t.Title, t.Unit, t.Better)
	if first {
		b.WriteString(abiBenches[abiBench(bench.Bench)].figure + ".\n\n")
	}
	head := append([]string{t.Key}, t.Columns...)
	b.WriteString("| " + strings.Join(head, " | ") + " |\n|---|" + strings.Repeat("---:|", len(t.Columns)) + "\n")
	m, s := Machine{Cores: a.Machine.Cores}, Section{Title: abiTitle}
	for _, c := range a.cases(bench) {
		vals := make([][]float64, len(abiSystems))
		cells := []string{c}
		for i, sys := range abiSystems {
			vals[i] = a.cell(bench, sys.id, c)
			cells = append(cells, observeCell(vals[i]))
		}
		for col := len(abiSystems); col < len(t.Columns); col++ {
			if note := oversubscribed(m, s, t, Row{Label: c}, col); note != "" {
				cells = append(cells, "-"+notes.ref(note))
				continue
			}
			if peer := col - len(abiSystems) + 1; peer < len(abiSystems) {
				cells = append(cells, abiRatio(vals[0], vals[peer]))
				continue
			}
			if c != abiSlackCase {
				cells = append(cells, "-")
				continue
			}
			cells = append(cells, abiDiff(vals[0], vals[1]))
		}
		b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
	}
	return b.String()
}

// abiRatio is gorma's median over the peer's, or "-" when either did not run.
func abiRatio(gorma, peer []float64) string {
	if len(gorma) == 0 || len(peer) == 0 {
		return "-"
	}
	return ratioText(median(gorma) / median(peer))
}

// abiDiff is gorma's median less MPICH's, in us to three decimals, judged against
// abiSlack; "-" when either did not run. The rounded difference is the one judged,
// so that the verdict agrees with the printed figure.
func abiDiff(gorma, mpich []float64) string {
	if len(gorma) == 0 || len(mpich) == 0 {
		return "-"
	}
	d := math.Round((median(gorma)-median(mpich))*1000) / 1000
	if d == 0 {
		d = 0 // not -0
	}
	ok := d <= abiSlack
	return targetText(&Target{Text: num(d, 3), OK: &ok}, "")
}
