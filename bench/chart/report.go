package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
)

// Report is docs/benchmarks.json: one run of make compare, the single source of
// docs/benchmarks.md (chart page).
type Report struct {
	Command string `json:"command"` // what produced it: "make compare"
	// Commit is the git commit of the code measured, with "-dirty" when tracked files
	// differed from it (scripts/compare-all.sh); "" when not recorded.
	Commit   string    `json:"commit,omitempty"`
	Machine  Machine   `json:"machine"`
	Run      Run       `json:"run"`
	Sections []Section `json:"sections"`
	// Device16 is docs/device16.json beside the report (chart device16), or nil.
	Device16 *Device16 `json:"-"`
	// Startup16 is docs/startup16.json beside the report (scripts/device16-startup.sh), or nil.
	Startup16 *Startup16 `json:"-"`
	// FT is docs/ft.json beside the report (chart ft), or nil.
	FT *FT `json:"-"`
	// Observe is docs/observe.json and docs/observe2.json beside the report
	// (scripts/compare-observe.sh), those that exist.
	Observe []*Observe `json:"-"`
	// ABI is docs/abi.json beside the report (scripts/compare-abi.sh), or nil.
	ABI *ABI `json:"-"`
}

// Machine describes the host and the software of the run.
type Machine struct {
	Cores   int    `json:"cores"`
	CPU     string `json:"cpu"`
	Kernel  string `json:"kernel"`
	Go      string `json:"go"`
	OpenMPI string `json:"openmpi"`
	MPICH   string `json:"mpich"`
}

// Run describes when and how long the run was.
type Run struct {
	Start       string     `json:"start"` // UTC, RFC 3339
	DurationS   int        `json:"duration_s"`
	Repetitions int        `json:"repetitions"` // of each comparison (REPS)
	LoadStart   [3]float64 `json:"load_start"`  // load average over 1, 5, 15 min
	LoadEnd     [3]float64 `json:"load_end"`
}

// Section is one comparison: its tables, the raw samples it keeps and its charts.
type Section struct {
	ID      string    `json:"id"`
	Title   string    `json:"title"`
	Commit  string    `json:"commit,omitempty"` // the code measured, where not the report's (chart merge)
	Intro   string    `json:"intro,omitempty"`
	Failed  string    `json:"failed,omitempty"` // why the step left no result
	Load    *Load     `json:"load,omitempty"`   // nil: not recorded
	Samples []Samples `json:"samples,omitempty"`
	Tables  []Table   `json:"tables"`
	Charts  []Chart   `json:"charts,omitempty"`
}

// Load is the machine's load average (over 1, 5 and 15 min) when a step started and
// when it ended, as its script read /proc/loadavg. A nil end: the step stopped early.
type Load struct {
	Start []float64 `json:"start,omitempty"`
	End   []float64 `json:"end,omitempty"`
}

// Samples are every measurement of one figure and their median.
type Samples struct {
	Label  string    `json:"label"`
	Unit   string    `json:"unit"`
	Values []float64 `json:"values"`
	Median float64   `json:"median"`
}

// Chart is an SVG of a section, its path relative to docs/, and the points it draws.
// chart page draws it from these points; a chart without series has no points in the
// report, and the page says so instead of showing it. Points on a log2 axis (X "bytes"
// or a count such as "ranks") make lines; without X each point's X is the index of one
// of Categories and the chart draws bars.
type Chart struct {
	File       string        `json:"file"`
	Alt        string        `json:"alt"`
	Title      string        `json:"title,omitempty"`
	XLabel     string        `json:"xlabel,omitempty"`
	YLabel     string        `json:"ylabel,omitempty"`
	X          string        `json:"x,omitempty"`
	LogY       bool          `json:"logy,omitempty"`
	Categories []string      `json:"categories,omitempty"`
	Series     []ChartSeries `json:"series,omitempty"`
	// Table is the title of the section's table whose medians the points repeat at
	// the sizes they share; the page refuses a chart that disagrees with it.
	Table string `json:"table,omitempty"`
	// Source names the run of the points where it is not the tables' run; the page
	// prints it under the chart and the chart under its title.
	Source string `json:"source,omitempty"`
	Note   string `json:"note,omitempty"` // printed under the chart
}

// ChartSeries is one line or one bar of each category.
type ChartSeries struct {
	Name   string  `json:"name"`
	Points []Point `json:"points"`
}

