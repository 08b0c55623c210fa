package verbstest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/transport/verbs"
)

var waitModes = []verbs.WaitMode{verbs.WaitSpin, verbs.WaitHybrid, verbs.WaitBlock}

func withWait(m verbs.WaitMode) func(*verbs.Config) { return func(c *verbs.Config) { c.Wait = m } }

// testWaitModes runs a ping-pong under each wait mode. Each side only waits on its own CQ
// with CQ.Wait and then polls it, so a lost wake-up shows up as a timeout.
func testWaitModes(t *testing.T, f Factory) {
	for _, m := range waitModes {
		t.Run(m.String(), func(t *testing.T) {
			e := newEnv(f)
			a, b := e.open(t, "A", withWait(m)), e.open(t, "B", withWait(m))
			needCaps(t, verbs.CapSend, a, b)
			x, y := e.link(t, a, b, qpOpts{})
			const rounds = 200
			ctx, cancel := context.WithTimeout(context.Background(), 3*waitTimeout)
			defer cancel()
			errc := make(chan error, 2)
			go func() { errc <- pingPong(ctx, x, true, rounds) }()
			go func() { errc <- pingPong(ctx, y, false, rounds) }()
			for range 2 {
				if err := <-errc; err != nil {
					cancel()
					t.Errorf("wait mode %v: %v", m, err)
				}
			}
		})
	}
}

// pingPong plays one side of rounds exchanges of an 8-byte counter: the pinger sends
// first, each side answers what it received plus one.
func pingPong(ctx context.Context, x *end, pinger bool, rounds int) error {
	mr, err := x.node.pd.AllocMR(16, verbs.LocalWrite)
	if err != nil {
		return err
	}
	defer mr.Dereg()
	buf := mr.Bytes()
	recv := func() error {
		wr := verbs.RecvWR{WRID: 1, Local: buf[:8], LKey: mr.LKey()}
		return x.qp.PostRecv(&wr)
	}
	send := func(v uint64) error {
		put64(buf[8:], v)
		wr := verbs.SendWR{WRID: 2, Op: verbs.OpSend, Flags: verbs.Signaled, Local: buf[8:16], LKey: mr.LKey()}
		return x.qp.PostSend(&wr)
	}
	// await waits for a receive if wantRecv, and for the send completion if one is pending.
	sendPending := false
	await := func(wantRecv bool) (uint64, error) {
		gotRecv := !wantRecv
		var wcs [4]verbs.WC
		for !gotRecv || sendPending {
			if err := x.cq.cq.Wait(ctx); err != nil {
				return 0, fmt.Errorf("wait: %w", err)
			}
			n, err := x.cq.cq.Poll(wcs[:])
			if err != nil {
				return 0, fmt.Errorf("poll: %w", err)
			}
			for _, wc := range wcs[:n] {
				if wc.Status != verbs.Success {
					return 0, fmt.Errorf("completion %s", fmtWC(wc))
				}
				switch wc.Op {
				case verbs.WCRecv:
					gotRecv = true
				case verbs.WCSend:
					sendPending = false
				}
			}
		}
		return get64(buf), nil
	}
	if err := recv(); err != nil {
		return err
	}
	var next uint64
	if pinger {
		if err := send(0); err != nil {
			return err
		}
		sendPending, next = true, 1
	}
	for i := range rounds {
		v, err := await(true)
		if err != nil {
			return fmt.Errorf("round %d: %w", i, err)
		}
		if v != next {
			return fmt.Errorf("round %d: received %d, want %d", i, v, next)
		}
		if err := recv(); err != nil {
			return err
		}
		if err := send(v + 1); err != nil {
			return err
		}
		sendPending, next = true, v+2
	}
	// The pinger sent one message more than the ponger: the ponger takes it; both wait for
	// their last send's completion.
	v, err := await(!pinger)
	if err != nil {
		return fmt.Errorf("last round: %w", err)
	}
	if !pinger && v != next {
		return fmt.Errorf("last message %d, want %d", v, next)
	}
	return nil
}

