package runtime

import (
	"bytes"
	"testing"
)

// FuzzDecodeHeader: a peer's message never makes decodeHeader panic; a valid RTS or FIN
// decodes to the fields it was built from.
func FuzzDecodeHeader(f *testing.F) {
	rts := make([]byte, rtsLen)
	putRTS(rts, 7, 42, 1, 2, 3, 4)
	fin := make([]byte, finLen)
	putFIN(fin, msgFIN, 99)
	eager := make([]byte, hdrLen+5)
	putHeader(eager, msgEager, 3, -1)
	cancel := make([]byte, finLen)
	putFIN(cancel, msgCancel, 98)
	for _, b := range [][]byte{rts, fin, cancel, eager, {}, {msgRTS, wireVersion}} {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, msg []byte) {
		h, err := decodeHeader(msg)
		if err != nil {
			return
		}
		if h.kind == msgFIN || h.kind == msgCancel || h.kind == msgWithdrawn {
			again := make([]byte, finLen)
			putFIN(again, h.kind, h.cookie)
			if !bytes.Equal(again[:2], msg[:2]) || !bytes.Equal(again[hdrLen:], msg[hdrLen:]) {
				t.Fatalf("message %+v does not re-encode to the message", h)
			}
		}
		if h.kind == msgRTS && !h.layout { // a layout offer re-encodes in FuzzDecodeOffer
			again := make([]byte, rtsLen)
			putRTS(again, h.ctx, h.tag, h.cookie, h.rkey, h.off, h.length)
			if !bytes.Equal(again, msg) {
				t.Fatalf("RTS %+v does not re-encode to the message", h)
			}
		}
	})
}

// FuzzDecodeCard: an endpoint card from the launcher's exchange never makes decodeCard
// panic, and an accepted card re-encodes to the same bytes.
func FuzzDecodeCard(f *testing.F) {
	c := card{host: "node1", pid: 42, probe: 7, eagerSHM: 16 << 10, eagerTCP: 64 << 10}
	c.id.netNS, c.id.pidNS, c.id.uid = 1, 2, 3
	f.Add(c.encode())
	f.Add([]byte(cardMagic))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := decodeCard(b)
		if err != nil {
			return
		}
		if again := c.encode(); !bytes.Equal(again, b) {
			t.Fatalf("card %+v re-encodes to %x, not %x", c, again, b)
		}
	})
}

// FuzzFindDesc: a peer's region description never makes findDesc panic.
func FuzzFindDesc(f *testing.F) {
	f.Add([]byte{descVers, 1, 's', 1, 0, 0, 0, 0, 0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0}, byte('s'))
	f.Add([]byte{descVers, 3}, byte('t'))
	f.Add([]byte{}, byte(0))
	f.Fuzz(func(t *testing.T, b []byte, want byte) {
		if _, _, ok := findDesc(b, want); ok && len(b) < 19 {
			t.Fatalf("found a key in %d bytes", len(b))
		}
	})
}

// FuzzDecodeCheckMsg: a peer's collective call check message never makes decodeCheckMsg
// panic, and an accepted message re-encodes to the same bytes, its calls decoding to
// signatures that re-encode to the same calls.
func FuzzDecodeCheckMsg(f *testing.F) {
	sum := CallSig{Call: "Allreduce", Count: 8, Type: "float64", Op: "sum", Root: -1}
	fence := CallSig{Call: "window.Fence", Count: -1, Root: -1, Win: "win3"}
	f.Add(appendCheckMsg(nil, checkEntry{0, appendCheckSig(nil, 2, &sum)}, checkEntry{7, appendCheckSig(nil, 2, &fence)}))
	f.Add([]byte{checkVersion})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, msg []byte) {
		lo, hi, err := decodeCheckMsg(msg)
		if err != nil {
			return
		}
		if again := appendCheckMsg(nil, lo, hi); !bytes.Equal(again, msg) {
			t.Fatalf("%x re-encodes to %x", msg, again)
		}
		for _, e := range []checkEntry{lo, hi} {
			n, sig, err := decodeCheckSig(e.sig)
			if err != nil || n != len(e.sig) {
				t.Fatalf("call %x of an accepted message: %d bytes, %v", e.sig, n, err)
			}
			seq := le.Uint64(e.sig)
			if again := appendCheckSig(nil, seq, &sig); !bytes.Equal(again, e.sig) {
				t.Fatalf("call %x decodes to %+v, which re-encodes to %x", e.sig, sig, again)
			}
		}
	})
}
