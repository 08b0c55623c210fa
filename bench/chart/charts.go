package main

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// A section's charts are of two kinds. A chart stored in the report carries its points
// (chart collect reads them from chart svg --json). A chart of plans is drawn from the
// section's own samples or tables when the page is rendered, so its points are the
// table's medians by construction. A stored chart with the same file comes first.

// plan derives one chart from a section; ok is false when the section lacks its data.
type plan struct {
	file, alt string
	derive    func(rep *Report, s Section) (Chart, bool)
}

var plans = map[string][]plan{
	"startup":   {{"charts/startup.svg", "startup wall time", startupChart}},
	"allreduce": {{"charts/allreduce_p2_latency.svg", "Allreduce latency, 2 ranks", allreduceLatency(2)}, {"charts/allreduce_p4_latency.svg", "Allreduce latency, 4 ranks", allreduceLatency(4)}},
	"launchers": {{"charts/launchers_p4.svg", "startup under each launcher, 4 ranks", launchersChart(4)}, {"charts/launchers_p16.svg", "startup under each launcher, 16 ranks", launchersChart(16)}},
	"sockets":   {{"charts/sockets_rtt.svg", "net.Conn round trip", socketsChart}},
	"halo":      {{"charts/halo.svg", "halo exchange time", haloChart}},
	"overlap":   {{"charts/overlap.svg", "Iallreduce beside a computation", overlapChart}},
	"scale": {
		{"charts/scale_shm.svg", "shared memory per host against ranks", scaleChart("Scale: memory", "shm per host", "shared memory per host (MB)")},
		{"charts/scale_wall.svg", "job wall time against ranks", scaleChart("Scale: time", "job wall", "job wall time, launch to exit (s)")},
	},
}

// pageChart is a chart of the page; without points it is listed as not recorded.
type pageChart struct {
	Chart
	derived bool
}

// sectionCharts returns the charts of s in page order: the stored ones (a stored chart
// without points is drawn from its plan when one has its file), then the other plans.
func sectionCharts(rep *Report, s Section) ([]pageChart, error) {
	var out []pageChart
	seen := map[string]bool{}
	derive := func(file string) (Chart, bool) {
		for _, pl := range plans[s.ID] {
			if pl.file == file {
				ch, ok := pl.derive(rep, s)
				ch.File, ch.Alt = pl.file, pl.alt
				return ch, ok
			}
		}
		return Chart{}, false
	}
	for _, c := range s.Charts {
		seen[c.File] = true
		if len(c.Series) > 0 {
			if err := agrees(s, c); err != nil {
				return nil, fmt.Errorf("section %s: %w", s.ID, err)
			}
			out = append(out, pageChart{Chart: c})
			continue
		}
		if ch, ok := derive(c.File); ok {
			out = append(out, pageChart{Chart: ch, derived: true})
			continue
		}
		out = append(out, pageChart{Chart: c})
	}
	for _, pl := range plans[s.ID] {
		if seen[pl.file] || s.Failed != "" {
			continue
		}
		if ch, ok := derive(pl.file); ok {
			out = append(out, pageChart{Chart: ch, derived: true})
		}
	}
	return out, nil
}

// tolerance is how far a chart's median may lie from the table's cell, which keeps 3
// significant digits.
const tolerance = 0.006

// agrees checks a stored chart against the table it names: at every size both have, each
// series equals the column of its name.
func agrees(s Section, c Chart) error {
	if c.Table == "" {
		return nil
	}
	t, ok := findTable(s, c.Table)
	if !ok {
		return fmt.Errorf("chart %s: no table %q", c.File, c.Table)
	}
	for _, ss := range c.Series {
		col := colIndex(t, ss.Name)
		if col < 0 {
			continue
		}
		for _, r := range t.Rows {
			x, ok := labelX(r.Label)
			v := r.Values[col]
			if !ok || v == nil {
				continue
			}
			for _, pt := range ss.Points {
				if pt.X == x && math.Abs(pt.Y-*v) > tolerance*math.Max(math.Abs(pt.Y), math.Abs(*v)) {
					return fmt.Errorf("chart %s: %s at %s is %v, the table %q says %v", c.File, ss.Name, r.Label, pt.Y, t.Title, *v)
				}
			}
		}
	}
	return nil
}

func findTable(s Section, title string) (Table, bool) {
	for _, t := range s.Tables {
		if t.Title == title || strings.HasPrefix(t.Title, title) {
			return t, true
		}
	}
	return Table{}, false
}

func colIndex(t Table, name string) int {
	for i, c := range t.Columns {
		if c == name {
			return i
		}
	}
	return -1
}

// labelX reads a row label as a size ("8", "1K", "64 B", "4 KiB") or a rank count.
func labelX(label string) (float64, bool) {
	l := strings.TrimSuffix(strings.TrimSpace(label), "iB")
	l = strings.TrimSuffix(l, " B")
	l = strings.ReplaceAll(l, " ", "")
	xs, err := parseSizes([]string{l})
	if err != nil || l == "" {
		return 0, false
	}
	return xs[0], true
}

