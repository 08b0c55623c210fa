package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/runtimetest"
)

func TestParseFlags(t *testing.T) {
	for _, tc := range []struct {
		args  []string
		sizes []int
		ok    bool
	}{
		{nil, []int{64, 256, 1024, 4096}, true},
		{[]string{"--sizes", "2, 300"}, []int{2, 300}, true},
		{[]string{"--sizes", "1"}, nil, false},
		{[]string{"--sizes", "65537"}, nil, false},
		{[]string{"--sizes", "8,x"}, nil, false},
		{[]string{"--iters", "0"}, nil, false},
		{[]string{"--warmup", "0"}, nil, false},
		{[]string{"extra"}, nil, false},
	} {
		o, err := parseFlags(tc.args)
		if (err == nil) != tc.ok {
			t.Errorf("parseFlags(%q) = %v, want ok %v", tc.args, err, tc.ok)
			continue
		}
		if tc.ok && fmt.Sprint(o.sizes) != fmt.Sprint(tc.sizes) {
			t.Errorf("parseFlags(%q): sizes %v, want %v", tc.args, o.sizes, tc.sizes)
		}
	}
}

func TestValueOfDistinct(t *testing.T) {
	seen := map[float64]string{}
	for phase := 1; phase <= 2; phase++ {
		for _, rank := range []int{0, 1, 7, 1<<20 - 1} {
			for _, row := range []int{0, 1, maxN - 1} {
				for side := range 2 {
					v, at := valueOf(phase, rank, row, side), fmt.Sprint(phase, rank, row, side)
					if prev, dup := seen[v]; dup || v != float64(int64(v)) {
						t.Fatalf("valueOf(%s) = %v: also valueOf(%s), or not exact", at, v, prev)
					}
					seen[v] = at
				}
			}
		}
	}
}

// TestExchange runs the benchmark briefly in both modes over shm, tcp, two hosts and an
// odd ring, and parses rank 0's table.
func TestExchange(t *testing.T) {
	for _, tc := range []struct {
		name string
		n    int
		opt  runtimetest.Options
	}{
		{"shm2", 2, runtimetest.Options{Transport: "shm"}},
		{"tcp2", 2, runtimetest.Options{Transport: "tcp"}},
		{"hosts4", 4, runtimetest.Options{Hosts: []string{"a", "a", "b", "b"}}},
		{"shm3", 3, runtimetest.Options{Transport: "shm"}},
	} {
		for _, mode := range []string{"datatype", "manual"} {
			t.Run(tc.name+"/"+mode, func(t *testing.T) {
				args := []string{"--sizes", "2,3,64", "--iters", "4", "--warmup", "2"}
				if mode == "manual" {
					args = append(args, "--manual")
				}
				o, err := parseFlags(args)
				if err != nil {
					t.Fatal(err)
				}
				var out bytes.Buffer
				var rep report
				runtimetest.Run(t, tc.n, tc.opt, func(w *runtime.World) error {
					text := &bytes.Buffer{}
					if w.Rank() == 0 {
						text = &out
					}
					r, err := measure(context.Background(), w, o, text)
					if w.Rank() == 0 {
						rep = r
					}
					return err
				})
				if rep.Mode != mode || rep.Ranks != tc.n || len(rep.Rows) != 3 {
					t.Fatalf("rank 0 report: mode %q, %d ranks, %d rows; want %q, %d, 3", rep.Mode, rep.Ranks, len(rep.Rows), mode, tc.n)
				}
				if _, err := json.Marshal(rep); err != nil {
					t.Fatal(err)
				}
				rows := parseTable(t, out.String())
				for i, n := range []int{2, 3, 64} {
					if rows[i].N != n || rows[i].ColumnBytes != 8*n || rows[i].Iterations != 4 || rows[i].ExchangeUS <= 0 {
						t.Errorf("row %d: %+v, want N %d, %d column bytes, 4 iterations, a positive time", i, rows[i], n, 8*n)
					}
				}
			})
		}
	}
}

// parseTable reads the data lines of the text output as a compare script does.
func parseTable(t *testing.T, s string) []row {
	t.Helper()
	var rows []row
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "#") {
			continue
		}
		f := strings.Fields(sc.Text())
		if len(f) != 4 {
			t.Fatalf("line %q: want 4 fields", sc.Text())
		}
		var r row
		var errs [4]error
		r.N, errs[0] = strconv.Atoi(f[0])
		r.ColumnBytes, errs[1] = strconv.Atoi(f[1])
		r.Iterations, errs[2] = strconv.Atoi(f[2])
		r.ExchangeUS, errs[3] = strconv.ParseFloat(f[3], 64)
		for _, err := range errs {
			if err != nil {
				t.Fatalf("line %q: %v", sc.Text(), err)
			}
		}
		rows = append(rows, r)
	}
	if len(rows) == 0 || !strings.HasPrefix(s, "# gorma halobench") {
		t.Fatalf("no header or no rows in:\n%s", s)
	}
	return rows
}

// TestCheckFindsWrongGhost changes one received ghost value, and a stale phase, and
// expects check to say so.
func TestCheckFindsWrongGhost(t *testing.T) {
	for _, manual := range []bool{false, true} {
		runtimetest.Run(t, 2, runtimetest.Options{Transport: "shm"}, func(w *runtime.World) error {
			h, err := newHalo(w, 5, manual)
			if err != nil {
				return err
			}
			h.stamp(1)
			if err := h.exchange(context.Background()); err != nil {
				return err
			}
			if err := h.check(1); err != nil {
				return fmt.Errorf("rank %d, manual %v: %w", w.Rank(), manual, err)
			}
			if h.check(2) == nil {
				t.Errorf("rank %d, manual %v: phase 1's ghosts pass the check of phase 2", w.Rank(), manual)
			}
			h.a[3*h.ld+h.n+1]++ // row 3 of the right ghost
			if err := h.check(1); err == nil || !strings.Contains(err.Error(), "right ghost column, row 3") {
				t.Errorf("rank %d, manual %v: check after a changed ghost = %v, want the right ghost's row 3", w.Rank(), manual, err)
			}
			return nil
		})
	}
}