// testCQWait checks CQ.Wait's contract under each wait mode: it honours its context's
// deadline and cancellation, returns when the CQ is closed, and does not consume.
func testCQWait(t *testing.T, f Factory) {
	for _, m := range waitModes {
		t.Run(m.String(), func(t *testing.T) {
			e := newEnv(f)
			a, b := e.open(t, "A", withWait(m)), e.open(t, "B", withWait(m))
			t.Run("Deadline", func(t *testing.T) {
				c := e.newCQ(t, a, "empty")
				ctx, cancel := context.WithTimeout(context.Background(), quietPeriod)
				defer cancel()
				start := time.Now()
				err, ok := within(waitTimeout, func() error { return c.cq.Wait(ctx) })
				if !ok {
					t.Fatalf("Wait on an empty CQ ignored its %v deadline for %v", quietPeriod, waitTimeout)
				}
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("Wait on an empty CQ returned %v after %v, want context.DeadlineExceeded", err, time.Since(start))
				}
			})
			t.Run("AlreadyCancelled", func(t *testing.T) {
				c := e.newCQ(t, a, "empty")
				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				err, ok := within(waitTimeout, func() error { return c.cq.Wait(ctx) })
				if !ok {
					t.Fatalf("Wait with a cancelled context blocked")
				}
				if !errors.Is(err, context.Canceled) {
					t.Errorf("Wait with a cancelled context: %v, want context.Canceled", err)
				}
			})
			t.Run("CancelWhileBlocked", func(t *testing.T) {
				c := e.newCQ(t, a, "empty")
				ctx, cancel := context.WithCancel(context.Background())
				time.AfterFunc(quietPeriod, cancel)
				err, ok := within(waitTimeout, func() error { return c.cq.Wait(ctx) })
				if !ok {
					cancel()
					t.Fatalf("Wait did not return within %v of its context's cancellation", waitTimeout)
				}
				if !errors.Is(err, context.Canceled) {
					t.Errorf("Wait cancelled while blocked: %v, want context.Canceled", err)
				}
			})
			t.Run("Close", func(t *testing.T) {
				cq, err := a.dev.CreateCQ(16)
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithTimeout(context.Background(), 3*waitTimeout)
				defer cancel()
				time.AfterFunc(quietPeriod, func() { _ = cq.Close() })
				_, ok := within(waitTimeout, func() error { return cq.Wait(ctx) })
				if !ok {
					t.Fatalf("Wait did not return within %v of CQ.Close (verbs doc: it returns when the CQ is closed)", waitTimeout)
				}
			})
			t.Run("DoesNotConsume", func(t *testing.T) {
				needCaps(t, verbs.CapRDMAWrite, a, b)
				x, _ := e.link(t, a, b, qpOpts{})
				src := a.alloc(t, arenaMem, 8, verbs.LocalWrite)
				dst := b.alloc(t, arenaMem, 8, verbs.AccessAll)
				post(t, x, writeWR(1, verbs.Signaled, src, dst, 0, 8))
				waitAvailable(t, x.cq)
				waitAvailable(t, x.cq)
				wc := pollOne(t, x.cq)
				checkWC(t, "completion after two Waits", wc, verbs.WC{WRID: 1, Status: verbs.Success}, fWRID|fStatus)
				var more [4]verbs.WC
				if n, _ := x.cq.cq.Poll(more[:]); n != 0 {
					t.Errorf("one write produced %d more completions: %s", n, fmtWCs(more[:n]))
				}
				ctx, cancel := context.WithTimeout(context.Background(), quietPeriod)
				defer cancel()
				if err := x.cq.cq.Wait(ctx); !errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("Wait on a drained CQ: %v, want context.DeadlineExceeded", err)
				}
			})
		})
	}
}
