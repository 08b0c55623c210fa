package trace

import (
	"os"
	"syscall"
	"unsafe"
)

// mapShared maps the first size bytes of f shared, for reading and writing. It asks for
// huge pages, which spare the ring's events misses in the TLB where the kernel gives
// them to shared memory (transparent_hugepage/shmem_enabled: advise).
func mapShared(f *os.File, size int) ([]byte, error) {
	mem, err := syscall.Mmap(int(f.Fd()), 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err == nil {
		syscall.Madvise(mem, syscall.MADV_HUGEPAGE) // a hint: without huge pages it changes nothing
	}
	return mem, err
}

// unmap undoes mapShared.
func unmap(mem []byte) error { return syscall.Munmap(mem) }

// monoNow reads CLOCK_MONOTONIC, the clock of Go's monotonic readings, in nanoseconds:
// a value another process on the host compares.
func monoNow() int64 {
	var ts syscall.Timespec
	const clockMonotonic = 1
	syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockMonotonic, uintptr(unsafe.Pointer(&ts)), 0)
	return ts.Nano()
}
