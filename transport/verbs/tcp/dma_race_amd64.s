//go:build race

#include "textflag.h"

// func dmaAdd64(p *uint64, d uint64) uint64
TEXT ·dmaAdd64(SB), NOSPLIT, $0-24
	MOVQ	p+0(FP), BX
	MOVQ	d+8(FP), AX
	LOCK
	XADDQ	AX, 0(BX)
	MOVQ	AX, ret+16(FP)
	RET

// func dmaCas64(p *uint64, old, new uint64) bool
TEXT ·dmaCas64(SB), NOSPLIT, $0-25
	MOVQ	p+0(FP), BX
	MOVQ	old+8(FP), AX
	MOVQ	new+16(FP), CX
	LOCK
	CMPXCHGQ	CX, 0(BX)
	SETEQ	ret+24(FP)
	RET

// func dmaLoad64(p *uint64) uint64
TEXT ·dmaLoad64(SB), NOSPLIT, $0-16
	MOVQ	p+0(FP), AX
	MOVQ	0(AX), AX
	MOVQ	AX, ret+8(FP)
	RET
