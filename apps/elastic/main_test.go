package main

import (
	"context"
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/runtimetest"
)

func TestParseFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		ok   bool
	}{
		{nil, true},
		{[]string{"--steps", "50", "--pause", "20ms", "--refill", "--seed", "7", "--dim", "8", "--batch", "32", "--lr", "0.02", "--state-dir", "/tmp/x"}, true},
		{[]string{"--steps", "-1"}, false},
		{[]string{"--pause", "-1s"}, false},
		{[]string{"--dim", "0"}, false},
		{[]string{"--batch", "0"}, false},
		{[]string{"--samples", "0"}, false},
		{[]string{"--lr", "0"}, false},
		{[]string{"--momentum", "1"}, false},
		{[]string{"extra"}, false},
	} {
		if _, err := parseFlags(tc.args); (err == nil) != tc.ok {
			t.Errorf("parseFlags(%q) = %v, want ok %v", tc.args, err, tc.ok)
		}
	}
}

func TestBuddies(t *testing.T) {
	for _, tc := range []struct {
		hosts []string
		want  []int
	}{
		{[]string{"a"}, nil},
		{[]string{"a", "a", "a"}, []int{1, 2, 0}},
		{[]string{"a", "a", "b", "b"}, []int{2, 2, 0, 0}},
		{[]string{"a", "b", "a", "b"}, []int{1, 2, 3, 0}},
		{[]string{"a", "a", "b", "b", "c", "c"}, []int{2, 2, 4, 4, 0, 0}},
	} {
		if got := buddies(tc.hosts); !slices.Equal(got, tc.want) {
			t.Errorf("buddies(%q) = %v, want %v", tc.hosts, got, tc.want)
		}
	}
}

// TestPart: the parts of any split cover 0..total-1 once, in order.
func TestPart(t *testing.T) {
	for total := range 20 {
		for n := 1; n <= 6; n++ {
			next := 0
			for i := range n {
				lo, hi := part(total, n, i)
				if lo != next || hi < lo {
					t.Fatalf("part(%d, %d, %d) = %d, %d after %d", total, n, i, lo, hi, next)
				}
				next = hi
			}
			if next != total {
				t.Fatalf("the parts of %d in %d end at %d", total, n, next)
			}
		}
	}
}

// testOptions makes a short run whose loss still moves by far more than 1e-6 relative
// per step, so a step lost, run twice or run with the wrong momentum shows.
func testOptions(steps int) options {
	o, err := parseFlags([]string{"--steps", "40", "--dim", "7", "--batch", "24", "--samples", "600"})
	if err != nil {
		panic(err)
	}
	o.steps = steps
	return o
}

// reference trains o's model in one goroutine, without the World: the loss an elastic
// run must end with, whatever its ranks and failures.
func reference(o options) float64 {
	p := newProblem(o.seed, o.samples, o.dim, o.batch)
	w, m, g := make([]float64, o.dim), make([]float64, o.dim), make([]float64, o.dim)
	for s := range o.steps {
		clear(g)
		p.gradSum(w, g, s, 0, o.batch)
		for k := range g {
			g[k] /= float64(o.batch)
		}
		sgd{o.lr, o.momentum}.update(w, m, g, 0)
	}
	return p.loss(w)
}

func relDiff(a, b float64) float64 { return math.Abs(a-b) / math.Abs(b) }

func TestReferenceMoves(t *testing.T) {
	o := testOptions(40)
	a, b := reference(o), reference(testOptions(41))
	if relDiff(a, b) < 1e-4 {
		t.Fatalf("loss after 40 steps %.12g, after 41 %.12g: a step should show", a, b)
	}
}

func newTrainer(w *runtime.World, o options) *trainer {
	return &trainer{o: o, p: newProblem(o.seed, o.samples, o.dim, o.batch), opt: sgd{o.lr, o.momentum}, init: w, target: w.Size()}
}

// TestTrainInProcess trains over 1 to 5 ranks of one process (two pretend hosts) and
// compares every rank's model with the reference.
func TestTrainInProcess(t *testing.T) {
	o := testOptions(40)
	want := reference(o)
	for n := 1; n <= 5; n++ {
		hosts := make([]string, n)
		for r := range hosts {
			hosts[r] = []string{"h0", "h1"}[2*r/n]
		}
		runtimetest.Run(t, n, runtimetest.Options{Hosts: hosts}, func(w *runtime.World) error {
			tr := newTrainer(w, o)
			_, st, err := tr.train(context.Background(), w, initial(w, o.dim))
			if err != nil {
				return err
			}
			if got := tr.p.loss(st.w); st.step != o.steps || relDiff(got, want) > 1e-9 {
				t.Errorf("%d ranks, rank %d: step %d loss %.12g, want %d and %.12g", n, w.Rank(), st.step, got, o.steps, want)
			}
			return nil
		})
	}
}

// TestRestore trains 4 ranks for some steps, then goes on with the ranks of a World that
// lacks some of them, as a Shrink would leave it: the lost ranks' momentum comes from
// their buddies. With hosts a a b b, the buddies are 2 2 0 0: losing ranks 1 and 3 keeps
// every shard, losing 0 and 2 (each other's buddy) loses state.
func TestRestore(t *testing.T) {
	o := testOptions(40)
	want := reference(o)
	for _, tc := range []struct {
		lost []int
		ok   bool
	}{
		{nil, true}, {[]int{2}, true}, {[]int{1, 3}, true}, {[]int{0}, true}, {[]int{0, 2}, false},
	} {
		runtimetest.Run(t, 4, runtimetest.Options{Hosts: []string{"a", "a", "b", "b"}}, func(w *runtime.World) error {
			ctx := context.Background()
			tr := newTrainer(w, o)
			tr.o.steps = 17
			_, st, err := tr.train(ctx, w, initial(w, o.dim))
			if err != nil {
				return err
			}
			g, err := w.Group().Excl(tc.lost)
			if err != nil {
				return err
			}
			sub, err := w.Create(ctx, g)
			if err != nil || sub == nil { // a lost rank is no member
				return err
			}
			next, err := tr.restore(ctx, sub, st)
			if !tc.ok {
				if !errors.Is(err, errLost) {
					t.Errorf("lost %v: restore = %v, want errLost", tc.lost, err)
				}
				return nil
			}
			if err != nil {
				return err
			}
			tr.o.steps = o.steps
			if _, st, err = tr.train(ctx, sub, next); err != nil {
				return err
			}
			if got := tr.p.loss(st.w); relDiff(got, want) > 1e-9 {
				t.Errorf("lost %v, rank %d: loss %.12g, want %.12g", tc.lost, sub.Rank(), got, want)
			}
			return sub.Free()
		})
	}
}
