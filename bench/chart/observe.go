package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gorma-hpc/gorma/internal/trace"
)

// Observe is one run of scripts/compare-observe.sh on one machine, as the script wrote
// it: docs/observe.json (the 16-core machine's) or docs/observe2.json (the 2-core
// machine's), the sources of the page's section "The cost of observation". chart page
// takes the medians, the spread and the ratios from its runs.
type Observe struct {
	Command    string         `json:"command"`
	Machine    D16Machine     `json:"machine"`
	Clock      string         `json:"clocksource,omitempty"`  // the kernel's current_clocksource
	Clocks     string         `json:"clocksources,omitempty"` // its available_clocksource
	TSCFlags   string         `json:"tsc_flags,omitempty"`    // the processor's constant_tsc and nonstop_tsc flags, those it has
	Go         string         `json:"go"`
	OpenMPI    string         `json:"openmpi"` // the version mpirun.openmpi reports
	Reps       int            `json:"reps"`
	Load       *Load          `json:"load,omitempty"`
	Benchmarks []ObserveBench `json:"benchmarks"`
	Runs       []ObserveCells `json:"runs"`
	Failed     []string       `json:"failed,omitempty"`
}

// ObserveBench is one benchmark of the run: its rank count and the command of each mode,
// by the ids of observeModes. "@OBS@" in a command stands for the run's temporary
// profile folder, timeline file or folder of Open MPI's monitoring files.
type ObserveBench struct {
	Bench    string            `json:"bench"` // an id of observeBenches
	Ranks    int               `json:"ranks"`
	Commands map[string]string `json:"commands"`
}

// ObserveCells is every run of one benchmark in one mode at one size: its figure, in us.
type ObserveCells struct {
	Bench  string    `json:"bench"`
	System string    `json:"system"` // gorma or ompi
	Mode   string    `json:"mode"`   // off, profile, trace (gorma); off, monitoring (ompi)
	Bytes  int       `json:"bytes"`
	US     []float64 `json:"us"`
}

// observeBenches are the benchmarks of the run, in the page's order: the id, the table's
// title and what its figure is.
var observeBenches = []struct{ id, title, figure string }{
	{"pingpong", "Ping-pong latency", "`apps/pingpong --test latency` and `bench/mpi/pingpong.c`: the half round trip, a mean over the round trips"},
	{"allreduce", "Allreduce (float64 sum)", "`apps/allreducebench --test allreduce` and `bench/mpi/allreducebench.c`: each rank's mean per call, averaged over the ranks"},
}

// observeModes are the modes, in the page's column order: the system, the mode and the
// column's name.
var observeModes = []struct{ system, mode, name string }{
	{"gorma", "off", "gorma"},
	{"gorma", "profile", "gorma --profile"},
	{"gorma", "trace", "gorma --trace"},
	{"ompi", "off", "Open MPI"},
	{"ompi", "monitoring", "Open MPI, monitoring"},
}

// observeRatios are the ratios of the page: a mode's figure over the same system's figure
// off (observeRatio), the column's name and the target (0: none).
var observeRatios = []struct {
	system, mode, name string
	target             float64
}{
	{"gorma", "profile", "profile / off", 1.05},
	{"gorma", "trace", "trace / off", 1.15},
	{"ompi", "monitoring", "monitoring / off, Open MPI", 0},
}

// loadObserve reads path strictly, or returns nil when it does not exist.
func loadObserve(path string) (*Observe, error) {
	o, err := loadStrict[Observe](path)
	if o == nil || err != nil {
		return nil, err
	}
	for _, c := range o.Runs {
		if observeBench(c.Bench) < 0 {
			return nil, fmt.Errorf("%s: unknown benchmark %q", path, c.Bench)
		}
		if !slices.ContainsFunc(observeModes, func(m struct{ system, mode, name string }) bool { return m.system == c.System && m.mode == c.Mode }) {
			return nil, fmt.Errorf("%s: unknown mode %q of system %q", path, c.Mode, c.System)
		}
	}
	for _, b := range o.Benchmarks {
		if observeBench(b.Bench) < 0 {
			return nil, fmt.Errorf("%s: unknown benchmark %q", path, b.Bench)
		}
		for id := range b.Commands {
			if !slices.ContainsFunc(observeModes, func(m struct{ system, mode, name string }) bool { return m.system+"_"+m.mode == id }) {
				return nil, fmt.Errorf("%s: benchmark %s: unknown mode %q", path, b.Bench, id)
			}
		}
	}
	return o, nil
}

