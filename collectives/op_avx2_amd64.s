#include "textflag.h"

// The kernels in this file set out = a ∘ b over n bytes, n a multiple of 32 (a YMM
// register), where out, a and b are the addresses of the first elements. Each lane's
// result has the bits of Go's operator on the lane's two elements, so op.go's scalar
// loops finish the tail with the same results. out may be a or b: each vector is loaded
// before it is stored. No other overlap is allowed.

// VLOOP runs BODY(INSN, off, R0, R1, R2) over the CX bytes at DI (out), SI (a) and DX
// (b). BODY combines the 32 bytes at off with the scratch registers R0-R2; Y12-Y15 are
// left to the kernel's constants. Four BODYs run per iteration while 128 bytes remain,
// then one per iteration.
#define VLOOP(BODY, INSN) \
loop128: \
	CMPQ	CX, $128; \
	JLT	loop32; \
	BODY(INSN, 0, Y0, Y1, Y2); \
	BODY(INSN, 32, Y3, Y4, Y5); \
	BODY(INSN, 64, Y6, Y7, Y8); \
	BODY(INSN, 96, Y9, Y10, Y11); \
	ADDQ	$128, SI; \
	ADDQ	$128, DX; \
	ADDQ	$128, DI; \
	SUBQ	$128, CX; \
	JMP	loop128; \
loop32: \
	TESTQ	CX, CX; \
	JZ	done; \
	BODY(INSN, 0, Y0, Y1, Y2); \
	ADDQ	$32, SI; \
	ADDQ	$32, DX; \
	ADDQ	$32, DI; \
	SUBQ	$32, CX; \
	JMP	loop32; \
done: \
	VZEROUPPER; \
	RET

// BINARY is one instruction: out = a INSN b (VPADDQ, VPAND, VPMINSD, ...).
#define BINARY(INSN, off, R0, R1, R2) \
	VMOVDQU	off(SI), R0; \
	INSN	off(DX), R0, R0; \
	VMOVDQU	R0, off(DI)

// MIN64 is Go's min on 64-bit lanes, signed with Y15 zero, unsigned with Y15 the lanes'
// sign bits: flipping the sign bits of both operands orders unsigned values as signed
// ones. R2 = a > b selects b, else a.
#define MIN64(INSN, off, R0, R1, R2) \
	VMOVDQU	off(SI), R0; \
	VPXOR	off(DX), Y15, R1; \
	VPXOR	R0, Y15, R2; \
	INSN	R1, R2, R2; \
	VPBLENDVB	R2, off(DX), R0, R0; \
	VMOVDQU	R0, off(DI)

// MAX64 is MIN64 for Go's max: R2 = b > a selects b, else a.
#define MAX64(INSN, off, R0, R1, R2) \
	VMOVDQU	off(SI), R0; \
	VPXOR	off(DX), Y15, R1; \
	VPXOR	R0, Y15, R2; \
	INSN	R2, R1, R2; \
	VPBLENDVB	R2, off(DX), R0, R0; \
	VMOVDQU	R0, off(DI)

// FMIN is Go's min on float lanes, INSN VMINPD or VMINPS, x from a and y from b. It is
// the sequence the compiler emits for min(x, y) on amd64 (the Min64F rule of
// cmd/compile's AMD64.rules), a lane at a time: t1 = MIN(x, y), t2 = MIN(t1, x), result
// t1 | t2, where MIN(p, q) is p < q ? p : q. The same instructions give the same bits
// for NaNs and signed zeros.
#define FMIN(INSN, off, R0, R1, R2) \
	VMOVDQU	off(SI), R0; \
	INSN	off(DX), R0, R1; \
	INSN	R0, R1, R2; \
	VPOR	R1, R2, R2; \
	VMOVDQU	R2, off(DI)

// FMAX is Go's max on float lanes as the compiler emits it (the Max64F rule):
// -min(-x, -y), each negation flipping the sign bit (Y15 holds the lanes' sign bits).
#define FMAX(INSN, off, R0, R1, R2) \
	VPXOR	off(SI), Y15, R0; \
	VPXOR	off(DX), Y15, R1; \
	INSN	R1, R0, R2; \
	INSN	R0, R2, R1; \
	VPOR	R2, R1, R1; \
	VPXOR	R1, Y15, R1; \
	VMOVDQU	R1, off(DI)

