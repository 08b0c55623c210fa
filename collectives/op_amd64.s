#include "textflag.h"

// func addF64AVX2(out, a, b *float64, n int)
//
// out[i] = a[i] + b[i] for i < n, four float64 to a YMM register, 16 per iteration,
// then 4 at a time, then one at a time. out may be a or b (each element is read before
// it is written). Every add is the scalar IEEE add of the Go loop it replaces, in the
// same order, so the results are bit for bit the same.
TEXT ·addF64AVX2(SB), NOSPLIT, $0-32
	MOVQ	out+0(FP), DI
	MOVQ	a+8(FP), SI
	MOVQ	b+16(FP), DX
	MOVQ	n+24(FP), CX
loop16:
	CMPQ	CX, $16
	JLT	loop4
	VMOVUPD	0(SI), Y0
	VMOVUPD	32(SI), Y1
	VMOVUPD	64(SI), Y2
	VMOVUPD	96(SI), Y3
	VADDPD	0(DX), Y0, Y0
	VADDPD	32(DX), Y1, Y1
	VADDPD	64(DX), Y2, Y2
	VADDPD	96(DX), Y3, Y3
	VMOVUPD	Y0, 0(DI)
	VMOVUPD	Y1, 32(DI)
	VMOVUPD	Y2, 64(DI)
	VMOVUPD	Y3, 96(DI)
	ADDQ	$128, SI
	ADDQ	$128, DX
	ADDQ	$128, DI
	SUBQ	$16, CX
	JMP	loop16
loop4:
	CMPQ	CX, $4
	JLT	loop1
	VMOVUPD	0(SI), Y0
	VADDPD	0(DX), Y0, Y0
	VMOVUPD	Y0, 0(DI)
	ADDQ	$32, SI
	ADDQ	$32, DX
	ADDQ	$32, DI
	SUBQ	$4, CX
	JMP	loop4
loop1:
	TESTQ	CX, CX
	JZ	done
	MOVSD	0(SI), X0
	ADDSD	0(DX), X0
	MOVSD	X0, 0(DI)
	ADDQ	$8, SI
	ADDQ	$8, DX
	ADDQ	$8, DI
	DECQ	CX
	JMP	loop1
done:
	VZEROUPPER
	RET

// func addF32AVX2(out, a, b *float32, n int)
//
// addF64AVX2 for float32: eight to a YMM register, 32 per iteration.
TEXT ·addF32AVX2(SB), NOSPLIT, $0-32
	MOVQ	out+0(FP), DI
	MOVQ	a+8(FP), SI
	MOVQ	b+16(FP), DX
	MOVQ	n+24(FP), CX
loop32:
	CMPQ	CX, $32
	JLT	loop8
	VMOVUPS	0(SI), Y0
	VMOVUPS	32(SI), Y1
	VMOVUPS	64(SI), Y2
	VMOVUPS	96(SI), Y3
	VADDPS	0(DX), Y0, Y0
	VADDPS	32(DX), Y1, Y1
	VADDPS	64(DX), Y2, Y2
	VADDPS	96(DX), Y3, Y3
	VMOVUPS	Y0, 0(DI)
	VMOVUPS	Y1, 32(DI)
	VMOVUPS	Y2, 64(DI)
	VMOVUPS	Y3, 96(DI)
	ADDQ	$128, SI
	ADDQ	$128, DX
	ADDQ	$128, DI
	SUBQ	$32, CX
	JMP	loop32
loop8:
	CMPQ	CX, $8
	JLT	loop1
	VMOVUPS	0(SI), Y0
	VADDPS	0(DX), Y0, Y0
	VMOVUPS	Y0, 0(DI)
	ADDQ	$32, SI
	ADDQ	$32, DX
	ADDQ	$32, DI
	SUBQ	$8, CX
	JMP	loop8
loop1:
	TESTQ	CX, CX
	JZ	done
	MOVSS	0(SI), X0
	ADDSS	0(DX), X0
	MOVSS	X0, 0(DI)
	ADDQ	$4, SI
	ADDQ	$4, DX
	ADDQ	$4, DI
	DECQ	CX
	JMP	loop1
done:
	VZEROUPPER
	RET
