package connbench

import (
	"bytes"
	"slices"
	"testing"
)

func TestHeader(t *testing.T) {
	for _, h := range []header{{op: opEcho, size: 64, count: 20000}, {op: opSink, size: 1 << 20, count: 1 << 40}, {op: opServe, size: 3}} {
		b := h.encode()
		got, err := readHeader(bytes.NewReader(b[:]))
		if err != nil || got != h {
			t.Errorf("round trip of %+v: %+v, %v", h, got, err)
		}
	}
	for _, b := range [][]byte{make([]byte, headerLen), {9, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, {1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, {1, 0}} {
		if _, err := readHeader(bytes.NewReader(b)); err == nil {
			t.Errorf("header % x accepted", b)
		}
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int{"64": 64, "4K": 4096, "1m": 1 << 20, " 256M": 256 << 20, "1G": 1 << 30} {
		if got, err := parseSize(in); err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "K", "-1", "4T", "x"} {
		if got, err := parseSize(in); err == nil {
			t.Errorf("parseSize(%q) = %d, accepted", in, got)
		}
	}
	if _, err := parseSizes("64,0"); err == nil {
		t.Error("parseSizes accepted a size of 0")
	}
}

func TestParseTests(t *testing.T) {
	names := []string{"pingpong", "stream", "connrate", "http"}
	for in, want := range map[string][]string{
		"all":            names,
		"http,pingpong":  {"pingpong", "http"},
		"stream, stream": {"stream"},
	} {
		if got, err := parseTests(in, names); err != nil || !slices.Equal(got, want) {
			t.Errorf("parseTests(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	if _, err := parseTests("ftp", names); err == nil {
		t.Error("unknown test accepted")
	}
}

func TestPercentile(t *testing.T) {
	s := []float64{1, 2, 3, 4}
	for _, tc := range []struct{ p, want float64 }{{50, 2.5}, {5, 1}, {95, 4}, {99, 4}, {25, 1}} {
		if got := percentile(s, tc.p); got != tc.want {
			t.Errorf("percentile(%v) = %v, want %v", tc.p, got, tc.want)
		}
	}
	if percentile(nil, 50) != 0 || median([]float64{3, 1, 2}) != 2 {
		t.Error("empty or odd median")
	}
	if scaledIters(20000, 64, 200) != 20000 || scaledIters(20000, 1<<20, 200) != 200 || scaledIters(20000, 64<<10, 200) != 1250 {
		t.Error("scaledIters")
	}
}
