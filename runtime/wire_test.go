package runtime

import (
	"errors"
	"slices"
	"testing"
)

func TestDecodeHeader(t *testing.T) {
	rts := make([]byte, rtsLen)
	putRTS(rts, 3, 7, 1, 2, 3, 4)
	fin := make([]byte, finLen)
	putFIN(fin, msgFIN, 9)
	cancel, withdrawn := make([]byte, finLen), make([]byte, finLen)
	putFIN(cancel, msgCancel, 10)
	putFIN(withdrawn, msgWithdrawn, 11)
	nop := make([]byte, hdrLen)
	putHeader(nop, msgNop, 0, 0)
	eager := make([]byte, hdrLen+5)
	putHeader(eager, msgEager, 1, 42)
	bad := func(b []byte, f func([]byte)) []byte { b = slices.Clone(b); f(b); return b }
	for _, tc := range []struct {
		name string
		msg  []byte
		want header
		ok   bool
	}{
		{"eager", eager, header{kind: msgEager, ctx: 1, tag: 42}, true},
		{"rts", rts, header{kind: msgRTS, ctx: 3, tag: 7, cookie: 1, rkey: 2, off: 3, length: 4}, true},
		{"fin", fin, header{kind: msgFIN, cookie: 9}, true},
		{"nop", nop, header{kind: msgNop}, true},
		{"cancel", cancel, header{kind: msgCancel, cookie: 10}, true},
		{"withdrawn", withdrawn, header{kind: msgWithdrawn, cookie: 11}, true},
		{"long cancel", append(slices.Clone(cancel), 0), header{}, false},
		{"nop with payload", append(slices.Clone(nop), 0), header{}, false},
		{"short fin", fin[:finLen-1], header{}, false},
		{"short", eager[:hdrLen-1], header{}, false},
		{"version", bad(eager, func(b []byte) { b[1] = wireVersion + 1 }), header{}, false},
		{"kind", bad(nop, func(b []byte) { b[0] = msgWithdrawn + 1 }), header{}, false},
	} {
		h, err := decodeHeader(tc.msg)
		var we *errWire
		switch {
		case tc.ok && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.ok && h != tc.want:
			t.Errorf("%s: got %+v, want %+v", tc.name, h, tc.want)
		case !tc.ok && !errors.As(err, &we):
			t.Errorf("%s: got %v, want an *errWire", tc.name, err)
		}
	}
}

// TestTxDone checks the slot accounting of unsignaled messages: the completion of a
// signaled message frees its slot and those of every message posted before it, and no
// later one.
func TestTxDone(t *testing.T) {
	p := &peer{eagerSlots: eagerSlots{txPend: make([]uint32, 4), txHead: 3}}
	for _, i := range []uint32{2, 0, 3, 1} { // posted in this order, wrapping the ring
		p.txPend[(p.txHead+p.txN)%len(p.txPend)] = i
		p.txN++
	}
	p.txDone(0)
	if !slices.Equal(p.txFree, []uint32{2, 0}) || p.sqFree != 2 || p.txN != 2 {
		t.Fatalf("after the completion of slot 0: free %v, sqFree %d, pending %d; want [2 0], 2, 2", p.txFree, p.sqFree, p.txN)
	}
	p.txDone(1)
	if !slices.Equal(p.txFree, []uint32{2, 0, 3, 1}) || p.sqFree != 4 || p.txN != 0 {
		t.Fatalf("after the completion of slot 1: free %v, sqFree %d, pending %d; want [2 0 3 1], 4, 0", p.txFree, p.sqFree, p.txN)
	}
}
