package runtime

import (
	"sync/atomic"
	"time"

	"github.com/gorma-hpc/gorma/internal/gosched"
)

// engineLock is engine.mu, the one lock of a rank's engine, which every call and every
// handled message takes. Its Lock is sync.Mutex's fast path (one compare-and-swap); its
// Unlock is a release store (unlockStore: a plain MOV on amd64), where sync.Mutex's Unlock
// is a locked add that drains the store buffer. An 8-byte Send and Recv take it three
// times in all, the receiver's last release sitting between the message's arrival and the
// reply: BenchmarkSoftware8B (two such messages) measures it.
//
// The price is that Unlock does not know of waiters, so a waiter cannot sleep until
// woken: it retries briefly (lockSpin), then yields to other goroutines between retries
// (to lockYield), then sleeps lockSleep between them. That suits this lock: a rank's
// program usually has one goroutine in the runtime at a time, the poller holds the lock
// only to handle what it found. Every hold is short (a message's handling, the copy of
// an eager payload). A goroutine that waits longer than a few hundred yields met a long
// hold (a device's setup in Init or Finalize) and loses little by sleeping.
type engineLock struct {
	state atomic.Int32 // 1 while held
}

const (
	lockSpin  = 64   // attempts before yielding
	lockYield = 1024 // attempts (spins included) before sleeping between them
	lockSleep = 20 * time.Microsecond
)

// Lock acquires l.
func (l *engineLock) Lock() {
	if l.state.CompareAndSwap(0, 1) {
		return
	}
	l.lockSlow()
}

func (l *engineLock) lockSlow() {
	for i := 1; ; i++ {
		if l.state.Load() == 0 && l.state.CompareAndSwap(0, 1) {
			return
		}
		switch {
		case i < lockSpin:
		case i < lockYield:
			gosched.Yield()
		default:
			time.Sleep(lockSleep)
		}
	}
}

// TryLock acquires l if no one holds it, and reports whether it did.
func (l *engineLock) TryLock() bool { return l.state.CompareAndSwap(0, 1) }

// Unlock releases l. Every write made while holding it is visible to the next holder.
func (l *engineLock) Unlock() {
	unlockStore(&l.state)
}
