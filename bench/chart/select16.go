package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
)

// Select16 is the one-host selection sweep of scripts/device16-select.sh: per class, rank
// count, collective and size, the median time of every candidate and the fastest one.
type Select16 struct {
	Command string        `json:"command"`
	Machine D16Machine    `json:"machine"`
	Reps    int           `json:"reps"`
	Rows    []Select16Row `json:"rows"`
}

// Select16Row is one class, rank count, collective and size.
type Select16Row struct {
	Class string             `json:"class"`
	P     int                `json:"p"`
	Test  string             `json:"test"`
	Bytes int                `json:"bytes"`
	US    map[string]float64 `json:"us"`   // median over the repetitions, by candidate
	Best  string             `json:"best"` // the candidate of the least median
}

var selFile = regexp.MustCompile(`^sel_([a-z0-9]+)_([a-z0-9]+)_p(\d+)_(\d+)\.json$`)

func runSelect16(args []string, stdout io.Writer) error {
	fs := pflag.NewFlagSet("chart select16", pflag.ContinueOnError)
	in := fs.String("in", "results/select16", "the sweep's unpacked results (scripts/device16-select.sh)")
	out := fs.String("out", "", "also write the document as JSON to this file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	s, err := collectSelect16(*in)
	if err != nil {
		return err
	}
	if *out != "" {
		b, err := json.MarshalIndent(s, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(*out, append(b, '\n'), 0o644); err != nil {
			return err
		}
	}
	renderSelect16(stdout, s)
	return nil
}

// collectSelect16 reads the sweep's results folder.
func collectSelect16(dir string) (*Select16, error) {
	s := &Select16{Command: "scripts/device16.sh bundle select"}
	if err := readMachine(filepath.Join(dir, "machine.txt"), &s.Machine); err != nil {
		return nil, err
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	type key struct {
		class string
		p     int
		test  string
		bytes int
	}
	times := map[key]map[string][]float64{}
	for _, e := range ents {
		m := selFile.FindStringSubmatch(e.Name())
		if m == nil {
			continue
		}
		p, _ := strconv.Atoi(m[3])
		rep, _ := strconv.Atoi(m[4])
		s.Reps = max(s.Reps, rep)
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		var a arDoc
		if err := json.Unmarshal(b, &a); err != nil {
			return nil, fmt.Errorf("%s: %w", e.Name(), err)
		}
		for test, rows := range map[string][]arRow{"allreduce": a.Allreduce, "bcast": a.Bcast, "reduce": a.Reduce,
			"allgather": a.Allgather, "alltoall": a.Alltoall, "gather": a.Gather, "scatter": a.Scatter, "barrier": a.Barrier} {
			for _, r := range rows {
				k := key{m[1], p, test, r.Bytes}
				if times[k] == nil {
					times[k] = map[string][]float64{}
				}
				times[k][m[2]] = append(times[k][m[2]], r.AvgUS)
			}
		}
	}
	if len(times) == 0 {
		return nil, fmt.Errorf("%s: no sel_CLASS_CAND_pP_REP.json files", dir)
	}
	for k, byCand := range times {
		row := Select16Row{Class: k.class, P: k.p, Test: k.test, Bytes: k.bytes, US: map[string]float64{}}
		for cand, v := range byCand {
			row.US[cand] = median(v)
			if row.Best == "" || row.US[cand] < row.US[row.Best] || (row.US[cand] == row.US[row.Best] && cand < row.Best) {
				row.Best = cand
			}
		}
		s.Rows = append(s.Rows, row)
	}
	slices.SortFunc(s.Rows, func(a, b Select16Row) int {
		switch {
		case a.Class != b.Class:
			return strings.Compare(a.Class, b.Class)
		case a.Test != b.Test:
			return strings.Compare(a.Test, b.Test)
		case a.P != b.P:
			return a.P - b.P
		}
		return a.Bytes - b.Bytes
	})
	return s, nil
}

// renderSelect16 writes one Markdown table per class: a row per collective, rank count
// and size, a column per candidate (µs, the fastest in bold).
func renderSelect16(w io.Writer, s *Select16) {
	fmt.Fprintf(w, "%d cores (%s), medians of %d repetitions, µs; the fastest candidate in bold.\n",
		s.Machine.Cores, s.Machine.CPU, s.Reps)
	for i := 0; i < len(s.Rows); {
		class := s.Rows[i].Class
		j := i
		cands := map[string]bool{}
		for ; j < len(s.Rows) && s.Rows[j].Class == class; j++ {
			for c := range s.Rows[j].US {
				cands[c] = true
			}
		}
		names := make([]string, 0, len(cands))
		for c := range cands {
			names = append(names, c)
		}
		slices.SortFunc(names, compareCand)
		fmt.Fprintf(w, "\n%s\n\n| test | p | bytes | %s |\n|---|---:|---:|%s\n", class, strings.Join(names, " | "),
			strings.Repeat("---:|", len(names)))
		for _, r := range s.Rows[i:j] {
			fmt.Fprintf(w, "| %s | %d | %d |", r.Test, r.P, r.Bytes)
			for _, c := range names {
				v, ok := r.US[c]
				switch {
				case !ok:
					fmt.Fprint(w, " |")
				case c == r.Best:
					fmt.Fprintf(w, " **%.3g** |", v)
				default:
					fmt.Fprintf(w, " %.3g |", v)
				}
			}
			fmt.Fprintln(w)
		}
		i = j
	}
}

// compareCand orders candidates by their leading number, then by name.
func compareCand(a, b string) int {
	na, nb := leadingInt(a), leadingInt(b)
	if na != nb {
		return na - nb
	}
	return strings.Compare(a, b)
}

func leadingInt(s string) int {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	n, _ := strconv.Atoi(s[:i])
	return n
}
