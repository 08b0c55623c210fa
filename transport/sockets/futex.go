package sockets

import (
	"runtime"
	"sync/atomic"
	"time"

	"github.com/gorma-hpc/gorma/internal/futex"
)

// The sleep words live in the shared mapping, so the futexes are shared (package futex):
// a process wakes its peer's sleeper through its own mapping of the segment.
const (
	// spinRounds is how many times a waiter polls its ring before it announces that it
	// sleeps; it yields with runtime.Gosched every spinGoschedEvery polls, so a spinning
	// waiter lets the goroutine it waits for run on the same P. Frequent yields matter
	// most when the host has fewer idle cores than busy goroutines; `go test -run XXX
	// -bench RoundTrip64 ./transport/sockets` compares budgets.
	spinRounds       = 2048
	spinGoschedEvery = 16
)

// A sleep word holds awake, or how its waiter sleeps. Any other value (a peer's
// garbage) wakes nobody and is overwritten by the next sleep.
const (
	awake      = 0
	sleepFutex = 1 // in FUTEX_WAIT on the word: woken by FUTEX_WAKE
	sleepPoll  = 2 // parked on a channel: woken by a kick (a byte on the socket, or local)
)

// futexSpell is how long a waiter sleeps in FUTEX_WAIT before it parks its goroutine
// instead. A futex sleep is the fastest to wake but holds an OS thread, so a connection
// idle for longer waits in the Go scheduler and costs no thread.
const futexSpell = time.Millisecond

// futexSleepers counts this process's goroutines in FUTEX_WAIT. A goroutine in a system
// call keeps its P until the Go scheduler's monitor takes it back. So a futex sleeper
// stalls runnable goroutines: at most GOMAXPROCS-1 sleep in futexes at once, and the
// others park at once (`sockbench --transport gorma-tcp --test http` is the case of many
// connections on few cores; `--test pingpong` the case of one).
var futexSleepers atomic.Int32

// enterFutex reserves a futex sleeper's place and reports whether it got one; the caller
// that got one calls leaveFutex.
func enterFutex() bool {
	if futexSleepers.Add(1) < int32(runtime.GOMAXPROCS(0)) {
		return true
	}
	futexSleepers.Add(-1)
	return false
}

func leaveFutex() { futexSleepers.Add(-1) }

// wake wakes the sleeper announced in word, if there is one: FUTEX_WAKE for a futex
// sleeper, kick for a parked one. A sleeper stores its mode in the word and then
// re-checks its condition; a waker publishes its event and then calls wake. Go's atomics
// are sequentially consistent, so either the waker sees the mode (and clears it and
// wakes) or the sleeper's re-check sees the event. The load first keeps the common case
// (nobody asleep) to one read of the word.
func wake[T any](word *atomic.Uint32, kick func(T), arg T) {
	if word.Load() == awake {
		return
	}
	switch word.Swap(awake) {
	case sleepFutex:
		futex.Wake(word, 1)
	case sleepPoll:
		kick(arg)
	}
}

// Kick bytes, the only bytes sent on the liveness socket after the handshake.
const (
	kickReader = 'r' // wake your reader: data or a write-closed flag was published
	kickWriter = 'w' // wake your writer: space or a read-closed flag was published
)

// kickChan wakes a goroutine parked on ch (buffered, capacity 1) without blocking.
func kickChan(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
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
