package main

import (
	"math"
	"strings"
	"testing"
)

// TestDevice16Models checks collectives/design.md's memory models: at p = 16 and 16 MiB on
// a node copying 90 GB/s, the floor moves (3p-1)n bytes at 2C, about 4.4 ms.
func TestDevice16Models(t *testing.T) {
	n, p, c := 16<<20, 16, 90e9
	if got, want := floorUS(n, p, c), 47*float64(n)/(2*c)*1e6; math.Abs(got-want) > 1e-9 || math.Abs(got-4381) > 1 {
		t.Errorf("floorUS = %v, want %v (about 4381 us)", got, want)
	}
	if got := stagedUS(n, p, c) / floorUS(n, p, c); math.Abs(got-79.0/47) > 1e-12 {
		t.Errorf("staged / floor = %v, want 79/47", got)
	}
}

// TestDevice16Collect collects testdata/device16 (a dry run of scripts/device16.sh local:
// one repetition at p = 2) and renders its section.
func TestDevice16Collect(t *testing.T) {
	d, err := collectDevice16("testdata/device16")
	if err != nil {
		t.Fatal(err)
	}
	if d.Machine.Cores != 2 || d.Reps != 1 || len(d.Copy) == 0 {
		t.Fatalf("machine %+v, reps %d, copy %v", d.Machine, d.Reps, d.Copy)
	}
	if strings.Join(d.Systems, ",") != "gorma,gorma1,gormago,ompi,mpich" {
		t.Errorf("systems %v, want every system of the job in the page's order", d.Systems)
	}
	if len(d.Ranks) != 1 || d.Ranks[0].P != 2 {
		t.Fatalf("ranks %+v, want p = 2 only", d.Ranks)
	}
	r := d.Ranks[0]
	var sizes []int
	for _, row := range r.Allreduce {
		sizes = append(sizes, row.Bytes)
		if len(row.US) != len(d.Systems) {
			t.Errorf("%d B: figures of %d systems, want %d", row.Bytes, len(row.US), len(d.Systems))
		}
	}
	if len(sizes) != 3 || sizes[0] != 8 || sizes[2] != 1<<20 {
		t.Errorf("sizes %v, want 8, 64K, 1M in order", sizes)
	}
	if len(r.Barrier.US) != len(d.Systems) || len(r.Threads) != len(d.Systems) {
		t.Errorf("barrier %v, threads %v: want every system", r.Barrier.US, r.Threads)
	}
	page, err := renderDevice16(d)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := d.copyRate(2)
	row := r.Allreduce[2]
	for _, want := range []string{
		"## 16-core node",
		"### Allreduce (float64 sum), 2 ranks: latency (us, lower is better)",
		"| 1M | " + d16Cell(row, "gorma") + " |",
		" | " + d16Ratio(row) + " | " + num(floorUS(1<<20, 2, c), 3) + " | " + num(stagedUS(1<<20, 2, c), 3) + " |",
		"| Barrier | ",
		"### Threads and context switches, 2 ranks",
		"| Open MPI | ",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("section lacks %q:\n%s", want, page)
		}
	}
	if strings.Contains(page, "| 64K | "+d16Cell(r.Allreduce[1], "gorma")+" | ") && strings.Contains(page, num(floorUS(64<<10, 2, c), 3)+" |") {
		t.Errorf("the 64K row shows a memory model; models start at 1M")
	}
}
