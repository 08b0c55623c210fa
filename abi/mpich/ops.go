//go:build cgo

package mpich

// #include "zcalls.h"
import "C"

import (
	"fmt"
	"unsafe"

	"github.com/gorma-hpc/gorma/collectives"
	"github.com/gorma-hpc/gorma/runtime"
)

// builtinOp marks MPICH's predefined operations: 0x580000II, II their index.
const builtinOp = 0x58000000

// builtinOps holds the predefined operations per element kind and index, each a
// collectives.Op of the kind's Go type; nil where MPI does not define the pair.
var builtinOps [nKinds][16]any

func init() {
	allOps[int8](kI8)
	allOps[int16](kI16)
	allOps[int32](kI32)
	allOps[int64](kI64)
	allOps[uint8](kU8)
	allOps[uint16](kU16)
	allOps[uint32](kU32)
	allOps[uint64](kU64)
	allOps[float32](kF32)
	allOps[float64](kF64)
	allOps[complex64](kC64)
	allOps[complex128](kC128)
	intOps[int8](kI8)
	intOps[int16](kI16)
	intOps[int32](kI32)
	intOps[int64](kI64)
	intOps[uint8](kU8)
	intOps[uint16](kU16)
	intOps[uint32](kU32)
	intOps[uint64](kU64)
	orderedOps[float32](kF32)
	orderedOps[float64](kF64)
	initByteOps()
}

func allOps[T runtime.Elem](k kind) {
	builtinOps[k][mpi_SUM&0xff] = collectives.Sum[T]()
	builtinOps[k][mpi_PROD&0xff] = collectives.Prod[T]()
	builtinOps[k][mpi_REPLACE&0xff] = collectives.Replace[T]()
	builtinOps[k][mpi_NO_OP&0xff] = collectives.NoOp[T]()
}

func orderedOps[T collectives.Ordered](k kind) {
	builtinOps[k][mpi_MAX&0xff] = collectives.Max[T]()
	builtinOps[k][mpi_MIN&0xff] = collectives.Min[T]()
}

func intOps[T interface {
	collectives.Integer
	collectives.Ordered
}](k kind) {
	orderedOps[T](k)
	builtinOps[k][mpi_BAND&0xff] = collectives.Band[T]()
	builtinOps[k][mpi_BOR&0xff] = collectives.Bor[T]()
	builtinOps[k][mpi_BXOR&0xff] = collectives.Bxor[T]()
	builtinOps[k][mpi_LAND&0xff] = collectives.Land[T]()
	builtinOps[k][mpi_LOR&0xff] = collectives.Lor[T]()
	builtinOps[k][mpi_LXOR&0xff] = collectives.Lxor[T]()
}

// A userOp is an operation of MPI_Op_create: a C function.
type userOp struct {
	fn      unsafe.Pointer
	commute bool
	large   bool // fn is an MPI_User_function_c (MPI_Op_create_c): its length is an MPI_Count
}

var userOps = newTable[*userOp](kindOp)

// opFor returns op on elements of type T, whose datatype is d.
func opFor[T runtime.Elem](op Op, d Datatype) (collectives.Op[T], error) {
	if op&^0xff == builtinOp {
		var k kind
		if t, err := typeOf(d); err == nil {
			k = t.kind
		}
		if o, ok := builtinOps[k][op&0xff].(collectives.Op[T]); ok {
			return o, nil
		}
		return collectives.Op[T]{}, mpiErr(mpi_ERR_OP, fmt.Sprintf("operation %#x is not defined on datatype %#x", uint32(op), uint32(d)))
	}
	u, ok := userOps.get(int32(op))
	if !ok {
		return collectives.Op[T]{}, errHandle("operation", int32(op))
	}
	var zero T
	size := int(unsafe.Sizeof(zero))
	fn := func(inout, in []T) {
		if len(in) == 0 {
			return
		}
		// The C function counts elements of d; d's elements are T's, so one d is
		// size(d)/size(T) of them.
		n := len(in)
		if t, err := typeOf(d); err == nil && t.size > size {
			n = n * size / t.size
		}
		if u.commute {
			callUserOp(u, unsafe.Pointer(&in[0]), unsafe.Pointer(&inout[0]), n, d)
			return
		}
		// The C function sets its second vector to first ∘ second; the collectives
		// want inout ∘ in in inout. A copy of in takes the result.
		tmp := append([]T(nil), in...)
		callUserOp(u, unsafe.Pointer(&inout[0]), unsafe.Pointer(&tmp[0]), n, d)
		copy(inout, tmp)
	}
	return collectives.NewOp[T]("MPI_Op "+fmt.Sprintf("%#x", uint32(op)), fn, u.commute), nil
}

// callUserOp calls u's C function on n elements of datatype d.
func callUserOp(u *userOp, in, inout unsafe.Pointer, n int, d Datatype) {
	cd := C.int(d)
	if u.large {
		cn := C.long(n)
		C.gorma_call_MPI_User_function_c(u.fn, in, inout, unsafe.Pointer(&cn), unsafe.Pointer(&cd))
		return
	}
	cn := C.int(n)
	C.gorma_call_MPI_User_function(u.fn, in, inout, unsafe.Pointer(&cn), unsafe.Pointer(&cd))
}

// doOpCreate is MPI_Op_create.
func doOpCreate(fn unsafe.Pointer, commute int, op *Op) error {
	if fn == nil {
		return mpiErr(mpi_ERR_ARG, "user function is NULL")
	}
	*op = Op(userOps.add(&userOp{fn: fn, commute: commute != 0}))
	return nil
}

// doOpCreateC is MPI_Op_create_c: fn is an MPI_User_function_c, called with an
// MPI_Count length.
func doOpCreateC(fn unsafe.Pointer, commute int, op *Op) error {
	if fn == nil {
		return mpiErr(mpi_ERR_ARG, "user function is NULL")
	}
	*op = Op(userOps.add(&userOp{fn: fn, commute: commute != 0, large: true}))
	return nil
}

// doOpFree is MPI_Op_free.
func doOpFree(op *Op) error {
	if _, ok := userOps.del(int32(*op)); !ok {
		return errHandle("operation", int32(*op))
	}
	*op = mpi_OP_NULL
	return nil
}
