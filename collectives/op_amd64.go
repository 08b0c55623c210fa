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

// vecMin is the shortest vector (elements) handed to a vector kernel: below it the call
// costs more than the loop.
const vecMin = 16

// addVec sets out[i] = a[i] + b[i] for i < len(out) with AVX2 when T is float64 or
// float32 (Sum's hot cases: the combination of a long Allreduce), and reports whether it
// did; a and b are at least as long as out. The scalar loops are compute-bound: they
// combine long vectors well below the memory bandwidth a copy of the same vectors reaches
// (`go test -bench DirectCombine ./collectives` measures the combination).
func addVec[T runtime.Elem](out, a, b []T) bool {
	if !haveAVX2 || len(out) < vecMin {
		return false
	}
	var z T
	switch any(z).(type) {
	case float64:
		addF64AVX2((*float64)(unsafe.Pointer(&out[0])), (*float64)(unsafe.Pointer(&a[0])),
			(*float64)(unsafe.Pointer(&b[0])), len(out))
	case float32:
		addF32AVX2((*float32)(unsafe.Pointer(&out[0])), (*float32)(unsafe.Pointer(&a[0])),
			(*float32)(unsafe.Pointer(&b[0])), len(out))
	default:
		return false
	}
	return true
}
