package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// series is one line of a chart or one column of a table.
type series struct {
	Name   string
	Points map[float64]float64 // size in bytes -> median value over the files
	Files  int
}

// parseSeries reads the series that spec (NAME=GLOB[@TABLE]:FIELD) names, against the
// JSON field x ("bytes" but for --x).
func parseSeries(spec, x string) (series, error) {
	name, rest, ok := strings.Cut(spec, "=")
	i := strings.LastIndex(rest, ":")
	if !ok || name == "" || i < 0 || i == len(rest)-1 {
		return series{}, fmt.Errorf("series %q: want NAME=GLOB[@TABLE]:FIELD", spec)
	}
	glob, field := rest[:i], rest[i+1:]
	glob, table, _ := strings.Cut(glob, "@")
	files, err := filepath.Glob(glob)
	if err != nil {
		return series{}, fmt.Errorf("series %q: %w", spec, err)
	}
	if len(files) == 0 {
		return series{}, fmt.Errorf("series %q: no file matches %s", spec, glob)
	}
	all := map[float64][]float64{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return series{}, err
		}
		pts, err := extract(b, table, field, x)
		if err != nil {
			return series{}, fmt.Errorf("%s: %w", f, err)
		}
		for x, y := range pts {
			all[x] = append(all[x], y)
		}
	}
	if len(all) == 0 {
		return series{}, fmt.Errorf("series %q: no points in %d file(s)", spec, len(files))
	}
	s := series{Name: name, Points: map[float64]float64{}, Files: len(files)}
	for x, ys := range all {
		s.Points[x] = median(ys)
	}
	return s, nil
}

// median is the middle of vals (the mean of the two middle ones for an even count).
func median(vals []float64) float64 {
	v := slices.Clone(vals)
	slices.Sort(v)
	n := len(v)
	if n%2 == 1 {
		return v[n/2]
	}
	return (v[n/2-1] + v[n/2]) / 2
}

// xs returns the sizes of s in increasing order.
func (s series) xs() []float64 {
	out := make([]float64, 0, len(s.Points))
	for x := range s.Points {
		out = append(out, x)
	}
	sort.Float64s(out)
	return out
}

// extract returns x -> value from one file's contents: JSON (x the field of each row) or a
// text table (x its first column).
func extract(b []byte, table, field, x string) (map[float64]float64, error) {
	if t := bytes.TrimSpace(b); len(t) > 0 && t[0] == '{' {
		var doc any
		if err := json.Unmarshal(t, &doc); err != nil {
			return nil, err
		}
		return fromJSON(doc, table, field, x), nil
	}
	col, err := strconv.Atoi(field)
	if err != nil || col < 2 {
		return nil, fmt.Errorf("text table: field %q: want a column number from 2", field)
	}
	return fromText(b, table, col), nil
}

// fromJSON finds the points in doc (see the package documentation).
func fromJSON(doc any, table, field, x string) map[float64]float64 {
	var found map[float64]float64
	var walk func(v any, key string) bool
	walk = func(v any, key string) bool {
		switch v := v.(type) {
		case map[string]any:
			if table != "" && v["name"] == table {
				if rows, ok := v["rows"].([]any); ok {
					found = points(rows, field, x)
					return true
				}
			}
			keys := make([]string, 0, len(v))
			for k := range v {
				keys = append(keys, k)
			}
			sort.Strings(keys) // deterministic without a table name
			for _, k := range keys {
				if walk(v[k], k) {
					return true
				}
			}
		case []any:
			if table == "" || key == table {
				if p := points(v, field, x); len(p) > 0 {
					found = p
					return true
				}
			}
			for _, e := range v {
				if walk(e, "") {
					return true
				}
			}
		}
		return false
	}
	walk(doc, "")
	return found
}

func points(rows []any, field, xfield string) map[float64]float64 {
	p := map[float64]float64{}
	for _, r := range rows {
		o, ok := r.(map[string]any)
		if !ok {
			continue
		}
		x, ok1 := o[xfield].(float64)
		y, ok2 := o[field].(float64)
		if ok1 && ok2 {
			p[x] = y
		}
	}
	return p
}

// fromText reads the rows of an OSU-style text table.
func fromText(b []byte, table string, col int) map[float64]float64 {
	p := map[float64]float64{}
	in := table == ""
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "# ") {
			if table != "" {
				in = strings.Contains(line, table)
			}
			continue
		}
		f := strings.Fields(line)
		if !in || len(f) < col {
			continue
		}
		x, err1 := strconv.ParseFloat(f[0], 64)
		y, err2 := strconv.ParseFloat(f[col-1], 64)
		if err1 == nil && err2 == nil {
			p[x] = y
		}
	}
	return p
}