// func add64AVX2(out, a, b unsafe.Pointer, n int)
//
// out = a + b on int64 or uint64 lanes.
TEXT ·add64AVX2(SB), NOSPLIT, $0-32
	MOVQ	out+0(FP), DI
	MOVQ	a+8(FP), SI
	MOVQ	b+16(FP), DX
	MOVQ	n+24(FP), CX
	VLOOP(BINARY, VPADDQ)

// func add32AVX2(out, a, b unsafe.Pointer, n int)
//
// out = a + b on int32 or uint32 lanes.
TEXT ·add32AVX2(SB), NOSPLIT, $0-32
	MOVQ	out+0(FP), DI
	MOVQ	a+8(FP), SI
	MOVQ	b+16(FP), DX
	MOVQ	n+24(FP), CX
	VLOOP(BINARY, VPADDD)

// func add16AVX2(out, a, b unsafe.Pointer, n int)
//
// out = a + b on int16 or uint16 lanes.
TEXT ·add16AVX2(SB), NOSPLIT, $0-32
	MOVQ	out+0(FP), DI
	MOVQ	a+8(FP), SI
	MOVQ	b+16(FP), DX
	MOVQ	n+24(FP), CX
	VLOOP(BINARY, VPADDW)

// func add8AVX2(out, a, b unsafe.Pointer, n int)
//
// out = a + b on int8 or uint8 lanes.
TEXT ·add8AVX2(SB), NOSPLIT, $0-32
	MOVQ	out+0(FP), DI
	MOVQ	a+8(FP), SI
	MOVQ	b+16(FP), DX
	MOVQ	n+24(FP), CX
	VLOOP(BINARY, VPADDB)

// func andAVX2(out, a, b unsafe.Pointer, n int)
//
// out = a & b on integers of any width.
TEXT ·andAVX2(SB), NOSPLIT, $0-32
	MOVQ	out+0(FP), DI
	MOVQ	a+8(FP), SI
	MOVQ	b+16(FP), DX
	MOVQ	n+24(FP), CX
	VLOOP(BINARY, VPAND)

// func orAVX2(out, a, b unsafe.Pointer, n int)
//
// out = a | b on integers of any width.
TEXT ·orAVX2(SB), NOSPLIT, $0-32
	MOVQ	out+0(FP), DI
	MOVQ	a+8(FP), SI
	MOVQ	b+16(FP), DX
	MOVQ	n+24(FP), CX
	VLOOP(BINARY, VPOR)

// func xorAVX2(out, a, b unsafe.Pointer, n int)
//
// out = a ^ b on integers of any width.
TEXT ·xorAVX2(SB), NOSPLIT, $0-32
	MOVQ	out+0(FP), DI
	MOVQ	a+8(FP), SI
	MOVQ	b+16(FP), DX
	MOVQ	n+24(FP), CX
	VLOOP(BINARY, VPXOR)

// func minI32AVX2(out, a, b unsafe.Pointer, n int)
//
// out = min(a, b) on int32 lanes.
TEXT ·minI32AVX2(SB), NOSPLIT, $0-32
	MOVQ	out+0(FP), DI
	MOVQ	a+8(FP), SI
	MOVQ	b+16(FP), DX
	MOVQ	n+24(FP), CX
	VLOOP(BINARY, VPMINSD)

// func minU32AVX2(out, a, b unsafe.Pointer, n int)
//
// out = min(a, b) on uint32 lanes.
TEXT ·minU32AVX2(SB), NOSPLIT, $0-32
	MOVQ	out+0(FP), DI
	MOVQ	a+8(FP), SI
	MOVQ	b+16(FP), DX
	MOVQ	n+24(FP), CX
	VLOOP(BINARY, VPMINUD)

