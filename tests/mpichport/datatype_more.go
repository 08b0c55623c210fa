package main

import (
	"context"
	"fmt"
	"math"

	"github.com/gorma-hpc/gorma/datatype"
	"github.com/gorma-hpc/gorma/runtime"
)

func init() {
	register("datatype-subarray", "datatype/subarray.c", 2, dtSubarray)
	register("datatype-blockindexed_zero_count", "datatype/blockindexed_zero_count.c", 1, dtBlockindexedZeroCount)
	register("datatype-struct_zero_count", "datatype/struct_zero_count.c", 1, dtStructZeroCount)
	register("datatype-getpartelm", "datatype/getpartelm.c", 2, dtGetpartelm)
}

// dtSubarray: rank 0 sends the [0:32][0:4][0:512] subarray (C order) of its 64x8x512
// float64 array of 2.0 to rank 1, which receives it with the same type over its array of
// -2.0: the subarray holds 2.0.
func dtSubarray(ctx context.Context, w *runtime.World) error {
	const x, y, z = 64, 8, 512
	t, err := datatype.Subarray[float64]([]int{x, y, z}, []int{x / 2, y / 2, z}, []int{0, 0, 0}, datatype.OrderC)
	if err != nil {
		return err
	}
	switch w.Rank() {
	case 0:
		return runtime.SendType(ctx, w, fill(x*y*z, 2.0), 1, t, 1, 0)
	case 1:
		a := fill(x*y*z, -2.0)
		if _, err := runtime.RecvType(ctx, w, a, 1, t, 0, 0); err != nil {
			return err
		}
		for i := 0; i < x/2; i++ {
			for j := 0; j < y/2; j++ {
				row := a[(i*y+j)*z : (i*y+j+1)*z]
				if err := same(fmt.Sprintf("[%d][%d]", i, j), row, fill(z, 2.0)); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// dtBlockindexedZeroCount: an indexed-block type of no blocks has size 0 and extent 0.
func dtBlockindexedZeroCount(ctx context.Context, w *runtime.World) error {
	t, err := datatype.IndexedBlock[int32](0, nil)
	if err != nil {
		return err
	}
	if t.Size() != 0 || t.Extent() != 0 {
		return fmt.Errorf("indexed block of none: size %d extent %d, want 0 0", t.Size(), t.Extent())
	}
	return nil
}

// dtStructZeroCount: a struct of no fields has size 0 and extent 0.
func dtStructZeroCount(ctx context.Context, w *runtime.World) error {
	t, err := datatype.Struct(nil)
	if err != nil {
		return err
	}
	if t.Size() != 0 || t.Extent() != 0 {
		return fmt.Errorf("struct of no fields: size %d extent %d, want 0 0", t.Size(), t.Extent())
	}
	return nil
}

// dtGetpartelm: rank 0 sends an int32 n and then n bytes (n = 16, then 17), then the
// packed int32 7 and "message". Rank 1 receives each with one copy of a struct of an
// int32 and 256 bytes: the message is a part of that copy, of 4+n bytes (MPI_Get_elements
// 1+n), and MPI_Get_count is MPI_UNDEFINED (no whole copy). gorma has no
// MPI_Get_elements: the port checks the received bytes and Status.Count.
func dtGetpartelm(ctx context.Context, w *runtime.World) error {
	intByte := func(n int) (datatype.Type, error) {
		return datatype.Struct([]datatype.Field{{Off: 0, Count: 1, Type: datatype.Of[int32]()}, {Off: 4, Count: n, Type: datatype.Of[uint8]()}})
	}
	switch w.Rank() {
	case 0:
		buf := make([]int32, 128)
		for tag, n := range []int{16, 17} {
			t, err := intByte(n)
			if err != nil {
				return err
			}
			buf[0] = int32(n)
			if err := runtime.SendType(ctx, w, buf, 1, t, 1, tag); err != nil {
				return err
			}
		}
		packed := append([]byte{7, 0, 0, 0}, "message"...)
		return runtime.Send(ctx, w, packed, 1, 2)
	case 1:
		t, err := intByte(256)
		if err != nil {
			return err
		}
		buf := make([]int32, 128)
		for tag := 0; tag < 3; tag++ {
			st, err := runtime.RecvType(ctx, w, buf, 1, t, 0, tag)
			if err != nil {
				return err
			}
			if st.Bytes != 4+int(buf[0]) {
				return fmt.Errorf("message %d: %d bytes, want %d", tag, st.Bytes, 4+buf[0])
			}
			if st.Count != runtime.Undefined {
				return fmt.Errorf("message %d, a part of one copy: count %d, want MPI_UNDEFINED (%d)", tag, st.Count, runtime.Undefined)
			}
		}
	}
	return nil
}

func init() {
	register("datatype-contigstruct", "datatype/contigstruct.c", 1, dtContigstruct)
	register("datatype-struct_empty_el", "datatype/struct_empty_el.c", 1, dtStructEmptyEl)
	register("datatype-hindexed_zeros", "datatype/hindexed_zeros.c", 1, dtHindexedZeros)
}

// dtContigstruct: a struct of 8 int64s in reverse order, 65536 of them contiguous: the
// pack size of 2 copies is 2*65536*64 bytes.
func dtContigstruct(ctx context.Context, w *runtime.World) error {
	fields := make([]datatype.Field, 8)
	for i := range fields {
		fields[i] = datatype.Field{Off: (7 - i) * 8, Count: 1, Type: datatype.Of[int64]()}
	}
	t1, err := datatype.Struct(fields)
	if err != nil {
		return err
	}
	t2, err := t1.Contiguous(65536)
	if err != nil {
		return err
	}
	size, err := t2.PackSize(2)
	if err != nil {
		return err
	}
	if size != 2*65536*64 {
		return fmt.Errorf("pack size %d, want %d", size, 2*65536*64)
	}
	return nil
}

// selfWorld is MPI_COMM_SELF: a World of this rank alone.
func selfWorld(ctx context.Context, w *runtime.World) (*runtime.World, error) {
	return w.Split(ctx, w.Rank(), 0)
}

// dtStructEmptyEl: a struct of no float32s at byte 8, an int32 at 0 and two int32s at 8
// (extent 16 bytes, the size of a struct of 4 int32s) receives 6 int32s sent to self as
// 2 copies: {1, -1, 2, 3}, {4, -1, 5, 6}. count 2.
func dtStructEmptyEl(ctx context.Context, w *runtime.World) error {
	self, err := selfWorld(ctx, w)
	if err != nil {
		return err
	}
	t, err := datatype.Struct([]datatype.Field{
		{Off: 8, Count: 0, Type: datatype.Of[float32]()},
		{Off: 0, Count: 1, Type: datatype.Of[int32]()},
		{Off: 8, Count: 2, Type: datatype.Of[int32]()},
	})
	if err != nil {
		return err
	}
	if err := runtime.Send(ctx, self, []int32{1, 2, 3, 4, 5, 6}, 0, 0); err != nil {
		return err
	}
	ts := fill(8, int32(-1))
	st, err := runtime.RecvType(ctx, self, ts, 2, t, 0, 0)
	if err != nil {
		return err
	}
	if err := same("structs", ts, []int32{1, -1, 2, 3, 4, -1, 5, 6}); err != nil {
		return err
	}
	if st.Count != 2 {
		return fmt.Errorf("count %d, want 2", st.Count)
	}
	return self.Free()
}

// dtHindexedZeros: an hindexed type of three empty blocks sends and receives nothing
// (count 0). An hindexed of int32 blocks {1 at byte 0, 0 at 4, 2 at 16, 1 at 8} (extent 6
// int32s) receives 6 int32s sent to self as 2 copies into -(i+1): 1 -2 4 -4 2 3 5 -8 -9
// -10 6 -12 ..., and count is MPI_UNDEFINED (the second copy is partial).
func dtHindexedZeros(ctx context.Context, w *runtime.World) error {
	self, err := selfWorld(ctx, w)
	if err != nil {
		return err
	}
	zero, err := datatype.Hindexed[int32]([]int{0, 0, 0}, []int{0, 4, 16})
	if err != nil {
		return err
	}
	if err := runtime.SendType(ctx, self, []int32(nil), 1, zero, 0, 0); err != nil {
		return err
	}
	st, err := runtime.RecvType(ctx, self, []int32(nil), 2, zero, 0, 0)
	if err != nil {
		return err
	}
	if st.Bytes != 0 {
		return fmt.Errorf("empty type: received %d bytes", st.Bytes)
	}
	sparse, err := datatype.Hindexed[int32]([]int{1, 0, 2, 1}, []int{0, 4, 16, 8})
	if err != nil {
		return err
	}
	recv := seq(16, func(i int) int32 { return int32(-(i + 1)) })
	if err := runtime.Send(ctx, self, []int32{1, 2, 3, 4, 5, 6}, 0, 0); err != nil {
		return err
	}
	if st, err = runtime.RecvType(ctx, self, recv, 2, sparse, 0, 0); err != nil {
		return err
	}
	if err := same("sparse", recv, []int32{1, -2, 4, -4, 2, 3, 5, -8, -9, -10, 6, -12, -13, -14, -15, -16}); err != nil {
		return err
	}
	if st.Count != runtime.Undefined {
		return fmt.Errorf("6 int32s as 2 copies of 4: count %d, want MPI_UNDEFINED (%d)", st.Count, runtime.Undefined)
	}
	return self.Free()
}

func init() {
	register("datatype-lbub", "datatype/lbub.c", 1, dtLbub)
}

// dtLbub: 4 bytes resized to (lb -3, extent 9), and to (lb 6, extent -9), alone and as
// a contiguous of 3 and vectors of 3 blocks (blocklength 1 or 4, stride 1, 5 or -5) of
// it: each type's size, lower bound, extent, true lower bound and true extent (the
// cases of positive extent first).
func dtLbub(ctx context.Context, w *runtime.World) error {
	four, err := datatype.Contiguous[uint8](4)
	if err != nil {
		return err
	}
	cases := []struct {
		name                              string
		lb, ext                           int // the resized 4 bytes
		kind                              string
		count, blocklen, stride           int
		size, wantLB, wantExt, tlb, textt int
	}{
		{"int with lb ub", -3, 9, "", 0, 0, 0, 4, -3, 9, 0, 4},
		{"contig of int with lb ub", -3, 9, "contig", 3, 0, 0, 12, -3, 27, 0, 22},
		{"vector of int with lb ub", -3, 9, "vector", 3, 1, 1, 12, -3, 27, 0, 22},
		{"vector blocklength 4", -3, 9, "vector", 3, 4, 1, 48, -3, 54, 0, 49},
		{"vector blocklength 4 stride 5", -3, 9, "vector", 3, 4, 5, 48, -3, 126, 0, 121},
		{"vector blocklength 4 stride -5", -3, 9, "vector", 3, 4, -5, 48, -93, 126, -90, 121},
		{"int with negative extent", 6, -9, "", 0, 0, 0, 4, 6, -9, 0, 4},
		{"contig of negative extent", 6, -9, "contig", 3, 0, 0, 12, -12, 9, -18, 22},
		{"vector stride 5 of negative extent", 6, -9, "vector", 3, 4, 5, 48, -111, 108, -117, 121},
		{"vector stride -5 of negative extent", 6, -9, "vector", 3, 4, -5, 48, -21, 108, -27, 121},
	}
	for _, c := range cases {
		t, err := four.Resized(c.lb, c.ext)
		if err != nil {
			return fmt.Errorf("%s: resized (%d, %d): %w", c.name, c.lb, c.ext, err)
		}
		switch c.kind {
		case "contig":
			t, err = t.Contiguous(c.count)
		case "vector":
			t, err = t.Vector(c.count, c.blocklen, c.stride)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", c.name, err)
		}
		if t.Size() != c.size || t.LB() != c.wantLB || t.Extent() != c.wantExt || t.TrueLB() != c.tlb || t.TrueExtent() != c.textt {
			return fmt.Errorf("%s: size %d lb %d extent %d true lb %d true extent %d; want %d %d %d %d %d", c.name,
				t.Size(), t.LB(), t.Extent(), t.TrueLB(), t.TrueExtent(), c.size, c.wantLB, c.wantExt, c.tlb, c.textt)
		}
	}
	return nil
}

func init() {
	register("datatype-hindexed_block", "datatype/hindexed_block.c", 1, dtHindexedBlock)
}

// dtHindexedBlock: an hindexed block of one int32 at byte 0 has the size and extent of an
// int32 and, packed from {7, -1, -2, -3} and unpacked over zeros, gives {7, 0, 0, 0}. An
// hindexed block of one vector (2 int32s, stride 2) at 1, 4 and 5 vector extents has the
// size of 6 int32s and picks 1 2, 3 4, 5 6 out of an 18-int32 buffer.
func dtHindexedBlock(ctx context.Context, w *runtime.World) error {
	hb, err := datatype.HindexedBlock[int32](1, []int{0})
	if err != nil {
		return err
	}
	if hb.Size() != 4 || hb.Extent() != 4 {
		return fmt.Errorf("hindexed block of one int32: size %d extent %d, want 4 4", hb.Size(), hb.Extent())
	}
	buf := []int32{7, -1, -2, -3}
	out := make([]int32, 4)
	if err := first(packRoundTrip("hindexed block of one int32", buf, out, 1, hb, 4), same("hindexed block of one int32", out, []int32{7, 0, 0, 0})); err != nil {
		return err
	}
	vec, err := datatype.Vector[int32](2, 1, 2)
	if err != nil {
		return err
	}
	ext := vec.Extent()
	nt, err := vec.HindexedBlock(1, []int{1 * ext, 4 * ext, 5 * ext})
	if err != nil {
		return err
	}
	if nt.Size() != 6*4 {
		return fmt.Errorf("hindexed block of vectors: size %d, want %d", nt.Size(), 6*4)
	}
	in := []int32{-1, -1, -1, 1, -2, 2, -3, -3, -3, -4, -4, -4, 3, -5, 4, 5, -6, 6}
	out = make([]int32, 18)
	return first(packRoundTrip("hindexed block of vectors", in, out, 1, nt, 24),
		same("hindexed block of vectors", out, []int32{0, 0, 0, 1, 0, 2, 0, 0, 0, 0, 0, 0, 3, 0, 4, 5, 0, 6}))
}

func init() {
	register("datatype-indexed_misc", "datatype/indexed_misc.c", 1, dtIndexedMisc)
}

// dtIndexedMisc: indexed int32 types. Blocks {1,2,1,1,1} at {1,2,5,6,8} have the size of
// 6 int32s and pack and unpack 1..6 in place. An empty block first, in the middle or last
// does not count in the bounds (lb 4, ub 20 bytes). Blocks {0,4,0} at {MaxInt32, 2,
// MaxInt32} (and as hindexed, at the largest int64 byte displacement) have lb 8, ub 24
// and move elements 2..5, also as the first field of a struct with an int32 at byte 32
// (which adds element 8). Blocks {0,1,1,1} at {0,1,3,8}, indexed and hindexed, have lb 4,
// ub 36 and move elements 1, 3 and 8.
func dtIndexedMisc(ctx context.Context, w *runtime.World) error {
	bounds := func(what string, t datatype.Type, lb, ub int) error {
		if t.LB() != lb || t.LB()+t.Extent() != ub {
			return fmt.Errorf("%s: lb %d ub %d, want %d %d", what, t.LB(), t.LB()+t.Extent(), lb, ub)
		}
		return nil
	}
	// moves packs 1..10 with t, unpacks over zeros and checks that exactly the elements
	// keep has survive.
	moves := func(what string, t datatype.Type, keep func(i int) bool) error {
		buf := seq(10, func(i int) int32 { return int32(i + 1) })
		out := make([]int32, 10)
		if err := packRoundTrip(what, buf, out, 1, t, t.Size()); err != nil {
			return err
		}
		return same(what, out, seq(10, func(i int) int32 {
			if keep(i) {
				return int32(i + 1)
			}
			return 0
		}))
	}
	t, err := datatype.Indexed[int32]([]int{1, 2, 1, 1, 1}, []int{1, 2, 5, 6, 8})
	if err != nil {
		return err
	}
	if t.Size() != 24 {
		return fmt.Errorf("indexed contig: size %d, want 24", t.Size())
	}
	in := []int32{-1, 1, 2, 3, -2, 4, 5, -3, 6}
	out := make([]int32, 9)
	if err := first(packRoundTrip("indexed contig", in, out, 1, t, 24), same("indexed contig", out, []int32{0, 1, 2, 3, 0, 4, 5, 0, 6})); err != nil {
		return err
	}
	for _, c := range []struct {
		name        string
		lens, disps []int
	}{{"zero block first", []int{0, 1, 1}, []int{0, 1, 4}}, {"zero block middle", []int{1, 0, 1}, []int{1, 2, 4}}, {"zero block last", []int{1, 1, 0}, []int{1, 4, 8}}} {
		t, err := datatype.Indexed[int32](c.lens, c.disps)
		if err != nil {
			return fmt.Errorf("%s: %w", c.name, err)
		}
		if err := bounds(c.name, t, 4, 20); err != nil {
			return err
		}
	}
	mid := func(i int) bool { return i >= 2 && i < 6 }
	lead, err := datatype.Indexed[int32]([]int{0, 4, 0}, []int{math.MaxInt32, 2, math.MaxInt32})
	if err != nil {
		return fmt.Errorf("indexed with leading zero blocks at MaxInt32: %w", err)
	}
	hlead, err := datatype.Hindexed[int32]([]int{0, 4, 0}, []int{math.MaxInt64, 8, math.MaxInt64})
	if err != nil {
		return fmt.Errorf("hindexed with leading zero blocks at MaxInt64: %w", err)
	}
	for _, c := range []struct {
		name string
		t    datatype.Type
	}{{"indexed leading zero", lead}, {"hindexed leading zero", hlead}} {
		if err := first(bounds(c.name, c.t, 8, 24), moves(c.name, c.t, mid)); err != nil {
			return err
		}
		st, err := datatype.Struct([]datatype.Field{{Off: 0, Count: 1, Type: c.t}, {Off: 32, Count: 1, Type: datatype.Of[int32]()}})
		if err != nil {
			return fmt.Errorf("struct of %s: %w", c.name, err)
		}
		if err := moves("struct of "+c.name, st, func(i int) bool { return mid(i) || i == 8 }); err != nil {
			return err
		}
	}
	same3, err := datatype.Indexed[int32]([]int{0, 1, 1, 1}, []int{0, 1, 3, 8})
	if err != nil {
		return err
	}
	hsame3, err := datatype.Hindexed[int32]([]int{0, 1, 1, 1}, []int{0, 4, 12, 32})
	if err != nil {
		return err
	}
	for _, c := range []struct {
		name string
		t    datatype.Type
	}{{"indexed same lengths", same3}, {"hindexed same lengths", hsame3}} {
		if err := first(bounds(c.name, c.t, 4, 36), moves(c.name, c.t, func(i int) bool { return i == 1 || i == 3 || i == 8 })); err != nil {
			return err
		}
	}
	return nil
}

func init() {
	register("datatype-blockindexed_misc", "datatype/blockindexed_misc.c", 1, dtBlockindexedMisc)
}

// dtBlockindexedMisc: hindexed_block's two cases as indexed blocks, displacements in
// units of the old type's extent: one int32 at 0 (size and extent of an int32; packs
// {7, 0, 0, 0}), and one vector (2 int32s, stride 2) at 1, 4 and 5 vector extents (size
// of 6 int32s; picks 1 2, 3 4, 5 6 out of 18 int32s).
func dtBlockindexedMisc(ctx context.Context, w *runtime.World) error {
	ib, err := datatype.IndexedBlock[int32](1, []int{0})
	if err != nil {
		return err
	}
	if ib.Size() != 4 || ib.Extent() != 4 {
		return fmt.Errorf("indexed block of one int32: size %d extent %d, want 4 4", ib.Size(), ib.Extent())
	}
	out := make([]int32, 4)
	if err := first(packRoundTrip("indexed block of one int32", []int32{7, -1, -2, -3}, out, 1, ib, 4), same("indexed block of one int32", out, []int32{7, 0, 0, 0})); err != nil {
		return err
	}
	vec, err := datatype.Vector[int32](2, 1, 2)
	if err != nil {
		return err
	}
	nt, err := vec.IndexedBlock(1, []int{1, 4, 5})
	if err != nil {
		return err
	}
	if nt.Size() != 6*4 {
		return fmt.Errorf("indexed block of vectors: size %d, want %d", nt.Size(), 6*4)
	}
	in := []int32{-1, -1, -1, 1, -2, 2, -3, -3, -3, -4, -4, -4, 3, -5, 4, 5, -6, 6}
	out = make([]int32, 18)
	return first(packRoundTrip("indexed block of vectors", in, out, 1, nt, 24),
		same("indexed block of vectors", out, []int32{0, 0, 0, 1, 0, 2, 0, 0, 0, 0, 0, 0, 3, 0, 4, 5, 0, 6}))
}
