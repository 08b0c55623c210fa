package shm

import (
	"testing"
	"unsafe"
)

// TestCollapseHuge collapses the stretches around a buffer: its contents stay as they
// were, each 2 MiB stretch is remembered once, and small buffers are left alone.
func TestCollapseHuge(t *testing.T) {
	buf := make([]byte, 3<<20)
	for i := range buf {
		buf[i] = byte(i*7 + i>>12)
	}
	var h hugeRegions
	h.collapse(buf[:hugeMinLen-1])
	if len(h.done) != 0 {
		t.Fatalf("a %d-byte buffer collapsed %d stretches", hugeMinLen-1, len(h.done))
	}
	h.collapse(buf)
	base := uintptr(unsafe.Pointer(&buf[0]))
	want := int(((base+uintptr(len(buf))+hugeSize-1)&^(hugeSize-1) - base&^(hugeSize-1)) / hugeSize)
	if len(h.done) != want {
		t.Fatalf("%d stretches remembered, want %d", len(h.done), want)
	}
	h.collapse(buf[1<<20:])
	if len(h.done) != want {
		t.Fatalf("collapsing again added stretches: %d, want %d", len(h.done), want)
	}
	for i := range buf {
		if buf[i] != byte(i*7+i>>12) {
			t.Fatalf("byte %d changed", i)
		}
	}
}
