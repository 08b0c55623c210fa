package window

import (
	"encoding/binary"
	"testing"
)

// FuzzDecodeRecord: a peer's creation record never makes decodeRecord panic, and what it
// accepts re-encodes to the same bytes (the layout exchange writes).
func FuzzDecodeRecord(f *testing.F) {
	good := make([]byte, 0, recLen)
	good = binary.LittleEndian.AppendUint64(good, 1000)
	good = append(good, 3, 1, 2, 3, 2, 4, 5)
	good = good[:recLen]
	f.Add(good)
	f.Add(make([]byte, recLen))
	f.Add([]byte{1, 2, 3})
	bad := append([]byte(nil), good...)
	bad[8] = 200 // a data description longer than the record
	f.Add(bad)
	f.Fuzz(func(t *testing.T, rec []byte) {
		n, d, m, err := decodeRecord(rec)
		if err != nil {
			return
		}
		if n < 0 {
			t.Fatalf("negative count %d", n)
		}
		again := binary.LittleEndian.AppendUint64(nil, uint64(n))
		again = append(again, byte(len(d)))
		again = append(again, d...)
		again = append(again, byte(len(m)))
		again = append(again, m...)
		if string(again) != string(rec[:len(again)]) {
			t.Fatalf("decoded (%d, %x, %x) does not re-encode to the record", n, d, m)
		}
	})
}
