package window

import (
	"context"
	goruntime "runtime"
	"time"
)

// Waiting for a word of shared memory (a lock word, a fence or PSCW counter) to change.
// The word is changed by a peer's CPU (mapped) or by the transport's target-side progress
// (RDMA), neither of which can wake this goroutine, so waiting polls: it spins, yielding
// the processor, for spinFor; then it sleeps between polls, from sleepMin doubling up to
// sleepMax, so that ranks outnumbering cores do not starve each other. Every pollCheck
// polls (and before each sleep) it checks ctx and the liveness of the peers involved:
// nothing waits forever on a dead peer or an ended context.
const (
	spinFor   = 50 * time.Microsecond
	sleepMin  = 5 * time.Microsecond
	sleepMax  = time.Millisecond
	pollCheck = 256
)

// pollUntil returns nil once ready reports true, or the error of ctx or of check.
func pollUntil(ctx context.Context, ready func() bool, check func() error) error {
	if ready() {
		return nil
	}
	start := time.Now()
	sleep := time.Duration(0)
	for i := 1; ; i++ {
		if ready() {
			return nil
		}
		if i%pollCheck == 0 || sleep > 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
			if check != nil {
				if err := check(); err != nil {
					return err
				}
			}
			if sleep == 0 && time.Since(start) > spinFor {
				sleep = sleepMin
			}
		}
		if sleep == 0 {
			goruntime.Gosched()
			continue
		}
		time.Sleep(sleep)
		sleep = min(2*sleep, sleepMax)
	}
}
