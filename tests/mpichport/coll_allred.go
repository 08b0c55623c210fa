package main

import (
	"context"
	"fmt"

	"github.com/gorma-hpc/gorma/collectives"
	"github.com/gorma-hpc/gorma/runtime"
)

func init() {
	register("coll-allred", "coll/allred.c", 4, collAllred)
}

// allredCount is the element count testlist.in passes allred (-count=10).
const allredCount = 10

// allredCheck runs one Allreduce of allred.c: in reduced with op must give sol.
func allredCheck[T runtime.Elem](ctx context.Context, w *runtime.World, what string, in []T, op collectives.Op[T], sol []T) error {
	out := make([]T, len(in))
	if err := collectives.Allreduce(ctx, w, in, out, op); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return same(what, out, sol)
}

// pow is base**n in int64 (wrapping as the C test's long long does).
func pow(base, n int) int64 {
	p := int64(1)
	for i := 0; i < n; i++ {
		p *= int64(base)
	}
	return p
}

// arith runs allred.c's sum, prod, max and min checks in type T, whose values come
// from int64 by conv (truncating, as the C test stores them).
func arith[T collectives.Ordered](ctx context.Context, w *runtime.World, typ string, conv func(int64) T) error {
	r, n := w.Rank(), w.Size()
	idx := func(off int) []T { return seq(allredCount, func(i int) T { return conv(int64(i + off)) }) }
	return first(
		allredCheck(ctx, w, typ+" sum", idx(0), collectives.Sum[T](), seq(allredCount, func(i int) T { return conv(int64(i * n)) })),
		allredCheck(ctx, w, typ+" prod", idx(0), collectives.Prod[T](), seq(allredCount, func(i int) T { return conv(pow(i, n)) })),
		allredCheck(ctx, w, typ+" max", idx(r), collectives.Max[T](), idx(n-1)),
		allredCheck(ctx, w, typ+" min", idx(r), collectives.Min[T](), idx(0)))
}

// bitwise runs allred.c's bor, band (two) and bxor (three) checks in type T.
func bitwise[T collectives.Integer](ctx context.Context, w *runtime.World, typ string) error {
	r, n := w.Rank(), w.Size()
	var zero T
	ones := ^zero
	c := func(v T) []T { return fill(allredCount, v) }
	idx := seq(allredCount, func(i int) T { return T(i) })
	borSol := T(3)
	if n < 3 {
		borSol = T(n - 1)
	}
	band1, band2 := c(ones), c(0)
	if r == n-1 {
		band1, band2 = idx, idx
	}
	xorAll := T(0)
	if n%2 == 1 {
		xorAll = ones
	}
	return first(
		allredCheck(ctx, w, typ+" bor", c(T(r&3)), collectives.Bor[T](), c(borSol)),
		allredCheck(ctx, w, typ+" band 1", band1, collectives.Band[T](), idx),
		allredCheck(ctx, w, typ+" band 2", band2, collectives.Band[T](), c(0)),
		allredCheck(ctx, w, typ+" bxor 1", c(T(b2i(r == 1)*0xf0)), collectives.Bxor[T](), c(T(b2i(n > 1)*0xf0))),
		allredCheck(ctx, w, typ+" bxor 2", c(0), collectives.Bxor[T](), c(0)),
		allredCheck(ctx, w, typ+" bxor 3", c(ones), collectives.Bxor[T](), c(xorAll)))
}

// intTypes runs the arithmetic and bitwise checks in T.
func intTypes[T collectives.Integer](ctx context.Context, w *runtime.World, typ string) error {
	return first(arith(ctx, w, typ, func(v int64) T { return T(v) }), bitwise[T](ctx, w, typ))
}

// collAllred: Allreduce of 10 elements with sum, prod, max and min, and bor, band and
// bxor, over each integer type of allred.c (int, long, short, unsigned short, unsigned,
// unsigned long, unsigned char, the intN_t and uintN_t, MPI_Aint, MPI_Offset, MPI_Count
// as their LP64 Go types). Sum, prod, max and min over float and double. The bitwise
// checks over MPI_BYTE. Sum and prod over float complex (the one complex type the
// test's loop reaches). Left out: the logical operators (LOR, LXOR, LAND) over the
// integer and bool types, and MAXLOC and MINLOC over the pair types, which gorma lacks.
func collAllred(ctx context.Context, w *runtime.World) error {
	n := w.Size()
	errs := []error{
		intTypes[int32](ctx, w, "int"), intTypes[int64](ctx, w, "long"),
		intTypes[int16](ctx, w, "short"), intTypes[uint16](ctx, w, "unsigned short"),
		intTypes[uint32](ctx, w, "unsigned"), intTypes[uint64](ctx, w, "unsigned long"),
		intTypes[uint8](ctx, w, "unsigned char"),
		intTypes[int8](ctx, w, "int8_t"), intTypes[int16](ctx, w, "int16_t"),
		intTypes[int32](ctx, w, "int32_t"), intTypes[int64](ctx, w, "int64_t"),
		intTypes[uint8](ctx, w, "uint8_t"), intTypes[uint16](ctx, w, "uint16_t"),
		intTypes[uint32](ctx, w, "uint32_t"), intTypes[uint64](ctx, w, "uint64_t"),
		intTypes[int64](ctx, w, "MPI_Aint"), intTypes[int64](ctx, w, "MPI_Offset"),
		intTypes[int64](ctx, w, "MPI_Count"),
		arith(ctx, w, "float", func(v int64) float32 { return float32(v) }),
		arith(ctx, w, "double", func(v int64) float64 { return float64(v) }),
		bitwise[uint8](ctx, w, "byte"),
		allredCheck(ctx, w, "float complex sum", seq(allredCount, func(i int) complex64 { return complex(float32(i), 0) }),
			collectives.Sum[complex64](), seq(allredCount, func(i int) complex64 { return complex(float32(i*n), 0) })),
		allredCheck(ctx, w, "float complex prod", seq(allredCount, func(i int) complex64 { return complex(float32(i), 0) }),
			collectives.Prod[complex64](), seq(allredCount, func(i int) complex64 { return complex(float32(pow(i, n)), 0) })),
	}
	return first(errs...)
}
