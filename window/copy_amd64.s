#include "textflag.h"

// func copyERMS(dst, src unsafe.Pointer, n uintptr)
TEXT ·copyERMS(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	CLD
	REP; MOVSB
	RET
