package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
)

// collectOptions are the flags of chart collect.
type collectOptions struct {
	dir, out, commit   string
	machine            Machine
	run                Run
	loadStart, loadEnd string
	intros, charts     []string
	extra              []string
	warn               io.Writer // where a failed step or a missing chart is reported
}

// runCollect parses make compare's step outputs into the report (docs/benchmarks.json).
func runCollect(args []string) error {
	o := collectOptions{warn: os.Stderr}
	fs := pflag.NewFlagSet("chart collect", pflag.ContinueOnError)
	fs.StringVar(&o.dir, "dir", "results/compare", "the directory of the step outputs (startup_p*.txt, p2p.txt, rma.txt, allreduce.txt)")
	fs.StringVar(&o.out, "out", "docs/benchmarks.json", "the report to write; chart paths are relative to its directory")
	fs.StringVar(&o.commit, "commit", "", "the git commit of the code measured (-dirty appended when tracked files differed)")
	fs.IntVar(&o.machine.Cores, "cores", runtime.NumCPU(), "cores of the machine")
	fs.StringVar(&o.machine.CPU, "cpu", "", "CPU model")
	fs.StringVar(&o.machine.Kernel, "kernel", "", "kernel release")
	fs.StringVar(&o.machine.Go, "go", runtime.Version(), "Go version")
	fs.StringVar(&o.machine.OpenMPI, "openmpi", "", "Open MPI version")
	fs.StringVar(&o.machine.MPICH, "mpich", "", "MPICH version")
	fs.StringVar(&o.run.Start, "start", "", "start of the run, UTC, RFC 3339")
	fs.IntVar(&o.run.DurationS, "duration", 0, "duration of the run in seconds")
	fs.IntVar(&o.run.Repetitions, "reps", 0, "repetitions of each comparison")
	fs.StringVar(&o.loadStart, "load-start", "", `load average at the start ("1.0 0.5 0.2")`)
	fs.StringVar(&o.loadEnd, "load-end", "", "load average at the end")
	fs.StringArrayVar(&o.intros, "intro", nil, "ID=TEXT: the introduction of section ID (repeated)")
	fs.StringArrayVar(&o.charts, "chart", nil, "ID:FILE:ALT: a chart of section ID, its points from --dir's chart_NAME.json (chart svg --json; repeated)")
	fs.StringArrayVar(&o.extra, "section", nil, "FILE: a section as JSON, appended (repeated)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	rep, err := collect(o)
	if err != nil {
		return err
	}
	b, err := rep.encode()
	if err != nil {
		return err
	}
	return os.WriteFile(o.out, b, 0o644)
}

// steps are the sections collect builds from the step outputs, in page order.
var steps = []struct {
	id, title, files string // files: the step's outputs, which hold its load lines
	build            func(dir string) (Section, error)
}{
	{"startup", "Startup: wall time of a whole hello job", "startup_p*.txt", startupSection},
	{"p2p", "Point-to-point, 2 ranks", "p2p.txt", p2pSection},
	{"rma", "One-sided (RMA), 2 ranks", "rma.txt", rmaSection},
	{"allreduce", "Allreduce and Barrier, 2 and 4 ranks", "allreduce.txt", allreduceSection},
}

func collect(o collectOptions) (*Report, error) {
	rep := &Report{Command: "make compare", Commit: o.commit, Machine: o.machine, Run: o.run}
	var err error
	if rep.Run.LoadStart, err = parseLoad(o.loadStart); err != nil {
		return nil, err
	}
	if rep.Run.LoadEnd, err = parseLoad(o.loadEnd); err != nil {
		return nil, err
	}
	for _, st := range steps {
		s, err := st.build(o.dir)
		if err != nil { // the step failed: the page says so
			o.warnf("chart collect: %s: %v\n", st.id, err)
			s = Section{Failed: err.Error()}
		}
		s.ID, s.Title = st.id, st.title
		if s.Load, err = readLoad(filepath.Join(o.dir, st.files)); err != nil {
			return nil, err
		}
		rep.Sections = append(rep.Sections, s)
	}
	for _, f := range o.extra {
		s, err := readSection(f)
		if err != nil {
			return nil, err
		}
		if s.Commit == rep.Commit {
			s.Commit = "" // the report's
		}
		rep.Sections = append(rep.Sections, s)
	}
	if err := addIntros(rep, o.intros); err != nil {
		return nil, err
	}
	if err := addCharts(rep, o); err != nil {
		return nil, err
	}
	return rep, rep.validate()
}

func (o collectOptions) warnf(format string, args ...any) {
	if o.warn != nil {
		fmt.Fprintf(o.warn, format, args...)
	}
}

func parseLoad(s string) ([3]float64, error) {
	var l [3]float64
	f := strings.Fields(s)
	if s == "" {
		return l, nil
	}
	if len(f) != 3 {
		return l, fmt.Errorf("load %q: want three numbers", s)
	}
	for i := range l {
		v, err := strconv.ParseFloat(f[i], 64)
		if err != nil {
			return l, fmt.Errorf("load %q: %w", s, err)
		}
		l[i] = v
	}
	return l, nil
}

func readSection(file string) (Section, error) {
	f, err := os.Open(file)
	if err != nil {
		return Section{}, err
	}
	defer f.Close()
	var rep Report
	rep.Sections = make([]Section, 1)
	dec := newStrictDecoder(f)
	if err := dec.Decode(&rep.Sections[0]); err != nil {
		return Section{}, fmt.Errorf("%s: %w", file, err)
	}
	return rep.Sections[0], rep.validate()
}

func section(rep *Report, id string) (*Section, error) {
	for i := range rep.Sections {
		if rep.Sections[i].ID == id {
			return &rep.Sections[i], nil
		}
	}
	return nil, fmt.Errorf("no section %q", id)
}

func addIntros(rep *Report, intros []string) error {
	for _, spec := range intros {
		id, text, ok := strings.Cut(spec, "=")
		s, err := section(rep, id)
		if !ok || err != nil {
			return fmt.Errorf("--intro %q: want ID=TEXT with a known ID", spec)
		}
		s.Intro = text
	}
	return nil
}

// addCharts adds the charts whose points chart svg --json wrote to DIR/chart_NAME.json
// (NAME: the chart file's name without .svg); a chart without them is left out.
func addCharts(rep *Report, o collectOptions) error {
	for _, spec := range o.charts {
		f := strings.SplitN(spec, ":", 3)
		if len(f) != 3 {
			return fmt.Errorf("--chart %q: want ID:FILE:ALT", spec)
		}
		s, err := section(rep, f[0])
		if err != nil {
			return fmt.Errorf("--chart %q: %w", spec, err)
		}
		data := filepath.Join(o.dir, "chart_"+strings.TrimSuffix(filepath.Base(f[1]), ".svg")+".json")
		b, err := os.ReadFile(data)
		if err != nil {
			o.warnf("chart collect: --chart %s: %v\n", spec, err)
			continue
		}
		var c Chart
		if err := newStrictDecoder(bytes.NewReader(b)).Decode(&c); err != nil {
			return fmt.Errorf("%s: %w", data, err)
		}
		c.File, c.Alt = f[1], f[2]
		s.Charts = append(s.Charts, c)
	}
	return nil
}

var loadLine = regexp.MustCompile(`(?m)^load average at the (start|end): (\S+ \S+ \S+)`)

// readLoad returns the load a step's outputs (glob, in name order) recorded: the start
// line of the first, the end line of the last. Without either, that half is nil; with
// neither, the load is nil.
func readLoad(glob string) (*Load, error) {
	files, _ := filepath.Glob(glob)
	var l Load
	for i, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		for _, m := range loadLine.FindAllStringSubmatch(string(b), -1) {
			v, err := parseLoad(m[2])
			if err != nil {
				return nil, fmt.Errorf("%s: %w", f, err)
			}
			switch {
			case m[1] == "start" && i == 0:
				l.Start = v[:]
			case m[1] == "end" && i == len(files)-1:
				l.End = v[:]
			}
		}
	}
	if l.Start == nil && l.End == nil {
		return nil, nil
	}
	return &l, nil
}

