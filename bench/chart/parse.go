package main

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// mdTable is a pipe table of a step's output and the heading above it.
type mdTable struct {
	Heading string // the last "#" line before the table, without the #s
	Header  []string
	Rows    [][]string
}

// parseMarkdown returns the pipe tables of a step's output, in order. A table is a run
// of lines that start with "|"; its first line is the header, separator lines are skipped.
func parseMarkdown(text string) []mdTable {
	var out []mdTable
	heading, in := "", false
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "|") {
			in = false
			if strings.HasPrefix(line, "#") {
				heading = strings.TrimSpace(strings.TrimLeft(line, "#"))
			}
			continue
		}
		cells := splitRow(line)
		switch {
		case !in:
			out = append(out, mdTable{Heading: heading, Header: cells})
			in = true
		case !isSeparator(cells):
			t := &out[len(out)-1]
			t.Rows = append(t.Rows, cells)
		}
	}
	return out
}

// splitRow returns the trimmed cells of "| a | b |".
func splitRow(line string) []string {
	line = strings.TrimPrefix(line, "|")
	line = strings.TrimSuffix(line, "|")
	cells := strings.Split(line, "|")
	for i, c := range cells {
		cells[i] = strings.TrimSpace(c)
	}
	return cells
}

func isSeparator(cells []string) bool {
	for _, c := range cells {
		if strings.Trim(c, "-: ") != "" {
			return false
		}
	}
	return true
}

// quantity parses a value cell such as "0.12 us", "21878 MB/s" or "0.302"; "-" or an
// empty cell is nil.
func quantity(cell string) (*float64, string, error) {
	f := strings.Fields(cell)
	if len(f) == 0 || f[0] == "-" {
		return nil, "", nil
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return nil, "", fmt.Errorf("value %q: %w", cell, err)
	}
	return &v, strings.Join(f[1:], " "), nil
}

// ratio parses a ratio cell such as "0.75x"; "-" or an empty cell is nil. A ratio too
// small for two decimals ("< 0.01x", as ratioText writes it) reads as 0, which ratioText
// writes the same way.
func ratio(cell string) (*float64, error) {
	if cell == "" || cell == "-" {
		return nil, nil
	}
	if cell == ratioText(0) {
		v := 0.0
		return &v, nil
	}
	v, err := strconv.ParseFloat(strings.TrimSuffix(cell, "x"), 64)
	if err != nil {
		return nil, fmt.Errorf("ratio %q: %w", cell, err)
	}
	return &v, nil
}

// target parses a target cell: "<= 1.00x ok", "< 50 us MISS", "(reference)", "not
// measured". Without a verdict OK is nil.
func target(cell string) *Target {
	cell = strings.TrimSpace(cell)
	if cell == "" {
		return nil
	}
	met, missed := true, false
	switch {
	case strings.HasSuffix(cell, " ok"):
		return &Target{Text: strings.TrimSuffix(cell, " ok"), OK: &met}
	case strings.HasSuffix(cell, " MISS"):
		return &Target{Text: strings.TrimSuffix(cell, " MISS"), OK: &missed}
	}
	return &Target{Text: strings.Trim(cell, "()")}
}

// targetTable converts a "figure | gorma | peer | ratio | target" table: a row per
// figure, each with its own unit.
func targetTable(md mdTable, title string) (Table, error) {
	want := []string{"figure", "gorma", "peer", "ratio", "target"}
	if strings.Join(md.Header, "|") != strings.Join(want, "|") {
		return Table{}, fmt.Errorf("table %q: header %q, want %q", md.Heading, md.Header, want)
	}
	t := Table{Title: title, Key: "figure", Columns: []string{"gorma", "peer"}}
	for _, c := range md.Rows {
		if len(c) != len(want) {
			return Table{}, fmt.Errorf("table %q: row %q has %d cells", md.Heading, c, len(c))
		}
		g, gu, err1 := quantity(c[1])
		p, pu, err2 := quantity(c[2])
		r, err3 := ratio(c[3])
		if err := firstErr(err1, err2, err3); err != nil {
			return Table{}, fmt.Errorf("table %q: %w", md.Heading, err)
		}
		unit := gu
		if unit == "" {
			unit = pu
		}
		t.Rows = append(t.Rows, Row{Label: c[0], Unit: unit, Values: []*float64{g, p}, Ratios: []*float64{r}, Target: target(c[4])})
	}
	return t, nil
}

