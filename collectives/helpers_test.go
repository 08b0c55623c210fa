package collectives

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/runtimetest"
)

// forceAllreduce makes this rank's Allreduce calls on w use a (algoAuto: the selection).
// Each rank sets its own World's state, so there is no shared knob to race on.
func forceAllreduce(w *runtime.World, a algo) {
	s, err := stateOf(w)
	if err != nil {
		panic(err)
	}
	s.force = a
}

// rankEnv is one rank's view in a test.
type rankEnv struct {
	ctx  context.Context
	w    *runtime.World
	p, r int
}

// runJob runs f on every rank of an n-rank job with options opt.
// timeout is a budget: the ranks' context ends after testbudget.Scale(timeout), and
// runtimetest scales its own phases alike.
func runJob(t *testing.T, n int, opt runtimetest.Options, timeout time.Duration, f func(e rankEnv) error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(timeout))
	defer cancel()
	opt.Timeout = timeout + 5*time.Second
	runtimetest.Run(t, n, opt, func(w *runtime.World) error {
		return f(rankEnv{ctx: ctx, w: w, p: w.Size(), r: w.Rank()})
	})
}

// opCase is an operator with the input generator that suits it: gen(r, i) is rank r's
// i-th element. Inputs are small integers (in every type) so that floating-point sums and
// products are exact whatever the order.
type opCase[T runtime.Elem] struct {
	op  Op[T]
	gen func(r, i int) T
}

func input[T runtime.Elem](gen func(r, i int) T, r, n int) []T {
	x := make([]T, n)
	for i := range x {
		x[i] = gen(r, i)
	}
	return x
}

// reference is x0 ∘ x1 ∘ ... ∘ x(p-1), element by element, in rank order.
func reference[T runtime.Elem](oc opCase[T], p, n int) []T {
	acc := input(oc.gen, 0, n)
	for r := 1; r < p; r++ {
		oc.op.Apply(acc, input(oc.gen, r, n))
	}
	return acc
}

func small(r, i int) int { return (r*131+i*7)%5 - 2 }

func wide(r, i int) int { return (r*7919+i*104729)%1000 - 500 }

type integer interface {
	Integer
	Ordered
}

func intCases[T integer]() []opCase[T] {
	w := func(r, i int) T { return T(wide(r, i)) }
	return []opCase[T]{
		{Sum[T](), w}, {Prod[T](), w}, {Min[T](), w}, {Max[T](), w},
		{Band[T](), w}, {Bor[T](), w}, {Bxor[T](), w},
	}
}

func floatCases[T interface {
	Ordered
	~float32 | ~float64
}]() []opCase[T] {
	s := func(r, i int) T { return T(small(r, i)) }
	return []opCase[T]{{Sum[T](), s}, {Prod[T](), s}, {Min[T](), s}, {Max[T](), s}}
}

func complexCases() []opCase[complex128] {
	s := func(r, i int) complex128 { return complex(float64(small(r, i)), float64(small(r+1, i+3))) }
	return []opCase[complex128]{{Sum[complex128](), s}, {Prod[complex128](), s}}
}

// affine is an associative, non-commutative operator: an element packs the map
// x -> a*x + b mod 2^32 (a in the high half, b in the low half), and a ∘ b applies a first,
// then b.
func affine[T ~uint64 | ~int64]() Op[T] {
	return NewOp("affine", func(inout, in []T) {
		for i := range inout {
			a1, b1 := uint32(uint64(inout[i])>>32), uint32(inout[i])
			a2, b2 := uint32(uint64(in[i])>>32), uint32(in[i])
			inout[i] = T(uint64(a1*a2)<<32 | uint64(a2*b1+b2))
		}
	}, false)
}

func affineCase[T ~uint64 | ~int64]() opCase[T] {
	return opCase[T]{affine[T](), func(r, i int) T {
		a := uint64(2*(r*31+i)+3) & 0xffffffff
		b := uint64(r*1000003+i*17) & 0xffffffff
		return T(a<<32 | b)
	}}
}

func compare[T runtime.Elem](what string, got, want []T) error {
	if len(got) != len(want) {
		return fmt.Errorf("%s: %d elements, want %d", what, len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			return fmt.Errorf("%s: [%d] = %v, want %v (of %d)", what, i, got[i], want[i], len(got))
		}
	}
	return nil
}

func name[T runtime.Elem](op string, n int, inPlace bool) string {
	var z T
	return fmt.Sprintf("%s %T n=%d in-place=%v", op, z, n, inPlace)
}

