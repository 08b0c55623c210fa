package main

import (
	"bytes"
	_ "embed"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/template"

	"github.com/spf13/pflag"
)

//go:embed page.md.tmpl
var pageTemplate string

// runPage renders docs/benchmarks.md from the report and draws its charts.
func runPage(args []string, stdout io.Writer) error {
	fs := pflag.NewFlagSet("chart page", pflag.ContinueOnError)
	in := fs.String("in", "docs/benchmarks.json", "the report (chart collect)")
	out := fs.String("out", "", "the page to write (default: standard output)")
	docs := fs.String("docs", "", "where the charts' paths start (default: --out's directory; none: no charts drawn with the page on standard output)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	f, err := os.Open(*in)
	if err != nil {
		return err
	}
	defer f.Close()
	rep, err := decodeReport(f)
	if err != nil {
		return fmt.Errorf("%s: %w", *in, err)
	}
	if err := loadBeside(rep, filepath.Dir(*in)); err != nil {
		return err
	}
	page, err := renderPage(rep)
	if err != nil {
		return err
	}
	if *docs == "" && *out != "" {
		*docs = filepath.Dir(*out)
	}
	if *docs != "" {
		if err := drawCharts(rep, *docs); err != nil {
			return err
		}
	}
	if *out == "" {
		_, err = stdout.Write(page)
		return err
	}
	return os.WriteFile(*out, page, 0o644)
}

// loadBeside reads the documents that lie beside the report in dir into rep:
// device16.json, startup16.json, ft.json, observe.json, observe2.json and abi.json, where
// they exist.
func loadBeside(rep *Report, dir string) (err error) {
	if rep.Device16, err = loadDevice16(filepath.Join(dir, "device16.json")); err != nil {
		return err
	}
	if rep.Startup16, err = loadStartup16(filepath.Join(dir, "startup16.json")); err != nil {
		return err
	}
	if rep.FT, err = loadFT(filepath.Join(dir, "ft.json")); err != nil {
		return err
	}
	for _, name := range []string{"observe.json", "observe2.json"} {
		o, err := loadObserve(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		if o != nil {
			rep.Observe = append(rep.Observe, o)
		}
	}
	rep.ABI, err = loadABI(filepath.Join(dir, "abi.json"))
	return err
}

// drawCharts writes every chart of the page that has points, under docs.
func drawCharts(rep *Report, docs string) error {
	for _, s := range rep.Sections {
		cs, err := sectionCharts(rep, s)
		if err != nil {
			return err
		}
		for _, c := range cs {
			if len(c.Series) == 0 {
				continue
			}
			if err := writeChart(c.Chart, filepath.Join(docs, c.File)); err != nil {
				return err
			}
		}
	}
	return nil
}

// renderPage executes the embedded template over rep.
func renderPage(rep *Report) ([]byte, error) {
	t, err := template.New("page").Funcs(template.FuncMap{
		"section":   func(s Section) (string, error) { return renderSection(rep, s) },
		"summary":   func() string { return renderSummary(rep) },
		"ratio":     ratioText,
		"device16":  renderDevice16,
		"startup16": renderStartup16,
		"ft":        renderFT,
		"observe":   renderObserve,
		"abi":       renderABI,
		"duration":  func(s int) string { return fmt.Sprintf("%d min %d s", s/60, s%60) },
		"load": func(l [3]float64) string {
			if l == [3]float64{} {
				return "not recorded"
			}
			return fmt.Sprintf("%.2f %.2f %.2f", l[0], l[1], l[2])
		},
	}).Parse(pageTemplate)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := t.Execute(&b, rep); err != nil {
		return nil, err
	}
	return append(bytes.TrimRight(b.Bytes(), "\n"), '\n'), nil
}

// renderSection writes a section: heading, introduction, load, samples, tables and
// their footnotes, charts.
func renderSection(rep *Report, s Section) (string, error) {
	charts, err := sectionCharts(rep, s)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "## %s\n\n", s.Title)
	if s.Intro != "" {
		b.WriteString(s.Intro + "\n\n")
	}
	b.WriteString(loadText(s.Load, rep.Machine.Cores) + "\n\n")
	if s.Failed != "" {
		fmt.Fprintf(&b, "No result in this run: %s.\n\n", s.Failed)
	}
	if len(s.Samples) > 0 {
		b.WriteString("```\n")
		for _, m := range s.Samples {
			vals := make([]string, len(m.Values))
			for i, v := range m.Values {
				vals[i] = num(v, 6)
			}
			fmt.Fprintf(&b, "%s: %s %s; median %s %s\n", m.Label, strings.Join(vals, " "), m.Unit, num(m.Median, 6), m.Unit)
		}
		b.WriteString("```\n\n")
	}
	notes := footnotes{id: s.ID}
	for _, t := range s.Tables {
		b.WriteString(renderTable(rep.Machine, s, t, &notes) + "\n")
	}
	for i, text := range notes.texts {
		fmt.Fprintf(&b, "[^%s-%d]: %s\n\n", s.ID, i+1, text)
	}
	var missing []string
	for _, c := range charts {
		if len(c.Series) == 0 {
			missing = append(missing, c.Alt)
			continue
		}
		b.WriteString(chartText(c) + "\n")
	}
	if len(missing) > 0 {
		fmt.Fprintf(&b, "Charts not recorded (docs/benchmarks.json holds no points for them): %s.\n\n", strings.Join(missing, "; "))
	}
	return b.String(), nil
}

// chartText is a chart's image and the line under it.
func chartText(c pageChart) string {
	text := fmt.Sprintf("![%s](%s)\n", c.Alt, c.File)
	var under []string
	if c.Source != "" {
		under = append(under, "From "+c.Source+".")
	}
	if c.Note != "" {
		under = append(under, c.Note)
	}
	if len(under) > 0 {
		text += "\n*" + strings.Join(under, " ") + "*\n"
	}
	return text
}

// loadText is the line of a section's load average.
func loadText(l *Load, cores int) string {
	if l == nil || len(l.Start) == 0 && len(l.End) == 0 {
		return "Load average: not recorded."
	}
	part := func(v []float64, when string) string {
		if len(v) != 3 {
			return "not recorded " + when
		}
		return fmt.Sprintf("%.2f %.2f %.2f %s", v[0], v[1], v[2], when)
	}
	return fmt.Sprintf("Load average (1, 5, 15 min) on the %d cores: %s, %s.", cores, part(l.Start, "at the start"), part(l.End, "at the end"))
}

// footnotes are the notes of a section's tables, numbered in order of first use.
type footnotes struct {
	id    string
	texts []string
}

// ref returns the footnote reference of text, adding it on first use.
func (f *footnotes) ref(text string) string {
	for i, t := range f.texts {
		if t == text {
			return fmt.Sprintf("[^%s-%d]", f.id, i+1)
		}
	}
	f.texts = append(f.texts, text)
	return fmt.Sprintf("[^%s-%d]", f.id, len(f.texts))
}

// renderTable writes a Markdown table: the label column, the values, the ratios of the
// first value to each other one, and the target where a row has one. A value that is
// itself a ratio (its column or its row names a quotient) prints as one. A peer cell that
// did not run as documented (oversubscribed) gives no ratio, and a target against it
// is not judged; a footnote says why.
func renderTable(m Machine, s Section, t Table, notes *footnotes) string {
	var b strings.Builder
	fmt.Fprintf(&b, "### %s", t.Title)
	if t.Unit != "" {
		better := ""
		if t.Better != "" {
			better = ", " + t.Better + " is better"
		}
		fmt.Fprintf(&b, " (%s%s)", t.Unit, better)
	}
	b.WriteString("\n\n")
	ratios, targets := false, false
	for _, r := range t.Rows {
		ratios = ratios || len(r.Ratios) > 0
		targets = targets || r.Target != nil
	}
	head := []string{t.Key}
	head = append(head, t.Columns...)
	if ratios {
		for _, c := range t.Columns[1:] {
			head = append(head, t.Columns[0]+" / "+c)
		}
	}
	if targets {
		head = append(head, "target")
	}
	numeric := len(head) - 1
	if targets {
		numeric--
	}
	b.WriteString("| " + strings.Join(head, " | ") + " |\n|---|" + strings.Repeat("---:|", numeric))
	if targets {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for _, r := range t.Rows {
		cells := []string{r.Label}
		judged := ""
		for i, v := range r.Values {
			if note := oversubscribed(m, s, t, r, i); note != "" && ratioColumn(t.Columns[i]) {
				cells = append(cells, "-"+notes.ref(note))
				judged = judgedNote(judged, t, r, i, notes.ref(note))
				continue
			}
			if v != nil && (ratioColumn(t.Columns[i]) || quotientRow(t, r)) {
				cells = append(cells, ratioText(*v))
				continue
			}
			cells = append(cells, valueText(v, r.Unit))
		}
		if ratios {
			for i := range t.Columns[1:] {
				var q *float64
				if i < len(r.Ratios) {
					q = r.Ratios[i]
				}
				if note := oversubscribed(m, s, t, r, i+1); note != "" {
					cells = append(cells, "-"+notes.ref(note))
					judged = judgedNote(judged, t, r, i+1, notes.ref(note))
					continue
				}
				cells = append(cells, optRatio(q))
			}
		}
		if targets {
			cells = append(cells, targetText(r.Target, judged))
		}
		b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
	}
	if t.Note != "" {
		b.WriteString("\n" + t.Note + "\n")
	}
	return b.String()
}

// judgedNote returns the reference that makes row r's target not judged when the
// target depends on column col (the table's only peer, or a peer its text names).
func judgedNote(prev string, t Table, r Row, col int, ref string) string {
	if prev != "" || r.Target == nil || r.Target.OK == nil {
		return prev
	}
	name := t.Columns[col]
	if _, peer, ok := strings.Cut(name, " / "); ok {
		name = peer
	}
	if len(t.Columns) == 2 || strings.Contains(r.Target.Text, name) {
		return ref
	}
	return prev
}

// quotientRow reports whether row r's values are ratios: the row names a quotient
// ("bus bandwidth 64 MiB / 24 MiB") and has no unit.
func quotientRow(t Table, r Row) bool {
	return r.Unit == "" && t.Unit == "" && strings.Contains(r.Label, " / ")
}

func valueText(v *float64, unit string) string {
	if v == nil {
		return "-"
	}
	if unit == "" {
		return num(*v, 3)
	}
	return num(*v, 3) + " " + unit
}

// targetText writes a target and its verdict; with notJudged (a footnote reference) the
// verdict is left out.
func targetText(t *Target, notJudged string) string {
	switch {
	case t == nil:
		return ""
	case notJudged != "":
		return t.Text + " not judged" + notJudged
	case t.OK == nil:
		return t.Text
	case *t.OK:
		return t.Text + " ok"
	}
	return t.Text + " **MISS**"
}
