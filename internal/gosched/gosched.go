package gosched

import (
	"runtime"
	"sync/atomic"
)

var locked atomic.Bool

// SetLocked declares that the process's calls into gorma come from goroutines locked to
// their threads (cgo callbacks): Yield does nothing from then on.
func SetLocked() { locked.Store(true) }

// Locked reports whether SetLocked was called.
func Locked() bool { return locked.Load() }

// Yield lets the rank's other goroutines run (runtime.Gosched), unless SetLocked was
// called.
func Yield() {
	if !locked.Load() {
		runtime.Gosched()
	}
}