var ranksFlag = regexp.MustCompile(`-n (\d+)\b`)

// startupSection reads startup_p*.txt (compare-startup.sh): the samples, and a row per
// ratio of golaunch to another launcher.
func startupSection(dir string) (Section, error) {
	files, _ := filepath.Glob(filepath.Join(dir, "startup_p*.txt"))
	if len(files) == 0 {
		return Section{}, fmt.Errorf("no %s", filepath.Join(dir, "startup_p*.txt"))
	}
	s := Section{Tables: []Table{{Title: "Medians", Key: "figure", Columns: []string{"golaunch", "peer"}}}}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return Section{}, err
		}
		run, err := parseStartup(string(b))
		if err != nil {
			return Section{}, fmt.Errorf("%s: %w", f, err)
		}
		s.Samples = append(s.Samples, run.Samples...)
		n := "?"
		if m := ranksFlag.FindStringSubmatch(run.Samples[0].Label); m != nil {
			n = m[1]
		}
		for i, r := range run.Ratios {
			g, p, q := run.Samples[0].Median, run.Samples[i+1].Median, r.Ratio
			s.Tables[0].Rows = append(s.Tables[0].Rows, Row{
				Label: fmt.Sprintf("%s ranks, %s vs %s", n, r.Tool, r.Peer), Unit: "ms",
				Values: []*float64{&g, &p}, Ratios: []*float64{&q}, Target: r.Target,
			})
		}
	}
	return s, nil
}

