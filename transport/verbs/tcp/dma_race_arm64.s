//go:build race

#include "textflag.h"

// func dmaAdd64(p *uint64, d uint64) uint64
TEXT ·dmaAdd64(SB), NOSPLIT, $0-24
	MOVD	p+0(FP), R0
	MOVD	d+8(FP), R1
again:
	LDAXR	(R0), R2
	ADD	R1, R2, R3
	STLXR	R3, (R0), R4
	CBNZ	R4, again
	MOVD	R2, ret+16(FP)
	RET

// func dmaCas64(p *uint64, old, new uint64) bool
TEXT ·dmaCas64(SB), NOSPLIT, $0-25
	MOVD	p+0(FP), R0
	MOVD	old+8(FP), R1
	MOVD	new+16(FP), R2
again:
	LDAXR	(R0), R3
	CMP	R1, R3
	BNE	fail
	STLXR	R2, (R0), R4
	CBNZ	R4, again
	MOVD	$1, R5
	MOVB	R5, ret+24(FP)
	RET
fail:
	CLREX
	MOVB	ZR, ret+24(FP)
	RET

// func dmaLoad64(p *uint64) uint64
TEXT ·dmaLoad64(SB), NOSPLIT, $0-16
	MOVD	p+0(FP), R0
	LDAR	(R0), R1
	MOVD	R1, ret+8(FP)
	RET
