//go:build cgo

package mpich

import (
	"fmt"
	"math"
	"unsafe"

	"github.com/gorma-hpc/gorma/datatype"
)

// A kind is the Go type of a datatype's elements, for reductions.
type kind uint8

const (
	kNone kind = iota // mixed, or no Go type (long double)
	kI8
	kI16
	kI32
	kI64
	kU8
	kU16
	kU32
	kU64
	kF32
	kF64
	kC64
	kC128
	nKinds
)

// A dtype is a datatype: its layout in bytes and the kind of its elements.
type dtype struct {
	size, lb, extent int
	kind             kind
	layout           datatype.Type // the layout of one copy
	contig           bool          // one run of size bytes at offset 0, extent size
	committed        bool
	builtin          bool
	desc             // constructor, name, basic elements and references (typex.go)
}

// builtinKinds gives the element kind of MPICH's predefined datatypes. Their size is
// in the handle's bits 8-15.
var builtinKinds = map[Datatype]kind{
	mpi_CHAR: kI8, mpi_SIGNED_CHAR: kI8, mpi_INT8_T: kI8, mpi_INTEGER1: kI8,
	mpi_UNSIGNED_CHAR: kU8, mpi_BYTE: kU8, mpi_PACKED: kU8, mpi_UINT8_T: kU8, mpi_C_BOOL: kU8,
	mpi_CHARACTER: kU8, mpi_CXX_BOOL: kU8,
	mpi_SHORT: kI16, mpi_INT16_T: kI16, mpi_INTEGER2: kI16,
	mpi_UNSIGNED_SHORT: kU16, mpi_UINT16_T: kU16,
	mpi_INT: kI32, mpi_INT32_T: kI32, mpi_INTEGER: kI32, mpi_INTEGER4: kI32, mpi_LOGICAL: kI32, mpi_WCHAR: kI32,
	mpi_UNSIGNED: kU32, mpi_UINT32_T: kU32,
	mpi_LONG: kI64, mpi_LONG_LONG_INT: kI64, mpi_INT64_T: kI64, mpi_INTEGER8: kI64,
	mpi_AINT: kI64, mpi_OFFSET: kI64, mpi_COUNT: kI64,
	mpi_UNSIGNED_LONG: kU64, mpi_UNSIGNED_LONG_LONG: kU64, mpi_UINT64_T: kU64,
	mpi_FLOAT: kF32, mpi_REAL: kF32, mpi_REAL4: kF32,
	mpi_DOUBLE: kF64, mpi_DOUBLE_PRECISION: kF64, mpi_REAL8: kF64,
	mpi_C_FLOAT_COMPLEX: kC64, mpi_COMPLEX: kC64, mpi_COMPLEX8: kC64, mpi_CXX_FLOAT_COMPLEX: kC64,
	mpi_C_DOUBLE_COMPLEX: kC128, mpi_DOUBLE_COMPLEX: kC128, mpi_COMPLEX16: kC128, mpi_CXX_DOUBLE_COMPLEX: kC128,
	mpi_LONG_DOUBLE: kNone, mpi_COMPLEX32: kNone, mpi_CXX_LONG_DOUBLE_COMPLEX: kNone,
	mpi_2INT: kI32, mpi_2INTEGER: kI32, mpi_2REAL: kF32, mpi_2DOUBLE_PRECISION: kF64,
}

// builtinPrefix marks a predefined datatype: 0x4c00SSII, SS its size, II its index.
const builtinPrefix = 0x4c000000

var (
	builtins [256]*dtype
	types    = newTable[*dtype](kindDatatype)
	byteType = datatype.Of[uint8]()
)

func init() {
	for h, k := range builtinKinds {
		size := int(h>>8) & 0xff
		l, err := byteType.Contiguous(size)
		if err != nil {
			panic(err)
		}
		t := &dtype{size: size, extent: size, kind: k, layout: l, contig: true, committed: true, builtin: true}
		t.named(h)
		builtins[h&0xff] = t
	}
}

