package collectives

import "unsafe"

// The kernels of op_avx2_amd64.s set out = a ∘ b over n bytes, n a multiple of vecBytes,
// where out, a and b point at the first elements. Each lane gets the bits of Go's
// operator on its two elements, so a scalar loop may finish the tail. The name tells the
// operator and the lanes: add32AVX2 adds 32-bit lanes (int32 or uint32), minU16AVX2 is
// min on uint16 lanes, and andAVX2, orAVX2 and xorAVX2 work on bits, for any integer
// width. out may be a or b; no other overlap is allowed.

//go:noescape
func add64AVX2(out, a, b unsafe.Pointer, n int)

//go:noescape
func add32AVX2(out, a, b unsafe.Pointer, n int)

//go:noescape
func add16AVX2(out, a, b unsafe.Pointer, n int)

//go:noescape
func add8AVX2(out, a, b unsafe.Pointer, n int)

//go:noescape
func andAVX2(out, a, b unsafe.Pointer, n int)

//go:noescape
func orAVX2(out, a, b unsafe.Pointer, n int)

//go:noescape
func xorAVX2(out, a, b unsafe.Pointer, n int)

//go:noescape
func minI64AVX2(out, a, b unsafe.Pointer, n int)

//go:noescape
func minU64AVX2(out, a, b unsafe.Pointer, n int)

//go:noescape
func minI32AVX2(out, a, b unsafe.Pointer, n int)

//go:noescape
func minU32AVX2(out, a, b unsafe.Pointer, n int)

//go:noescape
func minI16AVX2(out, a, b unsafe.Pointer, n int)

//go:noescape
func minU16AVX2(out, a, b unsafe.Pointer, n int)

//go:noescape
func minI8AVX2(out, a, b unsafe.Pointer, n int)

//go:noescape
func minU8AVX2(out, a, b unsafe.Pointer, n int)

//go:noescape
func maxI64AVX2(out, a, b unsafe.Pointer, n int)

//go:noescape
func maxU64AVX2(out, a, b unsafe.Pointer, n int)

//go:noescape
func maxI32AVX2(out, a, b unsafe.Pointer, n int)

//go:noescape
func maxU32AVX2(out, a, b unsafe.Pointer, n int)

//go:noescape
func maxI16AVX2(out, a, b unsafe.Pointer, n int)

//go:noescape
func maxU16AVX2(out, a, b unsafe.Pointer, n int)

//go:noescape
func maxI8AVX2(out, a, b unsafe.Pointer, n int)

//go:noescape
func maxU8AVX2(out, a, b unsafe.Pointer, n int)

//go:noescape
func minF64AVX2(out, a, b unsafe.Pointer, n int)

//go:noescape
func minF32AVX2(out, a, b unsafe.Pointer, n int)

//go:noescape
func maxF64AVX2(out, a, b unsafe.Pointer, n int)

//go:noescape
func maxF32AVX2(out, a, b unsafe.Pointer, n int)
