package runtime_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/runtimetest"
)

// TestEagerRunAhead sends eager messages to a rank that starts receiving only once the
// sender has posted them all, and checks that every message arrives although the sender
// stops calling the runtime once its sends have completed. The sender fills the receiver's fast box and
// every receive slot, lets its own send slots free (Iprobe polls their completions), and
// sends one more message: on shm it finds no posted receive and waits in the sender's
// send queue, so its send must not complete before it has left.
func TestEagerRunAhead(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			sent := make(chan struct{})
			runtimetest.Run(t, 2, runtimetest.Options{Transport: tr}, func(w *runtime.World) error {
				ctx, cancel := testbudget.Context(context.Background(), 5*time.Second, "rank 1's receipt of every message")
				defer cancel()
				if err := runtime.Barrier(ctx, w); err != nil { // connects the pair
					return err
				}
				n := runtime.FastboxCells + runtime.EagerSlots(w) + 1
				if w.Rank() == 0 {
					return runAheadSend(ctx, w, n, sent)
				}
				select {
				case <-sent:
				case <-ctx.Done():
					return fmt.Errorf("rank 0 had not posted its sends: %w", ctx.Err())
				}
				buf := []int64{0}
				for i := range n {
					if _, err := runtime.Recv(ctx, w, buf, 0, 7); err != nil {
						if ctx.Err() != nil {
							err = context.Cause(ctx)
						}
						return fmt.Errorf("received %d of %d messages after rank 0's sends completed: %w", i, n, err)
					}
					if buf[0] != int64(i) {
						return fmt.Errorf("message %d holds %d", i, buf[0])
					}
				}
				return nil
			})
		})
	}
}

// runAheadSend sends n messages to rank 1 (the last once the send slots are free again),
// closes sent once every send is posted, and waits for them.
func runAheadSend(ctx context.Context, w *runtime.World, n int, sent chan<- struct{}) error {
	bufs := make([][]int64, n)
	reqs := make([]*runtime.Request, n)
	for i := range n {
		if i == n-1 {
			if _, _, err := runtime.Iprobe(w, runtime.AnySource, runtime.AnyTag); err != nil {
				return err
			}
		}
		bufs[i] = []int64{int64(i)}
		r, err := runtime.Isend(w, bufs[i], 1, 7)
		if err != nil {
			return err
		}
		reqs[i] = r
	}
	close(sent) // not after WaitAll: the last send completes only once rank 1 receives
	return runtime.WaitAll(ctx, reqs, nil)
}
