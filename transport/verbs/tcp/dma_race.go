//go:build race

package tcp

import "unsafe"

// dmaCopy copies src into dst like copy, without race instrumentation (see dma.go).
//
//go:norace
//go:nocheckptr
func dmaCopy(dst, src []byte) int {
	n := min(len(dst), len(src))
	if n == 0 {
		return 0
	}
	d, s := unsafe.Pointer(unsafe.SliceData(dst)), unsafe.Pointer(unsafe.SliceData(src))
	i := 0
	for ; i+8 <= n; i += 8 {
		*(*uint64)(unsafe.Add(d, i)) = *(*uint64)(unsafe.Add(s, i))
	}
	for ; i < n; i++ {
		*(*byte)(unsafe.Add(d, i)) = *(*byte)(unsafe.Add(s, i))
	}
	return n
}
