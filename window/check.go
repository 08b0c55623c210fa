package window

import (
	"fmt"
	"os"
	"unsafe"

	"github.com/gorma-hpc/gorma/runtime/substrate"
)

// Checked memory. Under GORMA_CHECK=1 (substrate.MemCheck) the arena makes a freed
// window's memory inaccessible in this process while it sits in the arena's quarantine,
// so a write through a stale Local() slice faults at the write. For that the window asks
// for whole pages (a quarantined block is guarded only if it holds whole pages), and
// Free names the window and its address range on stderr, so that the fault address the
// Go runtime prints when the process dies can be traced to the window. Windows over user
// memory (Create) and dynamic windows are not arena memory and are not guarded.

// dataBytes is how many bytes of arena memory a window of nbytes asks for: nbytes, or
// under GORMA_CHECK=1 nbytes rounded up to whole pages.
func dataBytes(nbytes int) int {
	if nbytes == 0 || !substrate.MemCheck() {
		return nbytes
	}
	pg := os.Getpagesize()
	return (nbytes + pg - 1) &^ (pg - 1)
}

// constructor names the call that made a window of flavor f.
func constructor(f Flavor) string {
	switch f {
	case FlavorAllocate:
		return "Allocate"
	case FlavorShared:
		return "AllocateShared"
	case FlavorCreate:
		return "Create"
	case FlavorDynamic:
		return "CreateDynamic"
	}
	return f.String()
}

// describe names the window for messages: its name on the World (winK, as hang reports
// and GORMA_CHECK=1's mismatches give it), constructor, element type and length at this
// rank.
func (w *house[T]) describe() string {
	var z T
	return fmt.Sprintf("%s (%s[%T], %d elements at rank %d)", w.label, constructor(w.flavor), z, len(w.local), w.rank)
}

// reportGuarded tells stderr that the freed window's memory, local (its Local() slice,
// taken before Free released it), is now inaccessible in this process. Free calls it
// once the regions are released; it prints nothing unless the arena guarded the memory.
func (w *house[T]) reportGuarded(desc string, local []T) {
	if w.data == nil || len(local) == 0 || !w.data.Guarded() {
		return
	}
	lo := uintptr(unsafe.Pointer(unsafe.SliceData(local)))
	hi := lo + uintptr(len(local)*w.esize)
	fmt.Fprintf(os.Stderr, "gorma: GORMA_CHECK=1: Free of %s: its memory [%#x, %#x) is inaccessible in this process "+
		"until the arena reuses it; a write through the window's stale Local() slice faults there "+
		"(\"unexpected fault address\" in that range)\n", desc, lo, hi)
}
