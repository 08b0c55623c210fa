package main

import (
	"context"
	"fmt"

	"github.com/gorma-hpc/gorma/collectives"
	"github.com/gorma-hpc/gorma/runtime"
)

func init() {
	register("coll-opsum", "coll/opsum.c", 4, collOpsum)
	register("coll-opprod", "coll/opprod.c", 5, collOpprod)
	register("coll-opmax", "coll/opmax.c", 5, collOpmax)
	register("coll-opmin", "coll/opmin.c", 4, collOpmin)
	register("coll-opband", "coll/opband.c", 4, collOpbit(opBand))
	register("coll-opbor", "coll/opbor.c", 4, collOpbit(opBor))
	register("coll-opbxor", "coll/opbxor.c", 4, collOpbit(opBxor))
	register("coll-op_commutative", "coll/op_commutative.c", 2, collOpCommutative)
}

// reduce3 reduces the three elements in of every rank with op to rank 0 (its output
// buffer preset to 0, 1, 1 as the MPICH tests do) and, at rank 0, compares them with
// want, naming the type.
func reduce3[T runtime.Elem](ctx context.Context, w *runtime.World, typ string, in []T, op collectives.Op[T], want []T) error {
	out := []T{0, 1, 1}
	if err := collectives.Reduce(ctx, w, in, out, op, 0); err != nil {
		return fmt.Errorf("%s: %w", typ, err)
	}
	if w.Rank() != 0 {
		return nil
	}
	return same(typ, out, want)
}

// b2i is 1 for true, else 0.
func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// sumCase is opsum.c's check for one integer type: inputs 1, 0 and (rank > 0) sum to
// size, 0 and size-1.
func sumCase[T int8 | uint8 | int64](ctx context.Context, w *runtime.World, typ string) error {
	n := w.Size()
	return reduce3(ctx, w, typ, []T{1, 0, T(b2i(w.Rank() > 0))}, collectives.Sum[T](), []T{T(n), 0, T(n - 1)})
}

// collOpsum: Sum over char, signed char, unsigned char, double complex and long long
// (the types of opsum.c that Go has; long double and its complex have no Go type).
func collOpsum(ctx context.Context, w *runtime.World) error {
	n, p := float64(w.Size()), float64(b2i(w.Rank() > 0))
	return first(sumCase[int8](ctx, w, "char"), sumCase[int8](ctx, w, "signed char"),
		sumCase[uint8](ctx, w, "unsigned char"),
		reduce3(ctx, w, "double complex", []complex128{complex(1, -1), 0, complex(p, -p)}, collectives.Sum[complex128](),
			[]complex128{complex(n, -n), 0, complex(n-1, 1-n)}),
		sumCase[int64](ctx, w, "long long"))
}

// prodCase is opprod.c's check for one integer type: ranks 1 to 4 contribute their
// rank (the others 1), so element 0 is (min(size,5)-1)!; element 1 is 0; element 2 is 0
// (rank 0 contributes 0) when there are several ranks.
func prodCase[T int8 | uint8 | int64](ctx context.Context, w *runtime.World, typ string, third bool) error {
	rank, maxsize := w.Rank(), min(w.Size(), 5)
	first := T(1)
	if rank > 0 && rank < maxsize {
		first = T(rank)
	}
	want := []T{T(factorial(maxsize - 1)), 0, 0}
	if w.Size() == 1 {
		want[2] = T(b2i(third))
	}
	return reduce3(ctx, w, typ, []T{first, 0, T(b2i(third))}, collectives.Prod[T](), want)
}

func factorial(n int) int {
	f := 1
	for i := 2; i <= n; i++ {
		f *= i
	}
	return f
}

// collOpprod: Prod over char, signed char, unsigned char, double complex (whose
// imaginary unit in element 1 turns with the rank count) and long long.
func collOpprod(ctx context.Context, w *runtime.World) error {
	rank, size, maxsize := w.Rank(), w.Size(), min(w.Size(), 5)
	re := 1.0
	if rank > 0 && rank < maxsize {
		re = float64(rank)
	}
	p := float64(b2i(rank > 0))
	unit := []complex128{1, 1i, -1, -1i}[size%4]
	third := complex128(0)
	if size == 1 {
		third = complex(p, -p)
	}
	return first(prodCase[int8](ctx, w, "char", rank > 1), prodCase[int8](ctx, w, "signed char", rank > 1),
		prodCase[uint8](ctx, w, "unsigned char", rank > 1),
		reduce3(ctx, w, "double complex", []complex128{complex(re, 0), 1i, complex(p, -p)}, collectives.Prod[complex128](),
			[]complex128{complex(float64(factorial(maxsize-1)), 0), unit, third}),
		prodCase[int64](ctx, w, "long long", rank > 0))
}

