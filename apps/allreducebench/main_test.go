package main

import (
	"bytes"
	"context"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/collectives"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/runtimetest"
)

func TestParseFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		ok   bool
	}{
		{nil, true},
		{[]string{"--test", "allreduce", "--min-size", "1K", "--max-size", "4M", "--fresh"}, true},
		{[]string{"--test", "barrier", "--iters", "10", "--size-time", "500ms"}, true},
		{[]string{"--algo", "ring", "--json=x.json"}, true},
		{[]string{"--scratch", "fresh"}, true},
		{[]string{"--scratch=arena"}, true},
		{[]string{"--scratch", "mmap"}, false},
		{[]string{"--test", "bcast"}, true},
		{[]string{"--test", "alltoall,bcast,barrier"}, true},
		{[]string{"--test", "colls"}, true},
		{[]string{"--test", "gather,scatter"}, true},
		{[]string{"--test", "gatherv"}, false},
		{[]string{"--test", "bcast,overlap"}, false},
		{[]string{"--test", "bcast,"}, false},
		{[]string{"--min-size", "4"}, false},
		{[]string{"--min-size", "12"}, false},
		{[]string{"--min-size", "8K", "--max-size", "4K"}, false},
		{[]string{"--iters", "0"}, false},
		{[]string{"--size-time", "-1s"}, false},
		{[]string{"--sizes", "8,1M,24M"}, true},
		{[]string{"--sizes", "8,12"}, false},
		{[]string{"--sizes", "8,,16"}, false},
		{[]string{"extra"}, false},
	} {
		if _, err := parseFlags(tc.args); (err == nil) != tc.ok {
			t.Errorf("parseFlags(%q) = %v, want ok %v", tc.args, err, tc.ok)
		}
	}
}

func TestSizes(t *testing.T) {
	o, err := parseFlags([]string{"--min-size", "8", "--max-size", "64"})
	if err != nil || !slices.Equal(o.sizes, []int{8, 16, 32, 64}) {
		t.Errorf("powers of two: %v, %v", o.sizes, err)
	}
	o, err = parseFlags([]string{"--sizes", "16M,24M,8"})
	if err != nil || !slices.Equal(o.sizes, []int{16 << 20, 24 << 20, 8}) || o.maxSize != 24<<20 {
		t.Errorf("--sizes: %v (max %d), %v", o.sizes, o.maxSize, err)
	}
}

func TestParseTests(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"all", "allreduce,barrier"},
		{"allreduce", "allreduce"},
		{"barrier,allreduce", "allreduce,barrier"},
		{"colls", "allreduce,bcast,reduce,allgather,alltoall,gather,scatter,barrier"},
		{"alltoall, bcast,reduce,allgather", "bcast,reduce,allgather,alltoall"},
		{"barrier,scatter,gather,alltoall", "alltoall,gather,scatter,barrier"},
		{"bcast,all,bcast", "allreduce,bcast,barrier"},
		{"overlap", "overlap"},
	} {
		got, err := parseTests(tc.in)
		if err != nil || strings.Join(got, ",") != tc.want {
			t.Errorf("parseTests(%q) = %v, %v; want %s", tc.in, got, err, tc.want)
		}
	}
}

func TestScaled(t *testing.T) {
	for _, tc := range []struct{ base, minIters, size, want int }{
		{1000, 20, 8, 1000}, {1000, 20, 16 << 10, 1000}, {1000, 20, 32 << 10, 500},
		{1000, 20, 64 << 20, 20}, {10, 20, 1 << 20, 10},
	} {
		if got := scaled(tc.base, tc.minIters, tc.size); got != tc.want {
			t.Errorf("scaled(%d, %d, %d) = %d, want %d", tc.base, tc.minIters, tc.size, got, tc.want)
		}
	}
}

func TestCheck(t *testing.T) {
	const ranks = 3
	acc := make([]float64, 300)
	for r := range ranks {
		v := make([]float64, len(acc))
		fill(v, r)
		for i := range acc {
			acc[i] += v[i]
		}
	}
	if err := check(acc, ranks); err != nil {
		t.Fatal(err)
	}
	acc[7]++
	if err := check(acc, ranks); err == nil {
		t.Fatal("check accepted a wrong sum")
	}
}

