//go:build cgo

package mpich

import (
	"fmt"
	"math"
	"slices"
	"unsafe"

	"github.com/gorma-hpc/gorma/datatype"
)

// doTypeCreateStruct is MPI_Type_create_struct. Its elements have one kind when every
// field's do, else none (no reductions).
func doTypeCreateStruct(count int, blocklens *int32, displs *int64, types *Datatype, out *Datatype) error {
	return typeCreateStruct(count, blocklens, displs, types, out)
}

// typeCreateStruct is MPI_Type_create_struct with block lengths of int or MPI_Count.
func typeCreateStruct[T int32 | int64](count int, blocklens *T, displs *int64, types *Datatype, out *Datatype) error {
	if count < 0 {
		return errCount(count)
	}
	bl := ints(blocklens, count)
	var ds []int64
	var ts []Datatype
	if count > 0 {
		ds, ts = unsafe.Slice(displs, count), unsafe.Slice(types, count)
	}
	fields := make([]datatype.Field, count)
	k := kNone
	for i := range fields {
		t, err := anyTypeOf(ts[i])
		if err != nil {
			return err
		}
		fields[i] = datatype.Field{Off: int(ds[i]), Count: bl[i], Type: t.layout}
		switch {
		case i == 0:
			k = t.kind
		case t.kind != k:
			k = kNone
		}
	}
	l, err := datatype.Struct(fields)
	if err != nil {
		return err
	}
	ads := make([]int, count)
	for i, d := range ds {
		ads[i] = int(d)
	}
	return newType(l, k, contents{combiner: mpi_COMBINER_STRUCT, ints: join([]int{count}, bl), aints: ads, types: slices.Clone(ts)}, out)
}

// matchTypes lists, per MPI_TYPECLASS_*, the predefined datatypes MPI_Type_match_size
// picks from: the first of the size asked.
var matchTypes = map[int][]Datatype{
	mpi_TYPECLASS_REAL:    {mpi_REAL4, mpi_REAL8, mpi_REAL, mpi_DOUBLE_PRECISION, mpi_FLOAT, mpi_DOUBLE, mpi_LONG_DOUBLE},
	mpi_TYPECLASS_INTEGER: {mpi_INTEGER1, mpi_INTEGER2, mpi_INTEGER4, mpi_INTEGER8, mpi_INTEGER, mpi_SIGNED_CHAR, mpi_SHORT, mpi_INT, mpi_LONG, mpi_LONG_LONG},
	mpi_TYPECLASS_COMPLEX: {mpi_COMPLEX8, mpi_COMPLEX16, mpi_COMPLEX, mpi_DOUBLE_COMPLEX},
}

// doTypeMatchSize is MPI_Type_match_size.
func doTypeMatchSize(class, size int, out *Datatype) error {
	list, ok := matchTypes[class]
	if !ok {
		return mpiErr(mpi_ERR_ARG, fmt.Sprintf("type class %d is not MPI_TYPECLASS_REAL, _INTEGER or _COMPLEX", class))
	}
	for _, d := range list {
		if int(d>>8)&0xff == size {
			*out = d
			return nil
		}
	}
	return mpiErr(mpi_ERR_ARG, fmt.Sprintf("no predefined datatype of class %d has %d bytes", class, size))
}

// doPackSize is MPI_Pack_size: an upper bound of what MPI_Pack writes.
func doPackSize(count int, d Datatype, c Comm, size *int32) error {
	n, err := packSize(count, d)
	if err != nil {
		return err
	}
	if n > math.MaxInt32 {
		return mpiErr(mpi_ERR_COUNT, fmt.Sprintf("%d bytes do not fit in an int: call MPI_Pack_size_c", n))
	}
	*size = int32(n)
	return nil
}

// packSize is the bytes MPI_Pack writes for count copies of d.
func packSize(count int, d Datatype) (int64, error) {
	t, err := typeOf(d)
	if err != nil {
		return 0, err
	}
	if count < 0 {
		return 0, errCount(count)
	}
	return int64(count) * int64(t.size), nil
}

// packBuf is the C buffer p of n bytes (n >= 0).
func packBuf(p unsafe.Pointer, n int) ([]byte, error) {
	if n < 0 {
		return nil, errCount(n)
	}
	if n == 0 {
		return []byte{}, nil
	}
	if p == nil {
		return nil, mpiErr(mpi_ERR_BUFFER, "buffer is NULL")
	}
	return unsafe.Slice((*byte)(p), n), nil
}

// doPack is MPI_Pack: count copies of d at in, packed into out at *pos, which moves on.
func doPack(in unsafe.Pointer, count int, d Datatype, out unsafe.Pointer, outsize int, pos *int32, c Comm) error {
	p, err := packTo(in, count, d, out, outsize, int(*pos))
	if err != nil {
		return err
	}
	*pos = int32(p) // p <= outsize, an int
	return nil
}

// packTo packs count copies of d at in into the outsize bytes at out from position p,
// and returns the position after them.
func packTo(in unsafe.Pointer, count int, d Datatype, out unsafe.Pointer, outsize, p int) (int, error) {
	t, err := typeOf(d)
	if err != nil {
		return 0, err
	}
	src, err := spanOf(in, count, t)
	if err != nil {
		return 0, err
	}
	dst, err := packBuf(out, outsize)
	if err != nil {
		return 0, err
	}
	if p < 0 || p > len(dst) {
		return 0, mpiErr(mpi_ERR_ARG, fmt.Sprintf("position %d is outside the %d-byte buffer", p, len(dst)))
	}
	n, err := datatype.Pack(dst[p:], src, count, t.layout)
	if err != nil {
		return 0, mpiErr(mpi_ERR_TRUNCATE, err.Error())
	}
	return p + n, nil
}

// doUnpack is MPI_Unpack: count copies of d unpacked from in at *pos, which moves on.
func doUnpack(in unsafe.Pointer, insize int, pos *int32, out unsafe.Pointer, count int, d Datatype, c Comm) error {
	p, err := unpackFrom(in, insize, int(*pos), out, count, d)
	if err != nil {
		return err
	}
	*pos = int32(p) // p <= insize, an int
	return nil
}

// unpackFrom unpacks count copies of d into out from the insize bytes at in, from
// position p, and returns the position after them.
func unpackFrom(in unsafe.Pointer, insize, p int, out unsafe.Pointer, count int, d Datatype) (int, error) {
	t, err := typeOf(d)
	if err != nil {
		return 0, err
	}
	src, err := packBuf(in, insize)
	if err != nil {
		return 0, err
	}
	dst, err := spanOf(out, count, t)
	if err != nil {
		return 0, err
	}
	if p < 0 || p > len(src) {
		return 0, mpiErr(mpi_ERR_ARG, fmt.Sprintf("position %d is outside the %d-byte buffer", p, len(src)))
	}
	n, err := datatype.Unpack(dst, src[p:], count, t.layout)
	if err != nil {
		return 0, mpiErr(mpi_ERR_TRUNCATE, err.Error())
	}
	return p + n, nil
}
