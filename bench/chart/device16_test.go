package main

import (
	"math"
	"os"
	"path/filepath"
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
// one repetition at p = 2, the ar_, cl_ and tw_ files of every system) and renders its
// section.
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
	for _, cl := range d16Colls {
		rows := *cl.rows(&r)
		if len(rows) != 3 || rows[0].Bytes != 8 || rows[2].Bytes != 1<<20 {
			t.Errorf("%s: %d rows %+v, want 8, 64K, 1M", cl.heading, len(rows), rows)
			continue
		}
		for _, row := range rows {
			if len(row.US) != len(d.Systems) || len(row.CSW) != len(d.Systems) {
				t.Errorf("%s %d B: figures of %d systems, want %d", cl.heading, row.Bytes, len(row.US), len(d.Systems))
			}
		}
		want := "### " + cl.heading + ", 2 ranks: latency (us, lower is better)"
		line := "| 64K | " + d16Cell(rows[1], "gorma") + " | " + d16Cell(rows[1], "gorma1") + " | " + d16Cell(rows[1], "gormago") + " | " +
			d16Cell(rows[1], "ompi") + " | " + d16Cell(rows[1], "mpich") + " | " + d16Ratio(rows[1]) + " |\n"
		if i := strings.Index(page, want); i < 0 || !strings.Contains(page[i:], line) {
			t.Errorf("section lacks %q followed by %q:\n%s", want, line, page)
		}
	}
	if !strings.Contains(page, "`allreducebench --test bcast,reduce,allgather,alltoall`") {
		t.Errorf("section does not say where the Bcast, Reduce, Allgather and Alltoall tables come from:\n%s", page)
	}
	if strings.Contains(page, "| 64K | "+d16Cell(r.Allreduce[1], "gorma")+" | ") && strings.Contains(page, num(floorUS(64<<10, 2, c), 3)+" |") {
		t.Errorf("the 64K row shows a memory model; models start at 1M")
	}
}

// TestDevice16CollsOnly: a results folder with cl_ files but no ar_ files still collects,
// with empty Allreduce tables and the collectives' tables.
func TestDevice16CollsOnly(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"machine.txt", "parcopy.txt", "cl_gorma_p2_1.json", "cl_ompi_p2_1.json"} {
		b, err := os.ReadFile(filepath.Join("testdata/device16", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	d, err := collectDevice16(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Ranks) != 1 || len(d.Ranks[0].Allreduce) != 0 || len(d.Ranks[0].Alltoall) != 3 {
		t.Fatalf("ranks %+v: want p = 2 with no Allreduce rows and 3 Alltoall rows", d.Ranks)
	}
	page, err := renderDevice16(d)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(page, "### Alltoall (float64, size per block), 2 ranks") || strings.Contains(page, "| Barrier |") {
		t.Errorf("section:\n%s", page)
	}
}
