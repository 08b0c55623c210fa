package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
)

// FT is docs/ft.json: one run of scripts/ftbench.sh (make ftbench), the source of the
// page's section on fault tolerance. chart ft collects it from results/ftbench.
type FT struct {
	Command   string      `json:"command"`
	Cores     int         `json:"cores"`
	CPU       string      `json:"cpu"`
	LoadStart [3]float64  `json:"load_start"`
	LoadEnd   [3]float64  `json:"load_end"`
	Recovery  []FTCase    `json:"recovery"` // in ftCases' order
	Verdicts  *FTVerdicts `json:"verdicts,omitempty"`
	Cost      []FTCost    `json:"cost"` // in ftOps' order
	// CostOn is the machine of Cost where it is not the run's (chart ft --cost).
	CostOn *FTMachine `json:"cost_on,omitempty"`
	Failed []string   `json:"failed,omitempty"`
}

// FTMachine is a run's machine and its load at the start and the end.
type FTMachine struct {
	Command   string     `json:"command"`
	Cores     int        `json:"cores"`
	CPU       string     `json:"cpu"`
	LoadStart [3]float64 `json:"load_start"`
	LoadEnd   [3]float64 `json:"load_end"`
}

// FTCase is one kind of strike over its jobs: apps/ftbench's reports, seconds from the
// strike. Detect and Shrink are the kill cases', Spawn the join case's.
type FTCase struct {
	Case     string  `json:"case"`
	Before   int     `json:"ranks_before"`
	After    int     `json:"ranks_after"`
	HostsWas int     `json:"hosts_before"`
	Hosts    int     `json:"hosts"`
	PauseUS  float64 `json:"pause_us"`
	Strikes  int     `json:"strikes"`
	Detect   *FTStat `json:"detect_s,omitempty"`
	Shrink   *FTStat `json:"shrink_s,omitempty"`
	Spawn    *FTStat `json:"spawn_s,omitempty"`
	Recover  FTStat  `json:"recover_s"`
}

// FTVerdicts is the loaded run of jobs that no strike touched (the verdicts case):
// every failure verdict in it is false.
type FTVerdicts struct {
	Jobs       int        `json:"jobs"`
	Burners    int        `json:"burners"`
	Load       [3]float64 `json:"load"`
	False      int        `json:"false_verdicts"`
	Memberlist int        `json:"memberlist_verdicts"`
}

// ftVerdictLine is the summary line of launcher's TestNetnsLoadFTNoFalseVerdicts.
var ftVerdictLine = regexp.MustCompile(`(\d+) --ft jobs under (\d+) CPU burners in \S+ \(load average ([\d.]+) ([\d.]+) ([\d.]+)\): ` +
	`false failure verdicts (\d+); memberlist verdicts of death logged by the agents: (\d+)`)

// parseVerdicts reads the verdicts case's log.
func parseVerdicts(b []byte) (*FTVerdicts, error) {
	m := ftVerdictLine.FindStringSubmatch(string(b))
	if m == nil {
		return nil, errors.New("verdicts.log: no summary line of TestNetnsLoadFTNoFalseVerdicts")
	}
	v := &FTVerdicts{}
	v.Jobs, _ = strconv.Atoi(m[1])
	v.Burners, _ = strconv.Atoi(m[2])
	for i := range 3 {
		v.Load[i], _ = strconv.ParseFloat(m[3+i], 64)
	}
	v.False, _ = strconv.Atoi(m[6])
	v.Memberlist, _ = strconv.Atoi(m[7])
	return v, nil
}

// FTStat is the median and the maximum over the strikes.
type FTStat struct {
	Median float64 `json:"median"`
	Max    float64 `json:"max"`
}

// FTCost is one operation's time without and with --ft over alternated runs: medians
// over the runs in microseconds, spread the slowest run over the median.
type FTCost struct {
	Op         string  `json:"op"`
	Runs       int     `json:"runs"`
	BaseUS     float64 `json:"base_us"`
	BaseSpread float64 `json:"base_spread"`
	FTUS       float64 `json:"ft_us"`
	FTSpread   float64 `json:"ft_spread"`
}

