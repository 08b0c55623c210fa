package hostgroup

import (
	"fmt"
	"os"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

var pageSize = os.Getpagesize()

// TouchPages writes a zero into every page of b that this process has not mapped yet,
// taking the page faults (and the kernel's zeroing) now.
func TouchPages(b []byte) {
	for i := 0; i < len(b); i += pageSize {
		b[i] = 0
	}
}

// faultSink keeps readPages' loads from being optimized away.
var faultSink atomic.Uint32

// readPages reads a byte of every page of b: a peer's shared scratch, which this process
// maps on first access, page by page.
func readPages(b []byte) {
	var s byte
	for i := 0; i < len(b); i += pageSize {
		s += b[i]
	}
	faultSink.Add(uint32(s))
}

// removePages gives the whole pages inside b, a shared mapping of the arena, back to the
// kernel. MADV_REMOVE punches a hole in the shared memory, and every process's mapping
// of those pages drops them. So the next use of that memory, here or in a peer, faults
// in fresh zeroed pages.
func removePages(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	start := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	lo := int((uintptr(pageSize) - start%uintptr(pageSize)) % uintptr(pageSize))
	hi := lo + (len(b)-lo)/pageSize*pageSize
	if hi <= lo {
		return nil
	}
	if err := unix.Madvise(b[lo:hi], unix.MADV_REMOVE); err != nil {
		return fmt.Errorf("return fresh scratch to the kernel: %w", err)
	}
	return nil
}
