package main

import (
	"context"
	"fmt"

	"github.com/gorma-hpc/gorma/datatype"
	"github.com/gorma-hpc/gorma/runtime"
)

func init() {
	register("datatype-simple_pack", "datatype/simple_pack.c", 1, dtSimplePack)
	register("datatype-transpose_pack", "datatype/transpose_pack.c", 1, dtTransposePack)
	register("datatype-slice_pack", "datatype/slice_pack.c", 1, dtSlicePack)
	register("datatype-tresized", "datatype/tresized.c", 2, func(ctx context.Context, w *runtime.World) error { return dtTresized(ctx, w, 0) })
	register("datatype-tresized2", "datatype/tresized2.c", 2, func(ctx context.Context, w *runtime.World) error { return dtTresized(ctx, w, -4) })
}

// packRoundTrip packs count copies of t over src, checks the packed length is want
// bytes, and unpacks them over dst.
func packRoundTrip[T any](what string, src, dst []T, count int, t datatype.Type, want int) error {
	size, err := t.PackSize(count)
	if err != nil {
		return fmt.Errorf("%s: pack size: %w", what, err)
	}
	if size != want {
		return fmt.Errorf("%s: pack size %d, want %d", what, size, want)
	}
	buf := make([]byte, size)
	n, err := datatype.Pack(buf, src, count, t)
	if err != nil {
		return fmt.Errorf("%s: pack: %w", what, err)
	}
	if n != size {
		return fmt.Errorf("%s: pack moved %d bytes, want %d", what, n, size)
	}
	if n, err = datatype.Unpack(dst, buf, count, t); err != nil {
		return fmt.Errorf("%s: unpack: %w", what, err)
	}
	if n != size {
		return fmt.Errorf("%s: unpack moved %d bytes, want %d", what, n, size)
	}
	return nil
}

// dtSimplePack: a vector (2 of 1, stride 2) of a vector (2 of 1 int32, stride 2) has the
// size of 4 int32s and picks the corners of a 3x3 matrix: packed and unpacked over a
// zeroed matrix it leaves them alone. A vector of 10 blocks of 2 int32s, stride 2 (one
// run), packs and unpacks 20 int32s. It leaves out MPI_Type_get_envelope (gorma has none).
func dtSimplePack(ctx context.Context, w *runtime.World) error {
	inner, err := datatype.Vector[int32](2, 1, 2)
	if err != nil {
		return err
	}
	outer, err := inner.Vector(2, 1, 2)
	if err != nil {
		return err
	}
	if outer.Size() != 16 {
		return fmt.Errorf("vector of vectors: size %d, want 16", outer.Size())
	}
	array := []int32{1, -1, 2, -2, -3, -4, 3, -5, 4}
	out := make([]int32, 9)
	if err := packRoundTrip("vector of vectors", array, out, 1, outer, 16); err != nil {
		return err
	}
	if err := same("vector of vectors", out, []int32{1, 0, 2, 0, 0, 0, 3, 0, 4}); err != nil {
		return err
	}
	if s := datatype.Of[int32]().Size(); s != 4 {
		return fmt.Errorf("int32 size %d", s)
	}
	v, err := datatype.Vector[int32](10, 2, 2)
	if err != nil {
		return err
	}
	if v.Size() != 80 {
		return fmt.Errorf("vector of 10 x 2: size %d, want 80", v.Size())
	}
	a := seq(20, func(i int) int32 { return int32(i) })
	out = make([]int32, 20)
	return first(packRoundTrip("vector of 10 x 2", a, out, 1, v, 80), same("vector of 10 x 2", out, a))
}

