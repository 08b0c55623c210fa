//go:build cgo

package mpich

// #include <stdlib.h>
import "C"

import (
	"fmt"
	"math"
	"unsafe"

	"github.com/gorma-hpc/gorma/datatype"
)

// A basic is the kind of one basic element: its size in memory and in "external32"
// (MPI's big-endian representation), and how it converts between them.
type basic struct {
	n, ext int8 // bytes in memory and in external32; ext 0: no external32 form
	unit   int8 // bytes reversed as one number: a complex is two
	signed bool // sign-extended when external32 is narrower (MPI_LONG, MPI_WCHAR)
}

// An elemRun is count basic elements of one kind, in typemap order.
type elemRun struct {
	b     basic
	count int64
}

// basicOf is the basic element of predefined datatype h. MPI_LONG, MPI_UNSIGNED_LONG
// and MPI_WCHAR are narrower in external32 than in memory; long double has no
// external32 form here.
func basicOf(h Datatype, k kind, size int) basic {
	switch h {
	case mpi_LONG:
		return basic{n: 8, ext: 4, unit: 8, signed: true}
	case mpi_UNSIGNED_LONG:
		return basic{n: 8, ext: 4, unit: 8}
	case mpi_WCHAR:
		return basic{n: 4, ext: 2, unit: 4, signed: true}
	}
	if pairTypes[h] {
		size /= 2
	}
	b := basic{n: int8(size), ext: int8(size), unit: int8(size)}
	switch k {
	case kC64, kC128:
		b.unit = int8(size / 2)
	case kNone:
		b.ext = 0
	}
	return b
}

// A sigBuilder appends runs of basic elements, joining runs of one kind, up to
// maxSigRuns; past it, over is set.
type sigBuilder struct {
	runs []elemRun
	over bool
}

func (s *sigBuilder) add(r elemRun) {
	if r.count == 0 || s.over {
		return
	}
	if n := len(s.runs); n > 0 && s.runs[n-1].b == r.b {
		s.runs[n-1].count += r.count
		return
	}
	if len(s.runs) == maxSigRuns {
		s.over, s.runs = true, nil
		return
	}
	s.runs = append(s.runs, r)
}

// repeat appends n copies of the runs sig; a nil sig (too long to list) makes the
// result too long too.
func (s *sigBuilder) repeat(sig []elemRun, n int64) {
	if n == 0 {
		return
	}
	if sig == nil {
		s.over, s.runs = true, nil
		return
	}
	if len(sig) == 1 {
		s.add(elemRun{sig[0].b, sig[0].count * n})
		return
	}
	for i := int64(0); i < n && !s.over; i++ {
		for _, r := range sig {
			s.add(r)
		}
	}
}

// elementsOf counts the whole basic elements in bytes of data of type t, in typemap
// order: MPI_Get_elements. A predefined type's count is MPI_UNDEFINED (-1 here) unless
// bytes holds whole copies; a derived type's counts the elements before the first
// partial one, as MPICH's does.
func elementsOf(st *Status, d Datatype) (int64, error) {
	t, err := anyTypeOf(d)
	if err != nil {
		return 0, err
	}
	if st == nil {
		return 0, mpiErr(mpi_ERR_ARG, "status is MPI_STATUS_IGNORE")
	}
	n := st.bytes()
	switch {
	case n == 0:
		return 0, nil
	case t.size == 0:
		return -1, nil
	case t.builtin && n%int64(t.size) != 0:
		return -1, nil
	}
	copies, rest := n/int64(t.size), n%int64(t.size)
	e := copies * t.nelems
	if rest == 0 {
		return e, nil
	}
	if t.sig == nil {
		return 0, errUnsupported(fmt.Sprintf("MPI_Get_elements of a partial copy of datatype %#x, whose typemap has more than %d runs", uint32(d), maxSigRuns))
	}
	for _, r := range t.sig {
		k := min(r.count, rest/int64(r.b.n))
		e += k
		rest -= k * int64(r.b.n)
		if k < r.count {
			break
		}
	}
	return e, nil
}