// ftCases are the strikes, in the page's order: the file prefix, what was struck and the
// issue's target for recover_s.
var ftCases = []struct{ name, what, target string }{
	{"kill_rank", "kill -9 of a rank", "100 ms"},
	{"kill_agent", "kill -9 of a host (its agent and ranks; network namespaces)", "1 s"},
	{"join", "a host joins (its agent starts; network namespaces)", "1 s"},
}

// ftOps are the operations of the --ft cost: the file prefix, the page's name, and where
// the time is in the program's JSON (the table and the field of the 8-byte row).
var ftOps = []struct{ name, op, table, field string }{
	{"cost_ar", "Allreduce 8 B (allreducebench, mean)", "allreduce", "avg_us"},
	{"cost_rma", "Put + Flush 8 B (rmabench put_lat.lock_all, median)", "put_lat.lock_all", "median_us"},
}

// ftCostTarget is the most that --ft may add to an operation: with / without.
const ftCostTarget = 1.1

// ftPublished are recovery times that elastic frameworks' users and documentation give,
// beside gorma's on the page: the system, what it rebuilds, the time, the source.
var ftPublished = [][4]string{
	{"Horovod Elastic (Gloo)", "the Gloo context, re-initialised after a reset", "0.4 s at 2 ranks, 1.2 s at 4, 7.1 s at 8, 15.8 s at 16",
		"[horovod#3556](https://github.com/horovod/horovod/issues/3556)"},
	{"torchrun (TorchElastic)", "every worker restarts after a new rendezvous", "its last call alone waits 30 s by default",
		"[torchrun](https://pytorch.org/docs/stable/elastic/run.html), `torch/distributed/elastic/rendezvous/dynamic_rendezvous.py`"},
}

// runFT is chart ft: collect results/ftbench into docs/ft.json.
func runFT(args []string) error {
	fs := pflag.NewFlagSet("chart ft", pflag.ContinueOnError)
	in := fs.String("in", "results/ftbench", "scripts/ftbench.sh's results")
	cost := fs.String("cost", "", "take the cost of --ft from this run of scripts/ftbench.sh instead (CASES=cost on another machine)")
	out := fs.String("out", "docs/ft.json", "the document to write")
	if err := fs.Parse(args); err != nil {
		return err
	}
	f, err := collectFT(*in)
	if err != nil {
		return err
	}
	if *cost != "" {
		c, err := collectFT(*cost)
		if err != nil {
			return err
		}
		f.Cost = c.Cost
		f.CostOn = &FTMachine{Command: c.Command, Cores: c.Cores, CPU: c.CPU, LoadStart: c.LoadStart, LoadEnd: c.LoadEnd}
		for _, x := range c.Failed {
			f.Failed = append(f.Failed, "cost: "+x)
		}
	}
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(*out, append(b, '\n'), 0o644)
}

// ftMeta is the run's meta.json, which scripts/ftbench.sh writes.
type ftMeta struct {
	Command   string `json:"command"`
	Cores     int    `json:"cores"`
	CPU       string `json:"cpu"`
	LoadStart string `json:"load_start"`
	LoadEnd   string `json:"load_end"`
}

// ftReport is what collectFT reads of an apps/ftbench document.
type ftReport struct {
	Case     string  `json:"case"`
	Before   int     `json:"ranks_before"`
	Ranks    int     `json:"ranks"`
	HostsWas int     `json:"hosts_before"`
	Hosts    int     `json:"hosts"`
	PauseUS  float64 `json:"pause_us"`
	DetectS  float64 `json:"detect_s"`
	ShrinkS  float64 `json:"shrink_s"`
	SpawnS   float64 `json:"spawn_s"`
	RecoverS float64 `json:"recover_s"`
}

var ftFile = regexp.MustCompile(`^([a-z_]+?)_(?:(ft|base)_)?(\d+)\.json$`)

