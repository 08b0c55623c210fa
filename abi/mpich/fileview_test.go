//go:build cgo

package mpich

import (
	"slices"
	"testing"

	"github.com/gorma-hpc/gorma/datatype"
)

// strided is the view of rank 1 of 2 in iocheck.c: from byte 16, 2 ints at byte 8
// of every 16.
func strided() view {
	return view{disp: 16, esize: 4, blocks: []datatype.Block{{Off: 8, Len: 8}}, size: 8, extent: 16}
}

// TestViewRuns maps data-stream ranges to file runs; adjacent runs merge.
func TestViewRuns(t *testing.T) {
	for _, c := range []struct {
		name   string
		v      view
		pos, n int64
		want   []run
	}{
		{"bytes", byteView(), 5, 16, []run{{5, 16}}},
		{"one block", strided(), 0, 8, []run{{24, 8}}},
		{"across tiles", strided(), 4, 12, []run{{28, 4}, {40, 8}}},
		{"three tiles", strided(), 0, 24, []run{{24, 8}, {40, 8}, {56, 8}}},
		{"two blocks a tile", view{blocks: []datatype.Block{{Off: 0, Len: 2}, {Off: 4, Len: 2}}, size: 4, extent: 6, esize: 1}, 1, 6, []run{{1, 1}, {4, 4}, {10, 1}}},
	} {
		if got := c.v.runs(c.pos, c.n); !slices.Equal(got, c.want) {
			t.Errorf("%s: runs(%d, %d) = %v, want %v", c.name, c.pos, c.n, got, c.want)
		}
	}
}

// TestViewDataBelow counts the view's data below an end of file.
func TestViewDataBelow(t *testing.T) {
	v := strided()
	for eof, want := range map[int64]int64{0: 0, 16: 0, 24: 0, 28: 4, 32: 8, 44: 12, 48: 16, 56: 16} {
		if got := v.dataBelow(eof); got != want {
			t.Errorf("dataBelow(%d) = %d, want %d", eof, got, want)
		}
	}
	if got := v.byteOffset(3); got != 28 {
		t.Errorf("byteOffset(3) = %d, want 28", got)
	}
}