// dtTransposePack: an hvector (100 of 1, stride one int32) of a column (vector of 100 of
// 1, stride 100) packs a 100x100 int32 matrix transposed: unpacked as 10000 int32s it is
// the transpose.
func dtTransposePack(ctx context.Context, w *runtime.World) error {
	const n = 100
	a := seq(n*n, func(k int) int32 { return int32(k/n*1000 + k%n) })
	row, err := datatype.Vector[int32](n, 1, n)
	if err != nil {
		return err
	}
	xpose, err := row.Hvector(n, 1, 4)
	if err != nil {
		return err
	}
	size, err := xpose.PackSize(1)
	if err != nil {
		return err
	}
	buf := make([]byte, size)
	if _, err := datatype.Pack(buf, a, 1, xpose); err != nil {
		return err
	}
	b := fill(n*n, int32(-1))
	if _, err := datatype.Unpack(b, buf, n*n, datatype.Of[int32]()); err != nil {
		return err
	}
	return same("transpose", b, seq(n*n, func(k int) int32 { return a[k%n*n+k/n] }))
}

// dtSlicePack: a 9x9x9 slice of a 100x100x100 int32 array (every other element from
// index 1, rows from 2) as hvectors of hvectors of a vector, packed from a[0][2][1] and
// unpacked as 729 int32s.
func dtSlicePack(ctx context.Context, w *runtime.World) error {
	const n, m = 100, 9
	a := seq(n*n*n, func(x int) int32 { return int32(x/(n*n)*1000000 + x/n%n*1000 + x%n) })
	one, err := datatype.Vector[int32](m, 1, 2)
	if err != nil {
		return err
	}
	two, err := one.Hvector(m, 1, n*4)
	if err != nil {
		return err
	}
	three, err := two.Hvector(m, 1, n*n*4)
	if err != nil {
		return err
	}
	size, err := three.PackSize(1)
	if err != nil {
		return err
	}
	buf := make([]byte, size)
	if _, err := datatype.Pack(buf, a[2*n+1:], 1, three); err != nil {
		return err
	}
	e := make([]int32, m*m*m)
	if _, err := datatype.Unpack(e, buf, m*m*m, datatype.Of[int32]()); err != nil {
		return err
	}
	return same("slice", e, seq(m*m*m, func(x int) int32 {
		i, j, k := x/(m*m), x/m%m, x%m
		return a[i*n*n+(j+2)*n+k*2+1]
	}))
}

// dtTresized: an int32 resized to lower bound lb and extent 3 int32s: for counts 1, 2,
// 4, ... below 65000, rank 0 sends every third int32 twice with it. The last rank
// receives the first message as count plain int32s and the second with the resized
// type, into every third.
func dtTresized(ctx context.Context, w *runtime.World, lb int) error {
	t, err := datatype.Of[int32]().Resized(lb, 12)
	if err != nil {
		return err
	}
	dest := w.Size() - 1
	for count := 1; count < 65000; count *= 2 {
		buf := fill(3*count, int32(-1))
		switch w.Rank() {
		case 0:
			for i := 0; i < count; i++ {
				buf[3*i] = int32(i)
			}
			if err := first(runtime.SendType(ctx, w, buf, count, t, dest, 0), runtime.SendType(ctx, w, buf, count, t, dest, 1)); err != nil {
				return err
			}
		case dest:
			if _, err := runtime.Recv(ctx, w, buf[:count], 0, 0); err != nil {
				return err
			}
			if err := same(fmt.Sprintf("count %d as int32s", count), buf[:count], seq(count, func(i int) int32 { return int32(i) })); err != nil {
				return err
			}
			buf = fill(3*count, int32(-1))
			if _, err := runtime.RecvType(ctx, w, buf, count, t, 0, 1); err != nil {
				return err
			}
			if err := same(fmt.Sprintf("count %d resized", count), buf, seq(3*count, func(i int) int32 {
				if i%3 == 0 {
					return int32(i / 3)
				}
				return -1
			})); err != nil {
				return err
			}
		}
	}
	return nil
}

func init() {
	register("datatype-vecblklen", "datatype/vecblklen.c", 1, func(ctx context.Context, w *runtime.World) error { return dtVecblklen(false) })
	register("datatype-hvecblklen", "datatype/hvecblklen.c", 1, func(ctx context.Context, w *runtime.World) error { return dtVecblklen(true) })
	register("datatype-simple_resized", "datatype/simple_resized.c", 1, dtSimpleResized)
	register("datatype-contig_zero_count", "datatype/contig_zero_count.c", 1, dtContigZeroCount)
	register("datatype-zeroblks", "datatype/zeroblks.c", 1, dtZeroblks)
	register("datatype-typelb", "datatype/typelb.c", 1, dtTypelb)
}