func checkAllreduce[T runtime.Elem](e rankEnv, oc opCase[T], n int, inPlace bool) error {
	what := name[T]("allreduce "+oc.op.Name(), n, inPlace)
	send, recv := input(oc.gen, e.r, n), make([]T, n)
	if inPlace {
		copy(recv, send)
		send = nil
	}
	if err := Allreduce(e.ctx, e.w, send, recv, oc.op); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return compare(what, recv, reference(oc, e.p, n))
}

func checkReduce[T runtime.Elem](e rankEnv, oc opCase[T], n, root int, inPlace bool) error {
	what := name[T](fmt.Sprintf("reduce %s root=%d", oc.op.Name(), root), n, inPlace)
	send, recv := input(oc.gen, e.r, n), []T(nil) // recv is root's only
	if e.r == root {
		recv = make([]T, n)
	}
	if inPlace && e.r == root {
		copy(recv, send)
		send = nil
	}
	if err := Reduce(e.ctx, e.w, send, recv, oc.op, root); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if e.r != root {
		return nil
	}
	return compare(what, recv, reference(oc, e.p, n))
}

func checkBcast[T runtime.Elem](e rankEnv, gen func(r, i int) T, n, root int) error {
	what := name[T](fmt.Sprintf("bcast root=%d", root), n, true)
	buf := make([]T, n)
	if e.r == root {
		buf = input(gen, root, n)
	}
	if err := Bcast(e.ctx, e.w, buf, root); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return compare(what, buf, input(gen, root, n))
}

func checkAllgather[T runtime.Elem](e rankEnv, gen func(r, i int) T, n int, inPlace bool) error {
	what := name[T]("allgather", n, inPlace)
	send, recv := input(gen, e.r, n), make([]T, e.p*n)
	if inPlace {
		copy(recv[e.r*n:], send)
		send = nil
	}
	if err := Allgather(e.ctx, e.w, send, recv); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	var want []T
	for r := range e.p {
		want = append(want, input(gen, r, n)...)
	}
	return compare(what, recv, want)
}

func checkReduceScatter[T runtime.Elem](e rankEnv, oc opCase[T], n int, inPlace bool) error {
	what := name[T]("reduce_scatter "+oc.op.Name(), n, inPlace)
	send, recv := input(oc.gen, e.r, e.p*n), make([]T, n)
	if inPlace {
		recv = slices.Clone(send)
		send = nil
	}
	if err := ReduceScatter(e.ctx, e.w, send, recv, oc.op); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	want := reference(oc, e.p, e.p*n)[e.r*n : (e.r+1)*n]
	return compare(what, recv[:n], want)
}

func checkAlltoall[T runtime.Elem](e rankEnv, gen func(r, i int) T, n int, inPlace bool) error {
	what := name[T]("alltoall", n, inPlace)
	send, recv := input(gen, e.r, e.p*n), make([]T, e.p*n)
	if inPlace {
		copy(recv, send)
		send = nil
	}
	if err := Alltoall(e.ctx, e.w, send, recv); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	var want []T
	for s := range e.p {
		want = append(want, input(gen, s, e.p*n)[e.r*n:(e.r+1)*n]...)
	}
	return compare(what, recv, want)
}

// suite runs every collective for one element type over counts, with every operator in
// cases (Allgather, ReduceScatter and Alltoall, whose vectors hold p blocks, get blocks
// of count/p from 1000 on); the first case's generator feeds the collectives that do not reduce.
func suite[T runtime.Elem](e rankEnv, cases []opCase[T], counts []int) error {
	gen := cases[0].gen
	roots := []int{0, e.p - 1, e.p / 2}
	for k, n := range counts {
		inPlace := k%2 == 1
		nb := n // blocks of the collectives whose vectors hold p of them
		if n >= 1000 {
			nb = n / e.p
		}
		for j, oc := range cases {
			if err := checkAllreduce(e, oc, n, inPlace != (j%2 == 1)); err != nil {
				return err
			}
			if err := checkReduce(e, oc, n, roots[j%3], inPlace); err != nil {
				return err
			}
			if err := checkReduceScatter(e, oc, nb, inPlace != (j%2 == 0)); err != nil {
				return err
			}
		}
		if err := checkBcast(e, gen, n, roots[k%3]); err != nil {
			return err
		}
		if err := checkAllgather(e, gen, nb, inPlace); err != nil {
			return err
		}
		if err := checkAlltoall(e, gen, nb, !inPlace); err != nil {
			return err
		}
	}
	return Barrier(e.ctx, e.w)
}