// doGetElements is MPI_Get_elements.
func doGetElements(st *Status, d Datatype, count *int32) error {
	n, err := elementsOf(st, d)
	if err != nil {
		return err
	}
	*count = clipInt(n)
	if n < 0 {
		*count = mpi_UNDEFINED
	}
	return nil
}

// doGetElementsX is MPI_Get_elements_x.
func doGetElementsX(st *Status, d Datatype, count *int64) error {
	n, err := elementsOf(st, d)
	if err != nil {
		return err
	}
	*count = n
	if n < 0 {
		*count = mpi_UNDEFINED
	}
	return nil
}

// doGetElementsC is MPI_Get_elements_c.
func doGetElementsC(st *Status, d Datatype, count *int64) error { return doGetElementsX(st, d, count) }

// countOf is MPI_Get_count's answer in full: the status's bytes in copies of t, or
// MPI_UNDEFINED if they are not whole.
func countOf(st *Status, t *dtype) (int64, error) {
	if st == nil {
		return 0, mpiErr(mpi_ERR_ARG, "status is MPI_STATUS_IGNORE")
	}
	n := st.bytes()
	switch {
	case t.size == 0:
		return 0, nil
	case n%int64(t.size) != 0:
		return mpi_UNDEFINED, nil
	}
	return n / int64(t.size), nil
}

// doGetCountC is MPI_Get_count_c.
func doGetCountC(st *Status, d Datatype, count *int64) error {
	t, err := anyTypeOf(d)
	if err != nil {
		return err
	}
	n, err := countOf(st, t)
	if err != nil {
		return err
	}
	*count = n
	return nil
}

// doStatusSetElements is MPI_Status_set_elements: st says count elements of d arrived.
func doStatusSetElements(st *Status, d Datatype, count int) error {
	return doStatusSetElementsX(st, d, count)
}

// doStatusSetElementsX is MPI_Status_set_elements_x. The count is of copies of d: a
// count of basic elements of a derived type that are not whole copies is not kept.
func doStatusSetElementsX(st *Status, d Datatype, count int) error {
	t, err := anyTypeOf(d)
	if err != nil {
		return err
	}
	if st == nil {
		return mpiErr(mpi_ERR_ARG, "status is MPI_STATUS_IGNORE")
	}
	if count < 0 || t.size > 0 && count > math.MaxInt64/2/t.size {
		return errCount(count)
	}
	n := int64(count) * int64(t.size)
	st.countLo = int32(n)
	st.countHiCancelled = int32(n>>32)<<1 | st.countHiCancelled&1
	return nil
}

// doStatusSetCancelled is MPI_Status_set_cancelled.
func doStatusSetCancelled(st *Status, flag int) error {
	if st == nil {
		return mpiErr(mpi_ERR_ARG, "status is MPI_STATUS_IGNORE")
	}
	st.countHiCancelled &^= 1
	if flag != 0 {
		st.countHiCancelled |= 1
	}
	return nil
}

// doTypeContiguousC is MPI_Type_contiguous_c.
func doTypeContiguousC(count int, old Datatype, out *Datatype) error {
	return derive(old, contents{combiner: mpi_COMBINER_CONTIGUOUS, counts: []int{count}}, out, func(l datatype.Type) (datatype.Type, error) {
		return l.Contiguous(count)
	})
}

// doTypeVectorC is MPI_Type_vector_c.
func doTypeVectorC(count, blocklen, stride int, old Datatype, out *Datatype) error {
	return derive(old, contents{combiner: mpi_COMBINER_VECTOR, counts: []int{count, blocklen, stride}}, out, func(l datatype.Type) (datatype.Type, error) {
		return l.Vector(count, blocklen, stride)
	})
}

// doTypeCreateHvectorC is MPI_Type_create_hvector_c.
func doTypeCreateHvectorC(count, blocklen, stride int, old Datatype, out *Datatype) error {
	return derive(old, contents{combiner: mpi_COMBINER_HVECTOR, counts: []int{count, blocklen, stride}}, out, func(l datatype.Type) (datatype.Type, error) {
		return l.Hvector(count, blocklen, stride)
	})
}

