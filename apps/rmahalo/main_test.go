package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/collectives"
	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/runtimetest"
)

func TestParseFlags(t *testing.T) {
	all := []int{8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536}
	for _, tc := range []struct {
		args  []string
		syncs []string
		sizes []int
		ok    bool
	}{
		{nil, []string{"fence", "pscw", "lock", "lock_all"}, all, true},
		{[]string{"--sync", "lock_all, pscw", "--min-size", "1K", "--max-size", "4K"}, []string{"lock_all", "pscw"}, []int{1024, 2048, 4096}, true},
		{[]string{"--sizes", "8, 24,4K", "--max-size", "8"}, nil, []int{8, 24, 4096}, true},
		{[]string{"--min-size", "24", "--max-size", "100"}, nil, []int{24, 48, 96}, true},
		{[]string{"--size-time", "200ms", "--json"}, nil, all, true},
		{[]string{"--sync", "fence,nosuch"}, nil, nil, false},
		{[]string{"--sync", ""}, nil, nil, false},
		{[]string{"--sizes", "12"}, nil, nil, false},
		{[]string{"--sizes", "8,x"}, nil, nil, false},
		{[]string{"--sizes", "32M"}, nil, nil, false},
		{[]string{"--min-size", "4"}, nil, nil, false},
		{[]string{"--max-size", "17M"}, nil, nil, false},
		{[]string{"--min-size", "8K", "--max-size", "4K"}, nil, nil, false},
		{[]string{"--iters", "0"}, nil, nil, false},
		{[]string{"--warmup", "0"}, nil, nil, false},
		{[]string{"--iters", "1048000", "--warmup", "1000"}, nil, nil, false},
		{[]string{"--size-time", "-1s"}, nil, nil, false},
		{[]string{"extra"}, nil, nil, false},
	} {
		o, err := parseFlags(tc.args)
		if (err == nil) != tc.ok {
			t.Errorf("parseFlags(%q) = %v, want ok %v", tc.args, err, tc.ok)
			continue
		}
		if !tc.ok {
			continue
		}
		if tc.syncs != nil && fmt.Sprint(o.syncs) != fmt.Sprint(tc.syncs) {
			t.Errorf("parseFlags(%q): syncs %v, want %v", tc.args, o.syncs, tc.syncs)
		}
		if fmt.Sprint(o.sizes) != fmt.Sprint(tc.sizes) {
			t.Errorf("parseFlags(%q): sizes %v, want %v", tc.args, o.sizes, tc.sizes)
		}
	}
}

func TestScaled(t *testing.T) {
	for _, tc := range []struct{ count, floor, size, want int }{
		{1000, 20, 8, 1000},
		{1000, 20, 16 << 10, 1000},
		{1000, 20, 64 << 10, 250},
		{1000, 20, 16 << 20, 20},
		{100, 1, 1 << 20, 1},
	} {
		if got := scaled(tc.count, tc.floor, tc.size); got != tc.want {
			t.Errorf("scaled(%d, %d, %d) = %d, want %d", tc.count, tc.floor, tc.size, got, tc.want)
		}
	}
}

// TestValueOfDistinct checks that the values of different ranks, sides, elements and
// iterations differ and stay exact at the limits.
func TestValueOfDistinct(t *testing.T) {
	seen := map[float64]string{}
	for _, rank := range []int{0, 1, 7, maxRanks - 1} {
		for side := range 2 {
			for _, i := range []int{0, 1, maxElems - 1} {
				for _, k := range []int{0, 1, maxIters - 1} {
					v, at := valueOf(rank, side, i)+float64(k), fmt.Sprint(rank, side, i, k)
					if prev, dup := seen[v]; dup || v != float64(int64(v)) {
						t.Fatalf("valueOf(%s) = %v: also valueOf(%s), or not exact", at, v, prev)
					}
					seen[v] = at
				}
			}
		}
	}
}

// TestEveryMode runs every mode briefly over shm, tcp and an odd ring, and parses rank
// 0's text: a table per mode, every size, a positive figure.
func TestEveryMode(t *testing.T) {
	for _, tc := range []struct {
		name string
		n    int
		opt  runtimetest.Options
	}{
		{"shm2", 2, runtimetest.Options{Transport: "shm"}},
		{"shm3", 3, runtimetest.Options{Transport: "shm"}},
		{"hosts4", 4, runtimetest.Options{Hosts: []string{"a", "a", "b", "b"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := parseFlags([]string{"--sizes", "8,64,32K", "--iters", "40", "--warmup", "3", "--size-time", "1s"})
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
				r, err := measureAll(context.Background(), w, o, text)
				if w.Rank() == 0 {
					rep = r
				}
				return err
			})
			if rep.Ranks != tc.n || len(rep.Tables) != len(modes) {
				t.Fatalf("rank 0 report: %d ranks, %d tables; want %d, %d", rep.Ranks, len(rep.Tables), tc.n, len(modes))
			}
			checkTables(t, parseText(t, out.String()), o)
		})
	}
}

