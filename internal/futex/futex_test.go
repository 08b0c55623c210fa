package futex

import (
	"sync/atomic"
	"testing"
	"time"
)

func TestWaitValueDiffers(t *testing.T) {
	var w uint32 = 1
	Wait(&w, 0, time.Hour) // returns at once: the word does not hold 0
	var w64 uint64 = 1
	Wait(&w64, 0, time.Hour) // the low half of a 64-bit word
	Wait(&w, 1, 0)           // a zero duration does not sleep
}

func TestWakeWakesSleeper(t *testing.T) {
	var w atomic.Uint32
	done := make(chan struct{})
	go func() {
		for w.Load() == 0 {
			Wait(&w, 0, time.Hour)
		}
		close(done)
	}()
	w.Store(1)
	Wake(&w, All)
	<-done // a lost wake-up hangs here, and the test binary's timeout reports it
}
