package main

import (
	"bytes"
	_ "embed"
	"fmt"
	"io"
	"os"
	"strings"
	"text/template"

	"github.com/spf13/pflag"
)

//go:embed page.md.tmpl
var pageTemplate string

// runPage renders docs/benchmarks.md from the report.
func runPage(args []string, stdout io.Writer) error {
	fs := pflag.NewFlagSet("chart page", pflag.ContinueOnError)
	in := fs.String("in", "docs/benchmarks.json", "the report (chart collect)")
	out := fs.String("out", "", "the page to write (default: standard output)")
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
	page, err := renderPage(rep)
	if err != nil {
		return err
	}
	if *out == "" {
		_, err = stdout.Write(page)
		return err
	}
	return os.WriteFile(*out, page, 0o644)
}

// renderPage executes the embedded template over rep.
func renderPage(rep *Report) ([]byte, error) {
	t, err := template.New("page").Funcs(template.FuncMap{
		"section":  renderSection,
		"duration": func(s int) string { return fmt.Sprintf("%d min %d s", s/60, s%60) },
		"load":     func(l [3]float64) string { return fmt.Sprintf("%.2f %.2f %.2f", l[0], l[1], l[2]) },
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

// renderSection writes a section: heading, introduction, samples, tables, charts.
func renderSection(s Section) string {
	var b strings.Builder
	fmt.Fprintf(&b, "## %s\n\n", s.Title)
	if s.Intro != "" {
		b.WriteString(s.Intro + "\n\n")
	}
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
	for _, t := range s.Tables {
		b.WriteString(renderTable(t) + "\n")
	}
	for _, c := range s.Charts {
		fmt.Fprintf(&b, "![%s](%s)\n", c.Alt, c.File)
	}
	if len(s.Charts) > 0 {
		b.WriteString("\n")
	}
	return b.String()
}

// renderTable writes a Markdown table: the label column, the values, the ratios of the
// first value to each other one, and the target where a row has one.
func renderTable(t Table) string {
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
		for _, v := range r.Values {
			cells = append(cells, valueText(v, r.Unit))
		}
		if ratios {
			for i := range t.Columns[1:] {
				var q *float64
				if i < len(r.Ratios) {
					q = r.Ratios[i]
				}
				cells = append(cells, ratioText(q))
			}
		}
		if targets {
			cells = append(cells, targetText(r.Target))
		}
		b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
	}
	if t.Note != "" {
		b.WriteString("\n" + t.Note + "\n")
	}
	return b.String()
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

func ratioText(q *float64) string {
	if q == nil {
		return "-"
	}
	return fmt.Sprintf("%.2fx", *q)
}

func targetText(t *Target) string {
	switch {
	case t == nil:
		return ""
	case t.OK == nil:
		return t.Text
	case *t.OK:
		return t.Text + " ok"
	}
	return t.Text + " **MISS**"
}
