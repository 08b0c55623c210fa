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
	putFIN(fin, 99)
	eager := make([]byte, hdrLen+5)
	putHeader(eager, msgEager, 3, -1)
	for _, b := range [][]byte{rts, fin, eager, {}, {msgRTS, wireVersion}} {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, msg []byte) {
		h, err := decodeHeader(msg)
		if err != nil {
			return
		}
		if h.kind == msgRTS {
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
