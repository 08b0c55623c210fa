package shm

import (
	"context"
	"testing"

	"github.com/gorma-hpc/gorma/transport/verbs"
)

// BenchmarkWaitStepEmpty is one pass of a spinning Wait over a CQ with nothing to do: the
// period at which a spinning waiter looks at its rings, half of which a message that
// lands during the spin waits on average before it is seen.
func BenchmarkWaitStepEmpty(b *testing.B) {
	x, _ := pair(b, verbs.Config{}, verbs.QPAttr{})
	c := x.cq.(*cq)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for b.Loop() {
		if c.waitStep(ctx) != errNotYet {
			b.Fatal("not empty")
		}
	}
}

// BenchmarkPollEmpty is an empty Poll, the loop of a caller that polls instead of waiting.
func BenchmarkPollEmpty(b *testing.B) {
	x, _ := pair(b, verbs.Config{}, verbs.QPAttr{})
	wcs := make([]verbs.WC, 4)
	for b.Loop() {
		if n, _ := x.cq.Poll(wcs); n != 0 {
			b.Fatal("not empty")
		}
	}
}