// doTypeCreateResizedC is MPI_Type_create_resized_c.
func doTypeCreateResizedC(old Datatype, lb, extent int, out *Datatype) error {
	t, err := anyTypeOf(old)
	if err != nil {
		return err
	}
	l, err := t.layout.Resized(lb, extent)
	if err != nil {
		return err
	}
	return newType(l, t.kind, contents{combiner: mpi_COMBINER_RESIZED, counts: []int{lb, extent}, types: []Datatype{old}}, out)
}

// doPackSizeC is MPI_Pack_size_c.
func doPackSizeC(count int, d Datatype, c Comm, size *int64) error {
	n, err := packSize(count, d)
	if err != nil {
		return err
	}
	*size = n
	return nil
}

// doPackC is MPI_Pack_c.
func doPackC(in unsafe.Pointer, count int, d Datatype, out unsafe.Pointer, outsize int, pos *int64, c Comm) error {
	p, err := packTo(in, count, d, out, outsize, int(*pos))
	if err != nil {
		return err
	}
	*pos = int64(p)
	return nil
}

// doUnpackC is MPI_Unpack_c.
func doUnpackC(in unsafe.Pointer, insize int, pos *int64, out unsafe.Pointer, count int, d Datatype, c Comm) error {
	p, err := unpackFrom(in, insize, int(*pos), out, count, d)
	if err != nil {
		return err
	}
	*pos = int64(p)
	return nil
}

// external32 checks the representation a call names: "external32" is the only one.
func external32(datarep *byte) error {
	if datarep == nil {
		return mpiErr(mpi_ERR_ARG, "the data representation is NULL")
	}
	if s := C.GoString((*C.char)(unsafe.Pointer(datarep))); s != "external32" {
		return mpiErr(mpi_ERR_ARG, fmt.Sprintf("data representation %q is not \"external32\"", s))
	}
	return nil
}

// extSize is the bytes of one copy of t in external32.
func extSize(d Datatype, t *dtype) (int64, error) {
	if t.sig == nil && t.size > 0 {
		return 0, errUnsupported(fmt.Sprintf("external32 of datatype %#x, whose typemap has more than %d runs", uint32(d), maxSigRuns))
	}
	var n int64
	for _, r := range t.sig {
		if r.b.ext == 0 {
			return 0, errUnsupported(fmt.Sprintf("external32 of datatype %#x, which holds long doubles", uint32(d)))
		}
		n += r.count * int64(r.b.ext)
	}
	return n, nil
}

// externalSize is MPI_Pack_external_size's answer.
func externalSize(datarep *byte, count int, d Datatype) (int64, error) {
	if err := external32(datarep); err != nil {
		return 0, err
	}
	t, err := anyTypeOf(d)
	if err != nil {
		return 0, err
	}
	if count < 0 {
		return 0, errCount(count)
	}
	n, err := extSize(d, t)
	return int64(count) * n, err
}

// doPackExternalSize is MPI_Pack_external_size.
func doPackExternalSize(datarep *byte, count int, d Datatype, size *int64) error {
	n, err := externalSize(datarep, count, d)
	if err != nil {
		return err
	}
	*size = n
	return nil
}

// doPackExternalSizeC is MPI_Pack_external_size_c.
func doPackExternalSizeC(datarep *byte, count int, d Datatype, size *int64) error {
	return doPackExternalSize(datarep, count, d, size)
}

