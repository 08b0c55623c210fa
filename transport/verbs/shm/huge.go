package shm

import (
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Huge pages for registered user memory. A peer reads (or writes) memory registered with
// RegMR through process_vm_readv/writev, which walks and pins the owner's pages one by one:
// with 4 KiB pages, a megabyte is 256 page-table walks and pins, a sizeable part of the
// copy's cost. RegMR therefore asks the kernel to back the 2 MiB-aligned stretches around a
// large buffer with transparent huge pages (madvise MADV_COLLAPSE, Linux 6.1 and later,
// whatever the system's THP policy short of "never"), so that each 2 MiB costs one walk.
// `bin/verbsperf --provider shm --test read_bw` and bin/pingpong's large sizes measure the
// gain.
//
// The collapse copies the stretch into a new huge page once, so
// each stretch is collapsed at most once per device (hugeRegions), and only for buffers of
// at least hugeMinLen bytes. It is best effort: any error (an old kernel, THP disabled, no
// huge page free) leaves the memory as it was. Contents never change; the process may use
// up to 2 MiB more memory per stretch (holes are filled).
const (
	hugeSize    = 2 << 20
	hugeMinLen  = 256 << 10
	hugeMaxDone = 1 << 16 // stretches remembered (128 GiB): beyond that, no more collapses
)

// hugeRegions remembers the stretches a device has collapsed. Its mu is a leaf.
type hugeRegions struct {
	mu   sync.Mutex
	done map[uintptr]struct{}
}

// collapse backs the 2 MiB stretches around buf with huge pages, each at most once.
func (h *hugeRegions) collapse(buf []byte) {
	if len(buf) < hugeMinLen {
		return
	}
	base := uintptr(unsafe.Pointer(unsafe.SliceData(buf)))
	start := base &^ (hugeSize - 1)
	end := (base + uintptr(len(buf)) + hugeSize - 1) &^ (hugeSize - 1)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.done == nil {
		h.done = make(map[uintptr]struct{})
	}
	for s := start; s < end; s += hugeSize {
		if _, ok := h.done[s]; ok || len(h.done) >= hugeMaxDone {
			continue
		}
		h.done[s] = struct{}{}
		unix.Syscall(unix.SYS_MADVISE, s, hugeSize, unix.MADV_COLLAPSE) // best effort
	}
}