// tableChart draws the rows of t that keep returns an x for as a line per column.
func tableChart(t Table, x func(Row) (float64, bool), cols []int, names []string) Chart {
	ch := Chart{Table: t.Title}
	for k, i := range cols {
		cs := ChartSeries{Name: names[k]}
		for _, r := range t.Rows {
			if xv, ok := x(r); ok && r.Values[i] != nil {
				cs.Points = append(cs.Points, Point{X: xv, Y: *r.Values[i]})
			}
		}
		if len(cs.Points) > 0 {
			ch.Series = append(ch.Series, cs)
		}
	}
	return ch
}

func allCols(t Table) ([]int, []string) {
	cols := make([]int, len(t.Columns))
	for i := range cols {
		cols[i] = i
	}
	return cols, t.Columns
}

func rowSize(r Row) (float64, bool) { return labelX(r.Label) }

// allreduceLatency is the latency table of p ranks on a log2 size axis.
func allreduceLatency(p int) func(*Report, Section) (Chart, bool) {
	return func(rep *Report, s Section) (Chart, bool) {
		t, ok := findTable(s, fmt.Sprintf("Allreduce, %d ranks: latency", p))
		if !ok {
			return Chart{}, false
		}
		cols, names := allCols(t)
		ch := tableChart(t, rowSize, cols, names)
		ch.Title = fmt.Sprintf("Allreduce (float64 sum), %d ranks on %d cores", p, rep.Machine.Cores)
		ch.X, ch.XLabel, ch.YLabel, ch.LogY = "bytes", "message size (bytes)", "latency (us)", true
		if p > rep.Machine.Cores {
			ch.Note = mpichNote(rep.Machine.Cores)
		}
		return ch, len(ch.Series) > 0
	}
}

func socketsChart(rep *Report, s Section) (Chart, bool) {
	t, ok := findTable(s, "Round trip")
	if !ok {
		return Chart{}, false
	}
	cols, names := allCols(t)
	ch := tableChart(t, rowSize, cols, names)
	ch.Title = "net.Conn round trip, two processes"
	ch.X, ch.XLabel, ch.YLabel, ch.LogY = "bytes", "message size (bytes)", "round trip (us, median)", true
	return ch, len(ch.Series) > 0
}

// scaleChart draws the column group of table (title prefix) whose first column is
// "GROUP (unit): gorma", up to the ratio columns, against the rank count.
func scaleChart(table, group, ylabel string) func(*Report, Section) (Chart, bool) {
	return func(rep *Report, s Section) (Chart, bool) {
		t, ok := findTable(s, table)
		if !ok {
			return Chart{}, false
		}
		var cols []int
		var names []string
		for i, c := range t.Columns {
			if len(cols) == 0 {
				if head, name, ok := strings.Cut(c, ": "); ok && strings.HasPrefix(head, group) {
					cols, names = append(cols, i), append(names, name)
				}
				continue
			}
			if strings.Contains(c, "/") || strings.Contains(c, ": ") {
				break
			}
			cols, names = append(cols, i), append(names, c)
		}
		if len(cols) == 0 {
			return Chart{}, false
		}
		ranks := func(r Row) (float64, bool) {
			n, err := strconv.Atoi(r.Label)
			return float64(n), err == nil && n > 0
		}
		ch := tableChart(t, ranks, cols, names)
		ch.Table = "" // the columns repeat their names across groups: nothing to check by name
		ch.Title = fmt.Sprintf("One job on one host, oversubscribed on %d cores", rep.Machine.Cores)
		ch.X, ch.XLabel, ch.YLabel, ch.LogY = "ranks", "ranks", ylabel, true
		ch.Note = mpichNote(rep.Machine.Cores)
		return ch, len(ch.Series) > 0
	}
}

// barChart draws the rows of t that keep accepts as categories, a bar per column.
func barChart(t Table, keep func(Row) bool, category func(string) string) Chart {
	ch := Chart{Table: t.Title}
	idx := map[int]float64{}
	for i, r := range t.Rows {
		if keep(r) {
			idx[i] = float64(len(ch.Categories))
			ch.Categories = append(ch.Categories, category(r.Label))
		}
	}
	for c, name := range t.Columns {
		cs := ChartSeries{Name: name}
		for i, r := range t.Rows {
			if x, ok := idx[i]; ok && r.Values[c] != nil {
				cs.Points = append(cs.Points, Point{X: x, Y: *r.Values[c]})
			}
		}
		ch.Series = append(ch.Series, cs)
	}
	return ch
}

// twoLines breaks "A (B)" into two lines for a category label.
func twoLines(l string) string {
	if a, b, ok := strings.Cut(l, " ("); ok {
		return a + "\n(" + b
	}
	return l
}

