package shm

import (
	"sync"
	"testing"
	"time"
)

// TestQlockExclusion: goroutines that hold the lock briefly and some that hold it long
// enough to send waiters through the yielding and sleeping stages all see a consistent
// counter, and every one of them gets the lock.
func TestQlockExclusion(t *testing.T) {
	var l qlock
	var wg sync.WaitGroup
	count, inside := 0, 0
	const workers, rounds = 8, 2000
	for w := range workers {
		wg.Go(func() {
			for r := range rounds {
				l.Lock()
				inside++
				if inside != 1 {
					t.Errorf("%d holders at once", inside)
				}
				count++
				if w == 0 && r%200 == 0 {
					time.Sleep(200 * time.Microsecond) // a long hold: others sleep between tries
				}
				inside--
				l.Unlock()
			}
		})
	}
	wg.Wait()
	if count != workers*rounds {
		t.Fatalf("counter %d, want %d", count, workers*rounds)
	}
}