// sweepTable converts a "bytes | A | B | ... | A / B | ..." table (chart table's and
// compare-rma.sh's): the columns without "/" hold values, the others the ratios.
func sweepTable(md mdTable) (Table, error) {
	title, unit, better := splitHeading(md.Heading)
	t := Table{Title: title, Key: "bytes", Unit: unit, Better: better}
	if len(md.Header) < 2 || md.Header[0] != "bytes" {
		return Table{}, fmt.Errorf("table %q: header %q, want bytes first", md.Heading, md.Header)
	}
	var vals, rats []int
	for i, h := range md.Header[1:] {
		if strings.Contains(h, "/") {
			rats = append(rats, i+1)
		} else {
			vals = append(vals, i+1)
			t.Columns = append(t.Columns, h)
		}
	}
	if len(rats) != 0 && len(rats) != len(vals)-1 {
		return Table{}, fmt.Errorf("table %q: %d ratio columns for %d value columns", md.Heading, len(rats), len(vals))
	}
	for _, c := range md.Rows {
		if len(c) != len(md.Header) {
			return Table{}, fmt.Errorf("table %q: row %q has %d cells", md.Heading, c, len(c))
		}
		r := Row{Label: c[0]}
		for _, i := range vals {
			v, _, err := quantity(c[i])
			if err != nil {
				return Table{}, fmt.Errorf("table %q: %w", md.Heading, err)
			}
			r.Values = append(r.Values, v)
		}
		for _, i := range rats {
			v, err := ratio(c[i])
			if err != nil {
				return Table{}, fmt.Errorf("table %q: %w", md.Heading, err)
			}
			r.Ratios = append(r.Ratios, v)
		}
		t.Rows = append(t.Rows, r)
	}
	return t, nil
}

var unitGroup = regexp.MustCompile(`^(.*\S)\s*\(([^()]+)\)$`)

// splitHeading splits "Allreduce, 2 ranks: latency (us, lower is better)" into the
// title, the unit and which way is better.
func splitHeading(h string) (title, unit, better string) {
	m := unitGroup.FindStringSubmatch(h)
	if m == nil || strings.HasPrefix(m[2], "-") {
		return h, "", ""
	}
	unit, rest, _ := strings.Cut(m[2], ",")
	switch strings.TrimSpace(rest) {
	case "lower is better":
		better = "lower"
	case "higher is better":
		better = "higher"
	case "":
	default:
		return h, "", ""
	}
	return m[1], strings.TrimSpace(unit), better
}

// startupRun is compare-startup.sh's output for one rank count.
type startupRun struct {
	Samples []Samples
	Ratios  []startupRatio
}

type startupRatio struct {
	Tool, Peer string
	Ratio      float64
	Target     *Target
}

var (
	sampleLine = regexp.MustCompile(`^(.+?):\s+([0-9 ]+) ms; median ([0-9.]+) ms$`)
	ratioLine  = regexp.MustCompile(`^ratio ([^/ ]+)/(\S+): ([0-9.]+) \(target (.+)\)$`)
)

// parseStartup reads compare-startup.sh's output: a line of samples per launcher
// ("golaunch -n 2 apps/hello: 28 29 18 ms; median 28 ms") and a line per ratio
// ("ratio golaunch/mpirun: 0.09 (target <= 1.00x ok)").
func parseStartup(text string) (startupRun, error) {
	var run startupRun
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if m := sampleLine.FindStringSubmatch(line); m != nil {
			s := Samples{Label: strings.Join(strings.Fields(m[1]), " "), Unit: "ms"}
			for _, f := range strings.Fields(m[2]) {
				v, err := strconv.ParseFloat(f, 64)
				if err != nil {
					return run, fmt.Errorf("startup: %q: %w", line, err)
				}
				s.Values = append(s.Values, v)
			}
			if len(s.Values) == 0 {
				return run, fmt.Errorf("startup: %q: no samples", line)
			}
			med, err := strconv.ParseFloat(m[3], 64)
			if err != nil {
				return run, fmt.Errorf("startup: %q: %w", line, err)
			}
			s.Median = med
			run.Samples = append(run.Samples, s)
		} else if m := ratioLine.FindStringSubmatch(line); m != nil {
			r, err := strconv.ParseFloat(m[3], 64)
			if err != nil {
				return run, fmt.Errorf("startup: %q: %w", line, err)
			}
			run.Ratios = append(run.Ratios, startupRatio{Tool: m[1], Peer: m[2], Ratio: r, Target: target(m[4])})
		}
	}
	if len(run.Samples) < 2 || len(run.Ratios) != len(run.Samples)-1 {
		return run, fmt.Errorf("startup: %d sample lines and %d ratio lines, want n and n-1 (n >= 2)", len(run.Samples), len(run.Ratios))
	}
	return run, nil
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