func haloChart(rep *Report, s Section) (Chart, bool) {
	if len(s.Tables) == 0 {
		return Chart{}, false
	}
	t := s.Tables[0]
	ch := barChart(t, func(Row) bool { return true }, twoLines)
	ch.Title = "Halo column exchange, 2 ranks"
	ch.XLabel, ch.YLabel, ch.LogY = "matrix", "one exchange ("+t.Unit+")", true
	return ch, len(ch.Categories) > 0
}

func overlapChart(rep *Report, s Section) (Chart, bool) {
	if len(s.Tables) == 0 {
		return Chart{}, false
	}
	t := s.Tables[0]
	var names []string
	short := func(l string) string { // "Allreduce alone (t_coll)": t_coll
		a, b, ok := strings.Cut(l, " (")
		if !ok {
			return l
		}
		b = strings.TrimSuffix(b, ")")
		names = append(names, b+": "+a)
		return b
	}
	ch := barChart(t, func(r Row) bool { return r.Unit == "us" }, short)
	ch.Title = "Iallreduce beside a computation, 2 ranks"
	ch.YLabel = "time (us)"
	if len(names) > 0 {
		ch.Note = strings.Join(names, "; ") + "."
	}
	return ch, len(ch.Categories) > 0
}

var ranksIn = regexp.MustCompile(`-n (\d+)\b`)

// samplesChart draws the samples' medians as bars, with whiskers from the fastest to the
// slowest run; key returns a sample's category and series, ok false to leave it out.
func samplesChart(s Section, key func(label string, n string) (cat, series string, ok bool)) Chart {
	var ch Chart
	cats, sers := map[string]int{}, map[string]int{}
	for _, m := range s.Samples {
		n := "?"
		if g := ranksIn.FindStringSubmatch(m.Label); g != nil {
			n = g[1]
		}
		cat, ser, ok := key(m.Label, n)
		if !ok || len(m.Values) == 0 {
			continue
		}
		if _, ok := cats[cat]; !ok {
			cats[cat] = len(ch.Categories)
			ch.Categories = append(ch.Categories, cat)
		}
		if _, ok := sers[ser]; !ok {
			sers[ser] = len(ch.Series)
			ch.Series = append(ch.Series, ChartSeries{Name: ser})
		}
		lo, hi := m.Values[0], m.Values[0]
		for _, v := range m.Values {
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
		cs := &ch.Series[sers[ser]]
		cs.Points = append(cs.Points, Point{X: float64(cats[cat]), Y: m.Median, Min: &lo, Max: &hi})
	}
	ch.Note = "Bars: the medians of the table; whiskers: the fastest and the slowest run."
	return ch
}

func startupChart(rep *Report, s Section) (Chart, bool) {
	ch := samplesChart(s, func(label, n string) (string, string, bool) {
		f := strings.Fields(label)
		if len(f) == 0 {
			return "", "", false
		}
		return n + " ranks", f[0], true
	})
	ch.Title = fmt.Sprintf("Startup: wall time of a hello job on %d cores", rep.Machine.Cores)
	ch.YLabel = "wall time (ms)"
	ch.Note += " " + mpichNote(rep.Machine.Cores)
	return ch, len(ch.Categories) > 0
}

// launchersChart draws the samples of n ranks: a group of bars per launcher, a bar per
// program (gorma's, MPICH's, Open MPI's hello).
func launchersChart(n int) func(*Report, Section) (Chart, bool) {
	ranks := strconv.Itoa(n)
	return func(rep *Report, s Section) (Chart, bool) {
		ch := samplesChart(s, func(label, m string) (string, string, bool) {
			f := strings.Fields(label)
			if len(f) < 2 || m != ranks {
				return "", "", false
			}
			return launcherName(f), programName(f[len(f)-1]), true
		})
		ch.Title = fmt.Sprintf("Startup under each launcher, %d ranks on %d cores", n, rep.Machine.Cores)
		ch.YLabel = "wall time (ms)"
		if n > rep.Machine.Cores {
			ch.Note += " " + mpichNote(rep.Machine.Cores)
		}
		return ch, len(ch.Categories) > 0
	}
}

// launcherName is a sample's launcher, its PMI on a second line where the label gives
// one ("srun -n 4 --mpi=pmix apps/hello": "srun\n--mpi=pmix").
func launcherName(f []string) string {
	for _, a := range f[1:] {
		if strings.HasPrefix(a, "--mpi=") {
			return f[0] + "\n" + a
		}
	}
	return f[0]
}

// programName is the program of a sample's hello: hello_mpich, hello_ompi or gorma's.
func programName(prog string) string {
	switch {
	case strings.Contains(prog, "mpich"):
		return "MPICH"
	case strings.Contains(prog, "ompi"):
		return "Open MPI"
	}
	return "gorma"
}

// mpichNote is the note of a chart with MPICH runs of more ranks than cores.
func mpichNote(cores int) string {
	return fmt.Sprintf("Where MPICH's busy-polling ranks outnumber the %d cores, its figures measure the oversubscription.", cores)
}
