package shm

import (
	"runtime"
	"sync/atomic"
	"time"
)

// qlock is the mutex of the data path: qp.mu and cq.mu, which every post and poll takes.
// Its Lock is sync.Mutex's fast path (one compare-and-swap); its Unlock is a release
// store (publish32), a plain MOV on amd64, where sync.Mutex's Unlock is a locked add.
//
// The price is that Unlock cannot know of waiters, so a waiter cannot sleep until woken:
// it spins briefly, then yields to other goroutines, then sleeps in short steps, checking
// the word between them. That suits these locks, whose critical sections are short (a
// post, a poll's drain of one ring) and contended only when a polling goroutine meets a
// posting one. A long hold (an RDMA copy of many megabytes) sends the waiter to sleep.
type qlock struct {
	state atomic.Int32 // 1 while held
}

const (
	qlockSpin  = 64  // compare-and-swap attempts before yielding
	qlockYield = 256 // attempts (spins included) before sleeping between them
	qlockSleep = 20 * time.Microsecond
)

// Lock acquires l.
func (l *qlock) Lock() {
	if l.state.CompareAndSwap(0, 1) {
		return
	}
	l.lockSlow()
}

func (l *qlock) lockSlow() {
	for i := 1; ; i++ {
		if l.state.Load() == 0 && l.state.CompareAndSwap(0, 1) {
			return
		}
		switch {
		case i < qlockSpin:
		case i < qlockYield:
			runtime.Gosched()
		default:
			time.Sleep(qlockSleep)
		}
	}
}

// Unlock releases l. Every write made while holding it is visible to the next holder.
func (l *qlock) Unlock() {
	publish32(&l.state, 0)
}
