//go:build cgo

package mpich

// #include <stdlib.h>
import "C"

import (
	"fmt"
	"unsafe"

	"github.com/gorma-hpc/gorma/datatype"
	"github.com/gorma-hpc/gorma/window"
)

// doAllocMem is MPI_Alloc_mem: C memory, which MPI_Free_mem gives back.
func doAllocMem(size int, info Info, baseptr unsafe.Pointer) error {
	if size < 0 {
		return mpiErr(mpi_ERR_SIZE, fmt.Sprintf("size %d is negative", size))
	}
	p := C.malloc(C.size_t(max(size, 1)))
	if p == nil {
		return mpiErr(mpi_ERR_NO_MEM, fmt.Sprintf("cannot allocate %d bytes", size))
	}
	*(*unsafe.Pointer)(baseptr) = p
	return nil
}

// doFreeMem is MPI_Free_mem.
func doFreeMem(base unsafe.Pointer) error {
	C.free(base)
	return nil
}

// doGetAddress is MPI_Get_address.
func doGetAddress(location unsafe.Pointer, addr *int64) error {
	*addr = int64(uintptr(location))
	return nil
}

// doGroupTranslateRanks is MPI_Group_translate_ranks: a rank not in g2 is MPI_UNDEFINED.
func doGroupTranslateRanks(g1 Group, n int, ranks1 *int32, g2 Group, ranks2 *int32) error {
	a, err := groupOf(g1)
	if err != nil {
		return err
	}
	b, err := groupOf(g2)
	if err != nil {
		return err
	}
	if n < 0 {
		return errCount(n)
	}
	in := ints(ranks1, n)
	for i, r := range in {
		if r == mpi_PROC_NULL {
			in[i] = 0 // translated apart below
		}
	}
	out, err := a.TranslateRanks(in, b)
	if err != nil {
		return mpiErr(mpi_ERR_RANK, err.Error())
	}
	dst := unsafe.Slice(ranks2, n)
	for i, r := range out {
		switch {
		case ints(ranks1, n)[i] == mpi_PROC_NULL:
			dst[i] = mpi_PROC_NULL
		case r < 0:
			dst[i] = mpi_UNDEFINED
		default:
			dst[i] = int32(r)
		}
	}
	return nil
}

// doIntercommCreate is MPI_Intercomm_create.
func doIntercommCreate(local Comm, localLeader int, peer Comm, remoteLeader, tag int, out *Comm) error {
	co, err := commOf(local)
	if err != nil {
		return err
	}
	var pw = co.w
	if co.w.Rank() == localLeader {
		p, err := commOf(peer)
		if err != nil {
			return err
		}
		pw = p.w
	}
	w, err := co.w.CreateIntercomm(bg, localLeader, pw, remoteLeader, tag)
	if err != nil {
		return err
	}
	newComm(w, co, out)
	return nil
}

// doIntercommMerge is MPI_Intercomm_merge.
func doIntercommMerge(inter Comm, high int, out *Comm) error {
	co, err := commOf(inter)
	if err != nil {
		return err
	}
	w, err := co.w.Merge(bg, high != 0)
	if err != nil {
		return err
	}
	newComm(w, co, out)
	return nil
}

// doTypeCreateHindexed is MPI_Type_create_hindexed.
func doTypeCreateHindexed(count int, blocklens *int32, displs *int64, old Datatype, out *Datatype) error {
	return typeCreateHindexed(count, blocklens, displs, old, out)
}

// typeCreateHindexed is MPI_Type_create_hindexed with block lengths of int or MPI_Count.
func typeCreateHindexed[T int32 | int64](count int, blocklens *T, displs *int64, old Datatype, out *Datatype) error {
	t, err := anyTypeOf(old)
	if err != nil {
		return err
	}
	if count < 0 {
		return errCount(count)
	}
	bl, ds := ints(blocklens, count), ints(displs, count)
	l, err := t.layout.Hindexed(bl, ds)
	if err != nil {
		return err
	}
	return newType(l, t.kind, contents{combiner: mpi_COMBINER_HINDEXED, ints: join([]int{count}, bl), aints: ds, types: []Datatype{old}}, out)
}

// doTypeCreateIndexedBlock is MPI_Type_create_indexed_block.
func doTypeCreateIndexedBlock(count, blocklen int, displs *int32, old Datatype, out *Datatype) error {
	return typeCreateIndexedBlock(count, blocklen, displs, old, out)
}