// func minI16AVX2(out, a, b unsafe.Pointer, n int)
//
// out = min(a, b) on int16 lanes.
TEXT ·minI16AVX2(SB), NOSPLIT, $0-32
	MOVQ	out+0(FP), DI
	MOVQ	a+8(FP), SI
	MOVQ	b+16(FP), DX
	MOVQ	n+24(FP), CX
	VLOOP(BINARY, VPMINSW)

// func minU16AVX2(out, a, b unsafe.Pointer, n int)
//
// out = min(a, b) on uint16 lanes.
TEXT ·minU16AVX2(SB), NOSPLIT, $0-32
	MOVQ	out+0(FP), DI
	MOVQ	a+8(FP), SI
	MOVQ	b+16(FP), DX
	MOVQ	n+24(FP), CX
	VLOOP(BINARY, VPMINUW)

// func minI8AVX2(out, a, b unsafe.Pointer, n int)
//
// out = min(a, b) on int8 lanes.
TEXT ·minI8AVX2(SB), NOSPLIT, $0-32
	MOVQ	out+0(FP), DI
	MOVQ	a+8(FP), SI
	MOVQ	b+16(FP), DX
	MOVQ	n+24(FP), CX
	VLOOP(BINARY, VPMINSB)

// func minU8AVX2(out, a, b unsafe.Pointer, n int)
//
// out = min(a, b) on uint8 lanes.
TEXT ·minU8AVX2(SB), NOSPLIT, $0-32
	MOVQ	out+0(FP), DI
	MOVQ	a+8(FP), SI
	MOVQ	b+16(FP), DX
	MOVQ	n+24(FP), CX
	VLOOP(BINARY, VPMINUB)

// func maxI32AVX2(out, a, b unsafe.Pointer, n int)
//
// out = max(a, b) on int32 lanes.
TEXT ·maxI32AVX2(SB), NOSPLIT, $0-32
	MOVQ	out+0(FP), DI
	MOVQ	a+8(FP), SI
	MOVQ	b+16(FP), DX
	MOVQ	n+24(FP), CX
	VLOOP(BINARY, VPMAXSD)

// func maxU32AVX2(out, a, b unsafe.Pointer, n int)
//
// out = max(a, b) on uint32 lanes.
TEXT ·maxU32AVX2(SB), NOSPLIT, $0-32
	MOVQ	out+0(FP), DI
	MOVQ	a+8(FP), SI
	MOVQ	b+16(FP), DX
	MOVQ	n+24(FP), CX
	VLOOP(BINARY, VPMAXUD)

// func maxI16AVX2(out, a, b unsafe.Pointer, n int)
//
// out = max(a, b) on int16 lanes.
TEXT ·maxI16AVX2(SB), NOSPLIT, $0-32
	MOVQ	out+0(FP), DI
	MOVQ	a+8(FP), SI
	MOVQ	b+16(FP), DX
	MOVQ	n+24(FP), CX
	VLOOP(BINARY, VPMAXSW)

// func maxU16AVX2(out, a, b unsafe.Pointer, n int)
//
// out = max(a, b) on uint16 lanes.
TEXT ·maxU16AVX2(SB), NOSPLIT, $0-32
	MOVQ	out+0(FP), DI
	MOVQ	a+8(FP), SI
	MOVQ	b+16(FP), DX
	MOVQ	n+24(FP), CX
	VLOOP(BINARY, VPMAXUW)

// func maxI8AVX2(out, a, b unsafe.Pointer, n int)
//
// out = max(a, b) on int8 lanes.
TEXT ·maxI8AVX2(SB), NOSPLIT, $0-32
	MOVQ	out+0(FP), DI
	MOVQ	a+8(FP), SI
	MOVQ	b+16(FP), DX
	MOVQ	n+24(FP), CX
	VLOOP(BINARY, VPMAXSB)

// func maxU8AVX2(out, a, b unsafe.Pointer, n int)
//
// out = max(a, b) on uint8 lanes.
TEXT ·maxU8AVX2(SB), NOSPLIT, $0-32
	MOVQ	out+0(FP), DI
	MOVQ	a+8(FP), SI
	MOVQ	b+16(FP), DX
	MOVQ	n+24(FP), CX
	VLOOP(BINARY, VPMAXUB)

