// Package futex wraps the Linux futex system call for words in memory that processes
// share: a sleeper waits while a word holds a value, and a waker in any process that maps
// the same page wakes it.
//
// The futexes are shared, never FUTEX_PRIVATE: the kernel keys them on the physical page,
// so a wake through one mapping reaches a sleeper on another mapping of the same page, in
// this process or another. A word is 32 bits: a *uint32, an *atomic.Uint32, or the first
// four bytes of a *uint64 (its low half on the little-endian machines gorma runs on).
//
// [Wait] and [Wake] are announced system calls (unix.Syscall6), not raw ones: a sleep
// may block for long, and the Go scheduler must hand the caller's P to other goroutines
// meanwhile. Spurious returns happen (a signal, a changed word, a wake meant for another
// sleeper), so every caller re-checks its condition in a loop.
//
// [Yield] is the third primitive of a wait on shared memory: a spin that misses on a host
// with more ranks than processors gives the processor to the rank it waits for.
//
// Callers publish their event before they wake, and a sleeper announces itself before it
// re-checks: the package orders nothing itself.
package futex
