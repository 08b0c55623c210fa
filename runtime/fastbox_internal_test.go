package runtime

import (
	"bytes"
	"errors"
	"testing"
)

func TestDecodeFastbox(t *testing.T) {
	b := make([]byte, fbRecHdr+fbMaxPayload)
	payload := bytes.Repeat([]byte{7}, fbMaxPayload)
	encodeFastbox(b, 3, -5, 42, payload)
	var rec fbRecord
	err := decodeFastbox(b, &rec)
	if err != nil || rec != (fbRecord{tag: -5, ctx: 3, n: fbMaxPayload, qseq: 42}) {
		t.Fatalf("got %+v, %v", rec, err)
	}
	var we *errWire
	if err := decodeFastbox(b[:len(b)-1], &rec); !errors.As(err, &we) {
		t.Fatalf("record past the end of the box: got %v, want an *errWire", err)
	}
	le.PutUint16(b[12:], fbMaxPayload+1)
	if err := decodeFastbox(append(b, 0), &rec); !errors.As(err, &we) {
		t.Fatalf("oversized record: got %v, want an *errWire", err)
	}
	if err := decodeFastbox(b[:fbRecHdr-1], &rec); !errors.As(err, &we) {
		t.Fatalf("short cell: got %v, want an *errWire", err)
	}
	le.PutUint16(b[12:], fbPad)
	if err := decodeFastbox(b[:fbRecHdr], &rec); err != nil || !rec.pad {
		t.Fatalf("pad record: got %+v, %v", rec, err)
	}
}

// TestFastboxCells pins the record sizes: every message of up to 296 bytes (OSU's 256
// included) fits one cell, and the largest record fits the box with room for more.
func TestFastboxCells(t *testing.T) {
	for _, c := range []struct {
		n    int
		want uint64
	}{{0, 1}, {8, 1}, {fbCellSize - fbRecHdr, 1}, {fbCellSize - fbRecHdr + 1, 2}, {1024, 4}, {fbMaxPayload, 13}} {
		if got := fbRecCells(c.n); got != c.want {
			t.Errorf("fbRecCells(%d) = %d, want %d", c.n, got, c.want)
		}
	}
	if fbMaxPayload >= fbPad || 2*fbRecCells(fbMaxPayload) > fbCells {
		t.Fatalf("fbMaxPayload %d: records of %d cells in a box of %d", fbMaxPayload, fbRecCells(fbMaxPayload), fbCells)
	}
}

func TestEndpointValue(t *testing.T) {
	b := encodeEP([]byte("endpoint"), 0x1122334455667788)
	ep, key, err := decodeEP(b)
	if err != nil || string(ep) != "endpoint" || key != 0x1122334455667788 {
		t.Fatalf("got %q, %#x, %v", ep, key, err)
	}
	if _, _, err := decodeEP(b[:7]); err == nil {
		t.Fatal("a 7-byte value decoded")
	}
}

// FuzzDecodeFastbox feeds arbitrary box tails (as a hostile or broken peer could write
// them) to the receiver's decoder: it must never panic, and an accepted record must lie
// within the tail.
func FuzzDecodeFastbox(f *testing.F) {
	cell := make([]byte, fbCellSize)
	encodeFastbox(cell, 1, 2, 3, []byte("payload"))
	f.Add(cell)
	f.Add(cell[:fbRecHdr])
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		var rec fbRecord
		err := decodeFastbox(b, &rec)
		if err == nil && !rec.pad && (rec.n < 0 || rec.n > fbMaxPayload || fbRecHdr+rec.n > len(b)) {
			t.Fatalf("accepted %+v from %d bytes", rec, len(b))
		}
	})
}

// FuzzDecodeEP: an endpoint value from the agent never makes decodeEP panic, and what it
// accepts round-trips.
func FuzzDecodeEP(f *testing.F) {
	f.Add(encodeEP([]byte("ep"), 7))
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, b []byte) {
		ep, key, err := decodeEP(b)
		if err == nil && !bytes.Equal(encodeEP(ep, key), b) {
			t.Fatalf("%x does not round-trip", b)
		}
	})
}