// typeOf returns the datatype of handle d.
func typeOf(d Datatype) (*dtype, error) {
	if d&^0xffff == builtinPrefix {
		if t := builtins[d&0xff]; t != nil && int(d>>8)&0xff == t.size {
			return t, nil
		}
	}
	if t := structPairTypes[d]; t != nil {
		return t, nil
	}
	if t, ok := types.get(int32(d)); ok {
		if !t.committed {
			return nil, mpiErr(mpi_ERR_TYPE, fmt.Sprintf("datatype %#x is not committed: call MPI_Type_commit", uint32(d)))
		}
		return t, nil
	}
	return nil, errHandle("datatype", int32(d))
}

// anyTypeOf is typeOf for constructors and queries, which take uncommitted types.
func anyTypeOf(d Datatype) (*dtype, error) {
	if t, ok := types.get(int32(d)); ok {
		return t, nil
	}
	return typeOf(d)
}

// kindSize is the size of one element of each kind.
var kindSize = [nKinds]int{kI8: 1, kI16: 2, kI32: 4, kI64: 8, kU8: 1, kU16: 2, kU32: 4, kU64: 8, kF32: 4, kF64: 8, kC64: 8, kC128: 16}

// bytesOf is the C buffer p of count copies of a contiguous t as bytes.
func bytesOf(p unsafe.Pointer, count int, t *dtype) ([]byte, error) {
	if count < 0 || count > math.MaxInt32*int(1<<16) {
		return nil, errCount(count)
	}
	n := count * t.size
	if n == 0 {
		return []byte{}, nil // not nil: nil means in place to collectives
	}
	if p == nil {
		return nil, mpiErr(mpi_ERR_BUFFER, fmt.Sprintf("buffer is NULL for %d bytes", n))
	}
	return unsafe.Slice((*byte)(p), n), nil
}

// spanOf is the C buffer p as bytes, long enough to hold count copies of t's layout.
// A layout that reaches below p is refused.
func spanOf(p unsafe.Pointer, count int, t *dtype) ([]byte, error) {
	if t.contig {
		return bytesOf(p, count, t)
	}
	if count < 0 {
		return nil, errCount(count)
	}
	lo, hi, err := t.layout.Span(count)
	if err != nil {
		return nil, err
	}
	if lo < 0 {
		return nil, errUnsupported("a datatype whose data lies below the buffer's address")
	}
	if hi == 0 {
		return nil, nil
	}
	if p == nil {
		return nil, mpiErr(mpi_ERR_BUFFER, "buffer is NULL")
	}
	return unsafe.Slice((*byte)(p), hi), nil
}

// newType registers a derived datatype built from layout l, whose elements are all of
// kind k (kNone if mixed), by the constructor and arguments c.
func newType(l datatype.Type, k kind, c contents, out *Datatype) error {
	t := &dtype{size: l.Size(), lb: l.LB(), extent: l.Extent(), kind: k, layout: l}
	if off, n, ok := l.Contig(1); ok && off == 0 && n == t.size && t.extent == t.size && t.lb == 0 {
		t.contig = true
	}
	if err := t.describe(c); err != nil {
		return err
	}
	*out = Datatype(types.add(t))
	return nil
}

// derive makes a datatype whose layout build makes from old's, recording c, with old
// as its one type, for MPI_Type_get_contents.
func derive(old Datatype, c contents, out *Datatype, build func(datatype.Type) (datatype.Type, error)) error {
	t, err := anyTypeOf(old)
	if err != nil {
		return err
	}
	l, err := build(t.layout)
	if err != nil {
		return err
	}
	c.types = []Datatype{old}
	return newType(l, t.kind, c, out)
}

// doTypeContiguous is MPI_Type_contiguous.
func doTypeContiguous(count int, old Datatype, out *Datatype) error {
	return derive(old, contents{combiner: mpi_COMBINER_CONTIGUOUS, ints: []int{count}}, out, func(l datatype.Type) (datatype.Type, error) {
		return l.Contiguous(count)
	})
}

// doTypeVector is MPI_Type_vector.
func doTypeVector(count, blocklen, stride int, old Datatype, out *Datatype) error {
	return derive(old, contents{combiner: mpi_COMBINER_VECTOR, ints: []int{count, blocklen, stride}}, out, func(l datatype.Type) (datatype.Type, error) {
		return l.Vector(count, blocklen, stride)
	})
}