// dtVecblklen: 59 bytes resized to an extent of 64, as a vector (or an hvector of the
// same stride in bytes) of 16 blocks of 16, stride 16: packed from bytes i%64 and
// unpacked over 0x7f, each 64 bytes hold 0..58 then five 0x7f.
func dtVecblklen(h bool) error {
	const veccount, stride, size = 16, 16, 16 * 16 * 64
	dt, err := datatype.Contiguous[int8](59)
	if err != nil {
		return err
	}
	dt2, err := dt.Resized(0, 64)
	if err != nil {
		return err
	}
	var nt datatype.Type
	if h {
		nt, err = dt2.Hvector(veccount, stride, stride*64)
	} else {
		nt, err = dt2.Vector(veccount, stride, stride)
	}
	if err != nil {
		return err
	}
	in, out := seq(size, func(i int) int8 { return int8(i % 64) }), fill(size, int8(127))
	if err := packRoundTrip("vector of resized", in, out, 1, nt, veccount*stride*59); err != nil {
		return err
	}
	return same("vector of resized", out, seq(size, func(i int) int8 {
		if i%64 < 59 {
			return int8(i % 64)
		}
		return 127
	}))
}

// dtSimpleResized: 2 int32s resized to an extent of 18 bytes: size 8, extent 18.
func dtSimpleResized(ctx context.Context, w *runtime.World) error {
	c, err := datatype.Contiguous[int32](2)
	if err != nil {
		return err
	}
	r, err := c.Resized(0, 2*4+10)
	if err != nil {
		return err
	}
	if r.Size() != 8 || r.Extent() != 18 {
		return fmt.Errorf("resized: size %d extent %d, want 8 18", r.Size(), r.Extent())
	}
	return nil
}

// dtContigZeroCount: a contiguous type of 0 int32s has size 0 and extent 0.
func dtContigZeroCount(ctx context.Context, w *runtime.World) error {
	c, err := datatype.Contiguous[int32](0)
	if err != nil {
		return err
	}
	if c.Size() != 0 || c.Extent() != 0 {
		return fmt.Errorf("contiguous of 0: size %d extent %d, want 0 0", c.Size(), c.Extent())
	}
	return nil
}

// dtZeroblks: an indexed type of a block of 0 int32s at 0 and one of 40 at 20, packed
// from 0..59 and unpacked over -1: the first 20 stay -1, the rest are their index.
func dtZeroblks(ctx context.Context, w *runtime.World) error {
	t, err := datatype.Indexed[int32]([]int{0, 40}, []int{0, 20})
	if err != nil {
		return err
	}
	send, recv := seq(60, func(i int) int32 { return int32(i) }), fill(60, int32(-1))
	if err := packRoundTrip("indexed with an empty block", send, recv, 1, t, 160); err != nil {
		return err
	}
	return same("indexed with an empty block", recv, seq(60, func(i int) int32 {
		if i < 20 {
			return -1
		}
		return int32(i)
	}))
}

// dtTypelb: an hindexed of one block at byte 1 of an hindexed of one byte at byte 3 has
// lower bound 4, upper bound 5 and extent 1.
func dtTypelb(ctx context.Context, w *runtime.World) error {
	tmp, err := datatype.Hindexed[uint8]([]int{1}, []int{3})
	if err != nil {
		return err
	}
	t, err := tmp.Hindexed([]int{1}, []int{1})
	if err != nil {
		return err
	}
	if t.LB() != 4 || t.UB() != 5 || t.Extent() != 1 {
		return fmt.Errorf("lb %d ub %d extent %d, want 4 5 1", t.LB(), t.UB(), t.Extent())
	}
	return nil
}
