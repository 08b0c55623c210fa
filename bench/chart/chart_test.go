package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestExtract(t *testing.T) {
	ar := `{"benchmark": "allreducebench", "allreduce": [{"bytes": 8, "avg_us": 1.5}, {"bytes": 16, "avg_us": 2}],
		"barrier": [{"bytes": 0, "avg_us": 0.5}]}`
	rma := `{"tables": [{"name": "put_lat.lock", "rows": [{"bytes": 8, "median_us": 9}]},
		{"name": "put_lat.lock_all", "rows": [{"bytes": 8, "median_us": 0.02}]}]}`
	scale := `{"system": "gorma", "scale": [{"ranks": 8, "shm": 20}, {"ranks": 16, "shm": 41}]}`
	text := "# x header\n# put_lat.lock: a\n#bytes it median_us\n8 10 0.5\n\n# put_lat.lock_all: b\n#bytes it median_us\n8 10 0.25\n16 10 0.3\n"
	for _, tc := range []struct {
		name, in, table, field, x string
		want                      map[float64]float64
	}{
		{"json first array", ar, "", "avg_us", "bytes", map[float64]float64{8: 1.5, 16: 2}},
		{"json keyed array", ar, "barrier", "avg_us", "bytes", map[float64]float64{0: 0.5}},
		{"json named table", rma, "put_lat.lock_all", "median_us", "bytes", map[float64]float64{8: 0.02}},
		{"json by ranks", scale, "scale", "shm", "ranks", map[float64]float64{8: 20, 16: 41}},
		{"json without the x field", scale, "scale", "shm", "bytes", map[float64]float64{}},
		{"text table", text, "put_lat.lock_all", "3", "bytes", map[float64]float64{8: 0.25, 16: 0.3}},
		{"text all rows", text, "", "3", "bytes", map[float64]float64{8: 0.25, 16: 0.3}},
	} {
		got, err := extract([]byte(tc.in), tc.table, tc.field, tc.x)
		if err != nil || len(got) != len(tc.want) {
			t.Errorf("%s: %v, %v; want %v", tc.name, got, err, tc.want)
			continue
		}
		for x, y := range tc.want {
			if got[x] != y {
				t.Errorf("%s: at %v got %v, want %v", tc.name, x, got[x], y)
			}
		}
	}
	if _, err := extract([]byte("8 1\n"), "", "avg_us", "bytes"); err == nil {
		t.Error("a text table with a field name: want an error")
	}
}

// TestRun writes two repetitions of two systems and checks the medians, the table and
// that an SVG is drawn.
func TestRun(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"g_1.json": `{"allreduce": [{"bytes": 8, "avg_us": 1}, {"bytes": 1048576, "avg_us": 100}]}`,
		"g_2.json": `{"allreduce": [{"bytes": 8, "avg_us": 3}, {"bytes": 1048576, "avg_us": 200}]}`,
		"m.txt":    "# allreduce\n8 4\n1048576 300\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	series := []string{"--series", "gorma=" + dir + "/g_*.json:avg_us", "--series", "MPI=" + dir + "/m.txt@allreduce:2"}
	var out bytes.Buffer
	if err := run(append([]string{"table", "--sizes", "8,1M,2M"}, series...), &out); err != nil {
		t.Fatal(err)
	}
	want := "| bytes | gorma | MPI | gorma / MPI |\n|---:|---:|---:|---:|\n| 8 | 2 | 4 | 0.50x |\n| 1M | 150 | 300 | 0.50x |\n| 2M | - | - | - |\n"
	if out.String() != want {
		t.Errorf("table:\n%s\nwant:\n%s", out.String(), want)
	}
	svg := filepath.Join(dir, "c.svg")
	if err := run(append([]string{"svg", "--out", svg, "--logy", "--title", "T"}, series...), &out); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(svg); err != nil || !strings.Contains(string(b), "<svg") || !strings.Contains(string(b), ">gorma<") {
		t.Errorf("svg: %v, %.200s", err, b)
	}
	scale := filepath.Join(dir, "scale.json")
	if err := os.WriteFile(scale, []byte(`{"scale": [{"ranks": 8, "wall": 1}, {"ranks": 256, "wall": 30}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run([]string{"svg", "--out", svg, "--logy", "--x", "ranks", "--series", "g=" + scale + "@scale:wall"}, &out); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(svg); err != nil || !strings.Contains(string(b), ">256<") {
		t.Errorf("svg by ranks: %v, no tick label 256 in %.200s", err, b)
	}
	if err := run([]string{"svg", "--out", svg, "--series", "x=" + dir + "/none*.json:avg_us"}, &out); err == nil {
		t.Error("a series without files: want an error")
	}
}
