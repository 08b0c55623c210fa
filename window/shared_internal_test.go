package window

import (
	"math"
	"slices"
	"testing"
)

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

// TestSharedHostTotal: a host's segment holds its ranks' counts in rank order; a total
// past an int's bytes is -1.
func TestSharedHostTotal(t *testing.T) {
	const big = math.MaxInt/8/2 + 1
	for _, tc := range []struct {
		name  string
		all   []uint64
		group []int
		esize int
		total int
		off   []int
	}{
		{"one host", []uint64{3, 0, 5}, []int{0, 1, 2}, 8, 8, []int{0, 3, 3}},
		{"every other rank", []uint64{3, 7, 5, 1}, []int{1, 3}, 4, 8, []int{-1, 0, -1, 7}},
		{"alone", []uint64{4, 9}, []int{1}, 16, 9, []int{-1, 0}},
		{"overflow", []uint64{big, big}, []int{0, 1}, 8, -1, nil},
		{"at the limit", []uint64{math.MaxInt / 8}, []int{0}, 8, math.MaxInt / 8, []int{0}},
	} {
		off := make([]int, len(tc.all))
		for i := range off {
			off[i] = -1
		}
		got := hostTotal(tc.all, tc.group, off, tc.esize)
		if got != tc.total {
			t.Errorf("%s: total %d, want %d", tc.name, got, tc.total)
		}
		if tc.off != nil && !slices.Equal(off, tc.off) {
			t.Errorf("%s: offsets %v, want %v", tc.name, off, tc.off)
		}
	}
}
