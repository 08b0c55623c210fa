package shm

import (
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/gorma-hpc/gorma/transport/verbs/arena"
)

// Liveness words. Each device keeps a 32-bit word in its arena that the kernel marks
// when the process dies, so that a peer learns of the death with one atomic load and
// no system call, and without waiting for its own monitor goroutine to be scheduled.
//
// The word is a robust futex (futex(2), set_robust_list(2)). One sentinel thread per
// process, locked to its goroutine and parked for the life of the process, writes its
// thread id into every word and holds them all on its robust list. When that thread
// exits, as it does when the process is killed or execs, the kernel walks the list and
// sets FUTEX_OWNER_DIED in each word that still holds its id. That happens while the
// dying process tears itself down, before its pidfd becomes readable.
//
// A word of 0 means that no sentinel holds it (set_robust_list failed, or the device
// closed before the sentinel took it): peers then rely on the monitor alone.

// liveSize is the arena region of a liveness word: the robust list entry (a pointer)
// and, liveWordOff bytes after it, the word.
const (
	liveSize    = 16
	liveWordOff = 8
	ownerDied   = 0x40000000 // FUTEX_OWNER_DIED

	// sentinelSlice is the sentinel thread's scheduler slice in nanoseconds
	// (sched_setattr's sched_runtime): the least the kernel takes.
	sentinelSlice = 100_000
)

// robustHead is the kernel's struct robust_list_head.
type robustHead struct {
	next        uintptr // first entry, or the head itself when the list is empty
	futexOffset int64   // from an entry to its word: liveWordOff
	pending     uintptr // list_op_pending: unused
}

// sentinel is the process's liveness thread and its robust list. The list's entries
// live in the arenas of open devices; mu guards changes to it. The kernel reads the
// list only when the thread exits, with faults ending its walk, so a change torn by
// the process's death costs at most a missed word.
type sentinel struct {
	tid  uint32      // 0 if the thread could not register its list
	head *robustHead // never freed: the kernel holds its address

	mu      sync.Mutex
	entries []*uintptr // the list, newest first
}

var liveSentinel = sync.OnceValue(startSentinel)

// startSentinel starts the sentinel thread and waits until it has registered its list.
// The thread stays parked until the process ends.
func startSentinel() *sentinel {
	s := &sentinel{head: new(robustHead)}
	s.head.next = uintptr(unsafe.Pointer(s.head))
	s.head.futexOffset = liveWordOff
	ready := make(chan uint32)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread's exit is the process's death
		// A short slice lets the dying thread preempt a busy CPU's task on its way out
		// (EEVDF, Linux 6.12 on; older kernels ignore it, and a failure costs nothing).
		// The thread runs only at start and at death, so it takes no CPU from the rank.
		unix.SchedSetAttr(0, &unix.SchedAttr{Runtime: sentinelSlice}, 0)
		_, _, errno := unix.Syscall(unix.SYS_SET_ROBUST_LIST, uintptr(unsafe.Pointer(s.head)), unsafe.Sizeof(*s.head), 0)
		if errno != 0 {
			ready <- 0
			return // the goroutine exits locked: its thread goes with it
		}
		ready <- uint32(unix.Gettid())
		select {}
	}()
	s.tid = <-ready
	return s
}

// liveWord is a device's liveness word, owned by this process.
type liveWord struct {
	reg  arena.Region
	word *atomic.Uint32
}

// newLiveWord carves a liveness word from a and puts it on the sentinel's list.
func newLiveWord(a *arena.Arena) (liveWord, error) {
	reg, err := a.AllocRaw(liveSize)
	if err != nil {
		return liveWord{}, err
	}
	lw := liveWord{reg: reg, word: (*atomic.Uint32)(unsafe.Pointer(&reg.Bytes[liveWordOff]))}
	s := liveSentinel()
	if s.tid == 0 {
		lw.word.Store(0)
		return lw, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	lw.word.Store(s.tid)
	entry := (*uintptr)(unsafe.Pointer(&reg.Bytes[0]))
	*entry = s.head.next // linked before it is published
	s.head.next = uintptr(unsafe.Pointer(entry))
	s.entries = append([]*uintptr{entry}, s.entries...)
	return lw, nil
}

// remove takes lw off the sentinel's list; the arena is about to be retired.
func (lw liveWord) remove() {
	s := liveSentinel()
	if s.tid == 0 || lw.word == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	entry := (*uintptr)(unsafe.Pointer(&lw.reg.Bytes[0]))
	i := slices.Index(s.entries, entry)
	if i < 0 {
		return
	}
	s.entries = slices.Delete(s.entries, i, i+1)
	next := uintptr(unsafe.Pointer(s.head))
	if i < len(s.entries) {
		next = uintptr(unsafe.Pointer(s.entries[i]))
	}
	if i == 0 {
		s.head.next = next
	} else {
		*s.entries[i-1] = next
	}
}

// peerWord returns the liveness word at off in a peer's arena mem, or nil if the
// endpoint named none (off 0) or it lies outside mem.
func peerWord(mem []byte, off uint64) *atomic.Uint32 {
	if off == 0 || off%8 != 0 || off > uint64(len(mem)) || uint64(len(mem))-off < liveSize {
		return nil
	}
	return (*atomic.Uint32)(unsafe.Pointer(&mem[off+liveWordOff]))
}
