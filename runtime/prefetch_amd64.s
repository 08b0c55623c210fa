#include "textflag.h"

// func prefetchW(p unsafe.Pointer)
TEXT ·prefetchW(SB), NOSPLIT|NOFRAME, $0-8
	MOVQ p+0(FP), AX
	// PREFETCHW (AX): 0F 0D /1, which Go's assembler does not name.
	BYTE $0x0F; BYTE $0x0D; BYTE $0x08
	RET

// func prefetchR(p unsafe.Pointer)
TEXT ·prefetchR(SB), NOSPLIT|NOFRAME, $0-8
	MOVQ p+0(FP), AX
	PREFETCHT0 (AX)
	RET

// func spinPause()
TEXT ·spinPause(SB), NOSPLIT|NOFRAME, $0-0
	PAUSE
	RET
