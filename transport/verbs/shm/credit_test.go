package shm

import (
	"context"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/transport/verbs"
)

// noSleepCap makes a futex sleep last until it is woken (or the test's context ends), so
// that a lost wake-up hangs the test instead of costing maxSleep.
func noSleepCap(t *testing.T) {
	old := maxSleep
	maxSleep = time.Hour
	t.Cleanup(func() { maxSleep = old })
}

// TestCreditWakeStream starves the sender of credits: the receiver keeps one to three
// receives posted and reposts them in bursts while the sender waits for each message's
// completion, so both sides keep going to sleep, the sender mostly for a credit. The
// receiver publishes most credits without a fence (creditFenceLocked); a credit whose
// wake-up it failed to send would leave the sender asleep for good (sleeps are uncapped
// here), which the test binary's timeout turns into a failure. Every message must arrive
// once, in order, intact.
func TestCreditWakeStream(t *testing.T) {
	noSleepCap(t)
	sizes := []int{8, 8, 8, 100, 8, 5000, 8}
	const msgs = 2000
	for _, mode := range []verbs.WaitMode{verbs.WaitBlock, verbs.WaitHybrid} {
		for _, depth := range []int{1, 2, 3} {
			t.Run(mode.String()+"/"+string(rune('0'+depth)), func(t *testing.T) {
				a, b := pair(t, verbs.Config{Wait: mode, Spin: time.Microsecond}, verbs.QPAttr{})
				ctx, cancel := context.WithTimeout(t.Context(), testbudget.Scale(20*time.Second))
				defer cancel()
				stream(ctx, t, a, b, 5000, depth, sizes, msgs)
			})
		}
	}
}

// TestCreditFenceRules walks the two places where the receiver must look for a sender
// waiting on a credit after publishing credits without a fence (creditFenceLocked), in
// one goroutine so that every step is deterministic. The sender's announcement is
// txWait; the receiver's look consumes it (and rings the sender's doorbell).
func TestCreditFenceRules(t *testing.T) {
	a, b := pair(t, verbs.Config{}, verbs.QPAttr{})
	src := a.allocMR(t, 8, 0)
	dst := b.allocMR(t, 8, verbs.LocalWrite)
	rx := &b.qp.(*qp).rx
	send := func(id uint64) {
		t.Helper()
		if err := a.qp.PostSend(&verbs.SendWR{WRID: id, Op: verbs.OpSend, Flags: verbs.Signaled, Local: src.Bytes(), LKey: src.LKey()}); err != nil {
			t.Fatal(err)
		}
	}
	post := func(id uint64) { b.recv(t, verbs.RecvWR{WRID: id, Local: dst.Bytes(), LKey: dst.LKey()}) }
	waiting := func(step string, want bool) {
		t.Helper()
		if got := rx.txWait.Load() != 0; got != want {
			t.Fatalf("%s: sender's txWait set %v, want %v", step, got, want)
		}
	}

	post(1) // fenced: nothing was started yet
	send(1) // uses the one credit
	wantWC(t, a.next(t), 1, verbs.Success, verbs.WCSend)
	send(2) // no credit: waits, announced in txWait
	waiting("second send without a credit", true)
	// A receive while an earlier message is still to be started is published without a
	// fence or a look at txWait...
	post(2)
	waiting("receive posted while message 1 is undrained", true)
	// ...and the drain that starts message 1, leaving a credit the sender may not have
	// seen, looks.
	wantWC(t, b.next(t, a), 1, verbs.Success, verbs.WCRecv)
	waiting("message 1 drained with credit 2 published", false)

	// The sender's Poll finds the credit and sends message 2.
	wantWC(t, a.next(t), 2, verbs.Success, verbs.WCSend)
	send(3) // no credit again
	waiting("third send without a credit", true)
	wantWC(t, b.next(t, a), 2, verbs.Success, verbs.WCRecv)
	// Draining message 2 leaves no credit to publish: the sender waits rightly.
	waiting("message 2 drained, no credit", true)
	// The receive posted after every credit was used looks at once.
	post(3)
	waiting("receive posted after all credits were used", false)
	wantWC(t, b.next(t, a), 3, verbs.Success, verbs.WCRecv)
}