// TestRun measures a few sizes over 3 ranks in one process — reused and fresh buffers,
// arena and fresh scratch for the shm algorithm, fresh scratch for the point-to-point
// ones over tcp — and checks the rows rank 0 reports (each size's result is checked by
// measure itself).
func TestRun(t *testing.T) {
	t.Cleanup(func() { collectives.SetScratch(collectives.ScratchArena) })
	for _, tc := range []struct {
		fresh, scratch, transport, algo string
	}{
		{"--fresh=false", "--scratch=arena", "shm", "auto"},
		{"--fresh=true", "--scratch=arena", "shm", "auto"},
		{"--fresh=false", "--scratch=fresh", "shm", "auto"},
		{"--fresh=false", "--scratch=fresh", "tcp", "ring"},
		{"--fresh=false", "--scratch=fresh", "tcp", "rabenseifner"},
	} {
		fresh := strings.Join([]string{tc.fresh, tc.scratch, tc.transport, tc.algo}, " ")
		o, err := parseFlags([]string{tc.fresh, tc.scratch, "--min-size", "8", "--max-size", "64K", "--iters", "20", "--min-iters", "3", "--size-time", "1s"})
		if err != nil {
			t.Fatal(err)
		}
		t.Setenv(collectives.EnvAllreduce, tc.algo) // read at each new World's first call
		var out bytes.Buffer
		runtimetest.Run(t, 3, runtimetest.Options{Transport: tc.transport}, func(w *runtime.World) error {
			text := &bytes.Buffer{}
			if w.Rank() == 0 {
				text = &out
			}
			rep, err := measure(context.Background(), w, o, text)
			if err != nil {
				return err
			}
			if w.Rank() == 0 {
				if want := strings.TrimPrefix(tc.scratch, "--scratch="); rep.Scratch != want {
					t.Errorf("%s: report says scratch %q, want %q", fresh, rep.Scratch, want)
				}
				if rep.Ranks != 3 || len(rep.Allreduce) != 14 || len(rep.Barrier) != 1 {
					t.Errorf("%s: report of %d ranks with %d allreduce and %d barrier rows; want 3, 14, 1", fresh, rep.Ranks, len(rep.Allreduce), len(rep.Barrier))
				}
				for _, r := range append(rep.Allreduce, rep.Barrier...) {
					if r.AvgUS <= 0 || r.MinUS > r.AvgUS || r.AvgUS > r.MaxUS {
						t.Errorf("%s: row %+v: want 0 < min <= avg <= max", fresh, r)
					}
				}
				if r := rep.Allreduce[len(rep.Allreduce)-1]; r.BusBW <= 0 || r.BusBW < r.AlgBW {
					t.Errorf("%s: row %+v: want busbw = algbw * 4/3 > 0", fresh, r)
				}
			}
			return nil
		})
		if s := out.String(); !strings.Contains(s, "# allreduce") || !strings.Contains(s, "\n65536 ") || !strings.Contains(s, "# barrier") ||
			!strings.Contains(s, ", "+strings.Replace(tc.scratch[2:], "=", " ", 1)+"\n") {
			t.Errorf("%s: rank 0 output lacks a table or the 64 KiB row:\n%s", fresh, s)
		}
	}
}

func TestParseFlagsOverlap(t *testing.T) {
	o, err := parseFlags([]string{"--test", "overlap"})
	if err != nil || !slices.Equal(o.sizes, []int{16 << 20}) || o.maxSize != 16<<20 {
		t.Errorf("--test overlap: sizes %v (max %d), %v; want 16 MiB", o.sizes, o.maxSize, err)
	}
	o, err = parseFlags([]string{"--test", "overlap", "--sizes", "1M,4M", "--polls", "8"})
	if err != nil || !slices.Equal(o.sizes, []int{1 << 20, 4 << 20}) || o.polls != 8 {
		t.Errorf("--test overlap --sizes 1M,4M --polls 8: sizes %v, polls %d, %v", o.sizes, o.polls, err)
	}
	o, err = parseFlags([]string{"--test", "overlap", "--max-size", "64"})
	if err != nil || !slices.Equal(o.sizes, []int{8, 16, 32, 64}) {
		t.Errorf("--test overlap --max-size 64: sizes %v, %v", o.sizes, err)
	}
	if _, err := parseFlags([]string{"--test", "overlap", "--polls", "-1"}); err == nil {
		t.Error("--polls -1 accepted")
	}
}

