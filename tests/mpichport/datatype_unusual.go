package main

import (
	"context"
	"fmt"

	"github.com/gorma-hpc/gorma/datatype"
	"github.com/gorma-hpc/gorma/runtime"
)

func init() {
	register("datatype-unusual_noncontigs", "datatype/unusual_noncontigs.c", 1, dtUnusualNoncontigs)
}

// dtUnusualNoncontigs: layouts that reach before their start, sent to self and unpacked.
// Two int32s, the second 4 bytes before the first (a struct of displacements 0 and -4,
// a vector of stride -1, an indexed of displacements 0 and -1), two copies sent from
// element 2 of {1..6} into elements 1..4 of {-1..-6}, give {-1, 3, 2, 5, 4, -6}. A struct
// of two array sections (elements 1-2 and element 3 of rows of 4, bounds one row, as
// MPI_LB and MPI_UB set them) twice each receives 1..6 into a 2x4 array of -1 as {-1 1 2
// 5, -1 3 4 6}. A struct of an indexed type (2 int32s at -2, 1 at 1) and, 4 int32s on,
// an indexed block (at -1 and 1) unpacks 0..4 from element 3 of nine -1s into {-1 0 1 -1
// 2 -1 3 -1 4}. In gorma a layout lies inside its buffer, so "from element k" is a Struct
// field at k elements.
func dtUnusualNoncontigs(ctx context.Context, w *runtime.World) error {
	self, err := selfWorld(ctx, w)
	if err != nil {
		return err
	}
	i32 := datatype.Of[int32]()
	var negs [3]datatype.Type
	if negs[0], err = datatype.Struct([]datatype.Field{{Off: 0, Count: 1, Type: i32}, {Off: -4, Count: 1, Type: i32}}); err != nil {
		return err
	}
	if negs[1], err = datatype.Vector[int32](2, 1, -1); err != nil {
		return err
	}
	if negs[2], err = datatype.Indexed[int32]([]int{1, 1}, []int{0, -1}); err != nil {
		return err
	}
	for i, name := range []string{"struct of negative displacement", "vector of negative stride", "indexed of negative displacement"} {
		if err := negSelf(ctx, self, name, negs[i]); err != nil {
			return err
		}
	}
	if err := structStruct(ctx, self); err != nil {
		return err
	}
	if err := flatten(); err != nil {
		return err
	}
	return self.Free()
}

// negSelf sends 2 copies of t from element 2 of {1..6} to self, into elements 1..4 of
// {-1..-6}.
func negSelf(ctx context.Context, self *runtime.World, name string, t datatype.Type) error {
	if t.Size() != 8 || t.LB() != -4 || t.Extent() != 8 {
		return fmt.Errorf("%s: size %d lb %d extent %d, want 8 -4 8", name, t.Size(), t.LB(), t.Extent())
	}
	from2, err := datatype.Struct([]datatype.Field{{Off: 2 * 4, Count: 1, Type: t}})
	if err != nil {
		return err
	}
	recv := []int32{-1, -2, -3, -4, -5, -6}
	r, err := runtime.Irecv(self, recv[1:5], 0, 0)
	if err != nil {
		return err
	}
	if err := runtime.SendType(ctx, self, []int32{1, 2, 3, 4, 5, 6}, 2, from2, 0, 0); err != nil {
		return fmt.Errorf("%s: send: %w", name, err)
	}
	if _, err := r.Wait(ctx); err != nil {
		return fmt.Errorf("%s: wait: %w", name, err)
	}
	return same(name, recv, []int32{-1, 3, 2, 5, 4, -6})
}

// section is build_array_section_type: elements astart..aend of a row of aext int32s,
// with bounds the whole row.
func section(aext, astart, aend int) (datatype.Type, error) {
	s, err := datatype.Struct([]datatype.Field{{Off: astart * 4, Count: aend - astart + 1, Type: datatype.Of[int32]()}})
	if err != nil {
		return s, err
	}
	return s.Resized(0, aext*4)
}

// structStruct: two sections of each of the 2 rows of a 2x4 array receive 1..6 sent to
// self as plain int32s.
func structStruct(ctx context.Context, self *runtime.World) error {
	const n, m = 2, 4
	first, err := section(m, 1, 2)
	if err != nil {
		return err
	}
	last, err := section(m, 3, 3)
	if err != nil {
		return err
	}
	t, err := datatype.Struct([]datatype.Field{{Off: 0, Count: n, Type: first}, {Off: 0, Count: n, Type: last}})
	if err != nil {
		return err
	}
	if t.Size() != n*3*4 {
		return fmt.Errorf("struct of sections: size %d, want %d", t.Size(), n*3*4)
	}
	array := fill(n*m, int32(-1))
	seqs := seq(n*m, func(i int) int32 { return int32(i + 1) })
	sr, err := runtime.Isend(self, seqs[:t.Size()/4], 0, 42)
	if err != nil {
		return err
	}
	rr, err := runtime.IrecvType(self, array, 1, t, 0, 42)
	if err != nil {
		return err
	}
	if err := runtime.WaitAll(ctx, []*runtime.Request{sr, rr}, nil); err != nil {
		return fmt.Errorf("struct of sections: %w", err)
	}
	return same("struct of sections", array, []int32{-1, 1, 2, 5, -1, 3, 4, 6})
}

// flatten: the struct of an indexed type and an indexed block unpacks 0..4 from
// element 3 of nine -1s.
func flatten() error {
	idx, err := datatype.Indexed[int32]([]int{2, 1}, []int{-2, 1})
	if err != nil {
		return err
	}
	blk, err := datatype.IndexedBlock[int32](1, []int{-1, 1})
	if err != nil {
		return err
	}
	combo, err := datatype.Struct([]datatype.Field{{Off: 0, Count: 1, Type: idx}, {Off: 4 * 4, Count: 1, Type: blk}})
	if err != nil {
		return err
	}
	at3, err := datatype.Struct([]datatype.Field{{Off: 3 * 4, Count: 1, Type: combo}})
	if err != nil {
		return err
	}
	packed, err := datatype.AsBytes(seq(combo.Size()/4, func(i int) int32 { return int32(i) }))
	if err != nil {
		return err
	}
	array := fill(9, int32(-1))
	if _, err := datatype.Unpack(array, packed, 1, at3); err != nil {
		return fmt.Errorf("combo: unpack: %w", err)
	}
	return same("combo", array, []int32{-1, 0, 1, -1, 2, -1, 3, -1, 4})
}
