package tcp

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/transport/verbs"
)

// TestCQWaitBlock exercises both blocking paths (the eventfd waiter and the channel
// waiters): a completion wakes them, a cancelled context wakes only its waiter, and
// Close wakes everyone with ErrClosed.
func TestCQWaitBlock(t *testing.T) {
	cfg := testCfg()
	cfg.Wait = verbs.WaitBlock
	a, b := pair(t, cfg, verbs.QPAttr{})
	src, dst := newBuf(t, a, arenaMem, 8), newBuf(t, b, arenaMem, 8)
	wr := verbs.SendWR{Op: verbs.OpRDMAWrite, Flags: verbs.Signaled, Local: src.b, LKey: src.key, Remote: verbs.RemoteAddr{RKey: dst.key}}

	// Three waiters with one long-lived context, one completion: all return.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 3)
	for range 3 {
		go func() { errc <- a.cq.Wait(ctx) }()
	}
	time.Sleep(20 * time.Millisecond)
	post(t, a.qp, wr)
	for range 3 {
		if err := <-errc; err != nil {
			t.Fatalf("Wait with a completion available: %v", err)
		}
	}
	waitWC(t, a.cq)

	// Cancellation: the same context again (its registration is reused), then a new one.
	for range 2 {
		c2, cancel2 := context.WithCancel(context.Background())
		go func() { errc <- a.cq.Wait(c2) }()
		go func() { errc <- a.cq.Wait(c2) }()
		time.Sleep(20 * time.Millisecond)
		cancel2()
		for range 2 {
			if err := <-errc; !errors.Is(err, context.Canceled) {
				t.Fatalf("Wait after cancel: %v", err)
			}
		}
	}
	tctx, tcancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer tcancel()
	if err := a.cq.Wait(tctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait with a deadline: %v", err)
	}
	if err := a.cq.Wait(tctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait with an expired context: %v", err)
	}

	// Close wakes the waiters.
	for range 2 {
		go func() { errc <- a.cq.Wait(context.Background()) }()
	}
	time.Sleep(20 * time.Millisecond)
	a.cq.Close()
	for range 2 {
		select {
		case err := <-errc:
			if !errors.Is(err, verbs.ErrClosed) {
				t.Fatalf("Wait on a closed CQ: %v", err)
			}
		case <-time.After(testbudget.Scale(5 * time.Second)):
			t.Fatal("Close did not wake a waiter")
		}
	}
}