// observeBench returns the index of id in observeBenches, or -1.
func observeBench(id string) int {
	return slices.IndexFunc(observeBenches, func(b struct{ id, title, figure string }) bool { return b.id == id })
}

// cell returns the runs of bench in system's mode at size, or nil.
func (o *Observe) cell(bench, system, mode string, size int) []float64 {
	for _, c := range o.Runs {
		if c.Bench == bench && c.System == system && c.Mode == mode && c.Bytes == size && len(c.US) > 0 {
			return c.US
		}
	}
	return nil
}

// renderObserve writes the section "The cost of observation" from runs, one per
// machine: what every run measures, then for each run its machine and a table (per
// benchmark a row per size, a column per mode that ran, and each observed mode's median
// over its system's median off, against the targets). With more than one run, each has a
// heading that names its machine.
func renderObserve(runs []*Observe) (string, error) {
	var b strings.Builder
	b.WriteString("## The cost of observation\n\n")
	var figures []string
	for _, bench := range observeBenches {
		if slices.ContainsFunc(runs, func(o *Observe) bool {
			return slices.ContainsFunc(o.Runs, func(c ObserveCells) bool { return c.Bench == bench.id })
		}) {
			figures = append(figures, bench.title+": "+bench.figure)
		}
	}
	fmt.Fprintf(&b, "gorma's programs run through golaunch without observation, with `--profile DIR` (`GORMA_PROFILE`: per-peer and per-call counters) "+
		"and with `--trace FILE` (`GORMA_TRACE`: every call in the flight recorder). "+
		"Their C twins run under `mpirun.openmpi` without and with Open MPI's per-peer counters "+
		"(`--mca pml_monitoring_enable 2 --mca pml_monitoring_enable_output 3 --mca pml_monitoring_filename DIR/prof`), the peer of gorma's profile. "+
		"%s. "+
		"Each repetition runs every mode once; the modes' order rotates each repetition. "+
		"Medians of the repetitions, in us (lower is better); in brackets the fastest and the slowest run. "+
		"A ratio is the median, over the repetitions, of a mode's figure over its system's figure without observation in the same repetition "+
		"(the ratio of the medians when a run failed). "+
		"`scripts/compare-builds.sh` measures what the hooks cost with observation off, "+
		"`go test -bench Observe8B ./runtime` and `go test -bench ObserveAllreduce8B ./collectives` what they add to one round trip and to one Allreduce, "+
		"and `go test -bench ObservePingPong8B ./runtime` what they add to the latency.\n\n",
		strings.Join(figures, ". "))
	for _, o := range runs {
		if len(runs) > 1 {
			fmt.Fprintf(&b, "### %d cores (%s)\n\n", o.Machine.Cores, o.Machine.CPU)
		}
		fmt.Fprintf(&b, "From `%s`: %d cores (%s), %s, Open MPI %s, %s. ",
			o.Command, o.Machine.Cores, o.Machine.CPU, o.Go, o.OpenMPI, plural(o.Reps, "repetition"))
		b.WriteString(clockText(o))
		b.WriteString(loadText(o.Load, o.Machine.Cores))
		if o.Machine.Cores <= 2 {
			fmt.Fprintf(&b, " On %d cores, a ratio of sub-microsecond figures moves within %s-%s from run to run: "+
				"inside that band it is a tie, and a miss does not show a cost.", o.Machine.Cores, ratioText(0.8), ratioText(1.2))
		}
		b.WriteString("\n\n")
		if len(o.Failed) > 0 {
			fmt.Fprintf(&b, "Runs that failed (missing from the figures): %s.\n\n", strings.Join(o.Failed, "; "))
		}
		renderObserveTable(&b, o)
		b.WriteString("\n")
	}
	return b.String(), nil
}

