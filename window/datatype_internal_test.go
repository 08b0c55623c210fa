package window

import (
	"bytes"
	"testing"

	"github.com/gorma-hpc/gorma/datatype"
)

// fuzzType builds a small layout of bytes from three fuzzer bytes: a vector of up to 4
// blocks of up to 3 bytes, stride -4..4, resized or not.
func fuzzType(a, b, c byte) (datatype.Type, bool) {
	t, err := datatype.Hvector[uint8](int(a%5), int(b%4), int(c%9)-4)
	if err != nil {
		return datatype.Type{}, false
	}
	if c&0x80 != 0 {
		if t, err = t.Resized(0, int(a>>4)); err != nil {
			return datatype.Type{}, false
		}
	}
	return t, true
}

// FuzzPairRuns checks the runs PutType issues against Pack followed by Unpack: copying
// each run from origin to target gives the target Unpack(Pack(origin)) gives, every run
// is contiguous and non-empty, and no two consecutive runs continue each other.
func FuzzPairRuns(f *testing.F) {
	f.Add([]byte{3, 2, 7, 2, 1, 5, 1, 4})
	f.Add([]byte{4, 3, 0x88, 2, 2, 1, 2, 3})
	f.Add([]byte{1, 1, 4, 3, 3, 3, 3, 1})
	f.Fuzz(func(t *testing.T, d []byte) {
		if len(d) < 8 {
			return
		}
		ot, ok1 := fuzzType(d[0], d[1], d[2])
		tt, ok2 := fuzzType(d[4], d[5], d[6])
		oc, tc := int(d[3]%4), int(d[7]%4)
		if !ok1 || !ok2 || ot.Size()*oc != tt.Size()*tc {
			return
		}
		// Shift both layouts so their data starts at or after byte 0.
		shift := func(ty datatype.Type) datatype.Type {
			s, _ := datatype.Struct([]datatype.Field{{Off: max(0, -ty.TrueLB()), Count: 1, Type: ty}})
			return s
		}
		ot, tt = shift(ot), shift(tt)
		_, ohi, _ := ot.Span(oc)
		_, thi, _ := tt.Span(tc)
		origin := make([]byte, ohi)
		for i := range origin {
			origin[i] = byte(i*7 + 1)
		}
		packed := make([]byte, ot.Size()*oc)
		if _, err := datatype.Pack(packed, origin, oc, ot); err != nil {
			t.Fatal(err)
		}
		want := make([]byte, thi)
		if _, err := datatype.Unpack(want, packed, tc, tt); err != nil {
			t.Fatal(err)
		}
		got := make([]byte, thi)
		lastO, lastT, lastN := 0, 0, 0
		err := pairRuns(ot, oc, tt, tc, func(o, tg, n int) error {
			if n <= 0 {
				t.Fatalf("empty run at %d, %d", o, tg)
			}
			if lastN > 0 && o == lastO+lastN && tg == lastT+lastN {
				t.Fatalf("run (%d, %d, %d) continues (%d, %d, %d): not merged", o, tg, n, lastO, lastT, lastN)
			}
			copy(got[tg:tg+n], origin[o:o+n])
			lastO, lastT, lastN = o, tg, n
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%v x%d -> %v x%d: runs give %v, Pack+Unpack %v", ot, oc, tt, tc, got, want)
		}
	})
}