func TestOverlapPct(t *testing.T) {
	for _, tc := range []struct{ coll, comp, ovl, want float64 }{
		{100, 100, 100, 100}, // hidden entirely
		{100, 100, 200, 0},   // the blocking sum
		{100, 100, 150, 50},
		{100, 50, 125, 50}, // the shorter one decides
		{100, 100, 300, -100},
		{0, 100, 100, 0},
	} {
		if got := overlapPct(tc.coll, tc.comp, tc.ovl); got != tc.want {
			t.Errorf("overlapPct(%v, %v, %v) = %v, want %v", tc.coll, tc.comp, tc.ovl, got, tc.want)
		}
	}
}

// TestKernelRun: the kernel's passes are split over polls+1 chunks with poll called
// between them, and every sweep does the same deterministic work.
func TestKernelRun(t *testing.T) {
	a, b := newKernel(), newKernel()
	a.passes, b.passes = 10, 10
	polls := 0
	a.run(3, func() { polls++ })
	b.sweep(10)
	if polls != 3 || !slices.Equal(a.a, b.a) {
		t.Errorf("run(3) called poll %d times (want 3), array equal to 10 sweeps: %v", polls, slices.Equal(a.a, b.a))
	}
	a.calibrate(200 * time.Microsecond)
	if a.passes < 1 {
		t.Errorf("calibrate: %d passes", a.passes)
	}
}

// TestRunOverlap runs --test overlap over 2 ranks in one process, over shm and tcp,
// with and without Test calls in the computation, and checks rank 0's row: every figure
// positive, the blocking sum the sum of the two alone, the text table printed (measure
// checks the Iallreduce's result itself).
func TestRunOverlap(t *testing.T) {
	for _, tc := range []struct {
		transport, polls string
	}{{"shm", "0"}, {"tcp", "0"}, {"shm", "4"}} {
		o, err := parseFlags([]string{"--test", "overlap", "--sizes", "64K", "--iters", "2", "--min-iters", "2", "--polls", tc.polls})
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		runtimetest.Run(t, 2, runtimetest.Options{Transport: tc.transport}, func(w *runtime.World) error {
			text := &bytes.Buffer{}
			if w.Rank() == 0 {
				text = &out
			}
			rep, err := measure(context.Background(), w, o, text)
			if err != nil {
				return err
			}
			if w.Rank() != 0 {
				return nil
			}
			if len(rep.Overlap) != 1 || len(rep.Allreduce) != 0 || len(rep.Barrier) != 0 {
				t.Fatalf("%s polls %s: %d overlap, %d allreduce, %d barrier rows; want 1, 0, 0", tc.transport, tc.polls, len(rep.Overlap), len(rep.Allreduce), len(rep.Barrier))
			}
			r := rep.Overlap[0]
			if r.Bytes != 64<<10 || r.Iterations != 2 || r.Passes < 1 || r.Polls != o.polls ||
				r.CollUS <= 0 || r.CompUS <= 0 || r.OvlUS <= 0 || math.Abs(r.SumUS-(r.CollUS+r.CompUS)) > 0.01 {
				t.Errorf("%s polls %s: row %+v: want 64 KiB, 2 iterations, positive figures, sum = coll + comp", tc.transport, tc.polls, r)
			}
			return nil
		})
		if s := out.String(); !strings.Contains(s, "# overlap") || !strings.Contains(s, "\n65536 ") {
			t.Errorf("%s polls %s: rank 0 output lacks the overlap table:\n%s", tc.transport, tc.polls, s)
		}
	}
}

// TestCollReference checks each collBench's expected result against a sequential
// reference built from its inputs, at 3 ranks and 5 elements per block.
func TestCollReference(t *testing.T) {
	const p, n = 3, 5
	for name, c := range collBenches {
		// in[r] is rank r's send (bcast: its buffer), as setSize writes it.
		in := make([][]float64, p)
		for r := range p {
			s, rl := c.lens(n, p)
			if name == "bcast" {
				s = rl
			}
			in[r] = make([]float64, s)
			for k := range in[r] {
				in[r][k] = c.input(k%n, r, k/n, p)
			}
		}
		for r := range p {
			if !c.who(r) {
				continue
			}
			_, rl := c.lens(n, p)
			for k := range rl {
				i, b := k%n, k/n
				var ref float64
				switch name {
				case "bcast":
					ref = in[0][k]
				case "reduce":
					for q := range p {
						ref += in[q][k]
					}
				case "allgather":
					ref = in[b][i]
				case "alltoall":
					ref = in[b][r*n+i]
				case "gather":
					ref = in[b][i]
				case "scatter":
					ref = in[0][r*n+i]
				default:
					t.Fatalf("%s: no reference", name)
				}
				if got := c.want(i, b, r, p); got != ref {
					t.Errorf("%s: rank %d, block %d, element %d: want %v, reference %v", name, r, b, i, got, ref)
				}
			}
		}
	}
}