// Point is a median; Min and Max, where set, are the fastest and the slowest sample.
type Point struct {
	X   float64  `json:"x"`
	Y   float64  `json:"y"`
	Min *float64 `json:"min,omitempty"`
	Max *float64 `json:"max,omitempty"`
}

// Table has a row per figure (or size) and a value column per system. The ratios of a
// row are its first value over each other one (gorma / peer).
type Table struct {
	Title   string   `json:"title"`
	Key     string   `json:"key"`              // heading of the label column: "figure", "bytes"
	Unit    string   `json:"unit,omitempty"`   // of every value, unless a row names its own
	Better  string   `json:"better,omitempty"` // "lower" or "higher"
	Columns []string `json:"columns"`
	Rows    []Row    `json:"rows"`
	Note    string   `json:"note,omitempty"`
}

// Row is one figure. A nil value was not measured; a nil ratio was not stated.
type Row struct {
	Label  string     `json:"label"`
	Unit   string     `json:"unit,omitempty"`
	Values []*float64 `json:"values"`
	Ratios []*float64 `json:"ratios,omitempty"` // values[0] / values[i], i >= 1
	Target *Target    `json:"target,omitempty"`
}

// Target is what the step requires of a row, and whether the row meets it (nil: the
// row is a reference or was not measured).
type Target struct {
	Text string `json:"text"`
	OK   *bool  `json:"ok"`
}

// decodeReport reads a Report strictly: unknown fields, trailing data and tables whose
// rows do not fit their columns are errors.
func decodeReport(r io.Reader) (*Report, error) {
	dec := newStrictDecoder(r)
	var rep Report
	if err := dec.Decode(&rep); err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("report: data after the document")
	}
	return &rep, rep.validate()
}

func (rep *Report) validate() error {
	if rep.Commit != "" && !commitForm.MatchString(rep.Commit) {
		return fmt.Errorf("report: commit %q is not a hash (with -dirty or not)", rep.Commit)
	}
	for _, s := range rep.Sections {
		if s.ID == "" || s.Title == "" {
			return fmt.Errorf("report: a section needs an id and a title (%q)", s.ID)
		}
		if s.Commit != "" && !commitForm.MatchString(s.Commit) {
			return fmt.Errorf("report: section %s: commit %q is not a hash (with -dirty or not)", s.ID, s.Commit)
		}
		for _, t := range s.Tables {
			if err := t.validate(); err != nil {
				return fmt.Errorf("report: section %s: %w", s.ID, err)
			}
		}
		if l := s.Load; l != nil && (len(l.Start) != 0 && len(l.Start) != 3 || len(l.End) != 0 && len(l.End) != 3) {
			return fmt.Errorf("report: section %s: a load is three numbers", s.ID)
		}
		for _, c := range s.Charts {
			for _, ss := range c.Series {
				for _, p := range ss.Points {
					if c.X == "" && (p.X < 0 || int(p.X) >= len(c.Categories)) {
						return fmt.Errorf("report: section %s, chart %s: series %q has no category %v", s.ID, c.File, ss.Name, p.X)
					}
				}
			}
		}
	}
	return nil
}

func (t Table) validate() error {
	if len(t.Columns) == 0 {
		return fmt.Errorf("table %q: no columns", t.Title)
	}
	for _, r := range t.Rows {
		if len(r.Values) != len(t.Columns) {
			return fmt.Errorf("table %q, row %q: %d values for %d columns", t.Title, r.Label, len(r.Values), len(t.Columns))
		}
		if len(r.Ratios) != 0 && len(r.Ratios) != len(t.Columns)-1 {
			return fmt.Errorf("table %q, row %q: %d ratios for %d columns", t.Title, r.Label, len(r.Ratios), len(t.Columns))
		}
	}
	return nil
}

// newStrictDecoder is a JSON decoder that rejects unknown fields.
func newStrictDecoder(r io.Reader) *json.Decoder {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	return dec
}

// loadStrict decodes the JSON document at path into a new T, rejecting unknown fields,
// or returns nil when path does not exist.
func loadStrict[T any](path string) (*T, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	v := new(T)
	if err := newStrictDecoder(bytes.NewReader(b)).Decode(v); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return v, nil
}

// encode writes rep as indented JSON.
func (rep *Report) encode() ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(rep); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
