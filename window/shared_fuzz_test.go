package window

import "testing"

// FuzzSegDesc: segDesc never panics, and a description it returns lies inside the
// record, after its two header bytes.
func FuzzSegDesc(f *testing.F) {
	f.Add([]byte{segFresh, 3, 1, 2, 3})
	f.Add([]byte{segReused, 0})
	f.Add([]byte{segNone})
	f.Add([]byte{segFailed, 200, 1})
	f.Fuzz(func(t *testing.T, rec []byte) {
		d, err := segDesc(rec)
		if err != nil {
			return
		}
		if len(d) == 0 || len(d) != int(rec[1]) || &d[0] != &rec[2] {
			t.Fatalf("segDesc(%x) = %x", rec, d)
		}
	})
}
