//go:build cgo

package mpich

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"math"
)

// MPI_MINLOC and MPI_MAXLOC reduce (value, index) pairs: MPICH's predefined pair types.
// The C pairs (MPI_DOUBLE_INT and kin) are structs of a value and a C int; the Fortran
// pairs (MPI_2INTEGER, MPI_2REAL, MPI_2DOUBLE_PRECISION) and MPI_2INT hold two values of
// one kind.

// A pair is the layout of one pair type: the value's kind at offset 0 and the index's
// kind at offset idx.
type pair struct {
	val, index kind
	idx        int
}

// pairs are the predefined pair types. MPI_LONG_DOUBLE_INT has no Go value type: it
// moves, but MINLOC and MAXLOC on it fail.
var pairs = map[Datatype]pair{
	mpi_2INT:              {kI32, kI32, 4},
	mpi_2INTEGER:          {kI32, kI32, 4},
	mpi_2REAL:             {kF32, kF32, 4},
	mpi_2DOUBLE_PRECISION: {kF64, kF64, 8},
	mpi_FLOAT_INT:         {kF32, kI32, 4},
	mpi_DOUBLE_INT:        {kF64, kI32, 8},
	mpi_LONG_INT:          {kI64, kI32, 8},
	mpi_SHORT_INT:         {kI16, kI32, 4},
	mpi_LONG_DOUBLE_INT:   {kNone, kI32, 16},
}

// structPairs are the pair types that are C structs, with their extents: table handles
// of MPICH's (0x8c000000 and up), below this library's slots.
var structPairs = map[Datatype]int{
	mpi_FLOAT_INT: 8, mpi_DOUBLE_INT: 16, mpi_LONG_INT: 16, mpi_SHORT_INT: 8, mpi_LONG_DOUBLE_INT: 32,
}

var structPairTypes = map[Datatype]*dtype{}

func init() {
	builtinNames[mpi_2DOUBLE_PRECISION] = "MPI_2DOUBLE_PRECISION"
	pairTypes[mpi_2DOUBLE_PRECISION] = true
	for h, extent := range structPairs {
		p := pairs[h]
		vsize := p.idx // the value fills the struct up to the index
		if p.val != kNone {
			vsize = kindSize[p.val]
		}
		l, err := byteType.Hindexed([]int{vsize, 4}, []int{0, p.idx})
		if err == nil {
			l, err = l.Resized(0, extent)
		}
		if err != nil {
			panic(err)
		}
		size := vsize + 4
		t := &dtype{size: size, extent: extent, kind: kNone, layout: l, contig: size == extent, committed: true, builtin: true}
		t.env = contents{combiner: mpi_COMBINER_NAMED}
		vb := basic{n: int8(vsize), ext: int8(vsize), unit: int8(vsize), signed: true}
		if p.val == kNone {
			vb.ext = 0 // long double has no external32 form here
		}
		t.sig = []elemRun{{vb, 1}, {basic{n: 4, ext: 4, unit: 4, signed: true}, 1}}
		t.nelems = 2
		t.name = structPairNames[h]
		structPairTypes[h] = t
	}
}

var structPairNames = map[Datatype]string{
	mpi_FLOAT_INT: "MPI_FLOAT_INT", mpi_DOUBLE_INT: "MPI_DOUBLE_INT", mpi_LONG_INT: "MPI_LONG_INT",
	mpi_SHORT_INT: "MPI_SHORT_INT", mpi_LONG_DOUBLE_INT: "MPI_LONG_DOUBLE_INT",
}

// isLoc reports whether op is MPI_MINLOC or MPI_MAXLOC.
func isLoc(op Op) bool { return op == mpi_MINLOC || op == mpi_MAXLOC }

// locFunc returns the MINLOC or MAXLOC combination of count pairs of type d, laid out
// with extent bytes apart: inout's pair becomes in's where in's value is larger
// (MAXLOC) or smaller, and on equal values takes the lower index, as MPICH combines
// them (a NaN compares neither larger, smaller nor equal: inout's pair stays).
func locFunc(op Op, d Datatype, extent int) (func(inout, in []byte, count int), error) {
	p, ok := pairs[d]
	if !ok {
		return nil, mpiErr(mpi_ERR_OP, fmt.Sprintf("%s takes a pair type (MPI_DOUBLE_INT, MPI_2INT...), not datatype %#x", opName(op), uint32(d)))
	}
	if p.val == kNone {
		return nil, errUnsupported(opName(op) + " on MPI_LONG_DOUBLE_INT")
	}
	val, idx := compare(p.val), compare(p.index)
	vs, is := kindSize[p.val], kindSize[p.index]
	want := -1 // MINLOC takes in's pair where in < inout
	if op == mpi_MAXLOC {
		want = 1
	}
	return func(inout, in []byte, count int) {
		for i := range count {
			o, x := i*extent, i*extent+p.idx
			switch val(in[o:], inout[o:]) {
			case want:
				copy(inout[o:o+vs], in[o:o+vs])
				copy(inout[x:x+is], in[x:x+is])
			case 0:
				if idx(in[x:], inout[x:]) < 0 {
					copy(inout[x:x+is], in[x:x+is])
				}
			}
		}
	}, nil
}

func opName(op Op) string {
	if op == mpi_MAXLOC {
		return "MPI_MAXLOC"
	}
	return "MPI_MINLOC"
}

// compare returns a comparison of two elements of kind k: -1, 0 or 1 as a is smaller,
// equal or larger than b, and 2 when they are unordered (a NaN).
func compare(k kind) func(a, b []byte) int {
	le := binary.LittleEndian
	switch k {
	case kI16:
		return func(a, b []byte) int { return cmp.Compare(int16(le.Uint16(a)), int16(le.Uint16(b))) }
	case kI32:
		return func(a, b []byte) int { return cmp.Compare(int32(le.Uint32(a)), int32(le.Uint32(b))) }
	case kI64:
		return func(a, b []byte) int { return cmp.Compare(int64(le.Uint64(a)), int64(le.Uint64(b))) }
	case kF32:
		return func(a, b []byte) int {
			return floatCmp(float64(math.Float32frombits(le.Uint32(a))), float64(math.Float32frombits(le.Uint32(b))))
		}
	}
	return func(a, b []byte) int {
		return floatCmp(math.Float64frombits(le.Uint64(a)), math.Float64frombits(le.Uint64(b)))
	}
}

func floatCmp(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	case a == b:
		return 0
	}
	return 2
}
