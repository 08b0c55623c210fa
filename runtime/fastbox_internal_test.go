package runtime

import (
	"bytes"
	"errors"
	"testing"
)

func TestDecodeFastbox(t *testing.T) {
	cell := make([]byte, fbCellSize)
	payload := bytes.Repeat([]byte{7}, fbMaxPayload)
	encodeFastbox(cell, 3, -5, 42, payload)
	rec, err := decodeFastbox(cell)
	if err != nil || rec != (fbRecord{tag: -5, ctx: 3, n: fbMaxPayload, qseq: 42}) {
		t.Fatalf("got %+v, %v", rec, err)
	}
	le.PutUint16(cell[12:], fbMaxPayload+1)
	var we *errWire
	if _, err := decodeFastbox(cell); !errors.As(err, &we) {
		t.Fatalf("oversized record: got %v, want an *errWire", err)
	}
	if _, err := decodeFastbox(cell[:fbRecHdr-1]); !errors.As(err, &we) {
		t.Fatalf("short cell: got %v, want an *errWire", err)
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

// FuzzDecodeFastbox feeds arbitrary cells (as a hostile or broken peer could write them)
// to the receiver's decoder: it must never panic, and an accepted record must lie within
// the cell.
func FuzzDecodeFastbox(f *testing.F) {
	cell := make([]byte, fbCellSize)
	encodeFastbox(cell, 1, 2, 3, []byte("payload"))
	f.Add(cell)
	f.Add(cell[:fbRecHdr])
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		rec, err := decodeFastbox(b)
		if err == nil && (rec.n < 0 || rec.n > fbMaxPayload || fbRecHdr+rec.n > len(b)) {
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