// clockText says which clock the run's timeline read (trace.CounterUsable), from the
// machine's clock sources and flags; "" when the run did not record them.
func clockText(o *Observe) string {
	switch {
	case o.Clock == "":
		return ""
	case o.Clocks == "":
		return fmt.Sprintf("The kernel's clock source was %s: the timeline reads the time-stamp counter where the kernel keeps time by it (tsc) "+
			"or offers it on a processor whose counter runs at a constant rate. ", o.Clock)
	}
	flags := "neither constant_tsc nor nonstop_tsc"
	if o.TSCFlags != "" {
		flags = o.TSCFlags
	}
	clock := "Go's monotonic clock"
	if trace.CounterUsable(o.Clock, o.Clocks, strings.Fields(o.TSCFlags)) {
		clock = "the time-stamp counter"
	}
	return fmt.Sprintf("The kernel's clock source was %s (available: %s), and the processor reports %s: the timeline read %s. ",
		o.Clock, o.Clocks, flags, clock)
}

// renderObserveTable writes one table of every benchmark that ran: a row per benchmark
// and size.
func renderObserveTable(b *strings.Builder, o *Observe) {
	head := []string{"benchmark", "bytes"}
	type col struct{ system, mode string }
	var cols []col
	for _, m := range observeModes {
		if slices.ContainsFunc(o.Runs, func(c ObserveCells) bool {
			return c.System == m.system && c.Mode == m.mode && len(c.US) > 0
		}) {
			head, cols = append(head, m.name), append(cols, col{m.system, m.mode})
		}
	}
	for _, r := range observeRatios {
		name := r.name
		if r.target > 0 {
			name += " (≤ " + ratioText(r.target) + ")"
		}
		head = append(head, name)
	}
	b.WriteString("| " + strings.Join(head, " | ") + " |\n|---|" + strings.Repeat("---:|", len(head)-1) + "\n")
	for _, bench := range observeBenches {
		var sizes []int
		for _, c := range o.Runs {
			if c.Bench == bench.id && !slices.Contains(sizes, c.Bytes) {
				sizes = append(sizes, c.Bytes)
			}
		}
		slices.Sort(sizes)
		ranks := 0
		for _, x := range o.Benchmarks {
			if x.Bench == bench.id {
				ranks = x.Ranks
			}
		}
		for _, n := range sizes {
			cells := []string{fmt.Sprintf("%s, %d ranks", bench.title, ranks), sizeLabel(float64(n))}
			for _, c := range cols {
				cells = append(cells, observeCell(o.cell(bench.id, c.system, c.mode, n)))
			}
			for _, r := range observeRatios {
				on, off := o.cell(bench.id, r.system, r.mode, n), o.cell(bench.id, r.system, "off", n)
				if on == nil || off == nil {
					cells = append(cells, "-")
					continue
				}
				q := observeRatio(on, off, len(o.Failed) == 0)
				text := ratioText(q)
				if r.target > 0 {
					ok := q <= r.target
					text = targetText(&Target{Text: text, OK: &ok}, "")
				}
				cells = append(cells, text)
			}
			b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
		}
	}
}

// observeRatio is the median over the repetitions of on[i] / off[i]: the two runs of one
// repetition ran one after the other, so a change of the machine's speed between
// repetitions cancels out. paired is false when a run failed (the lists may then not
// line up by repetition); the ratio is then median(on) / median(off).
func observeRatio(on, off []float64, paired bool) float64 {
	if !paired || len(on) != len(off) {
		return median(on) / median(off)
	}
	q := make([]float64, len(on))
	for i := range on {
		q[i] = on[i] / off[i]
	}
	return median(q)
}

// observeCell is a cell's median with its fastest and slowest run.
func observeCell(us []float64) string {
	if len(us) == 0 {
		return "-"
	}
	return fmt.Sprintf("%s [%s, %s]", num(median(us), 3), num(slices.Min(us), 3), num(slices.Max(us), 3))
}

// plural is n and noun, with an s unless n is 1.
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
