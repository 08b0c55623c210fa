//go:build cgo

package mpich

// #include <stdlib.h>
import "C"

import (
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"unsafe"
)

// contents are a derived datatype's constructor and its arguments, as
// MPI_Type_get_contents gives them. The large-count constructors (MPI_Type_*_c) keep
// their counts in counts and nothing in ints.
type contents struct {
	combiner int
	ints     []int
	aints    []int
	counts   []int
	types    []Datatype
}

// A desc is what a datatype knows beyond its layout: how it was made, its name, its
// basic elements and how many references keep it.
type desc struct {
	env    contents
	sig    []elemRun    // one copy's basic elements in typemap order; nil if too long to list
	nelems int64        // basic elements in one copy
	refs   atomic.Int32 // the handle's own, other types' contents, MPI_Type_get_contents' answers
	f90    bool         // made by MPI_Type_create_f90_*: predefined, never freed
	name   string       // guarded by namesMu
}

// namesMu guards every datatype's name: MPI_Type_set_name may rename a predefined one.
var namesMu sync.Mutex

// maxSigRuns bounds a datatype's list of basic elements. A type whose list is longer
// (a long vector of structs of mixed elements) cannot answer MPI_Get_elements for a
// partial copy nor travel as external32.
const maxSigRuns = 1 << 16

// named describes t as the predefined datatype of handle h.
func (t *dtype) named(h Datatype) {
	n := int64(1)
	if pairTypes[h] {
		n = 2
	}
	t.env = contents{combiner: mpi_COMBINER_NAMED}
	t.sig, t.nelems, t.name = []elemRun{{basicOf(h, t.kind, t.size), n}}, n, builtinNames[h]
}

// describe records c as t's constructor and counts t's basic elements: every
// constructor but struct lays out whole copies of its one old type. It takes a
// reference to each derived type in c.
func (t *dtype) describe(c contents) error {
	t.env = c
	t.refs.Store(1)
	olds := make([]*dtype, len(c.types))
	for i, d := range c.types {
		o, err := anyTypeOf(d)
		if err != nil {
			return err
		}
		olds[i] = o
	}
	var s sigBuilder
	if c.combiner == mpi_COMBINER_STRUCT {
		for i, o := range olds {
			n := int64(c.ints[1+i])
			t.nelems += n * o.nelems
			s.repeat(o.sig, n)
		}
	} else if o := olds[0]; o.size > 0 {
		copies := int64(t.size / o.size)
		t.nelems = copies * o.nelems
		s.repeat(o.sig, copies)
	}
	if !s.over {
		t.sig = s.runs
	}
	for _, d := range c.types {
		retain(d)
	}
	return nil
}

// retain takes a reference to datatype d; a predefined one needs none.
func retain(d Datatype) {
	if t, ok := types.get(int32(d)); ok {
		t.refs.Add(1)
	}
}

// release drops a reference to datatype d and frees it, and its references, at the last.
func release(d Datatype) {
	t, ok := types.get(int32(d))
	if !ok || t.refs.Add(-1) > 0 {
		return
	}
	types.del(int32(d))
	for _, o := range t.env.types {
		release(o)
	}
}

