package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSelect16 collects testdata/select16 (two candidates of the medium class at p = 16,
// two repetitions each) and checks every row against the files: the median of the two
// repetitions per candidate, and the faster candidate as best. Then it checks the table.
func TestSelect16(t *testing.T) {
	s, err := collectSelect16("testdata/select16")
	if err != nil {
		t.Fatal(err)
	}
	if s.Reps != 2 || s.Machine.Cores != 16 {
		t.Errorf("reps %d, cores %d: want 2 and 16", s.Reps, s.Machine.Cores)
	}
	want := map[string]map[int][]float64{} // candidate, bytes: the repetitions' times
	for _, cand := range []string{"1024", "16384"} {
		want[cand] = map[int][]float64{}
		for _, rep := range []string{"1", "2"} {
			b, err := os.ReadFile(filepath.Join("testdata/select16", "sel_medium_"+cand+"_p16_"+rep+".json"))
			if err != nil {
				t.Fatal(err)
			}
			var a arDoc
			if err := json.Unmarshal(b, &a); err != nil {
				t.Fatal(err)
			}
			for _, r := range a.Allreduce {
				want[cand][r.Bytes] = append(want[cand][r.Bytes], r.AvgUS)
			}
		}
	}
	if len(s.Rows) != len(want["1024"]) {
		t.Fatalf("%d rows, want one per size: %d", len(s.Rows), len(want["1024"]))
	}
	for _, r := range s.Rows {
		if r.Class != "medium" || r.P != 16 || r.Test != "allreduce" {
			t.Errorf("row %+v: want medium, p = 16, allreduce", r)
		}
		best := ""
		for cand, by := range want {
			v := by[r.Bytes]
			if m := (v[0] + v[1]) / 2; r.US[cand] != m {
				t.Errorf("%d bytes, %s: %g us, want the median %g", r.Bytes, cand, r.US[cand], m)
			}
			if best == "" || r.US[cand] < r.US[best] {
				best = cand
			}
		}
		if r.Best != best {
			t.Errorf("%d bytes: best %s, want %s", r.Bytes, r.Best, best)
		}
	}
	var out bytes.Buffer
	renderSelect16(&out, s)
	if !strings.Contains(out.String(), "| test | p | bytes | 1024 | 16384 |") || strings.Count(out.String(), "**") != 2*len(s.Rows) {
		t.Errorf("table:\n%s\nwant columns 1024 and 16384 and one bold cell per row", out.String())
	}
}

// TestDevice16Extras collects the ex_ files of testdata/device16 and checks the figures
// against the files (one repetition: the medians are the files' own figures), then the
// rendered rows.
func TestDevice16Extras(t *testing.T) {
	d, err := collectDevice16("testdata/device16")
	if err != nil {
		t.Fatal(err)
	}
	x := d.Extras
	if x == nil || x.Reps != 1 {
		t.Fatalf("extras %+v: want one repetition", x)
	}
	read := func(name string, v any) {
		b, err := os.ReadFile(filepath.Join("testdata/device16", name))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range []string{"gorma", "ompi", "mpich"} {
		var pp struct {
			Latency []struct {
				LatencyUS float64 `json:"latency_us"`
			} `json:"latency"`
			Bandwidth []struct {
				MBps float64 `json:"MB_per_s"`
			} `json:"bandwidth"`
		}
		read("ex_pp_"+s+"_1.json", &pp)
		if got := x.PingPong[s]; got.LatencyUS != pp.Latency[0].LatencyUS || got.MBps != pp.Bandwidth[0].MBps {
			t.Errorf("%s: ping-pong %+v, want %g us and %g MB/s", s, got, pp.Latency[0].LatencyUS, pp.Bandwidth[0].MBps)
		}
	}
	for _, s := range []string{"gorma", "ompi"} {
		var sc struct {
			Ranks   int                                 `json:"ranks"`
			Figures map[string]struct{ Median float64 } `json:"figures"`
		}
		read("ex_scale_"+s+"_1.json", &sc)
		if got := x.Scale[s]; got.AllocateUS != sc.Figures["win_allocate_us"].Median || x.ScaleP != sc.Ranks {
			t.Errorf("%s: scale %+v at %d ranks, want Allocate %g us at %d", s, got, x.ScaleP, sc.Figures["win_allocate_us"].Median, sc.Ranks)
		}
	}
	cell := func(name string, bytes int) (D16RMA, bool) {
		for _, c := range x.RMA {
			if c.Case == name && c.Bytes == bytes {
				return c, true
			}
		}
		return D16RMA{}, false
	}
	for _, f := range []string{"ex_rma_gorma_1.json", "ex_rma_ompi_1.json", "ex_rma_mpich_1.json", "ex_rma_gorma_1_1M.json", "ex_rma_ompi_1_1M.json"} {
		sys := strings.Split(f, "_")[2]
		var d rmaDoc
		read(f, &d)
		for _, tb := range d.Tables {
			for _, r := range tb.Rows {
				want, higher := r.MedianUS, r.MBps != 0
				if higher {
					want = r.MBps
				}
				c, ok := cell(tb.Name, r.Bytes)
				if !ok || c.By[sys] != want || c.Higher != higher {
					t.Errorf("%s: cell %s at %d B: %+v (found %v), want %s's %g", f, tb.Name, r.Bytes, c, ok, sys, want)
				}
				if tb.Name == "fence" {
					if p, ok := cell("fence.p99", r.Bytes); !ok || p.By[sys] != r.P99US {
						t.Errorf("%s: fence p99 %+v, want %g", f, p, r.P99US)
					}
				}
			}
		}
	}
	if c, ok := cell("put_bw", 1<<20); !ok || !c.Higher || len(c.By) != 2 {
		t.Errorf("put_bw at 1 MiB: %+v, want a rate of gorma and ompi", c)
	}
	var b strings.Builder
	renderD16Extras(&b, x)
	for _, want := range []string{"| message rate 8 B (MB/s, higher is better) |", "| ping-pong 8 B under --trace (us) |", "| window Allocate, 4 ranks (us) |",
		"### One-sided operations, 2 ranks", "| put_bw (MB/s) | 1048576 |", "| fence.p99 | 0 |"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("extras table lacks %q:\n%s", want, b.String())
		}
	}
}
