package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/apps/internal/benchkit"
	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/runtimetest"
)

func TestParseFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		ok   bool
	}{
		{nil, true},
		{[]string{"--test", "put_lat,fence", "--max-size", "4K"}, true},
		{[]string{"--test", "get_lat.pscw"}, true},
		{[]string{"--test", "nosuch"}, false},
		{[]string{"--test", "put_lat.nosuch"}, false},
		{[]string{"--min-size", "0"}, false},
		{[]string{"--min-size", "8K", "--max-size", "4K"}, false},
		{[]string{"--busy", "0s"}, false},
		{[]string{"extra"}, false},
	} {
		if _, err := parseFlags(tc.args); (err == nil) != tc.ok {
			t.Errorf("parseFlags(%q) = %v, want ok %v", tc.args, err, tc.ok)
		}
	}
}

func TestSelected(t *testing.T) {
	for _, tc := range []struct {
		sel  []string
		name string
		want bool
	}{
		{[]string{"all"}, "put_lat.lock", true},
		{[]string{"put_lat"}, "put_lat.fence", true},
		{[]string{"put_lat"}, "put_bw", false},
		{[]string{"put_lat.lock"}, "put_lat.lock_all", false},
		{[]string{"fence"}, "fence", true},
		{[]string{"fence"}, "put_lat.fence", false},
		{[]string{"x", "alloc_free"}, "alloc_free.create", true},
	} {
		if got := selected(tc.sel, tc.name); got != tc.want {
			t.Errorf("selected(%q, %q) = %v, want %v", tc.sel, tc.name, got, tc.want)
		}
	}
}

func TestCheckRanks(t *testing.T) {
	for _, tc := range []struct {
		n    int
		want string // in the error; "" for none
	}{
		{2, ""},
		{4, ""},
		{16, ""},
		{1, "the job has 1 ranks"},
		{3, "golaunch -n 2 or -n 4 rmabench"},
		{5, "the job has 5 ranks"},
	} {
		err := checkRanks(tc.n)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("checkRanks(%d) = %v, want an error holding %q", tc.n, err, tc.want)
		}
	}
}

// measureInProcess runs the cases of o in an in-process world of n ranks and returns
// rank 0's text output and report.
func measureInProcess(t *testing.T, n int, o options) (*bytes.Buffer, report) {
	t.Helper()
	var out bytes.Buffer
	var rep report
	runtimetest.Run(t, n, runtimetest.Options{}, func(w *runtime.World) error {
		ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(time.Minute))
		defer cancel()
		text := &bytes.Buffer{}
		if w.Rank() == 0 {
			text = &out
		}
		r, err := measureAll(ctx, w, o, text)
		if w.Rank() == 0 {
			rep = r
		}
		return err
	})
	return &out, rep
}

// TestEveryCase runs every case once with tiny counts and the smallest windows (8 B) in
// in-process worlds of two and four ranks: each must complete, print a table that parses and hold the context switches
// in every JSON row (the figures are not checked: this is a benchmark, timed only by its
// runs).
func TestEveryCase(t *testing.T) {
	o, err := parseFlags([]string{"--max-size", "8", "--iters", "20", "--bw-iters", "2", "--alloc-iters", "2",
		"--busy", "20ms", "--busy-reps", "1"})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{2, 4} {
		t.Run(fmt.Sprintf("%d ranks", n), func(t *testing.T) {
			out, rep := measureInProcess(t, n, o)
			checkTables(t, out.String(), caseNames())
			if got := strings.Contains(out.String(), pairsLine(n)); got != (n > 2) {
				t.Errorf("pairs line %q printed: %v, want %v", pairsLine(n), got, n > 2)
			}
			if rep.Ranks != n {
				t.Errorf("report: %d ranks, want %d", rep.Ranks, n)
			}
			checkSwitches(t, rep)
		})
	}
}