// join concatenates integer lists.
func join(parts ...[]int) []int {
	var out []int
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// clipInt is n as a C int, or MPI_UNDEFINED if it does not fit.
func clipInt(n int64) int32 {
	if n > math.MaxInt32 {
		return mpi_UNDEFINED
	}
	return int32(n)
}

// doTypeDup is MPI_Type_dup: the same layout, committed if old is, without its name;
// the attributes go through their copy callbacks.
func doTypeDup(old Datatype, out *Datatype) error {
	t, err := anyTypeOf(old)
	if err != nil {
		return err
	}
	n := &dtype{size: t.size, lb: t.lb, extent: t.extent, kind: t.kind, layout: t.layout, contig: t.contig, committed: t.committed}
	if err := n.describe(contents{combiner: mpi_COMBINER_DUP, types: []Datatype{old}}); err != nil {
		return err
	}
	h := Datatype(types.add(n))
	if err := copyTypeAttrs(old, h); err != nil {
		doTypeFree(&h) // a copy callback failed: no new datatype
		return err
	}
	*out = h
	return nil
}

// doTypeCreateHindexedBlock is MPI_Type_create_hindexed_block.
func doTypeCreateHindexedBlock(count, blocklen int, displs *int64, old Datatype, out *Datatype) error {
	t, err := anyTypeOf(old)
	if err != nil {
		return err
	}
	if count < 0 {
		return errCount(count)
	}
	ds := ints(displs, count)
	l, err := t.layout.HindexedBlock(blocklen, ds)
	if err != nil {
		return err
	}
	return newType(l, t.kind, contents{combiner: mpi_COMBINER_HINDEXED_BLOCK, ints: []int{count, blocklen}, aints: ds, types: []Datatype{old}}, out)
}

// doTypeHvector is MPI-1's MPI_Type_hvector, MPI_Type_create_hvector's old name.
func doTypeHvector(count, blocklen, stride int, old Datatype, out *Datatype) error {
	return doTypeCreateHvector(count, blocklen, stride, old, out)
}

// doTypeHindexed is MPI-1's MPI_Type_hindexed, MPI_Type_create_hindexed's old name.
func doTypeHindexed(count int, blocklens *int32, displs *int64, old Datatype, out *Datatype) error {
	return doTypeCreateHindexed(count, blocklens, displs, old, out)
}

// doTypeStruct is MPI-1's MPI_Type_struct, MPI_Type_create_struct's old name.
func doTypeStruct(count int, blocklens *int32, displs *int64, ts *Datatype, out *Datatype) error {
	return doTypeCreateStruct(count, blocklens, displs, ts, out)
}

// doAddress is MPI-1's MPI_Address, MPI_Get_address's old name.
func doAddress(location unsafe.Pointer, addr *int64) error {
	return doGetAddress(location, addr)
}

// doTypeExtent is MPI-1's MPI_Type_extent.
func doTypeExtent(d Datatype, extent *int64) error {
	var lb int64
	return doTypeGetExtent(d, &lb, extent)
}

// doTypeLb is MPI-1's MPI_Type_lb: the lower bound.
func doTypeLb(d Datatype, lb *int64) error {
	var extent int64
	return doTypeGetExtent(d, lb, &extent)
}

// doTypeUb is MPI-1's MPI_Type_ub: the upper bound, lb plus extent.
func doTypeUb(d Datatype, ub *int64) error {
	var lb, extent int64
	if err := doTypeGetExtent(d, &lb, &extent); err != nil {
		return err
	}
	*ub = lb + extent
	return nil
}

// doTypeGetEnvelope is MPI_Type_get_envelope. A type of a large-count constructor
// has counts that only MPI_Type_get_envelope_c gives.
func doTypeGetEnvelope(d Datatype, ni, na, nd, combiner *int32) error {
	t, err := anyTypeOf(d)
	if err != nil {
		return err
	}
	e := &t.env
	if len(e.counts) > 0 {
		return mpiErr(mpi_ERR_OTHER, fmt.Sprintf("datatype %#x has large counts: call MPI_Type_get_envelope_c", uint32(d)))
	}
	*ni, *na, *nd, *combiner = int32(len(e.ints)), int32(len(e.aints)), int32(len(e.types)), int32(e.combiner)
	return nil
}

// doTypeGetEnvelopeC is MPI_Type_get_envelope_c.
func doTypeGetEnvelopeC(d Datatype, ni, na, nc, nd *int64, combiner *int32) error {
	t, err := anyTypeOf(d)
	if err != nil {
		return err
	}
	e := &t.env
	*ni, *na, *nc, *nd = int64(len(e.ints)), int64(len(e.aints)), int64(len(e.counts)), int64(len(e.types))
	*combiner = int32(e.combiner)
	return nil
}

// doTypeGetContents is MPI_Type_get_contents. Each derived datatype it gives is a
// reference that the caller frees with MPI_Type_free.
func doTypeGetContents(d Datatype, maxi, maxa, maxd int, is *int32, as *int64, ds *Datatype) error {
	t, err := contentsOf(d, maxi, maxa, 0, maxd)
	if err != nil {
		return err
	}
	if len(t.env.counts) > 0 {
		return mpiErr(mpi_ERR_OTHER, fmt.Sprintf("datatype %#x has large counts: call MPI_Type_get_contents_c", uint32(d)))
	}
	putContents(&t.env, is, as, nil, ds)
	return nil
}

// doTypeGetContentsC is MPI_Type_get_contents_c.
func doTypeGetContentsC(d Datatype, maxi, maxa, maxc, maxd int, is *int32, as, cs *int64, ds *Datatype) error {
	t, err := contentsOf(d, maxi, maxa, maxc, maxd)
	if err != nil {
		return err
	}
	putContents(&t.env, is, as, cs, ds)
	return nil
}

// contentsOf checks that derived datatype d's contents fit the arrays' lengths.
func contentsOf(d Datatype, maxi, maxa, maxc, maxd int) (*dtype, error) {
	t, err := anyTypeOf(d)
	if err != nil {
		return nil, err
	}
	e := &t.env
	if e.combiner == mpi_COMBINER_NAMED {
		return nil, mpiErr(mpi_ERR_TYPE, fmt.Sprintf("datatype %#x is predefined and has no contents", uint32(d)))
	}
	if len(e.ints) > maxi || len(e.aints) > maxa || len(e.counts) > maxc || len(e.types) > maxd {
		return nil, mpiErr(mpi_ERR_OTHER, fmt.Sprintf("the contents of datatype %#x (%d ints, %d addresses, %d counts, %d datatypes) do not fit the arrays: size them by MPI_Type_get_envelope",
			uint32(d), len(e.ints), len(e.aints), len(e.counts), len(e.types)))
	}
	return t, nil
}

func putContents(e *contents, is *int32, as, cs *int64, ds *Datatype) {
	if len(e.ints) > 0 {
		out := unsafe.Slice(is, len(e.ints))
		for i, v := range e.ints {
			out[i] = int32(v)
		}
	}
	if len(e.aints) > 0 {
		out := unsafe.Slice(as, len(e.aints))
		for i, v := range e.aints {
			out[i] = int64(v)
		}
	}
	if len(e.counts) > 0 {
		out := unsafe.Slice(cs, len(e.counts))
		for i, v := range e.counts {
			out[i] = int64(v)
		}
	}
	if len(e.types) > 0 {
		out := unsafe.Slice(ds, len(e.types))
		for i, v := range e.types {
			retain(v)
			out[i] = v
		}
	}
}

// doTypeGetName is MPI_Type_get_name: a predefined type's MPI name, else the name
// set, else "".
func doTypeGetName(d Datatype, name *byte, n *int32) error {
	t, err := anyTypeOf(d)
	if err != nil {
		return err
	}
	namesMu.Lock()
	s := t.name
	namesMu.Unlock()
	*n = int32(putString(name, mpi_MAX_OBJECT_NAME, s))
	return nil
}

// doTypeSetName is MPI_Type_set_name.
func doTypeSetName(d Datatype, name *byte) error {
	t, err := anyTypeOf(d)
	if err != nil {
		return err
	}
	if name == nil {
		return mpiErr(mpi_ERR_ARG, "the name is NULL")
	}
	s := C.GoString((*C.char)(unsafe.Pointer(name)))
	if len(s) >= mpi_MAX_OBJECT_NAME {
		return mpiErr(mpi_ERR_ARG, fmt.Sprintf("the name has %d bytes, more than MPI_MAX_OBJECT_NAME-1 (%d)", len(s), mpi_MAX_OBJECT_NAME-1))
	}
	namesMu.Lock()
	t.name = s
	namesMu.Unlock()
	return nil
}

// doTypeSizeX is MPI_Type_size_x.
func doTypeSizeX(d Datatype, size *int64) error {
	t, err := anyTypeOf(d)
	if err != nil {
		return err
	}
	*size = int64(t.size)
	return nil
}

// doTypeSizeC is MPI_Type_size_c.
func doTypeSizeC(d Datatype, size *int64) error { return doTypeSizeX(d, size) }

// doTypeGetExtentX is MPI_Type_get_extent_x.
func doTypeGetExtentX(d Datatype, lb, extent *int64) error { return doTypeGetExtent(d, lb, extent) }

// doTypeGetExtentC is MPI_Type_get_extent_c.
func doTypeGetExtentC(d Datatype, lb, extent *int64) error { return doTypeGetExtent(d, lb, extent) }

// doTypeGetTrueExtentX is MPI_Type_get_true_extent_x.
func doTypeGetTrueExtentX(d Datatype, lb, extent *int64) error {
	return doTypeGetTrueExtent(d, lb, extent)
}

// doTypeGetTrueExtentC is MPI_Type_get_true_extent_c.
func doTypeGetTrueExtentC(d Datatype, lb, extent *int64) error {
	return doTypeGetTrueExtent(d, lb, extent)
}

// doTypeCreateDarray is MPI_Type_create_darray: this rank's part of an array of gsizes
// elements of old, distributed over a grid of psizes processes (ranked in row-major
// order) by block, cyclic or no distribution per dimension. Its lower bound is 0 and its
// extent the whole array's.
func doTypeCreateDarray(size, rank, ndims int, gsizes, distribs, dargs, psizes *int32, order int, old Datatype, out *Datatype) error {
	return typeCreateDarray(size, rank, ndims, gsizes, distribs, dargs, psizes, order, old, out)
}

// typeCreateDarray is MPI_Type_create_darray with global sizes of int or MPI_Count.
func typeCreateDarray[T int32 | int64](size, rank, ndims int, gsizes *T, distribs, dargs, psizes *int32, order int, old Datatype, out *Datatype) error {
	t, err := anyTypeOf(old)
	if err != nil {
		return err
	}
	switch {
	case size <= 0:
		return mpiErr(mpi_ERR_ARG, fmt.Sprintf("size %d is not positive", size))
	case rank < 0 || rank >= size:
		return mpiErr(mpi_ERR_RANK, fmt.Sprintf("rank %d is not in [0, %d)", rank, size))
	case ndims <= 0:
		return mpiErr(mpi_ERR_DIMS, fmt.Sprintf("ndims %d is not positive", ndims))
	case order != mpi_ORDER_C && order != mpi_ORDER_FORTRAN:
		return mpiErr(mpi_ERR_ARG, fmt.Sprintf("order %d is neither MPI_ORDER_C nor MPI_ORDER_FORTRAN", order))
	}
	gs, dist, darg, ps := ints(gsizes, ndims), ints(distribs, ndims), ints(dargs, ndims), ints(psizes, ndims)
	if gs == nil || dist == nil || darg == nil || ps == nil {
		return mpiErr(mpi_ERR_ARG, "an array of MPI_Type_create_darray is NULL")
	}
	procs := 1
	for i := range ps {
		if gs[i] <= 0 || ps[i] <= 0 {
			return mpiErr(mpi_ERR_ARG, fmt.Sprintf("dimension %d: gsize %d and psize %d must be positive", i, gs[i], ps[i]))
		}
		procs *= ps[i]
	}
	if procs != size {
		return mpiErr(mpi_ERR_ARG, fmt.Sprintf("the process grid has %d processes, size is %d", procs, size))
	}
	dims := make([]int, ndims) // from the fastest-varying dimension out
	for i := range dims {
		dims[i] = ndims - 1 - i
		if order == mpi_ORDER_FORTRAN {
			dims[i] = i
		}
	}
	l := t.layout
	stride := t.extent
	for k, d := range dims {
		coord := rank
		for j := d + 1; j < ndims; j++ {
			coord /= ps[j]
		}
		coord %= ps[d]
		starts, lens, err := distribute(d, gs[d], dist[d], darg[d], ps[d], coord)
		if err != nil {
			return err
		}
		if k > 0 {
			if l, err = l.Resized(0, stride); err != nil {
				return err
			}
		}
		for i := range starts {
			starts[i] *= stride
		}
		if l, err = l.Hindexed(lens, starts); err != nil {
			return err
		}
		stride *= gs[d]
	}
	if l, err = l.Resized(0, stride); err != nil {
		return err
	}
	c := contents{combiner: mpi_COMBINER_DARRAY, ints: join([]int{size, rank, ndims}, gs, dist, darg, ps, []int{order}), types: []Datatype{old}}
	return newType(l, t.kind, c, out)
}

// distribute gives the runs of indices, in increasing order, that coordinate coord of
// p processes holds of dimension d's g elements.
func distribute(d, g, dist, darg, p, coord int) (starts, lens []int, err error) {
	if darg != mpi_DISTRIBUTE_DFLT_DARG && darg <= 0 {
		return nil, nil, mpiErr(mpi_ERR_ARG, fmt.Sprintf("dimension %d: darg %d is neither positive nor MPI_DISTRIBUTE_DFLT_DARG", d, darg))
	}
	switch dist {
	case mpi_DISTRIBUTE_NONE:
		if p != 1 {
			return nil, nil, mpiErr(mpi_ERR_ARG, fmt.Sprintf("dimension %d is not distributed but has %d processes: give psize 1", d, p))
		}
		return []int{0}, []int{g}, nil
	case mpi_DISTRIBUTE_BLOCK:
		blk := (g + p - 1) / p
		if darg != mpi_DISTRIBUTE_DFLT_DARG {
			if darg*p < g {
				return nil, nil, mpiErr(mpi_ERR_ARG, fmt.Sprintf("dimension %d: %d blocks of %d cover fewer than its %d elements", d, p, darg, g))
			}
			blk = darg
		}
		if s := coord * blk; s < g {
			return []int{s}, []int{min(blk, g-s)}, nil
		}
		return nil, nil, nil
	case mpi_DISTRIBUTE_CYCLIC:
		blk := 1
		if darg != mpi_DISTRIBUTE_DFLT_DARG {
			blk = darg
		}
		for s := coord * blk; s < g; s += p * blk {
			starts, lens = append(starts, s), append(lens, min(blk, g-s))
		}
		return starts, lens, nil
	}
	return nil, nil, mpiErr(mpi_ERR_ARG, fmt.Sprintf("dimension %d: distribution %d is not MPI_DISTRIBUTE_BLOCK, _CYCLIC or _NONE", d, dist))
}

// f90Types caches the datatypes of MPI_Type_create_f90_*: one per combiner and
// arguments, as MPI requires.
var f90Types struct {
	sync.Mutex
	m map[[3]int]Datatype
}

// f90Type returns the datatype of combiner with arguments args: predefined type base
// (chosen by the caller from the precision and range), under the combiner.
func f90Type(combiner int, args []int, base Datatype, out *Datatype) error {
	key := [3]int{combiner, args[0], args[len(args)-1]}
	f90Types.Lock()
	defer f90Types.Unlock()
	if d, ok := f90Types.m[key]; ok {
		*out = d
		return nil
	}
	b, err := typeOf(base)
	if err != nil {
		return err
	}
	t := &dtype{size: b.size, extent: b.extent, kind: b.kind, layout: b.layout, contig: true, committed: true}
	t.env = contents{combiner: combiner, ints: args}
	t.sig, t.nelems, t.f90 = b.sig, b.nelems, true
	t.refs.Store(1)
	d := Datatype(types.add(t))
	if f90Types.m == nil {
		f90Types.m = map[[3]int]Datatype{}
	}
	f90Types.m[key] = d
	*out = d
	return nil
}

func errF90(what string, args ...int) error {
	return mpiErr(mpi_ERR_OTHER, fmt.Sprintf("no predefined %s type has precision and range %v: MPICH's reach up to 15 digits and 307 (18 digits for integers)", what, args))
}

// doTypeCreateF90Integer is MPI_Type_create_f90_integer: the smallest Fortran integer
// of at least r decimal digits.
func doTypeCreateF90Integer(r int, out *Datatype) error {
	for _, c := range []struct {
		r int
		d Datatype
	}{{2, mpi_INTEGER1}, {4, mpi_INTEGER2}, {9, mpi_INTEGER4}, {18, mpi_INTEGER8}} {
		if r <= c.r {
			return f90Type(mpi_COMBINER_F90_INTEGER, []int{r}, c.d, out)
		}
	}
	return errF90("integer", r)
}

// f90Real picks REAL or DOUBLE PRECISION (base[0], base[1]) for precision p and
// decimal exponent range r; MPI_UNDEFINED leaves either free.
func f90Real(combiner, p, r int, base [2]Datatype, what string, out *Datatype) error {
	fits := func(maxP, maxR int) bool {
		return (p == mpi_UNDEFINED || p <= maxP) && (r == mpi_UNDEFINED || r <= maxR)
	}
	switch {
	case fits(6, 37):
		return f90Type(combiner, []int{p, r}, base[0], out)
	case fits(15, 307):
		return f90Type(combiner, []int{p, r}, base[1], out)
	}
	return errF90(what, p, r)
}

// doTypeCreateF90Real is MPI_Type_create_f90_real.
func doTypeCreateF90Real(p, r int, out *Datatype) error {
	return f90Real(mpi_COMBINER_F90_REAL, p, r, [2]Datatype{mpi_REAL, mpi_DOUBLE_PRECISION}, "real", out)
}

// doTypeCreateF90Complex is MPI_Type_create_f90_complex.
func doTypeCreateF90Complex(p, r int, out *Datatype) error {
	return f90Real(mpi_COMBINER_F90_COMPLEX, p, r, [2]Datatype{mpi_COMPLEX, mpi_DOUBLE_COMPLEX}, "complex", out)
}

// pairTypes are the predefined types of two elements, for MINLOC and MAXLOC.
var pairTypes = map[Datatype]bool{mpi_2INT: true, mpi_2INTEGER: true, mpi_2REAL: true}

// builtinNames are MPICH's names of the predefined datatypes. A handle of two names
// (MPI_LONG_LONG, MPI_C_COMPLEX) has MPICH's choice.
var builtinNames = map[Datatype]string{
	mpi_CHAR: "MPI_CHAR", mpi_SIGNED_CHAR: "MPI_SIGNED_CHAR", mpi_UNSIGNED_CHAR: "MPI_UNSIGNED_CHAR",
	mpi_BYTE: "MPI_BYTE", mpi_WCHAR: "MPI_WCHAR", mpi_SHORT: "MPI_SHORT", mpi_UNSIGNED_SHORT: "MPI_UNSIGNED_SHORT",
	mpi_INT: "MPI_INT", mpi_UNSIGNED: "MPI_UNSIGNED", mpi_LONG: "MPI_LONG", mpi_UNSIGNED_LONG: "MPI_UNSIGNED_LONG",
	mpi_FLOAT: "MPI_FLOAT", mpi_DOUBLE: "MPI_DOUBLE", mpi_LONG_DOUBLE: "MPI_LONG_DOUBLE",
	mpi_LONG_LONG_INT: "MPI_LONG_LONG_INT", mpi_UNSIGNED_LONG_LONG: "MPI_UNSIGNED_LONG_LONG",
	mpi_PACKED: "MPI_PACKED", mpi_2INT: "MPI_2INT", mpi_COMPLEX: "MPI_COMPLEX",
	mpi_DOUBLE_COMPLEX: "MPI_DOUBLE_COMPLEX", mpi_LOGICAL: "MPI_LOGICAL", mpi_REAL: "MPI_REAL",
	mpi_DOUBLE_PRECISION: "MPI_DOUBLE_PRECISION", mpi_INTEGER: "MPI_INTEGER", mpi_2INTEGER: "MPI_2INTEGER",
	mpi_2REAL: "MPI_2REAL", mpi_CHARACTER: "MPI_CHARACTER", mpi_REAL4: "MPI_REAL4", mpi_REAL8: "MPI_REAL8",
	mpi_COMPLEX8: "MPI_COMPLEX8", mpi_COMPLEX16: "MPI_COMPLEX16", mpi_COMPLEX32: "MPI_COMPLEX32",
	mpi_INTEGER1: "MPI_INTEGER1", mpi_INTEGER2: "MPI_INTEGER2", mpi_INTEGER4: "MPI_INTEGER4",
	mpi_INTEGER8: "MPI_INTEGER8", mpi_INT8_T: "MPI_INT8_T", mpi_INT16_T: "MPI_INT16_T",
	mpi_INT32_T: "MPI_INT32_T", mpi_INT64_T: "MPI_INT64_T", mpi_UINT8_T: "MPI_UINT8_T",
	mpi_UINT16_T: "MPI_UINT16_T", mpi_UINT32_T: "MPI_UINT32_T", mpi_UINT64_T: "MPI_UINT64_T",
	mpi_C_BOOL: "MPI_C_BOOL", mpi_C_FLOAT_COMPLEX: "MPI_C_COMPLEX", mpi_C_DOUBLE_COMPLEX: "MPI_C_DOUBLE_COMPLEX",
	mpi_AINT: "MPI_AINT", mpi_OFFSET: "MPI_OFFSET", mpi_COUNT: "MPI_COUNT", mpi_CXX_BOOL: "MPI_CXX_BOOL",
	mpi_CXX_FLOAT_COMPLEX: "MPI_CXX_FLOAT_COMPLEX", mpi_CXX_DOUBLE_COMPLEX: "MPI_CXX_DOUBLE_COMPLEX",
	mpi_CXX_LONG_DOUBLE_COMPLEX: "MPI_CXX_LONG_DOUBLE_COMPLEX",
}
