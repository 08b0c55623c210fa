package futex

import (
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The operations, without FUTEX_PRIVATE_FLAG: shared futexes keyed on the physical page.
const (
	opWait = 0 // FUTEX_WAIT
	opWake = 1 // FUTEX_WAKE
)

// All is the count for Wake that wakes every sleeper on a word.
const All = 1<<31 - 1

// Word is a futex word: 32 bits in memory. For a 64-bit word the futex word is its first
// four bytes, its low half on a little-endian machine.
type Word interface {
	*uint32 | *atomic.Uint32 | *uint64 | *atomic.Uint64
}

// Wait sleeps while the futex word w holds val, for at most d. It returns at once when
// the word differs from val or d is not positive, and may return early for no reason.
func Wait[W Word](w W, val uint32, d time.Duration) {
	if d <= 0 {
		return
	}
	ts := unix.NsecToTimespec(int64(d))
	unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(w)), opWait, uintptr(val),
		uintptr(unsafe.Pointer(&ts)), 0, 0)
}

// Wake wakes at most n of the sleepers on the futex word w (All for every one).
func Wake[W Word](w W, n int) {
	unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(w)), opWake, uintptr(n), 0, 0, 0)
}

// Yield gives the processor to another thread, of any process, that is ready to run
// (sched_yield). It is a raw system call, unannounced to the Go scheduler: it never
// blocks, and an announced call that handed the core to another process for a while
// would look like a blocking one to sysmon, which would take the caller's P away.
func Yield() { unix.RawSyscall(unix.SYS_SCHED_YIELD, 0, 0, 0) }
