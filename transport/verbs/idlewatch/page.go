package idlewatch

import (
	"os"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The page is PageSize bytes of little-endian uint64 words, accessed atomically by both
// processes:
//
//	word 0         Magic, written by the watcher (WordMagic)
//	word 1         slots in use (a high-water mark), written by the rank, <= Slots (WordUsed)
//	word 2         1 once the rank's device closed: the watcher ends the watch (WordClosed)
//	word 3         the signal that rings the rank with the bell (Signal), or 0 (WordSignal)
//	word 4         1 once the rank's device opened: the watcher scans (WordAttached)
//	word 5         the device's memory regions that peers may write or update (the
//	               RemoteWrite or RemoteAtomic right: windows), written by the rank
//	               (WordExposed)
//	word 6         1 once a leader of the device left a role idle, written by the rank
//	               (WordLed)
//	word 7         1 while the watcher scans the page every tick (it read word 5 or 6
//	               non-zero at its last scan), written by the watcher; 0 before
//	               (WordTicking)
//	word 8+i       slot i: a count of transitions << 2 | a state (SlotBusy, SlotIdle,
//	               SlotParked); written by the rank only (SlotWord)
//	word 8+S+i     slot i's socket: a generation << 32 | the descriptor in the rank, 0
//	               if none (S = Slots; SockWord)
//
// The rank gives each connection a slot when it starts and frees it when the reader
// exits. A connection without a slot (all in use) wakes its reader itself, as without a
// watch, and its parked reader is not watched.
const (
	// PageSize is the size of an idle-role watch's page.
	PageSize = 4096
	// Tick is the period of a Watcher while a rank needs it: a role left idle is handed
	// back within two.
	Tick = time.Millisecond
	// SlowTick is a Watcher's period while no rank needs a fast one: none has led a wait
	// or exposed memory to one-sided writes yet (shm-only jobs, Allreduce over tcp with a
	// connection per peer). A rank's first idle role is handed back within about
	// SlowTick.
	SlowTick = 50 * time.Millisecond

	// Signal is the real-time signal that rings a watch together with its bell
	// (SIGRTMIN+6 on Linux). A rank's device with a watch handles it; Go ignores a
	// real-time signal nobody asked for, so a stray one harms no Go process.
	Signal = syscall.Signal(40)

	// Magic is word 0 of a watch page ("gormawat", little-endian).
	Magic = 0x746177616d726f67

	// Slots is the number of slots of a page.
	Slots = (PageSize/8 - hdrWords) / 2

	hdrWords = 8
)

// The header words of a page.
const (
	WordMagic    = 0
	WordUsed     = 1
	WordClosed   = 2
	WordSignal   = 3
	WordAttached = 4
	WordExposed  = 5
	WordLed      = 6
	WordTicking  = 7
)

// The states of a slot word (its low two bits).
const (
	SlotBusy   = 0 // the role is held and its holder is not parked on the socket
	SlotIdle   = 1 // a leader left the role idle; nobody reads the socket
	SlotParked = 2 // the reader waits for the socket in the network poller
)

// Word returns header word i of a mapped watch page.
func Word(page []byte, i int) *atomic.Uint64 {
	return (*atomic.Uint64)(unsafe.Pointer(&page[8*i]))
}

// SlotWord returns slot i's state word.
func SlotWord(page []byte, i int) *atomic.Uint64 { return Word(page, hdrWords+i) }

// SockWord returns slot i's socket word.
func SockWord(page []byte, i int) *atomic.Uint64 { return Word(page, hdrWords+Slots+i) }

// SetSlot moves a slot word to state, counting the transition. Only the rank writes slot
// words.
func SetSlot(s *atomic.Uint64, state uint64) {
	if v := s.Load(); v&3 != state {
		s.Store((v>>2+1)<<2 | state)
	}
}

// staleSlots reads the first n slots (n is clamped to Slots and len(last)) and finds
// those in the same state and count as at the previous scan (last). It reports whether
// one of them is idle, and appends the parked ones to parked (the caller rings if one of
// their sockets holds data). It records the words in last. A pure function of the page,
// for the watcher and its tests.
func staleSlots(slot func(i int) uint64, n int, last []uint64, parked []int) (idle bool, _ []int) {
	n = min(max(n, 0), Slots, len(last))
	for i := range n {
		v := slot(i)
		if v == last[i] {
			switch v & 3 {
			case SlotIdle:
				idle = true
			case SlotParked:
				parked = append(parked, i)
			}
		}
		last[i] = v
	}
	return idle, parked
}

// Dup duplicates f's descriptor (close-on-exec) without os.File.Fd, which would make a
// non-blocking file blocking.
func Dup(f *os.File) (int, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return -1, err
	}
	fd := -1
	cerr := rc.Control(func(raw uintptr) { fd, err = unix.FcntlInt(raw, unix.F_DUPFD_CLOEXEC, 0) })
	if cerr != nil {
		return -1, cerr
	}
	return fd, err
}

// MapPage maps f's first PageSize bytes shared.
func MapPage(f *os.File) ([]byte, error) {
	fd, err := Dup(f)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	return unix.Mmap(fd, 0, PageSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
}
