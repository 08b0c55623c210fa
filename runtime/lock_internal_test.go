package runtime

import (
	"sync"
	"testing"
	"time"
)

// TestEngineLockStages: a mix of short holders and one that holds engineLock for longer
// than the spinning and yielding stages last, so that waiters reach the sleeping stage;
// the guarded sum stays exact, no two goroutines are ever inside at once, and every
// goroutine finishes its rounds.
func TestEngineLockStages(t *testing.T) {
	var (
		l       engineLock
		holders int
		sum     int
		wg      sync.WaitGroup
	)
	const goroutines, rounds = 6, 1500
	done := make([]int, goroutines)
	for g := range goroutines {
		wg.Go(func() {
			for r := range rounds {
				l.Lock()
				holders++
				if holders > 1 {
					t.Errorf("goroutine %d round %d: %d holders", g, r, holders)
				}
				sum += g + 1
				if g == 0 && r%300 == 0 {
					time.Sleep(3 * lockSleep) // waiters go through every stage
				}
				holders--
				l.Unlock()
				done[g]++
			}
		})
	}
	wg.Wait()
	want := 0
	for g := range goroutines {
		want += (g + 1) * rounds
		if done[g] != rounds {
			t.Errorf("goroutine %d did %d rounds, want %d", g, done[g], rounds)
		}
	}
	if sum != want {
		t.Fatalf("guarded sum %d, want %d", sum, want)
	}
}
