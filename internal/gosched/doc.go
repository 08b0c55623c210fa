// Package gosched is the one place where gorma's waits yield to the rank's other
// goroutines (runtime.Gosched), and the switch that turns those yields off for a process
// whose calls come from threads locked to their goroutines.
//
// A C program that calls gorma through abi/mpich enters Go by cgo callbacks, and the Go
// runtime locks each callback's goroutine to its C thread. runtime.Gosched from a locked
// goroutine hands the processor to another thread and sleeps its own until the scheduler
// hands it back: two futex calls and two context switches, where an unlocked goroutine
// switches in user space. abi/mpich calls SetLocked before Init; Yield then does nothing,
// and the rank's other goroutines run on the other Ps (abi/mpich gives the rank at least
// two).
//
// # Concurrency contract
//
// Yield and SetLocked are safe for concurrent use.
package gosched