// TestBandwidth checks the nccl-tests counting of collBench.bandwidth.
func TestBandwidth(t *testing.T) {
	for _, tc := range []struct {
		name            string
		size, p         int
		avgUS, alg, bus float64
	}{
		{"bcast", 1000, 4, 1, 1, 1},
		{"reduce", 1000, 4, 2, 0.5, 0.5},
		{"allgather", 1000, 4, 1, 4, 3},
		{"alltoall", 1000, 4, 2, 2, 1.5},
		{"alltoall", 1000, 4, 0, 0, 0},
		{"gather", 1000, 4, 1, 4, 3},
		{"scatter", 1000, 4, 2, 2, 1.5},
	} {
		alg, bus := collBenches[tc.name].bandwidth(tc.size, tc.p, tc.avgUS)
		if math.Abs(alg-tc.alg) > 1e-12 || math.Abs(bus-tc.bus) > 1e-12 {
			t.Errorf("%s %d B, p %d, %v us: algbw %v busbw %v, want %v and %v", tc.name, tc.size, tc.p, tc.avgUS, alg, bus, tc.alg, tc.bus)
		}
	}
}

// TestRunColls runs --test colls at small sizes over 3 ranks in one process, with reused
// and fresh buffers, and checks rank 0's tables (measure checks each size's result).
func TestRunColls(t *testing.T) {
	for _, fresh := range []string{"--fresh=false", "--fresh=true"} {
		o, err := parseFlags([]string{"--test", "colls", fresh, "--sizes", "8,1K,64K", "--iters", "2", "--min-iters", "1", "--size-time", "100ms"})
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		runtimetest.Run(t, 3, runtimetest.Options{}, func(w *runtime.World) error {
			text := &bytes.Buffer{}
			if w.Rank() == 0 {
				text = &out
			}
			rep, err := measure(context.Background(), w, o, text)
			if err != nil || w.Rank() != 0 {
				return err
			}
			for _, test := range testOrder {
				rows, want := *rep.rows(test), 3
				if test == "barrier" {
					want = 1
				}
				if len(rows) != want {
					t.Errorf("%s: %d %s rows, want %d", fresh, len(rows), test, want)
					continue
				}
				for _, r := range rows {
					if r.AvgUS <= 0 || r.MinUS > r.AvgUS || r.AvgUS > r.MaxUS {
						t.Errorf("%s: %s row %+v: want 0 < min <= avg <= max", fresh, test, r)
					}
				}
				if slices.Contains([]string{"allgather", "alltoall", "gather", "scatter"}, test) {
					if r := rows[2]; r.Bytes != 64<<10 || math.Abs(r.BusBW-r.AlgBW*2/3) > 1e-9*r.AlgBW {
						t.Errorf("%s: %s row %+v: want 64 KiB, busbw = algbw * 2/3", fresh, test, r)
					}
				}
			}
			return nil
		})
		for _, h := range []string{"# allreduce", "# bcast", "# reduce", "# allgather", "# alltoall", "# gather", "# scatter", "# barrier"} {
			if !strings.Contains(out.String(), h) {
				t.Errorf("%s: rank 0 output lacks %q:\n%s", fresh, h, out.String())
			}
		}
	}
}

// TestVerify: a collective that delivers nothing fails the check at the ranks that
// expect a result, and only there.
func TestVerify(t *testing.T) {
	for _, name := range []string{"bcast", "reduce", "allgather", "alltoall", "gather", "scatter"} {
		c := collBenches[name]
		c.call = func(context.Context, *runtime.World, []float64, []float64) error { return nil }
		o, err := parseFlags([]string{"--sizes", "64"})
		if err != nil {
			t.Fatal(err)
		}
		runtimetest.Run(t, 2, runtimetest.Options{}, func(w *runtime.World) error {
			b := newCollBufs(w, o, c)
			b.setSize(64)
			if err := b.verify(context.Background(), w); (err != nil) != c.who(w.Rank()) {
				t.Errorf("%s: rank %d: verify = %v, want an error %v", name, w.Rank(), err, c.who(w.Rank()))
			}
			return nil
		})
	}
}
