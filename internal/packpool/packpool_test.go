package packpool

import "testing"

// TestSizes: Get returns exactly n bytes out of a power-of-two buffer (n itself beyond
// the classes), and a buffer put back serves the next Get of its class.
func TestSizes(t *testing.T) {
	for _, n := range []int{0, 1, 2, 3, 1000, 1024, 1025, 1 << 20} {
		p := Get(n)
		if len(p.B) != n {
			t.Fatalf("Get(%d): %d bytes", n, len(p.B))
		}
		if c := cap(p.B); n > 1 && (c < n || c&(c-1) != 0) {
			t.Fatalf("Get(%d): capacity %d, want the power of two above", n, c)
		}
		Put(p)
	}
	Put(&Buf{B: make([]byte, 3)}) // not a class's size: dropped
	if p := Get(3); cap(p.B) != 4 {
		t.Fatalf("Get(3) after a Put of 3 bytes: capacity %d, want 4", cap(p.B))
	}
}
