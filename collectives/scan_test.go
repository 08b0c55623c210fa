package collectives

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/runtimetest"
)

// checkScan runs one Scan (or Exscan) and checks recv exactly against the rank-order
// prefix x0 ∘ ... ∘ xr (x(r-1) for Exscan), that send is left as it was, and that
// Exscan leaves rank 0's recv as it was (garbage, or its input in place).
func checkScan[T runtime.Elem](e rankEnv, oc opCase[T], n int, inPlace, exclusive bool) error {
	coll, f := "scan", Scan[T]
	if exclusive {
		coll, f = "exscan", Exscan[T]
	}
	what := name[T](coll+" "+oc.op.Name(), n, inPlace)
	send, recv := input(oc.gen, e.r, n), garbage(oc.gen, n)
	if inPlace {
		copy(recv, send)
		send = nil
	}
	before := slices.Clone(recv)
	if err := f(e.ctx, e.w, send, recv, oc.op); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if send != nil {
		if err := compare(what+": send changed", send, input(oc.gen, e.r, n)); err != nil {
			return err
		}
	}
	switch {
	case exclusive && e.r == 0:
		return compare(what+": rank 0's recv changed", recv, before)
	case exclusive:
		return compare(what, recv, reference(oc, e.r, n))
	}
	return compare(what, recv, reference(oc, e.r+1, n))
}

// scanSuite runs Scan and Exscan with every operator of cases over counts, in place and
// not.
func scanSuite[T runtime.Elem](e rankEnv, cases []opCase[T], counts []int) error {
	for k, n := range counts {
		for j, oc := range cases {
			inPlace := (j+k)%2 == 0
			if err := checkScan(e, oc, n, inPlace, false); err != nil {
				return err
			}
			if err := checkScan(e, oc, n, !inPlace, true); err != nil {
				return err
			}
		}
	}
	return nil
}

// TestScan checks Scan and Exscan against the sequential reference on 1 to 9 ranks (the
// rounds where a rank's partner would be p or more are skipped), every element type,
// the predefined operators and non-commutative ones (2x2 matrix products, affine maps,
// first and Replace: rank order must hold), counts 0, 1, odd and past the eager limit.
func TestScan(t *testing.T) {
	counts := []int{0, 1, 7, 3001}
	for p := 1; p <= 9; p++ {
		t.Run(fmt.Sprintf("p=%d", p), func(t *testing.T) {
			runJob(t, p, runtimetest.Options{Transport: "shm"}, 40*time.Second, func(e rankEnv) error {
				for _, f := range []func() error{
					func() error { return scanSuite(e, []opCase[int8]{mat2Case[int8](), intCases[int8]()[0]}, counts) },
					func() error { return scanSuite(e, []opCase[uint16]{mat2Case[uint16](), intCases[uint16]()[6]}, counts) },
					func() error { return scanSuite(e, append(intCases[int32](), mat2Case[int32]()), counts[:3]) },
					func() error { return scanSuite(e, []opCase[int64]{mat2Case[int64](), affineCase[int64]()}, counts) },
					func() error { return scanSuite(e, []opCase[uint64]{affineCase[uint64]()}, counts) },
					func() error { return scanSuite(e, stressFloat[float32](), counts) },
					func() error { return scanSuite(e, floatCases[float64](), counts[:3]) },
					func() error { return scanSuite(e, stressComplex[complex128](), counts) },
				} {
					if err := f(); err != nil {
						return err
					}
				}
				return Barrier(e.ctx, e.w)
			})
		})
	}
}

// TestRootedZeroAllocs: small Gather, Scatter, Scan and Exscan calls allocate nothing in
// steady state (scratch and Requests are reused), measured at the root (rank 1) and at an
// inner rank of the tree (rank 3) while the others make the same calls. Few calls: a leaf
// of Gather only sends, and may run that many calls ahead of its parent, which
// AllocsPerRun slows down; past 96 messages ahead (a fast box and the send slots) its
// last messages wait in its out queue until it calls into the runtime again.
func TestRootedZeroAllocs(t *testing.T) {
	const p = 4
	ctx := context.Background()
	mat := mat2[int64]()
	calls := map[string]func(w *runtime.World, a, b []int64) error{
		"gather":  func(w *runtime.World, a, b []int64) error { return Gather(ctx, w, a[:2], b, 1) },
		"scatter": func(w *runtime.World, a, b []int64) error { return Scatter(ctx, w, b, a[:2], 1) },
		"scan":    func(w *runtime.World, a, b []int64) error { return Scan(ctx, w, a, b[:4], mat) },
		"exscan":  func(w *runtime.World, a, b []int64) error { return Exscan(ctx, w, nil, b[:4], Sum[int64]()) },
	}
	j, err := runtimetest.Start(ctx, p, runtimetest.Options{Transport: "shm"})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	defer j.Finalize(ctx)
	bufs := make([][2][]int64, p)
	for r := range bufs {
		bufs[r] = [2][]int64{make([]int64, 4), make([]int64, 2*p)}
	}
	for name, f := range calls {
		for _, m := range []int{1, 3} {
			zeroAllocsInStep(t, j, m, name, func(r int, w *runtime.World) error { return f(w, bufs[r][0], bufs[r][1]) })
		}
	}
}
