package benchkit

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

func TestSize(t *testing.T) {
	for in, want := range map[string]int{"8": 8, "4K": 4096, "1m": 1 << 20, "2G": 2 << 30} {
		var s Size
		if err := s.Set(in); err != nil || int(s) != want {
			t.Errorf("Set(%q) = %d, %v; want %d", in, s, err, want)
		}
	}
	for _, in := range []string{"", "x", "-1", "3T", "4G"} {
		var s Size
		if err := s.Set(in); err == nil {
			t.Errorf("Set(%q) accepted (%d)", in, s)
		}
	}
}

func TestPercentile(t *testing.T) {
	s := []float64{1, 2, 3, 4}
	if p := Percentile(s, 50); p != 2.5 {
		t.Errorf("median %v", p)
	}
	if p := Percentile(s, 99); p != 4 {
		t.Errorf("p99 %v", p)
	}
	if !math.IsNaN(Percentile(nil, 50)) {
		t.Error("empty is not NaN")
	}
	if m := Median([]float64{3, 1, 2}); m != 2 {
		t.Errorf("Median %v", m)
	}
}

func TestMeasure(t *testing.T) {
	calls := 0
	m, err := Measure(10, 100, func(i int) error {
		if i != calls {
			t.Fatalf("op got %d at call %d", i, calls)
		}
		calls++
		return nil
	})
	if err != nil || calls != 110 || m.Iters != 100 || m.Batch < 1 || m.Batch > MaxBatch || len(m.Samples) == 0 {
		t.Fatalf("Measure: %v, %d calls, %+v", err, calls, m)
	}
	if med, avg, p99 := m.Latency(1); med < 0 || avg < 0 || p99 < med {
		t.Errorf("Latency %v %v %v", med, avg, p99)
	}
	boom := errors.New("boom")
	if _, err := Measure(0, 5, func(int) error { return boom }); !errors.Is(err, boom) {
		t.Errorf("error not returned: %v", err)
	}
}

func TestMainCode(t *testing.T) {
	parse := func(args []string) (string, error) {
		switch args[0] {
		case "help":
			return "", pflag.ErrHelp
		case "bad":
			return "", errors.New("--bad: no such flag")
		}
		return args[0], nil
	}
	run := func(ctx context.Context, o string) error {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if o == "fail" {
			return errors.New("rank 1 died")
		}
		return nil
	}
	for _, tc := range []struct {
		arg  string
		code int
		out  string
	}{
		{"help", 0, ""},
		{"bad", 2, "prog: --bad: no such flag\n"},
		{"fail", 1, "prog: rank 1 died\n"},
		{"ok", 0, ""},
	} {
		var out strings.Builder
		if code := mainCode("prog", []string{tc.arg}, &out, parse, run); code != tc.code || out.String() != tc.out {
			t.Errorf("mainCode(%q) = %d, %q; want %d, %q", tc.arg, code, out.String(), tc.code, tc.out)
		}
	}
}

func TestWriteJSONAndProfile(t *testing.T) {
	dir := t.TempDir()
	dest := filepath.Join(dir, "r.json")
	if err := WriteJSON(map[string]int{"ranks": 2}, dest); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(dest); err != nil || string(b) != "{\n  \"ranks\": 2\n}\n" {
		t.Errorf("WriteJSON wrote %q, %v", b, err)
	}
	if err := WriteJSON(func() {}, dest); err == nil {
		t.Error("WriteJSON of a func: no error")
	}
	stop, err := StartProfile(filepath.Join(dir, "cpu"), 3)
	if err != nil {
		t.Fatal(err)
	}
	stop()
	if fi, err := os.Stat(filepath.Join(dir, "cpu.3")); err != nil || fi.Size() == 0 {
		t.Errorf("profile cpu.3: %v, %v", fi, err)
	}
	if _, err := StartProfile(filepath.Join(dir, "missing", "cpu"), 0); err == nil {
		t.Error("StartProfile into a missing directory: no error")
	}
	stop, err = StartProfile("", 0)
	if err != nil {
		t.Fatal(err)
	}
	stop()
}
