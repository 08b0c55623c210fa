package verbs

import "unsafe"

// SliceOffset reports where inner starts within outer, and whether inner lies entirely
// within outer. Providers use it to check that a work request's Local buffer is inside the
// MR its LKey names. An empty inner is within any outer.
func SliceOffset(outer, inner []byte) (int, bool) {
	if len(inner) == 0 {
		return 0, true
	}
	if len(outer) == 0 {
		return 0, false
	}
	o := uintptr(unsafe.Pointer(unsafe.SliceData(outer)))
	i := uintptr(unsafe.Pointer(unsafe.SliceData(inner)))
	if i < o {
		return 0, false
	}
	off := i - o
	if off > uintptr(len(outer)) || uintptr(len(inner)) > uintptr(len(outer))-off {
		return 0, false
	}
	return int(off), true
}
