package sockets

import (
	"runtime"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The futex words live in the shared mapping, so the futexes are shared (keyed on the
// physical page), never FUTEX_PRIVATE: a process wakes its peer's sleeper through its
// own mapping of the segment.
const (
	futexWait = 0 // FUTEX_WAIT without FUTEX_PRIVATE_FLAG
	futexWake = 1 // FUTEX_WAKE without FUTEX_PRIVATE_FLAG

	// spinRounds is how many times a waiter polls its ring before it announces that it
	// sleeps; it yields with runtime.Gosched every spinGoschedEvery polls, so a spinning
	// waiter lets the goroutine it waits for run on the same P. Frequent yields matter
	// most when the host has fewer idle cores than busy goroutines; `go test -run XXX
	// -bench RoundTrip64 ./transport/sockets` compares budgets.
	spinRounds       = 1024
	spinGoschedEvery = 16
)

// maxSleep bounds one FUTEX_WAIT. Every event that must end a sleep wakes it explicitly;
// the bound only limits what a lost wake-up (a peer that dies between publishing and
// waking) can cost.
const maxSleep = 50 * time.Millisecond

// futexSleep sleeps on word while it holds val, for at most d. Spurious returns are
// fine: every caller re-checks its condition.
func futexSleep(word *atomic.Uint32, val uint32, d time.Duration) {
	if d > maxSleep {
		d = maxSleep
	}
	if d <= 0 {
		return
	}
	ts := unix.NsecToTimespec(int64(d))
	unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(word)), futexWait, uintptr(val),
		uintptr(unsafe.Pointer(&ts)), 0, 0)
}

// wake wakes the sleeper announced in word, if there is one. The sleeper stores 1 in the
// word and then re-checks its condition; a waker publishes its event and then calls wake.
// Go's atomics are sequentially consistent, so either the waker sees the 1 (and clears it
// and wakes) or the sleeper's re-check sees the event. The load first keeps the common
// case (nobody asleep) to one read of the word.
func wake(word *atomic.Uint32) {
	if word.Load() == 0 || word.Swap(0) == 0 {
		return
	}
	unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(word)), futexWake, 1, 0, 0, 0)
}

// spin is the busy part of a wait: it yields every spinGoschedEvery rounds and reports
// whether the budget is left.
func spin(round int) bool {
	if round >= spinRounds {
		return false
	}
	if round%spinGoschedEvery == spinGoschedEvery-1 {
		runtime.Gosched()
	}
	return true
}
