package window_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/gorma-hpc/gorma/collectives"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/window"
)

// opCase is an operator and a sequential reference for it: the target's new element
// from the old one and the operand.
type opCase[T runtime.Elem] struct {
	op  collectives.Op[T]
	ref func(old, x T) T
}

func numCases[T runtime.Elem]() []opCase[T] {
	twicePlus := collectives.NewOp("twice_plus", func(inout, in []T) {
		for i := range inout {
			inout[i] = inout[i] + inout[i] + in[i]
		}
	}, false)
	return []opCase[T]{
		{collectives.Sum[T](), func(a, b T) T { return a + b }},
		{collectives.Prod[T](), func(a, b T) T { return a * b }},
		{collectives.Replace[T](), func(_, b T) T { return b }},
		{collectives.NoOp[T](), func(a, _ T) T { return a }},
		{twicePlus, func(a, b T) T { return a + a + b }},
	}
}

func ordCases[T collectives.Ordered]() []opCase[T] {
	return append(numCases[T](),
		opCase[T]{collectives.Min[T](), func(a, b T) T { return min(a, b) }},
		opCase[T]{collectives.Max[T](), func(a, b T) T { return max(a, b) }})
}

func intCases[T collectives.Integer]() []opCase[T] {
	return append(ordCases[T](),
		opCase[T]{collectives.Band[T](), func(a, b T) T { return a & b }},
		opCase[T]{collectives.Bor[T](), func(a, b T) T { return a | b }},
		opCase[T]{collectives.Bxor[T](), func(a, b T) T { return a ^ b }})
}

func intGen[T collectives.Integer](r *rand.Rand) T { return T(r.Uint64()) }

func floatGen[T float32 | float64](r *rand.Rand) T { return T(r.IntN(2001)-1000) / 8 }

// Every operator on every element type, from one origin per target, against a sequential
// reference on random data.
func TestAccumulateOpsReference(t *testing.T) {
	forLayouts(t, func(ctx context.Context, w *runtime.World) error {
		return firstErr(
			func() error { return checkOps(ctx, w, intCases[int32](), intGen[int32]) },
			func() error { return checkOps(ctx, w, intCases[uint8](), intGen[uint8]) },
			func() error { return checkOps(ctx, w, intCases[int64](), intGen[int64]) },
			func() error { return checkOps(ctx, w, ordCases[float32](), floatGen[float32]) },
			func() error { return checkOps(ctx, w, ordCases[float64](), floatGen[float64]) },
		)
	})
}

func firstErr(fs ...func() error) error {
	for _, f := range fs {
		if err := f(); err != nil {
			return err
		}
	}
	return nil
}

// checkOps gives every case a segment of the window of the next rank, runs
// GetAccumulate, Accumulate, FetchAndOp and CompareAndSwap on it in random places and
// compares the results and the segment with a model.
func checkOps[T runtime.Elem](ctx context.Context, w *runtime.World, cases []opCase[T], gen func(*rand.Rand) T) error {
	const seg = 32
	n := len(cases) * seg
	win, err := window.Allocate[T](ctx, w, n)
	if err != nil {
		return err
	}
	me, size := w.Rank(), w.Size()
	next := (me + 1) % size
	initial := func(rank int) []T {
		r := rand.New(rand.NewPCG(uint64(rank), 7))
		v := make([]T, n)
		for i := range v {
			v[i] = gen(r)
		}
		return v
	}
	copy(win.Local(), initial(me))
	if err := win.Sync(ctx); err != nil {
		return err
	}
	if err := runtime.Barrier(ctx, w); err != nil {
		return err
	}
	model := initial(next)
	rng := rand.New(rand.NewPCG(uint64(me), 99))
	operand := func(k int) []T {
		v := make([]T, k)
		for i := range v {
			v[i] = gen(rng)
		}
		return v
	}
	apply := func(c opCase[T], at int, x []T) {
		for i, v := range x {
			model[at+i] = c.ref(model[at+i], v)
		}
	}
	check := func(what string, got, want []T) error {
		for i := range got {
			if got[i] != want[i] {
				return fmt.Errorf("rank %d to %d: %T %s: got %v, want %v", me, next, got[0], what, got, want)
			}
		}
		return nil
	}
	if err := win.Lock(ctx, window.Exclusive, next, 0); err != nil {
		return err
	}
	for ci, c := range cases {
		base := ci * seg
		name := c.op.Name()
		d, k := base+rng.IntN(8), 1+rng.IntN(16)
		x, res := operand(k), make([]T, k)
		if err := win.GetAccumulate(x, res, next, d, c.op); err != nil {
			return err
		}
		if err := check(name+" get_accumulate result", res, model[d:d+k]); err != nil {
			return err
		}
		apply(c, d, x)
		d, k = base+rng.IntN(8), 1+rng.IntN(16)
		x = operand(k)
		if err := win.Accumulate(x, next, d, c.op); err != nil {
			return err
		}
		apply(c, d, x)
		d = base + seg - 1
		x = operand(1)
		var old T
		if err := win.FetchAndOp(x[0], &old, next, d, c.op); err != nil {
			return err
		}
		if err := check(name+" fetch_and_op result", []T{old}, model[d:d+1]); err != nil {
			return err
		}
		apply(c, d, x)
		d = base + seg - 2
		x = operand(2)
		for _, cmp := range []T{model[d], x[1]} {
			if err := win.CompareAndSwap(x[0], cmp, &old, next, d); err != nil {
				return err
			}
			if err := check("compare_and_swap result", []T{old}, model[d:d+1]); err != nil {
				return err
			}
			if cmp == model[d] {
				model[d] = x[0]
			}
		}
	}
	got := make([]T, n)
	if err := win.Get(got, next, 0); err != nil {
		return err
	}
	if err := win.Unlock(ctx, next); err != nil {
		return err
	}
	for ci, c := range cases {
		b := ci * seg
		if err := check(c.op.Name()+" segment", got[b:b+seg], model[b:b+seg]); err != nil {
			return err
		}
	}
	if err := runtime.Barrier(ctx, w); err != nil {
		return err
	}
	return win.Free(ctx)
}