// doTypeCreateHvector is MPI_Type_create_hvector.
func doTypeCreateHvector(count, blocklen, stride int, old Datatype, out *Datatype) error {
	return derive(old, contents{combiner: mpi_COMBINER_HVECTOR, ints: []int{count, blocklen}, aints: []int{stride}}, out, func(l datatype.Type) (datatype.Type, error) {
		return l.Hvector(count, blocklen, stride)
	})
}

// doTypeIndexed is MPI_Type_indexed.
func doTypeIndexed(count int, blocklens, displs *int32, old Datatype, out *Datatype) error {
	return typeIndexed(count, blocklens, displs, old, out)
}

// typeIndexed is MPI_Type_indexed over C arrays of int or MPI_Count.
func typeIndexed[T int32 | int64](count int, blocklens, displs *T, old Datatype, out *Datatype) error {
	t, err := anyTypeOf(old)
	if err != nil {
		return err
	}
	if count < 0 {
		return errCount(count)
	}
	bl, ds := ints(blocklens, count), ints(displs, count)
	l, err := t.layout.Indexed(bl, ds)
	if err != nil {
		return err
	}
	return newType(l, t.kind, contents{combiner: mpi_COMBINER_INDEXED, ints: join([]int{count}, bl, ds), types: []Datatype{old}}, out)
}

// doTypeCreateResized is MPI_Type_create_resized.
func doTypeCreateResized(old Datatype, lb, extent int, out *Datatype) error {
	t, err := anyTypeOf(old)
	if err != nil {
		return err
	}
	l, err := t.layout.Resized(lb, extent)
	if err != nil {
		return err
	}
	return newType(l, t.kind, contents{combiner: mpi_COMBINER_RESIZED, aints: []int{lb, extent}, types: []Datatype{old}}, out)
}

// doTypeCommit is MPI_Type_commit.
func doTypeCommit(d *Datatype) error {
	t, ok := types.get(int32(*d))
	if !ok {
		if _, err := typeOf(*d); err != nil {
			return err
		}
		return nil // a predefined datatype is committed
	}
	t.committed = true
	return nil
}

// doTypeFree is MPI_Type_free: the attributes' delete callbacks run, then the handle's
// reference goes; the datatype lives on while other datatypes or MPI_Type_get_contents'
// answers refer to it.
func doTypeFree(d *Datatype) error {
	t, ok := types.get(int32(*d))
	if !ok {
		if _, err := typeOf(*d); err == nil {
			return mpiErr(mpi_ERR_TYPE, "a predefined datatype cannot be freed")
		}
		return errHandle("datatype", int32(*d))
	}
	if t.f90 {
		return mpiErr(mpi_ERR_TYPE, "a datatype of MPI_Type_create_f90_* is predefined and cannot be freed")
	}
	if err := deleteTypeAttrs(*d); err != nil {
		return err // the attributes' delete callbacks run first; one that fails keeps the datatype
	}
	release(*d)
	*d = mpi_DATATYPE_NULL
	return nil
}

// doTypeSize is MPI_Type_size.
func doTypeSize(d Datatype, size *int32) error {
	t, err := anyTypeOf(d)
	if err != nil {
		return err
	}
	*size = clipInt(int64(t.size))
	return nil
}

// doTypeGetExtent is MPI_Type_get_extent.
func doTypeGetExtent(d Datatype, lb, extent *int64) error {
	t, err := anyTypeOf(d)
	if err != nil {
		return err
	}
	*lb, *extent = int64(t.lb), int64(t.extent)
	return nil
}

// doGetCount is MPI_Get_count: the status's bytes in elements of d, or MPI_UNDEFINED.
func doGetCount(st *Status, d Datatype, count *int32) error {
	t, err := anyTypeOf(d)
	if err != nil {
		return err
	}
	n, err := countOf(st, t)
	if err != nil {
		return err
	}
	*count = clipInt(n)
	return nil
}

// ints copies n C ints or MPI_Aints at p.
func ints[T int32 | int64](p *T, n int) []int {
	if n == 0 || p == nil {
		return nil
	}
	out := make([]int, n)
	for i, v := range unsafe.Slice(p, n) {
		out[i] = int(v)
	}
	return out
}