// p2pSection reads p2p.txt (compare-p2p.sh): its target table.
func p2pSection(dir string) (Section, error) {
	tables, err := readTables(filepath.Join(dir, "p2p.txt"))
	if err != nil {
		return Section{}, err
	}
	for _, md := range tables {
		if len(md.Header) > 0 && md.Header[0] == "figure" {
			t, err := targetTable(md, "Targets")
			return Section{Tables: []Table{t}}, err
		}
	}
	return Section{}, errors.New("p2p.txt: no target table")
}

// rmaSection reads rma.txt (compare-rma.sh): the targets, and one row per case from its
// table: latency at the smallest size, bandwidth at the largest.
func rmaSection(dir string) (Section, error) {
	tables, err := readTables(filepath.Join(dir, "rma.txt"))
	if err != nil {
		return Section{}, err
	}
	var s Section
	cases := Table{Title: "Every case: latency at the smallest size, bandwidth at the largest", Key: "case"}
	for _, md := range tables {
		if md.Heading == "targets" {
			t, err := targetTable(md, "Targets")
			if err != nil {
				return Section{}, err
			}
			s.Tables = append([]Table{t}, s.Tables...)
			continue
		}
		t, err := sweepTable(md)
		if err != nil {
			return Section{}, err
		}
		if len(t.Rows) == 0 {
			continue
		}
		if cases.Columns == nil {
			cases.Columns = t.Columns
		} else if strings.Join(cases.Columns, "|") != strings.Join(t.Columns, "|") {
			return Section{}, fmt.Errorf("rma.txt: %s has columns %q, want %q", t.Title, t.Columns, cases.Columns)
		}
		r := t.Rows[0]
		if t.Better == "higher" {
			r = t.Rows[len(t.Rows)-1]
		}
		r.Label, r.Unit = t.Title+", "+sizeText(r.Label), t.Unit
		cases.Rows = append(cases.Rows, r)
	}
	if len(s.Tables) == 0 {
		return Section{}, errors.New("rma.txt: no targets table")
	}
	if len(cases.Rows) > 0 {
		s.Tables = append(s.Tables, cases)
	}
	return s, nil
}

