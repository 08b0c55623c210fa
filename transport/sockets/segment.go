package sockets

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// createSegment makes the memfd of a connection with rings of ringSize bytes, sealed
// against resizing (so the peer's mapping can never turn into SIGBUS), maps it and
// writes its header. The caller sends fd to the dialer and closes it.
func createSegment(ringSize int) (fd int, mem []byte, err error) {
	fd, err = unix.MemfdCreate("gorma-shm", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return -1, nil, fmt.Errorf("memfd_create: %w", err)
	}
	size := segmentSize(ringSize)
	if err = unix.Ftruncate(fd, int64(size)); err != nil {
		unix.Close(fd)
		return -1, nil, fmt.Errorf("sizing the shared segment to %d bytes: %w", size, err)
	}
	seals := unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_SEAL
	if _, err = unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, seals); err != nil {
		unix.Close(fd)
		return -1, nil, fmt.Errorf("sealing the shared segment: %w", err)
	}
	mem, err = unix.Mmap(fd, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		unix.Close(fd)
		return -1, nil, fmt.Errorf("mapping the shared segment: %w", err)
	}
	writeHeader(mem, ringSize)
	return fd, mem, nil
}

// mapSegment maps the segment the listener sent, after checking that it is sealed
// against shrinking and has exactly the size of rings of ringSize bytes, and checks its
// header. It does not close fd.
func mapSegment(fd, ringSize int) ([]byte, error) {
	seals, err := unix.FcntlInt(uintptr(fd), unix.F_GET_SEALS, 0)
	if err != nil {
		return nil, fmt.Errorf("listener sent a descriptor that is not a sealable memfd: %w", err)
	}
	if seals&unix.F_SEAL_SHRINK == 0 {
		return nil, fmt.Errorf("listener's shared segment is not sealed against shrinking")
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, fmt.Errorf("fstat of the shared segment: %w", err)
	}
	size := segmentSize(ringSize)
	if st.Size != int64(size) {
		return nil, fmt.Errorf("shared segment has %d bytes, want %d for rings of %d", st.Size, size, ringSize)
	}
	mem, err := unix.Mmap(fd, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("mapping the shared segment: %w", err)
	}
	if err := checkHeader(mem, ringSize); err != nil {
		unix.Munmap(mem)
		return nil, err
	}
	return mem, nil
}