// zeroAllocsInStep checks that call, made by every rank of j with a runtime.Barrier after
// each call, allocates nothing per call at rank m once warm. testing.AllocsPerRun counts
// every goroutine's allocations, so the other ranks make the same calls alongside, in
// step: a rank running calls ahead would queue sends, and the queue's growth would count.
func zeroAllocsInStep(t *testing.T, j *runtimetest.Job, m int, name string, call func(r int, w *runtime.World) error) {
	t.Helper()
	const warm, runs = 10, 50
	ctx := context.Background()
	step := func(r int) error {
		if err := call(r, j.Worlds[r]); err != nil {
			return err
		}
		return runtime.Barrier(ctx, j.Worlds[r])
	}
	others := make(chan error, len(j.Worlds))
	for r := range j.Worlds {
		if r == m {
			continue
		}
		go func() {
			for range warm + runs + 1 { // AllocsPerRun calls its function runs+1 times
				if err := step(r); err != nil {
					others <- err
					return
				}
			}
			others <- nil
		}()
	}
	var failed error
	for range warm {
		if failed = step(m); failed != nil {
			break
		}
	}
	if failed == nil {
		if n := testing.AllocsPerRun(runs, func() {
			if err := step(m); err != nil && failed == nil {
				failed = err
			}
		}); n != 0 {
			t.Errorf("%s: %v allocations per call at rank %d", name, n, m)
		}
	}
	if failed != nil {
		t.Fatalf("%s at rank %d: %v", name, m, failed)
	}
	for range len(j.Worlds) - 1 {
		if err := <-others; err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
}

// mismatchOutcome is how one rank left a call whose ranks disagree (a mismatch test).
type mismatchOutcome int

const (
	mismatchSucceeded mismatchOutcome = iota // with the result its own arguments ask for
	mismatchSeen                             // ErrMismatch or runtime.ErrTruncated
	mismatchDeadline                         // the call's context ended
)

// runMismatched runs one call of a mismatch test at this rank with a context of wait,
// scaled by the load (testbudget.Scale: on a loaded host, the rank that would see the
// mismatch may not get its data within the bare wait), then brings the ranks together
// again with runtime.Barrier, and classifies how the call ended. run returns the call's error and a check of its result for when it
// succeeded. The resync is not the collectives' Barrier: on one host that is a step of
// the shm scratch, which the ranks whose call failed set up again and the others do not.
// Anything but the three outcomes (a wrong result, an error not naming the call, another
// error) is returned as an error.
func runMismatched(e rankEnv, wait time.Duration, name string, run func(e rankEnv) (func() error, error)) (mismatchOutcome, error) {
	wait = testbudget.Scale(wait)
	ctx, cancel := context.WithTimeout(e.ctx, wait)
	ce := e
	ce.ctx = ctx
	check, err := run(ce)
	cancel()
	if berr := runtime.Barrier(e.ctx, e.w); berr != nil {
		return 0, fmt.Errorf("barrier after: %w", berr)
	}
	// A call that failed at some ranks only leaves their shared-memory groups to be set
	// up again and the others' groups as they were. The next shared-memory call then ends
	// in its ctx at every rank, after which every group is set up again
	// (collectives/design.md, "One-host moves"). This Barrier is that call where one is
	// needed; it succeeds everywhere otherwise.
	bctx, bcancel := context.WithTimeout(e.ctx, wait)
	Barrier(bctx, e.w)
	bcancel()
	if berr := runtime.Barrier(e.ctx, e.w); berr != nil {
		return 0, fmt.Errorf("barrier after: %w", berr)
	}
	switch {
	case err == nil:
		if cerr := check(); cerr != nil {
			return 0, fmt.Errorf("mismatched call succeeded with a wrong result: %w", cerr)
		}
		return mismatchSucceeded, nil
	case !strings.HasPrefix(err.Error(), "collectives: "+name+": "):
		return 0, fmt.Errorf("error does not name the call: %v", err)
	case errors.Is(err, ErrMismatch) || errors.Is(err, runtime.ErrTruncated):
		return mismatchSeen, nil
	case errors.Is(err, context.DeadlineExceeded):
		return mismatchDeadline, nil
	}
	return 0, fmt.Errorf("%w, want ErrMismatch, ErrTruncated or the deadline", err)
}