// func minI64AVX2(out, a, b unsafe.Pointer, n int)
//
// out = min(a, b) on int64 lanes (VPCMPGTQ and VPBLENDVB).
TEXT ·minI64AVX2(SB), NOSPLIT, $0-32
	MOVQ	out+0(FP), DI
	MOVQ	a+8(FP), SI
	MOVQ	b+16(FP), DX
	MOVQ	n+24(FP), CX
	VPXOR	Y15, Y15, Y15
	VLOOP(MIN64, VPCMPGTQ)

// func minU64AVX2(out, a, b unsafe.Pointer, n int)
//
// out = min(a, b) on uint64 lanes: minI64AVX2 on sign-flipped operands.
TEXT ·minU64AVX2(SB), NOSPLIT, $0-32
	MOVQ	out+0(FP), DI
	MOVQ	a+8(FP), SI
	MOVQ	b+16(FP), DX
	MOVQ	n+24(FP), CX
	VPCMPEQQ	Y15, Y15, Y15
	VPSLLQ	$63, Y15, Y15
	VLOOP(MIN64, VPCMPGTQ)

// func maxI64AVX2(out, a, b unsafe.Pointer, n int)
//
// out = max(a, b) on int64 lanes.
TEXT ·maxI64AVX2(SB), NOSPLIT, $0-32
	MOVQ	out+0(FP), DI
	MOVQ	a+8(FP), SI
	MOVQ	b+16(FP), DX
	MOVQ	n+24(FP), CX
	VPXOR	Y15, Y15, Y15
	VLOOP(MAX64, VPCMPGTQ)

// func maxU64AVX2(out, a, b unsafe.Pointer, n int)
//
// out = max(a, b) on uint64 lanes.
TEXT ·maxU64AVX2(SB), NOSPLIT, $0-32
	MOVQ	out+0(FP), DI
	MOVQ	a+8(FP), SI
	MOVQ	b+16(FP), DX
	MOVQ	n+24(FP), CX
	VPCMPEQQ	Y15, Y15, Y15
	VPSLLQ	$63, Y15, Y15
	VLOOP(MAX64, VPCMPGTQ)

// func minF64AVX2(out, a, b unsafe.Pointer, n int)
//
// out = min(a, b) on float64 lanes, bit for bit Go's min (FMIN).
TEXT ·minF64AVX2(SB), NOSPLIT, $0-32
	MOVQ	out+0(FP), DI
	MOVQ	a+8(FP), SI
	MOVQ	b+16(FP), DX
	MOVQ	n+24(FP), CX
	VLOOP(FMIN, VMINPD)

// func minF32AVX2(out, a, b unsafe.Pointer, n int)
//
// out = min(a, b) on float32 lanes (FMIN).
TEXT ·minF32AVX2(SB), NOSPLIT, $0-32
	MOVQ	out+0(FP), DI
	MOVQ	a+8(FP), SI
	MOVQ	b+16(FP), DX
	MOVQ	n+24(FP), CX
	VLOOP(FMIN, VMINPS)

// func maxF64AVX2(out, a, b unsafe.Pointer, n int)
//
// out = max(a, b) on float64 lanes, bit for bit Go's max (FMAX).
TEXT ·maxF64AVX2(SB), NOSPLIT, $0-32
	MOVQ	out+0(FP), DI
	MOVQ	a+8(FP), SI
	MOVQ	b+16(FP), DX
	MOVQ	n+24(FP), CX
	VPCMPEQQ	Y15, Y15, Y15
	VPSLLQ	$63, Y15, Y15
	VLOOP(FMAX, VMINPD)

// func maxF32AVX2(out, a, b unsafe.Pointer, n int)
//
// out = max(a, b) on float32 lanes (FMAX).
TEXT ·maxF32AVX2(SB), NOSPLIT, $0-32
	MOVQ	out+0(FP), DI
	MOVQ	a+8(FP), SI
	MOVQ	b+16(FP), DX
	MOVQ	n+24(FP), CX
	VPCMPEQD	Y15, Y15, Y15
	VPSLLD	$31, Y15, Y15
	VLOOP(FMAX, VMINPS)
