package main

import (
	"context"
	"fmt"

	"github.com/gorma-hpc/gorma/collectives"
	"github.com/gorma-hpc/gorma/runtime"
)

func init() {
	register("coll-opland", "coll/opland.c", 4, func(ctx context.Context, w *runtime.World) error {
		return logicalTypes(ctx, w, "land", func(n int) [3]int { return [3]int{1, 0, b2i(n == 1)} })
	})
	register("coll-oplor", "coll/oplor.c", 4, func(ctx context.Context, w *runtime.World) error {
		return logicalTypes(ctx, w, "lor", func(n int) [3]int { return [3]int{1, 0, b2i(n > 1)} })
	})
	register("coll-oplxor", "coll/oplxor.c", 4, func(ctx context.Context, w *runtime.World) error {
		return logicalTypes(ctx, w, "lxor", func(n int) [3]int { return [3]int{n % 2, 0, (n - 1) % 2} })
	})
	register("coll-opminloc", "coll/opminloc.c", 4, func(ctx context.Context, w *runtime.World) error {
		return locTypes(ctx, w, collectives.MinLoc)
	})
	register("coll-opmaxloc", "coll/opmaxloc.c", 5, func(ctx context.Context, w *runtime.World) error {
		return locTypes(ctx, w, collectives.MaxLoc)
	})
	register("coll-reduce_local", "coll/reduce_local.c", 2, collReduceLocal)
	register("coll-gatherv", "coll/gatherv.c", 5, collGatherv)
}

// logicalTypes reduces 1, 0 and (rank > 0) to rank 0 with Land, Lor or Lxor over
// char, signed char, unsigned char and long long (int8, uint8, int64): rank 0 gets
// want(size).
func logicalTypes(ctx context.Context, w *runtime.World, op string, want func(n int) [3]int) error {
	r, n := w.Rank(), w.Size()
	wa := want(n)
	return first(
		logicalCase[int8](ctx, w, "char "+op, op, r, wa),
		logicalCase[int8](ctx, w, "signed char "+op, op, r, wa),
		logicalCase[uint8](ctx, w, "unsigned char "+op, op, r, wa),
		logicalCase[int64](ctx, w, "long long "+op, op, r, wa))
}

func logicalCase[T collectives.Integer](ctx context.Context, w *runtime.World, typ, op string, rank int, want [3]int) error {
	o := map[string]collectives.Op[T]{"land": collectives.Land[T](), "lor": collectives.Lor[T](), "lxor": collectives.Lxor[T]()}[op]
	return reduce3(ctx, w, typ, []T{1, 0, T(b2i(rank > 0))}, o, []T{T(want[0]), T(want[1]), T(want[2])})
}

// locTypes reduces the pairs (1, rank), (0, rank), (rank, rank) to rank 0 with MinLoc or
// MaxLoc over MPI_2INT, MPI_FLOAT_INT, MPI_LONG_INT, MPI_SHORT_INT and MPI_DOUBLE_INT
// (int32, float32, int64, int16, float64 values; int32 indices). Rank 0's output is
// preset to (0, -1), (1, -1), (1, -1). MinLoc gives (1, 0), (0, 0), (0, 0) and MaxLoc
// (1, 0), (0, 0), (size-1, size-1).
func locTypes(ctx context.Context, w *runtime.World, op collectives.LocOp) error {
	return first(
		locCase[int32](ctx, w, "2int", op),
		locCase[float32](ctx, w, "float_int", op),
		locCase[int64](ctx, w, "long_int", op),
		locCase[int16](ctx, w, "short_int", op),
		locCase[float64](ctx, w, "double_int", op))
}

func locCase[V collectives.Ordered](ctx context.Context, w *runtime.World, typ string, op collectives.LocOp) error {
	r, n := int32(w.Rank()), w.Size()
	vals, idx := []V{0, 1, 1}, []int32{-1, -1, -1}
	if err := collectives.ReduceLoc(ctx, w, []V{1, 0, V(r)}, []int32{r, r, r}, vals, idx, op, 0); err != nil {
		return fmt.Errorf("%s: %w", typ, err)
	}
	if r != 0 {
		return nil
	}
	wantV, wantI := []V{1, 0, 0}, []int32{0, 0, 0}
	if op == collectives.MaxLoc {
		wantV[2], wantI[2] = V(n-1), int32(n-1)
	}
	return first(same(typ+" values", vals, wantV), same(typ+" indices", idx, wantI))
}

// collReduceLocal: for counts 0, 1, 2, 4, ... below 65000, ReduceLocal of i into i
// leaves the input alone and gives 2i with Sum, 3i with a non-commutative operator
// a∘b = 2a+b.
func collReduceLocal(ctx context.Context, w *runtime.World) error {
	const maxElems = 65000
	uop := collectives.NewOp[int32]("2a+b", func(inout, in []int32) {
		for i := range inout {
			inout[i] = 2*inout[i] + in[i]
		}
	}, false)
	for _, c := range []struct {
		name string
		op   collectives.Op[int32]
		mul  int32
	}{{"sum", collectives.Sum[int32](), 2}, {"2a+b", uop, 3}} {
		for count := 0; count < maxElems; count = max(2*count, count+1) {
			in := seq(count, func(i int) int32 { return int32(i) })
			inout := seq(count, func(i int) int32 { return int32(i) })
			if err := collectives.ReduceLocal(in, inout, c.op); err != nil {
				return fmt.Errorf("%s, count %d: %w", c.name, count, err)
			}
			if err := first(same(fmt.Sprintf("%s, count %d: input", c.name, count), in, seq(count, func(i int) int32 { return int32(i) })),
				same(fmt.Sprintf("%s, count %d: result", c.name, count), inout, seq(count, func(i int) int32 { return c.mul * int32(i) }))); err != nil {
				return err
			}
		}
	}
	return nil
}

// collGatherv: every rank paints its block of rows of a 10x10 table with rank+10. A
// Gatherv (counts of a block each, displacements at the blocks' rows; in place at the
// root) to each rank in turn leaves row i painted (i/block)+10 everywhere.
func collGatherv(ctx context.Context, w *runtime.World) error {
	const maxp = 10
	rank, size := w.Rank(), w.Size()
	if maxp%size != 0 {
		return fmt.Errorf("gatherv needs a rank count dividing %d, not %d", maxp, size)
	}
	block := maxp / size
	table := make([]int32, maxp*maxp)
	mine := table[rank*block*maxp : (rank+1)*block*maxp]
	for i := range mine {
		mine[i] = int32(rank + 10)
	}
	counts := fill(size, block*maxp)
	displs := seq(size, func(i int) int { return i * block * maxp })
	for root := 0; root < size; root++ {
		send := mine
		if root == rank {
			send = nil
		}
		if err := collectives.Gatherv(ctx, w, send, table, counts, displs, root); err != nil {
			return err
		}
	}
	return same("table", table, seq(maxp*maxp, func(k int) int32 { return int32(k/maxp/block + 10) }))
}
