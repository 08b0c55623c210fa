package collectives

import (
	"fmt"
	"os"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/gorma-hpc/gorma/collectives/internal/hostgroup"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/substrate"
)

// Fresh scratch (ScratchFresh) for the point-to-point algorithms pays what a call of Open
// MPI or MPICH pays for a temporary vector too large for malloc's heap, so that the next
// call pays it all again. That is an anonymous mmap, a page fault per page (taken here up
// front, as the pinning of a registration would), a registration with every device, and
// at the end deregistration and munmap.

var pageSize = os.Getpagesize()

// freshAcquired counts acquisitions of fresh scratch (for tests).
var freshAcquired atomic.Int64

// freshMem is one call's fresh scratch: an anonymous mapping and its registration.
type freshMem struct {
	mem []byte            // the whole mapping (whole pages), as unix.Mmap returned it
	reg *substrate.Region // mem's registration with every device
}

// acquireFresh maps, faults in and registers bytes (> 0) of fresh memory.
func acquireFresh(w *runtime.World, bytes int) (*freshMem, error) {
	size := (bytes + pageSize - 1) / pageSize * pageSize
	mem, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, fmt.Errorf("fresh scratch: map %d bytes: %w", size, err)
	}
	hostgroup.TouchPages(mem)
	reg, err := substrate.RegisterRegion(w, mem[:bytes:bytes])
	if err != nil {
		unix.Munmap(mem)
		return nil, fmt.Errorf("fresh scratch: %w", err)
	}
	freshAcquired.Add(1)
	return &freshMem{mem: mem, reg: reg}, nil
}

// release deregisters and unmaps f (nil: nothing to do). After a failed call (ok false)
// the runtime may still write into the scratch (a receive withdrawn too late, as state's
// end says of the reused scratch). So the mapping is left in place rather than unmapped
// under it: a failed call leaks its fresh scratch.
func (f *freshMem) release(ok bool) {
	if f == nil {
		return
	}
	f.reg.Free()
	if ok {
		unix.Munmap(f.mem)
	}
}

// tempOf returns n elements of scratch for a point-to-point algorithm's call, from the
// World's reused slot (scratchOf) or, under ScratchFresh, freshly acquired: then f is
// non-nil and the caller must f.release(ok) before the call returns.
func tempOf[T runtime.Elem](c *call, slot, n int) (tmp []T, f *freshMem, err error) {
	fresh, err := freshScratch()
	if err != nil {
		return nil, nil, err
	}
	if !fresh || n == 0 {
		return scratchOf[T](c, slot, n), nil, nil
	}
	if f, err = acquireFresh(c.s.comm, n*elemSize[T]()); err != nil {
		return nil, nil, err
	}
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(f.mem))), n), f, nil
}