// doPackExternal is MPI_Pack_external: count copies of d at in, in external32, into the
// outsize bytes at out from *pos, which moves on. The data is packed as MPI_Pack packs
// it, then each basic element converted.
func doPackExternal(datarep *byte, in unsafe.Pointer, count int, d Datatype, out unsafe.Pointer, outsize int, pos *int64) error {
	n, err := externalSize(datarep, count, d)
	if err != nil {
		return err
	}
	t, err := typeOf(d)
	if err != nil {
		return err
	}
	dst, err := packBuf(out, outsize)
	if err != nil {
		return err
	}
	p := *pos
	if p < 0 || p > int64(len(dst)) || int64(len(dst))-p < n {
		return mpiErr(mpi_ERR_TRUNCATE, fmt.Sprintf("%d bytes of external32 from position %d do not fit the %d-byte buffer", n, p, len(dst)))
	}
	native := make([]byte, count*t.size)
	if _, err := packTo(in, count, d, unsafe.Pointer(unsafe.SliceData(native)), len(native), 0); err != nil {
		return err
	}
	convert(dst[p:p+n], native, t.sig, count, toExternal)
	*pos = p + n
	return nil
}

// doPackExternalC is MPI_Pack_external_c.
func doPackExternalC(datarep *byte, in unsafe.Pointer, count int, d Datatype, out unsafe.Pointer, outsize int, pos *int64) error {
	return doPackExternal(datarep, in, count, d, out, outsize, pos)
}

// doUnpackExternal is MPI_Unpack_external: count copies of d from external32 at in,
// from *pos, which moves on.
func doUnpackExternal(datarep *byte, in unsafe.Pointer, insize int, pos *int64, out unsafe.Pointer, count int, d Datatype) error {
	n, err := externalSize(datarep, count, d)
	if err != nil {
		return err
	}
	t, err := typeOf(d)
	if err != nil {
		return err
	}
	src, err := packBuf(in, insize)
	if err != nil {
		return err
	}
	p := *pos
	if p < 0 || p > int64(len(src)) || int64(len(src))-p < n {
		return mpiErr(mpi_ERR_TRUNCATE, fmt.Sprintf("%d bytes of external32 from position %d lie past the %d-byte buffer", n, p, len(src)))
	}
	native := make([]byte, count*t.size)
	convert(src[p:p+n], native, t.sig, count, fromExternal)
	if _, err := unpackFrom(unsafe.Pointer(unsafe.SliceData(native)), len(native), 0, out, count, d); err != nil {
		return err
	}
	*pos = p + n
	return nil
}

// doUnpackExternalC is MPI_Unpack_external_c.
func doUnpackExternalC(datarep *byte, in unsafe.Pointer, insize int, pos *int64, out unsafe.Pointer, count int, d Datatype) error {
	return doUnpackExternal(datarep, in, insize, pos, out, count, d)
}

// convert walks count copies of the basic elements sig over ext (external32) and
// native (packed in memory), converting each element with fn.
func convert(ext, native []byte, sig []elemRun, count int, fn func(ext, native []byte, b basic)) {
	for range count {
		for _, r := range sig {
			for range r.count {
				fn(ext[:r.b.ext], native[:r.b.n], r.b)
				ext, native = ext[r.b.ext:], native[r.b.n:]
			}
		}
	}
}

// toExternal writes element native, little-endian, as big-endian ext: each unit's
// bytes reversed, and the low bytes only of a number narrower in external32.
func toExternal(ext, native []byte, b basic) {
	if b.ext < b.n {
		for i := range ext {
			ext[i] = native[len(ext)-1-i]
		}
		return
	}
	u := int(b.unit)
	for o := 0; o < len(native); o += u {
		for i := range u {
			ext[o+i] = native[o+u-1-i]
		}
	}
}

// fromExternal is toExternal's inverse; a narrower number is sign- or zero-extended.
func fromExternal(ext, native []byte, b basic) {
	if b.ext < b.n {
		for i := range ext {
			native[i] = ext[len(ext)-1-i]
		}
		var fill byte
		if b.signed && ext[0]&0x80 != 0 {
			fill = 0xff
		}
		for i := len(ext); i < len(native); i++ {
			native[i] = fill
		}
		return
	}
	u := int(b.unit)
	for o := 0; o < len(native); o += u {
		for i := range u {
			native[o+i] = ext[o+u-1-i]
		}
	}
}
