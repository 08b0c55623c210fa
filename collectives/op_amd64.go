package collectives

import (
	"unsafe"

	"golang.org/x/sys/cpu"

	"github.com/gorma-hpc/gorma/runtime"
)

// haveAVX2 gates the vector kernels: the CPU has AVX2 and the OS saves its registers.
var haveAVX2 = cpu.X86.HasAVX2

// addF64AVX2 and addF32AVX2 set out[i] = a[i] + b[i] for i < n (op_amd64.s).
//
//go:noescape
func addF64AVX2(out, a, b *float64, n int)

//go:noescape
func addF32AVX2(out, a, b *float32, n int)

// vecBytes is the width of a YMM register. The kernels of op_avx2_amd64.s combine whole
// registers only.
const vecBytes = 32

// The functions below (sumVec, minVec, maxVec, bandVec, borVec, bxorVec) set
// out[i] = a[i] ∘ b[i] for the first k elements of out with AVX2 and return k. The
// results are bit for bit those of the scalar loops in op.go, which combine the
// remaining elements. k is 0 without AVX2, for fewer than vecMin elements, and for
// element types without a kernel. Those are complex numbers and defined types
// (type Celsius float64, say), which the type switches do not match; the bitwise
// operators take every integer type. a and b are at least as long as out; out may be a
// or b. The scalar loops are compute-bound: they combine long vectors well below the
// memory bandwidth a copy of the same vectors reaches (`go test -bench Apply
// ./collectives` and `go test -bench DirectCombine ./collectives` measure them).

// sumVec is Sum's kernel. It combines every element of float64 and float32 vectors, and
// the whole YMM registers of integer ones (k a multiple of vecBytes/size).
func sumVec[T runtime.Elem](out, a, b []T) int {
	if !haveAVX2 || len(out) < vecMin {
		return 0
	}
	return sumAVX2(out, a, b)
}

func sumAVX2[T runtime.Elem](out, a, b []T) int {
	o, x, y, n := vecArgs(out, a, b)
	var z T
	switch any(z).(type) {
	case float64:
		addF64AVX2((*float64)(o), (*float64)(x), (*float64)(y), len(out))
		return len(out)
	case float32:
		addF32AVX2((*float32)(o), (*float32)(x), (*float32)(y), len(out))
		return len(out)
	case int64, uint64:
		add64AVX2(o, x, y, n)
	case int32, uint32:
		add32AVX2(o, x, y, n)
	case int16, uint16:
		add16AVX2(o, x, y, n)
	case int8, uint8:
		add8AVX2(o, x, y, n)
	default:
		return 0
	}
	return n / int(unsafe.Sizeof(z))
}

// minVec is Min's kernel.
func minVec[T Ordered](out, a, b []T) int {
	if !haveAVX2 || len(out) < vecMin {
		return 0
	}
	return minAVX2(out, a, b)
}

func minAVX2[T Ordered](out, a, b []T) int {
	o, x, y, n := vecArgs(out, a, b)
	var z T
	switch any(z).(type) {
	case int64:
		minI64AVX2(o, x, y, n)
	case uint64:
		minU64AVX2(o, x, y, n)
	case int32:
		minI32AVX2(o, x, y, n)
	case uint32:
		minU32AVX2(o, x, y, n)
	case int16:
		minI16AVX2(o, x, y, n)
	case uint16:
		minU16AVX2(o, x, y, n)
	case int8:
		minI8AVX2(o, x, y, n)
	case uint8:
		minU8AVX2(o, x, y, n)
	case float64:
		minF64AVX2(o, x, y, n)
	case float32:
		minF32AVX2(o, x, y, n)
	default:
		return 0
	}
	return n / int(unsafe.Sizeof(z))
}

// maxVec is Max's kernel.
func maxVec[T Ordered](out, a, b []T) int {
	if !haveAVX2 || len(out) < vecMin {
		return 0
	}
	return maxAVX2(out, a, b)
}

func maxAVX2[T Ordered](out, a, b []T) int {
	o, x, y, n := vecArgs(out, a, b)
	var z T
	switch any(z).(type) {
	case int64:
		maxI64AVX2(o, x, y, n)
	case uint64:
		maxU64AVX2(o, x, y, n)
	case int32:
		maxI32AVX2(o, x, y, n)
	case uint32:
		maxU32AVX2(o, x, y, n)
	case int16:
		maxI16AVX2(o, x, y, n)
	case uint16:
		maxU16AVX2(o, x, y, n)
	case int8:
		maxI8AVX2(o, x, y, n)
	case uint8:
		maxU8AVX2(o, x, y, n)
	case float64:
		maxF64AVX2(o, x, y, n)
	case float32:
		maxF32AVX2(o, x, y, n)
	default:
		return 0
	}
	return n / int(unsafe.Sizeof(z))
}

// bandVec is Band's kernel.
func bandVec[T Integer](out, a, b []T) int {
	if !haveAVX2 || len(out) < vecMin {
		return 0
	}
	o, x, y, n := vecArgs(out, a, b)
	andAVX2(o, x, y, n)
	return n / int(unsafe.Sizeof(out[0]))
}

// borVec is Bor's kernel.
func borVec[T Integer](out, a, b []T) int {
	if !haveAVX2 || len(out) < vecMin {
		return 0
	}
	o, x, y, n := vecArgs(out, a, b)
	orAVX2(o, x, y, n)
	return n / int(unsafe.Sizeof(out[0]))
}

// bxorVec is Bxor's kernel.
func bxorVec[T Integer](out, a, b []T) int {
	if !haveAVX2 || len(out) < vecMin {
		return 0
	}
	o, x, y, n := vecArgs(out, a, b)
	xorAVX2(o, x, y, n)
	return n / int(unsafe.Sizeof(out[0]))
}

// vecArgs returns the addresses of the first elements of out, a and b, and the bytes of
// out's whole vectors: a multiple of vecBytes. out is not empty. It panics if a or b is
// shorter than out, so that no kernel reads past them.
func vecArgs[T any](out, a, b []T) (o, x, y unsafe.Pointer, n int) {
	a, b = a[:len(out)], b[:len(out)]
	n = len(out) * int(unsafe.Sizeof(out[0])) &^ (vecBytes - 1)
	return unsafe.Pointer(&out[0]), unsafe.Pointer(&a[0]), unsafe.Pointer(&b[0]), n
}