// TestWrongGhostFailsTheRun gives rank 1 a wrong boundary value: rank 0's run must fail
// after the first iteration, naming the rank, the size, the mode and the element.
func TestWrongGhostFailsTheRun(t *testing.T) {
	o, err := parseFlags([]string{"--sync", "fence", "--sizes", "32"})
	if err != nil {
		t.Fatal(err)
	}
	var got error
	runtimetest.Run(t, 2, runtimetest.Options{Transport: "shm"}, func(w *runtime.World) error {
		ctx := context.Background()
		if w.Rank() == 0 {
			_, got = measureAll(ctx, w, o, &bytes.Buffer{})
			return nil
		}
		// Rank 1 follows measureSize's calls up to the first iteration, with one wrong
		// value in the boundary that goes to rank 0's right ghost.
		h, err := newHalo(ctx, w, "fence", 4)
		if err != nil {
			return err
		}
		h.stamp()
		h.region(leftBoundary)[2] = 42
		if err := collectives.Barrier(ctx, w); err != nil {
			return err
		}
		return h.iterate(ctx)
	})
	want := "rank 0, 32 bytes, sync fence: after the first iteration: right ghost element 2 holds 42"
	if got == nil || !strings.HasPrefix(got.Error(), want) {
		t.Errorf("rank 0's run: %v, want an error starting %q", got, want)
	}
}

// TestCheckFindsStaleGhost checks that ghosts of an earlier iteration fail the check.
func TestCheckFindsStaleGhost(t *testing.T) {
	runtimetest.Run(t, 3, runtimetest.Options{Transport: "shm"}, func(w *runtime.World) error {
		ctx := context.Background()
		h, err := newHalo(ctx, w, "pscw", 5)
		if err != nil {
			return err
		}
		h.stamp()
		if err := collectives.Barrier(ctx, w); err != nil {
			return err
		}
		for range 2 {
			if err := h.iterate(ctx); err != nil {
				return err
			}
		}
		if err := h.check(); err != nil {
			return err
		}
		h.iter++
		if err := h.check(); err == nil || !strings.Contains(err.Error(), "left ghost element 0") {
			t.Errorf("rank %d: check one iteration late = %v, want the left ghost's element 0", w.Rank(), err)
		}
		return h.win.Free(ctx)
	})
}

// TestLaunch runs rmahalo through golaunch with 2 and 4 ranks, every mode, and checks
// the text and the JSON document it writes beside it.
func TestLaunch(t *testing.T) {
	if testing.Short() {
		t.Skip("builds golaunch and runs 2- and 4-rank jobs")
	}
	dir := t.TempDir()
	golaunch, prog := filepath.Join(dir, "golaunch"), filepath.Join(dir, "rmahalo")
	for _, args := range [][]string{
		{"build", "-o", golaunch, "../../launcher/cmd/golaunch"},
		{"build", "-o", prog, "."},
	} {
		cmd := exec.Command("go", args...)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	args := []string{"--sizes", "8,1K,64K", "--iters", "50", "--warmup", "5", "--size-time", "500ms"}
	o, err := parseFlags(args)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{2, 4} {
		t.Run(strconv.Itoa(n), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(2*time.Minute))
			defer cancel()
			file := filepath.Join(t.TempDir(), "halo.json")
			cmd := exec.CommandContext(ctx, golaunch, append([]string{"-n", strconv.Itoa(n), "--timeout",
				testbudget.Scale(90 * time.Second).String(), "--tag-output=false", prog, "--json=" + file}, args...)...)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("golaunch: %v\n%s%s", err, out, stderr.String())
			}
			checkTables(t, parseText(t, string(out)), o)
			b, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var rep report
			if err := json.Unmarshal(b, &rep); err != nil {
				t.Fatalf("%s is not one JSON document: %v\n%s", file, err, b)
			}
			if rep.Benchmark != "rmahalo" || rep.System != "gorma" || rep.Ranks != n || len(rep.Tables) != len(modes) {
				t.Errorf("JSON header: %s, %s, %d ranks, %d tables; want rmahalo, gorma, %d, %d",
					rep.Benchmark, rep.System, rep.Ranks, len(rep.Tables), n, len(modes))
			}
			for _, tab := range rep.Tables {
				for _, r := range tab.Rows {
					if r.Iterations < 3 || r.US <= 0 {
						t.Errorf("JSON %s row %+v: want at least 3 iterations and a positive time", tab.Sync, r)
					}
				}
			}
		})
	}
}

// parseText reads the text output as scripts/compare-rmahalo.sh does: per mode header
// line, the bytes and microseconds of each row.
func parseText(t *testing.T, s string) map[string][]row {
	t.Helper()
	tables := map[string][]row{}
	mode := ""
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		line := sc.Text()
		if m, ok := strings.CutPrefix(line, "# rmahalo "); ok {
			mode, _, _ = strings.Cut(m, ":")
			continue
		}
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 2 || mode == "" {
			t.Fatalf("line %q: want 2 fields after a mode's header", line)
		}
		var r row
		var err1, err2 error
		r.Bytes, err1 = strconv.Atoi(f[0])
		r.US, err2 = strconv.ParseFloat(f[1], 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("line %q: %v %v", line, err1, err2)
		}
		tables[mode] = append(tables[mode], r)
	}
	if !strings.HasPrefix(s, "# gorma rmahalo: ") {
		t.Fatalf("no header in:\n%s", s)
	}
	return tables
}

// checkTables checks that every mode of o has a row per size with a positive time.
func checkTables(t *testing.T, tables map[string][]row, o options) {
	t.Helper()
	for _, m := range o.syncs {
		rows := tables[m]
		if len(rows) != len(o.sizes) {
			t.Errorf("mode %s: %d rows, want %d", m, len(rows), len(o.sizes))
			continue
		}
		for i, size := range o.sizes {
			if rows[i].Bytes != size || rows[i].US <= 0 {
				t.Errorf("mode %s row %d: %+v, want %d bytes and a positive time", m, i, rows[i], size)
			}
		}
	}
}