// collOpmax: Max of 1, 0 and the rank over char, signed char, unsigned char and long
// long: 1, 0 and size-1.
func collOpmax(ctx context.Context, w *runtime.World) error {
	r, n := w.Rank(), w.Size()
	return first(
		reduce3(ctx, w, "char", []int8{1, 0, int8(r)}, collectives.Max[int8](), []int8{1, 0, int8(n - 1)}),
		reduce3(ctx, w, "signed char", []int8{1, 0, int8(r)}, collectives.Max[int8](), []int8{1, 0, int8(n - 1)}),
		reduce3(ctx, w, "unsigned char", []uint8{1, 0, uint8(r)}, collectives.Max[uint8](), []uint8{1, 0, uint8(n - 1)}),
		reduce3(ctx, w, "long long", []int64{1, 0, int64(r)}, collectives.Max[int64](), []int64{1, 0, int64(n - 1)}))
}

// collOpmin: Min of 1, 0 and the rank over char, signed char, unsigned char and long
// long: 1, 0 and 0.
func collOpmin(ctx context.Context, w *runtime.World) error {
	r := w.Rank()
	return first(
		reduce3(ctx, w, "char", []int8{1, 0, int8(r & 0x7f)}, collectives.Min[int8](), []int8{1, 0, 0}),
		reduce3(ctx, w, "signed char", []int8{1, 0, int8(r & 0x7f)}, collectives.Min[int8](), []int8{1, 0, 0}),
		reduce3(ctx, w, "unsigned char", []uint8{1, 0, uint8(r)}, collectives.Min[uint8](), []uint8{1, 0, 0}),
		reduce3(ctx, w, "long long", []int64{1, 0, int64(r)}, collectives.Min[int64](), []int64{1, 0, 0}))
}

// bitOp names one of the bitwise operators of opband.c, opbor.c and opbxor.c.
type bitOp int

const (
	opBand bitOp = iota
	opBor
	opBxor
)

// bitCase checks one integer type: all ones, zero, and a byte pattern (0xf0 at rank 0
// and all ones elsewhere for Band; 0xc3 at rank 0 and 0x3c elsewhere for Bor and Bxor)
// repeated over the type's width.
func bitCase[T collectives.Integer](ctx context.Context, w *runtime.World, typ string, op bitOp) error {
	var zero T
	ones := ^zero
	rep := func(b uint8) T {
		var u uint64
		for i := 0; i < 8; i++ {
			u = u<<8 | uint64(b)
		}
		return T(u)
	}
	r, n := w.Rank(), w.Size()
	var in, want []T
	var o collectives.Op[T]
	switch op {
	case opBand:
		third := rep(0xf0)
		if r > 0 {
			third = ones
		}
		in, want, o = []T{ones, 0, third}, []T{ones, 0, rep(0xf0)}, collectives.Band[T]()
	case opBor:
		third := rep(0xc3)
		if r > 0 {
			third = rep(0x3c)
		}
		want3 := ones
		if n == 1 {
			want3 = rep(0xc3)
		}
		in, want, o = []T{ones, 0, third}, []T{ones, 0, want3}, collectives.Bor[T]()
	case opBxor:
		third := rep(0xc3)
		if r > 0 {
			third = rep(0x3c)
		}
		if n%2 == 1 {
			want = []T{ones, 0, rep(0xc3)}
		} else {
			want = []T{0, 0, ones}
		}
		in, o = []T{ones, 0, third}, collectives.Bxor[T]()
	}
	return reduce3(ctx, w, typ, in, o, want)
}

// collOpbit: the bitwise operator over char, signed char, unsigned char, byte, short,
// unsigned short, unsigned, int, long, unsigned long and long long (LP64 sizes).
func collOpbit(op bitOp) func(ctx context.Context, w *runtime.World) error {
	return func(ctx context.Context, w *runtime.World) error {
		return first(bitCase[int8](ctx, w, "char", op), bitCase[int8](ctx, w, "signed char", op),
			bitCase[uint8](ctx, w, "unsigned char", op), bitCase[uint8](ctx, w, "byte", op),
			bitCase[int16](ctx, w, "short", op), bitCase[uint16](ctx, w, "unsigned short", op),
			bitCase[uint32](ctx, w, "unsigned", op), bitCase[int32](ctx, w, "int", op),
			bitCase[int64](ctx, w, "long", op), bitCase[uint64](ctx, w, "unsigned long", op),
			bitCase[int64](ctx, w, "long long", op))
	}
}

// collOpCommutative: the predefined operators report themselves commutative (Max, Min,
// Sum, Prod, Band, Bor, Bxor; op_commutative.c also asks the logical and LOC operators,
// which gorma lacks), and a user operator (in*2 + inout) reports what it was made with.
func collOpCommutative(ctx context.Context, w *runtime.World) error {
	for _, op := range []collectives.Op[int32]{collectives.Max[int32](), collectives.Min[int32](), collectives.Sum[int32](),
		collectives.Prod[int32](), collectives.Band[int32](), collectives.Bor[int32](), collectives.Bxor[int32]()} {
		if !op.Commutative() {
			return fmt.Errorf("%v reports itself not commutative", op)
		}
	}
	userOp := func(inout, in []int32) {
		for i := range inout {
			inout[i] = in[i]*2 + inout[i]
		}
	}
	c, nc := collectives.NewOp("user_op", userOp, true), collectives.NewOp("user_op", userOp, false)
	if !c.Commutative() || nc.Commutative() {
		return fmt.Errorf("user operators made commutative and not report %v and %v", c.Commutative(), nc.Commutative())
	}
	return nil
}
