package collectives

import (
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Shared (not process-private) futexes on the low half of a scratch word: the scratch is
// a shared mapping of the arena's memfd, so a peer process's wake reaches a sleeper.
// (The same idea as package window's doorbells, which the collectives may not import.)
const (
	futexWait = 0 // FUTEX_WAIT
	futexWake = 1 // FUTEX_WAKE
)

// futexSleep sleeps while the low 32 bits of *word equal val, at most d.
func futexSleep(word *uint64, val uint32, d time.Duration) {
	ts := unix.NsecToTimespec(int64(d))
	unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(word)), futexWait, uintptr(val),
		uintptr(unsafe.Pointer(&ts)), 0, 0)
}

// futexWakeAll wakes every sleeper on word.
func futexWakeAll(word *uint64) {
	unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(word)), futexWake, uintptr(1<<31-1), 0, 0, 0)
}

// osYield gives the processor to another thread (of any process) that is ready to run:
// oversubscribed ranks spinning for each other's flags must let the peer run.
func osYield() { unix.Syscall(unix.SYS_SCHED_YIELD, 0, 0, 0) }