// allreduceSection reads allreduce.txt (compare-allreduce.sh). It reads the latency tables
// first. gorma's runs with fresh buffers or scratch stay in allreduce.txt, and so do the
// bus bandwidth tables: bus bandwidth is bytes / latency x 2(p-1)/p of the latency rows,
// and the charts draw it at every size. Then it reads one table of the Barrier of each rank
// count, and the bus bandwidth at 64 MiB over that at 24 MiB per rank count (target for
// gorma: at least 0.80).
func allreduceSection(dir string) (Section, error) {
	tables, err := readTables(filepath.Join(dir, "allreduce.txt"))
	if err != nil {
		return Section{}, err
	}
	var s Section
	var barrier, scaling []Row
	var columns []string
	for _, md := range tables {
		t, err := sweepTable(md)
		if err != nil {
			return Section{}, err
		}
		if ranks, ok := strings.CutPrefix(t.Title, "Barrier, "); ok && len(t.Rows) == 1 &&
			(columns == nil || strings.Join(columns, "|") == strings.Join(t.Columns, "|")) {
			columns = t.Columns
			r := t.Rows[0]
			r.Label, r.Unit = "Barrier, "+ranks, t.Unit
			barrier = append(barrier, r)
			continue
		}
		if strings.HasPrefix(t.Title, "gorma with fresh") {
			continue // gorma against itself: kept in allreduce.txt, off the side-by-side page
		}
		ranks, ok := strings.CutPrefix(t.Title, "Allreduce, ")
		if ranks, ok2 := strings.CutSuffix(ranks, ": bus bandwidth"); ok && ok2 {
			if r, ok := busbwScaling(t, ranks); ok && (columns == nil || strings.Join(columns, "|") == strings.Join(t.Columns, "|")) {
				columns = t.Columns
				r.Label = "bus bandwidth 64 MiB / 24 MiB, " + ranks
				scaling = append(scaling, r)
			}
			continue
		}
		s.Tables = append(s.Tables, t)
	}
	if len(s.Tables) == 0 {
		return Section{}, errors.New("allreduce.txt: no tables")
	}
	if rows := append(barrier, scaling...); len(rows) > 0 {
		s.Tables = append(s.Tables, Table{Title: "Barrier; bus bandwidth at 64 MiB over 24 MiB", Key: "figure", Columns: columns, Rows: rows})
	}
	return s, nil
}

// busbwScaling is the row of 64M over 24M of a bus bandwidth table.
func busbwScaling(t Table, label string) (Row, bool) {
	var at24, at64 *Row
	for i := range t.Rows {
		switch t.Rows[i].Label {
		case "24M":
			at24 = &t.Rows[i]
		case "64M":
			at64 = &t.Rows[i]
		}
	}
	if at24 == nil || at64 == nil {
		return Row{}, false
	}
	r := Row{Label: label}
	for i := range t.Columns {
		a, b := at24.Values[i], at64.Values[i]
		if a == nil || b == nil || *a == 0 {
			r.Values = append(r.Values, nil)
			continue
		}
		v := *b / *a
		r.Values = append(r.Values, &v)
	}
	if g := r.Values[0]; g != nil {
		ok := *g >= 0.8
		r.Target = &Target{Text: "gorma >= " + ratioText(0.8), OK: &ok}
	}
	return r, true
}

func readTables(file string) ([]mdTable, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	return parseMarkdown(string(b)), nil
}

// sizeText writes the byte count of a table's label for a reader: "8 B", "1 MiB".
func sizeText(label string) string {
	n, err := strconv.ParseFloat(label, 64)
	if err != nil {
		return label
	}
	s := sizeLabel(n)
	if u := s[len(s)-1]; u == 'K' || u == 'M' || u == 'G' {
		return s[:len(s)-1] + " " + string(u) + "iB"
	}
	return s + " B"
}