// collectFT reads dir: meta.json, failed.txt (one failed run a line) and the JSON
// documents PREFIX_K.json of the strikes and PREFIX_ft_K.json, PREFIX_base_K.json of the
// cost.
func collectFT(dir string) (*FT, error) {
	var meta ftMeta
	b, err := os.ReadFile(filepath.Join(dir, "meta.json"))
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, &meta); err != nil {
		return nil, fmt.Errorf("%s/meta.json: %w", dir, err)
	}
	f := &FT{Command: meta.Command, Cores: meta.Cores, CPU: meta.CPU}
	if f.LoadStart, err = parseLoad(meta.LoadStart); err != nil {
		return nil, err
	}
	if f.LoadEnd, err = parseLoad(meta.LoadEnd); err != nil {
		return nil, err
	}
	if b, err := os.ReadFile(filepath.Join(dir, "failed.txt")); err == nil {
		f.Failed = strings.FieldsFunc(string(b), func(r rune) bool { return r == '\n' })
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	if b, err := os.ReadFile(filepath.Join(dir, "verdicts.log")); err == nil {
		if f.Verdicts, err = parseVerdicts(b); err != nil {
			return nil, err
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	reports := map[string][]ftReport{}
	costs := map[string][]float64{} // by prefix_ft and prefix_base
	for _, e := range ents {
		m := ftFile.FindStringSubmatch(e.Name())
		if m == nil || e.Name() == "meta.json" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		if m[2] == "" {
			var r ftReport
			if err := json.Unmarshal(b, &r); err != nil {
				return nil, fmt.Errorf("%s: %w", e.Name(), err)
			}
			reports[m[1]] = append(reports[m[1]], r)
			continue
		}
		v, err := ftCostValue(m[1], b)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", e.Name(), err)
		}
		costs[m[1]+"_"+m[2]] = append(costs[m[1]+"_"+m[2]], v)
	}
	for _, c := range ftCases {
		if rs := reports[c.name]; len(rs) > 0 {
			f.Recovery = append(f.Recovery, ftCase(c.name, rs))
		}
	}
	for _, o := range ftOps {
		base, ft := costs[o.name+"_base"], costs[o.name+"_ft"]
		if len(base) == 0 || len(ft) == 0 {
			continue
		}
		f.Cost = append(f.Cost, FTCost{Op: o.op, Runs: min(len(base), len(ft)),
			BaseUS: median(base), BaseSpread: slices.Max(base) / median(base),
			FTUS: median(ft), FTSpread: slices.Max(ft) / median(ft)})
	}
	return f, nil
}

// ftCostValue returns the 8-byte row's time of the cost operation prefix in the
// program's JSON document b.
func ftCostValue(prefix string, b []byte) (float64, error) {
	for _, o := range ftOps {
		if o.name != prefix {
			continue
		}
		p, err := extract(b, o.table, o.field, "bytes")
		if err != nil {
			return 0, err
		}
		v, ok := p[8]
		if !ok {
			return 0, fmt.Errorf("no 8-byte row with %s in table %s", o.field, o.table)
		}
		return v, nil
	}
	return 0, fmt.Errorf("unknown cost operation %q (want %s_ft_K.json or %s_base_K.json)", prefix, ftOps[0].name, ftOps[0].name)
}

// ftCase summarizes the reports of one case.
func ftCase(name string, rs []ftReport) FTCase {
	stat := func(get func(ftReport) float64) *FTStat {
		v := make([]float64, len(rs))
		for i, r := range rs {
			v[i] = get(r)
		}
		return &FTStat{Median: median(v), Max: slices.Max(v)}
	}
	c := FTCase{Case: name, Before: rs[0].Before, After: rs[0].Ranks, HostsWas: rs[0].HostsWas, Hosts: rs[0].Hosts, PauseUS: rs[0].PauseUS, Strikes: len(rs),
		Recover: *stat(func(r ftReport) float64 { return r.RecoverS })}
	if rs[0].Case == "join" {
		c.Spawn = stat(func(r ftReport) float64 { return r.SpawnS })
	} else {
		c.Detect = stat(func(r ftReport) float64 { return r.DetectS })
		c.Shrink = stat(func(r ftReport) float64 { return r.ShrinkS })
	}
	return c
}

// loadFT reads path, or returns nil when it does not exist.
func loadFT(path string) (*FT, error) { return loadStrict[FT](path) }

// renderFT writes the section "Fault tolerance".
func renderFT(f *FT) (string, error) {
	var b strings.Builder
	b.WriteString("## Fault tolerance: recovery under golaunch --ft\n\n")
	fmt.Fprintf(&b, "From `%s` (`scripts/ftbench.sh`, then `chart ft`): %d cores (%s); load %s at the start, %s at the end. "+
		"Each strike is a fresh job, struck from outside once its ranks run Allreduce 8 B in a loop; `go doc ./apps/ftbench` "+
		"defines what is timed, from a timestamp written just before the strike. Figures are the median and the maximum over the strikes, in ms.\n\n",
		f.Command, f.Cores, f.CPU, ftLoad(f.LoadStart), ftLoad(f.LoadEnd))
	if len(f.Failed) > 0 {
		fmt.Fprintf(&b, "Runs that failed (missing from the figures): %s.\n\n", strings.Join(f.Failed, "; "))
	}
	b.WriteString("| event | ranks | hosts | strikes | failure seen | World shrunk or ranks spawned | next Allreduce done | target |\n|---|---|---|---:|---:|---:|---:|---|\n")
	for _, c := range f.Recovery {
		i := slices.IndexFunc(ftCases, func(k struct{ name, what, target string }) bool { return k.name == c.Case })
		if i < 0 {
			return "", fmt.Errorf("docs/ft.json: unknown case %q", c.Case)
		}
		mid := c.Shrink
		if c.Spawn != nil {
			mid = c.Spawn
		}
		fmt.Fprintf(&b, "| %s | %d → %d | %d → %d | %d | %s | %s | %s | ≤ %s |\n", ftCases[i].what, c.Before, c.After, c.HostsWas, c.Hosts, c.Strikes,
			ftStat(c.Detect), ftStat(mid), ftStat(&c.Recover), ftCases[i].target)
	}
	if v := f.Verdicts; v != nil {
		fmt.Fprintf(&b, "\nFalse failure verdicts: %d in %d `--ft` jobs (6 ranks over 3 network-namespace hosts, none struck) beside %d CPU burners, "+
			"load %s (target 0; launcher's `TestNetnsLoadFTNoFalseVerdicts`). memberlist declared a live agent dead %d times meanwhile; "+
			"golaunch acts on that only once the agent's control connection is lost too.\n", v.False, v.Jobs, v.Burners, ftLoad(v.Load), v.Memberlist)
	}
	b.WriteString("\nPublished recovery times of elastic training frameworks, not measured here:\n\n")
	b.WriteString("| system | what a failure rebuilds | published time | source |\n|---|---|---|---|\n")
	for _, p := range ftPublished {
		b.WriteString("| " + strings.Join(p[:], " | ") + " |\n")
	}
	if len(f.Cost) > 0 {
		on := ""
		if m := f.CostOn; m != nil {
			on = fmt.Sprintf(" on another machine (`%s`, CASES=cost: %d cores, %s; load %s at the start, %s at the end)", m.Command, m.Cores, m.CPU, ftLoad(m.LoadStart), ftLoad(m.LoadEnd))
		}
		b.WriteString("\nThe failure-free cost of `--ft`" + on + ": runs alternated with and without it, 2 ranks; medians over the runs in us (spread: slowest run / median).\n\n")
		b.WriteString("| operation | runs | without --ft | with --ft | with / without | target |\n|---|---:|---:|---:|---:|---|\n")
		for _, c := range f.Cost {
			fmt.Fprintf(&b, "| %s | %d | %s (%s) | %s (%s) | %s | ≤ %s |\n", c.Op, c.Runs, num(c.BaseUS, 3), ratioText(c.BaseSpread),
				num(c.FTUS, 3), ratioText(c.FTSpread), ratioText(c.FTUS/c.BaseUS), ratioText(ftCostTarget))
		}
	}
	return b.String(), nil
}

// ftStat is a median and a maximum in ms, or "-".
func ftStat(s *FTStat) string {
	if s == nil {
		return "-"
	}
	return strconv.FormatFloat(s.Median*1e3, 'f', 1, 64) + " / " + strconv.FormatFloat(s.Max*1e3, 'f', 1, 64)
}

func ftLoad(l [3]float64) string {
	if l == [3]float64{} {
		return "not recorded"
	}
	return fmt.Sprintf("%.2f %.2f %.2f", l[0], l[1], l[2])
}
