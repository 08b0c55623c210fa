package sockets

import (
	"fmt"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The offer word of a segment's header decides, once, whether the dialer that got the
// segment in the reply has a connection. The dialer takes the offer before it sends its
// ready; a listener that sheds the socket while it waits for the ready withdraws the
// offer first. The compare-and-swap that moves the word off offerOpen wins: a dialer that
// finds the offer withdrawn dials again, and a listener that finds it taken keeps the
// socket, whose ready is on its way.
const (
	offerOpen      = 0 // written with the header: the reply's offer stands
	offerTaken     = 1 // the dialer holds a connection over the segment
	offerWithdrawn = 2 // the listener shed the socket: no connection
)

// offerWord is the offer word of the mapped segment mem.
func offerWord(mem []byte) *atomic.Uint32 {
	return (*atomic.Uint32)(unsafe.Pointer(&mem[offOffer]))
}

// takeOffer moves the offer word of mem from offerOpen to offerTaken. It reports false
// if the listener withdrew the offer.
func takeOffer(mem []byte) bool { return offerWord(mem).CompareAndSwap(offerOpen, offerTaken) }

// withdrawOffer moves the offer word of mem from offerOpen to offerWithdrawn. It reports
// false if the dialer took the offer.
func withdrawOffer(mem []byte) bool {
	return offerWord(mem).CompareAndSwap(offerOpen, offerWithdrawn)
}

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
