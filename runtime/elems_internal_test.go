package runtime

import (
	"testing"
	"unsafe"
)

// TestElems: the shift gives the division's count for the size of every Elem type, at
// whole and partial element counts.
func TestElems(t *testing.T) {
	sizes := []int{
		int(unsafe.Sizeof(int8(0))), int(unsafe.Sizeof(int16(0))), int(unsafe.Sizeof(int32(0))),
		int(unsafe.Sizeof(int64(0))), int(unsafe.Sizeof(float32(0))), int(unsafe.Sizeof(float64(0))),
		int(unsafe.Sizeof(complex64(0))), int(unsafe.Sizeof(complex128(0))),
	}
	for _, esize := range sizes {
		for _, n := range []int{0, 1, esize - 1, esize, esize + 1, 3*esize + esize/2, 1 << 30} {
			if got, want := elems(n, esize), n/esize; got != want {
				t.Errorf("elems(%d, %d) = %d, want %d", n, esize, got, want)
			}
		}
	}
}