// typeCreateIndexedBlock is MPI_Type_create_indexed_block with displacements of int or
// MPI_Count.
func typeCreateIndexedBlock[T int32 | int64](count, blocklen int, displs *T, old Datatype, out *Datatype) error {
	t, err := anyTypeOf(old)
	if err != nil {
		return err
	}
	if count < 0 {
		return errCount(count)
	}
	ds := ints(displs, count)
	l, err := t.layout.IndexedBlock(blocklen, ds)
	if err != nil {
		return err
	}
	return newType(l, t.kind, contents{combiner: mpi_COMBINER_INDEXED_BLOCK, ints: join([]int{count, blocklen}, ds), types: []Datatype{old}}, out)
}

// doTypeCreateSubarray is MPI_Type_create_subarray.
func doTypeCreateSubarray(ndims int, sizes, subsizes, starts *int32, order int, old Datatype, out *Datatype) error {
	return typeCreateSubarray(ndims, sizes, subsizes, starts, order, old, out)
}

// typeCreateSubarray is MPI_Type_create_subarray over C arrays of int or MPI_Count.
func typeCreateSubarray[T int32 | int64](ndims int, sizes, subsizes, starts *T, order int, old Datatype, out *Datatype) error {
	t, err := anyTypeOf(old)
	if err != nil {
		return err
	}
	if ndims < 0 {
		return errCount(ndims)
	}
	var o datatype.Order
	switch order {
	case mpi_ORDER_C:
		o = datatype.OrderC
	case mpi_ORDER_FORTRAN:
		o = datatype.OrderFortran
	default:
		return mpiErr(mpi_ERR_ARG, fmt.Sprintf("order %d is neither MPI_ORDER_C nor MPI_ORDER_FORTRAN", order))
	}
	sz, sub, st := ints(sizes, ndims), ints(subsizes, ndims), ints(starts, ndims)
	l, err := t.layout.Subarray(sz, sub, st, o)
	if err != nil {
		return err
	}
	return newType(l, t.kind, contents{combiner: mpi_COMBINER_SUBARRAY, ints: join([]int{ndims}, sz, sub, st, []int{order}), types: []Datatype{old}}, out)
}

// doTypeGetTrueExtent is MPI_Type_get_true_extent.
func doTypeGetTrueExtent(d Datatype, lb, extent *int64) error {
	t, err := anyTypeOf(d)
	if err != nil {
		return err
	}
	*lb, *extent = int64(t.layout.TrueLB()), int64(t.layout.TrueExtent())
	return nil
}

// winAttrs are a window's predefined attributes, in C memory: a program keeps the
// pointers MPI_Win_get_attr gives it until MPI_Win_free.
type winAttrs struct {
	base unsafe.Pointer // MPI_WIN_BASE's value is the base itself
	vals unsafe.Pointer // MPI_Aint size, then int disp_unit, flavor, model
}

func newWinAttrs(w *window.Win[byte], base unsafe.Pointer, size, unit int) winAttrs {
	p := C.malloc(C.size_t(8 + 3*4))
	*(*int64)(p) = int64(size)
	ints := unsafe.Slice((*int32)(unsafe.Add(p, 8)), 3)
	ints[0] = int32(unit)
	ints[1] = map[window.Flavor]int32{window.FlavorAllocate: mpi_WIN_FLAVOR_ALLOCATE, window.FlavorShared: mpi_WIN_FLAVOR_SHARED,
		window.FlavorDynamic: mpi_WIN_FLAVOR_DYNAMIC}[w.Flavor()]
	if ints[1] == 0 {
		ints[1] = mpi_WIN_FLAVOR_CREATE
	}
	ints[2] = mpi_WIN_UNIFIED
	if w.Model() == window.Separate {
		ints[2] = mpi_WIN_SEPARATE
	}
	return winAttrs{base: base, vals: p}
}

func (a winAttrs) free() { C.free(a.vals) }

// doWinGetAttr is MPI_Win_get_attr: the predefined attributes MPI_WIN_BASE,
// MPI_WIN_SIZE, MPI_WIN_DISP_UNIT, MPI_WIN_CREATE_FLAVOR and MPI_WIN_MODEL, and a user
// keyval's (attr.go).
func doWinGetAttr(h Win, key int, val unsafe.Pointer, flag *int32) error {
	wo, err := winOf(h)
	if err != nil {
		return err
	}
	var p unsafe.Pointer
	switch key {
	case mpi_WIN_BASE:
		p = wo.attrs.base
	case mpi_WIN_SIZE:
		p = wo.attrs.vals
	case mpi_WIN_DISP_UNIT, mpi_WIN_CREATE_FLAVOR, mpi_WIN_MODEL:
		i := map[int]int{mpi_WIN_DISP_UNIT: 0, mpi_WIN_CREATE_FLAVOR: 1, mpi_WIN_MODEL: 2}[key]
		p = unsafe.Add(wo.attrs.vals, 8+4*i)
	default:
		return getWinUserAttr(h, key, val, flag, attrPtr)
	}
	*(*unsafe.Pointer)(val) = p
	*flag = 1
	return nil
}
