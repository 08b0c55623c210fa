package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gorma-hpc/gorma/apps/internal/benchkit"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/runtimetest"
)

func TestCheckSize(t *testing.T) {
	for _, tc := range []struct {
		n     int
		pairs bool
		ok    bool
	}{
		{2, false, true}, {4, false, false}, {1, false, false},
		{2, true, true}, {4, true, true}, {6, true, true}, {3, true, false}, {1, true, false},
	} {
		if err := checkSize(tc.n, tc.pairs); (err == nil) != tc.ok {
			t.Errorf("checkSize(%d, %v) = %v, want ok %v", tc.n, tc.pairs, err, tc.ok)
		}
	}
}

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		in   []float64
		want float64
	}{
		{[]float64{3}, 3}, {[]float64{5, 1}, 3}, {[]float64{9, 1, 4}, 4}, {[]float64{4, 1, 3, 2}, 2.5},
	} {
		if got := median(tc.in); got != tc.want {
			t.Errorf("median(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

// TestPairs runs 4 ranks as two concurrent pairs: every rank measures with its partner,
// and rank 0 reports one row per size, for both tests, with the context switches in
// every JSON row.
func TestPairs(t *testing.T) {
	o, err := parseFlags([]string{"--pairs", "--max-size", "64K", "--min-size", "8K", "--iters", "20", "--bw-iters", "3", "--window", "4"})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	runtimetest.Run(t, 4, runtimetest.Options{}, func(w *runtime.World) error {
		text := &bytes.Buffer{}
		if w.Rank() == 0 {
			text = &out
		}
		rep, err := measure(context.Background(), w, o, text)
		if err != nil {
			return err
		}
		if w.Rank() == 0 {
			if rep.Pairs != 2 || len(rep.Latency) != 4 || len(rep.Bandwidth) != 4 {
				t.Errorf("rank 0 report: %d pairs, %d latency and %d bandwidth rows; want 2, 4, 4", rep.Pairs, len(rep.Latency), len(rep.Bandwidth))
			}
			for _, r := range rep.Latency {
				if r.LatencyUS <= 0 {
					t.Errorf("latency row %+v: want a positive figure", r)
				}
			}
			for _, r := range rep.Bandwidth {
				if r.MBps <= 0 {
					t.Errorf("bandwidth row %+v: want a positive figure", r)
				}
			}
			checkSwitches(t, rep)
		}
		return nil
	})
	if s := out.String(); !strings.Contains(s, "2 concurrent pairs") || !strings.Contains(s, "\n65536 ") {
		t.Errorf("rank 0 output lacks the pairs header or the 64 KiB row:\n%s", s)
	}
}

// checkSwitches writes rep as --json=FILE does and checks that every row of the document
// holds vcsw_per_call and ivcsw_per_call, non-negative numbers.
func checkSwitches(t *testing.T, rep report) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "pp.json")
	if err := benchkit.WriteJSON(rep, path); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Latency   []map[string]any `json:"latency"`
		Bandwidth []map[string]any `json:"bandwidth"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	for _, r := range append(doc.Latency, doc.Bandwidth...) {
		for _, k := range []string{"vcsw_per_call", "ivcsw_per_call"} {
			if v, ok := r[k].(float64); !ok || v < 0 {
				t.Errorf("JSON row %v: %s is %v, want a non-negative number", r, k, r[k])
			}
		}
	}
}