// checkTables checks that text holds a table for each case of names, and that every
// table parses: "# NAME: TITLE", the header of the case's kind, then rows of as many
// fields as the header, each a number ("-" for a figure without samples).
func checkTables(t *testing.T, text string, names []string) {
	t.Helper()
	kinds := map[string]kind{}
	for _, c := range cases {
		kinds[c.name] = c.kind
	}
	found := map[string]int{} // rows per case
	lines := strings.Split(text, "\n")
	for i := 0; i < len(lines); i++ {
		name, _, ok := strings.Cut(strings.TrimPrefix(lines[i], "# "), ": ")
		k, known := kinds[name]
		if !strings.HasPrefix(lines[i], "# ") || !ok || !known {
			continue
		}
		if i+1 >= len(lines) || lines[i+1] != header(k) {
			t.Errorf("case %s: no header %q after its title", name, header(k))
			continue
		}
		cols := len(strings.Fields(header(k)))
		for i += 2; i < len(lines) && lines[i] != ""; i++ {
			f := strings.Fields(lines[i])
			if len(f) != cols {
				t.Errorf("case %s: row %q has %d fields, want %d", name, lines[i], len(f), cols)
				continue
			}
			for j, v := range f {
				if _, err := strconv.ParseFloat(v, 64); err != nil && (v != "-" || j < 2) {
					t.Errorf("case %s: row %q: field %d is %q, want a number", name, lines[i], j+1, v)
				}
			}
			found[name]++
		}
		i--
	}
	for _, name := range names {
		if found[name] == 0 {
			t.Errorf("no rows for case %s in:\n%s", name, text)
		}
	}
}

// checkSwitches writes rep as --json=FILE does and checks that every row of the document
// holds vcsw_per_call and ivcsw_per_call, non-negative numbers.
func checkSwitches(t *testing.T, rep report) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "rma.json")
	if err := benchkit.WriteJSON(rep, path); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Tables []struct {
			Name string           `json:"name"`
			Rows []map[string]any `json:"rows"`
		} `json:"tables"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Tables) != len(cases) {
		t.Errorf("JSON document: %d tables, want %d", len(doc.Tables), len(cases))
	}
	for _, tab := range doc.Tables {
		for _, r := range tab.Rows {
			for _, k := range []string{"vcsw_per_call", "ivcsw_per_call"} {
				if v, ok := r[k].(float64); !ok || v < 0 {
					t.Errorf("%s row %v: %s is %v, want a non-negative number", tab.Name, r, k, r[k])
				}
			}
		}
	}
}

func TestBusyRow(t *testing.T) {
	for _, tc := range []struct {
		samples  []float64
		want     row
		wantText string
	}{
		{nil, row{Bytes: 8}, "8                       0            -            -"},
		{[]float64{3, 1, 2}, row{Bytes: 8, Iterations: 3, MedianUS: 2, MaxUS: 3},
			"8                       3        2.000        3.000"},
	} {
		got := busyRow(8, tc.samples)
		if got != tc.want {
			t.Errorf("busyRow(8, %v) = %+v, want %+v", tc.samples, got, tc.want)
		}
		if s := formatRow(kindMax, got); s != tc.wantText {
			t.Errorf("formatRow(%+v) = %q, want %q", got, s, tc.wantText)
		}
	}
}

// TestBusyGetNoSample runs busy_get with a --busy too short for any operation to start
// (the sampling stops at half of --busy, the first operation starts 1 ms into the round):
// the case must print a row without figures rather than fail.
func TestBusyGetNoSample(t *testing.T) {
	o, err := parseFlags([]string{"--test", "busy_get", "--busy", "1ms", "--busy-reps", "1"})
	if err != nil {
		t.Fatal(err)
	}
	out, _ := measureInProcess(t, 2, o)
	if want := formatRow(kindMax, row{Bytes: 8}); !strings.Contains(out.String(), "\n"+want+"\n") {
		t.Errorf("no empty busy_get row %q in:\n%s", want, out.String())
	}
}
