package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/apps/internal/benchkit"
)

func TestPercentile(t *testing.T) {
	s := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for _, tc := range []struct {
		p    float64
		want float64
	}{{50, 5.5}, {99, 10}, {90, 9}, {10, 1}, {0, 1}} {
		if got := percentile(s, tc.p); got != tc.want {
			t.Errorf("percentile(1..10, %v) = %v, want %v", tc.p, got, tc.want)
		}
	}
	if got := percentile([]float64{3, 1, 2}[:0], 50); !math.IsNaN(got) {
		t.Errorf("percentile of nothing = %v", got)
	}
	if got := median([]float64{9, 1, 5}); got != 5 {
		t.Errorf("median = %v", got)
	}
}

func TestMeasure(t *testing.T) {
	calls := 0
	m, err := measure(10, 100, func(i int) error {
		if i != calls {
			t.Fatalf("op got iteration %d, want %d", i, calls)
		}
		calls++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if calls != 110 || m.Iters != 100 || m.Batch < 1 || m.Batch > maxBatch || len(m.Samples) == 0 {
		t.Errorf("calls %d, measurement %+v", calls, m)
	}
	boom := errors.New("boom")
	if _, err := measure(2, 5, func(i int) error {
		if i == 4 {
			return boom
		}
		return nil
	}); !errors.Is(err, boom) {
		t.Errorf("measure error = %v", err)
	}
}

func TestLatencyRow(t *testing.T) {
	m := measurement{benchkit.Measurement{Samples: []float64{1000, 2000, 3000, 4000}, Batch: 2, Iters: 8, Total: 20 * time.Microsecond}}
	row := m.latency(64, 0.5)
	want := Row{Bytes: 64, Iterations: 8, Batch: 2, MedianUS: 1.25, AvgUS: 1.25, P99US: 2}
	if row.Bytes != want.Bytes || row.Iterations != want.Iterations || row.Batch != want.Batch ||
		row.MedianUS != want.MedianUS || row.AvgUS != want.AvgUS || row.P99US != want.P99US {
		t.Errorf("latency row = %+v, want %+v", row, want)
	}
	lat := &Result{Kind: kindLatency}
	if got := formatRow(lat, row); got != "64                    8        1.250        1.250        2.000\n" {
		t.Errorf("formatRow latency = %q", got)
	}
	bw := bwRow(1<<20, 16, []float64{2, 4, 3})
	if bw.GBps != 3 || bw.AvgGBps != 3 || len(bw.RepsGBps) != 3 {
		t.Errorf("bwRow = %+v", bw)
	}
	if got := formatRow(&Result{Kind: kindBandwidth}, bw); got != "1048576              16        3.000        0.003\n" {
		t.Errorf("formatRow bandwidth = %q", got)
	}
	// A table with a paired floor has one more column, "-" where a row has none.
	paired := &Result{Kind: kindLatency, Floor: "flag_pp"}
	if got := formatHeader(paired); got != "#bytes       iterations    median_us       avg_us       p99_us     flag_pp_us\n" {
		t.Errorf("paired header = %q", got)
	}
	if got := formatRow(paired, row); !strings.HasSuffix(got, " 2.000              -\n") {
		t.Errorf("paired row without floor = %q", got)
	}
	row.FloorUS = 0.5
	if got := formatRow(paired, row); !strings.HasSuffix(got, " 2.000          0.500\n") {
		t.Errorf("paired row = %q", got)
	}
	bwRes := &Result{Kind: kindBandwidth, Floor: "memcpy"}
	if got := formatHeader(bwRes); !strings.HasSuffix(got, "Mmsg/s    memcpy_GB/s paired_ratio\n") {
		t.Errorf("paired bandwidth header = %q", got)
	}
	bwLine := Row{Bytes: 1 << 20, GBps: 9, FloorGBps: 10, FloorRatio: 0.875}
	if got := formatRow(bwRes, bwLine); !strings.HasSuffix(got, "10.000        0.875\n") {
		t.Errorf("paired bandwidth row = %q", got)
	}
}

func TestRoundSig(t *testing.T) {
	for _, tc := range []struct{ in, want float64 }{
		{0, 0}, {123456, 123500}, {1.23456, 1.235}, {0.0000588123, 0.00005881}, {-2.5, -2.5},
	} {
		if got := roundSig(tc.in); math.Abs(got-tc.want) > 1e-12*math.Max(1, math.Abs(tc.want)) {
			t.Errorf("roundSig(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestCPUModel(t *testing.T) {
	info := "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 9R14\nflags\t: fpu\n"
	if got := cpuModel(info); got != "AMD EPYC 9R14" {
		t.Errorf("cpuModel = %q", got)
	}
	if got := cpuModel("processor : 0\n"); got != "unknown" {
		t.Errorf("cpuModel without model name = %q", got)
	}
}

// fakeRun fills a reporter with the tables a full run would produce.
func fakeRun(t *testing.T, text io.Writer) *reporter {
	t.Helper()
	o, err := parseFlags([]string{"--quick"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	r := newReporter(text, o)
	lat := func(p, test, mode string, n int, us float64) {
		r.begin(Result{Test: test, Mode: mode, Provider: p, Kind: kindLatency, Title: "t"})
		r.row(Row{Bytes: n, Iterations: 10, MedianUS: us, AvgUS: us, P99US: us})
	}
	bw := func(p, test string, gb ...float64) {
		r.begin(Result{Test: test, Provider: p, Kind: kindBandwidth, Title: "t"})
		for i, g := range gb {
			r.row(Row{Bytes: 1 << (19 + i), Iterations: 10, GBps: g})
		}
	}
	lat("raw", "flag_pp", "", 8, 0.2)
	lat("raw", "tcp_pp", "", 8, 20)
	bw("raw", "memcpy", 10, 10, 10)
	bw("raw", "tcp_stream", 2, 2, 2)
	lat("raw", "segment", "", 1<<20, 2000)
	lat("shm", "write_lat", "completion", 8, 0.05)
	lat("shm", "read_lat", "completion", 8, 0.15)
	lat("shm", "send_lat", "pingpong", 8, 0.4)
	bw("shm", "write_bw", 1, 9, 7) // 512K is below the floor size and ignored
	lat("shm", "arena", "alloc_free", 1<<20, 0.5)
	lat("tcp", "read_lat", "completion", 8, 22)
	bw("tcp", "write_bw", 2, 1.8, 1.9)
	r.skip(Result{Test: "read_bw", Provider: "shm", Kind: kindBandwidth}, "provider lacks rdma-read")
	return r
}

func TestSummary(t *testing.T) {
	r := fakeRun(t, io.Discard)
	got := map[string]Check{}
	for _, c := range summarize(r) {
		got[c.Name] = c
	}
	for _, tc := range []struct {
		name  string
		value float64
		met   int // 1 met, 0 missed, -1 not measured
	}{
		{"shm write 8B, post to completion", 50, 1},
		{"shm read 8B, post to completion", 150, 0},
		{"shm send half-RTT 8B / raw flag ping-pong half-RTT", 2, 0},
		{"shm write_bw / memcpy, sizes >= 1 MiB (worst)", 70, 0},
		{"shm read_bw / memcpy, sizes >= 1 MiB (worst)", 0, -1},
		{"tcp read 8B / raw TCP round trip 8B", 1.1, 1},
		{"tcp write_bw / raw TCP stream, sizes >= 1 MiB (worst)", 90, 1},
		{"shm arena alloc+free 1 MiB on reuse", 0.5, 1},
	} {
		c, ok := got[tc.name]
		if !ok {
			t.Errorf("summary lacks %q", tc.name)
			continue
		}
		switch {
		case tc.met < 0 && c.Met != nil:
			t.Errorf("%s: met = %v, want not measured", tc.name, *c.Met)
		case tc.met >= 0 && c.Met == nil:
			t.Errorf("%s: not measured", tc.name)
		case tc.met >= 0 && *c.Met != (tc.met == 1):
			t.Errorf("%s: met = %v, want %v (value %v)", tc.name, *c.Met, tc.met == 1, c.Value)
		case math.Abs(c.Value-tc.value) > 1e-9:
			t.Errorf("%s: value = %v, want %v", tc.name, c.Value, tc.value)
		}
	}
	if d := got["shm arena alloc+free 1 MiB on reuse"].Detail; !strings.Contains(d, "4000x") {
		t.Errorf("arena detail = %q, want the speed-up over a fresh segment", d)
	}
}

func TestFinishWritesTextAndJSON(t *testing.T) {
	var text bytes.Buffer
	r := fakeRun(t, &text)
	path := filepath.Join(t.TempDir(), "out.json")
	if err := r.finish(path, io.Discard, 1500*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	out := text.String()
	for _, want := range []string{"# verbsperf ", "nproc=", "\n# shm write_lat completion: t\n",
		"#bytes       iterations    median_us       avg_us       p99_us\n",
		"#bytes       iterations         GB/s       Mmsg/s\n",
		"# shm read_bw: skipped: provider lacks rdma-read", "# summary:", "# done in 1.5 s"} {
		if !strings.Contains(out, want) {
			t.Errorf("text output lacks %q:\n%s", want, out)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc Document
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("JSON output does not parse: %v", err)
	}
	if doc.Tool != "verbsperf" || doc.GoVersion == "" || doc.Machine.NProc < 1 || len(doc.Results) != 13 ||
		len(doc.Summary) == 0 || doc.Elapsed != 1.5 || doc.Timestamp == "" || !doc.Config.Quick {
		t.Errorf("JSON document = %+v", doc)
	}

	// --json alone: the document on stdout.
	var stdout bytes.Buffer
	r = fakeRun(t, io.Discard)
	if err := r.finish("-", &stdout, time.Second); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(stdout.Bytes(), &doc); err != nil {
		t.Errorf("--json on stdout does not parse: %v", err)
	}
}

func TestRatiosPreferPairedFloors(t *testing.T) {
	table := &Result{Rows: []Row{{Bytes: 8, MedianUS: 1}}}
	if v, d, ok := latRatio(&Row{Bytes: 8, MedianUS: 0.6, FloorUS: 0.5}, table.rowAt(8)); !ok || v != 1.2 || !strings.Contains(d, "paired") {
		t.Errorf("paired latRatio = %v, %q, %v", v, d, ok)
	}
	if v, d, ok := latRatio(&Row{Bytes: 8, MedianUS: 0.6}, table.rowAt(8)); !ok || v != 0.6 || !strings.Contains(d, "floor table") {
		t.Errorf("unpaired latRatio = %v, %q, %v", v, d, ok)
	}
	if _, _, ok := latRatio(&Row{Bytes: 8, MedianUS: 0.6}, nil); ok {
		t.Error("latRatio without any floor is ok")
	}
	res := &Result{Rows: []Row{{Bytes: 1 << 10, GBps: 1}, {Bytes: 1 << 20, GBps: 8, FloorGBps: 10}, {Bytes: 2 << 20, GBps: 9}}}
	floor := &Result{Rows: []Row{{Bytes: 2 << 20, GBps: 20}}}
	if v, n, ok := worstRatio(res, floor, 1<<20); !ok || n != 2<<20 || v != 0.45 {
		t.Errorf("worstRatio = %v at %d, %v; want 0.45 at 2M", v, n, ok)
	}
	if v, n, ok := worstRatio(res, nil, 1<<20); !ok || n != 1<<20 || v != 0.8 {
		t.Errorf("worstRatio, paired only = %v at %d, %v; want 0.8 at 1M", v, n, ok)
	}
	// The median of the paired repetitions' ratios wins over the ratio of the medians.
	pairs := &Result{Rows: []Row{{Bytes: 1 << 20, GBps: 8, FloorGBps: 10, FloorRatio: 0.9}, {Bytes: 2 << 20, GBps: 9, FloorGBps: 10, FloorRatio: 0.85}}}
	if v, n, ok := worstRatio(pairs, nil, 1<<20); !ok || n != 2<<20 || v != 0.85 {
		t.Errorf("worstRatio of paired ratios = %v at %d, %v; want 0.85 at 2M", v, n, ok)
	}
	small := &Result{Rows: []Row{{Bytes: 4096, GBps: 3, FloorGBps: 4}, {Bytes: 65536, GBps: 3, FloorGBps: 6}}}
	if v, n, ok := worstRatio(small, nil, 1<<20); !ok || n != 65536 || v != 0.5 {
		t.Errorf("worstRatio below the floor size = %v at %d, %v; want the largest size", v, n, ok)
	}
}
