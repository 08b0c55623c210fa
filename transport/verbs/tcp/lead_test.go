package tcp

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/transport/verbs"
)

// leaderCfg makes CQ.Wait block, so that waiters take the reading role (lead.go).
func leaderCfg() verbs.Config {
	cfg := testCfg()
	cfg.Wait = verbs.WaitBlock
	return cfg
}

// leaderModes runs f on two connected pairs whose waiters lead: one whose leaders wake
// their readers themselves as they leave Wait, and one whose devices have idle-role
// watches (watch.go) served by this process's test watcher.
func leaderModes(t *testing.T, f func(t *testing.T, a, b *side)) {
	t.Run("self", func(t *testing.T) { a, b := pair(t, leaderCfg(), verbs.QPAttr{}); f(t, a, b) })
	t.Run("watch", func(t *testing.T) {
		a := newSide(t, openDev(t, watchedCfg(t, testWatcher())), verbs.QPAttr{})
		b := newSide(t, openDev(t, watchedCfg(t, testWatcher())), verbs.QPAttr{})
		connect(t, a, b)
		f(t, a, b)
	})
}

// TestLeaderPingPong: a Send/Recv ping-pong, each side's Sends acknowledged by acks riding
// on the other side's Sends, with reads and atomics (whose answers carry acks too) and
// compare-and-swaps (which cannot carry one) mixed in; both sides read their connection
// from CQ.Wait most of the time.
func TestLeaderPingPong(t *testing.T) {
	leaderModes(t, func(t *testing.T, a, b *side) {
		sa, sb := newBuf(t, a, arenaMem, 64), newBuf(t, b, arenaMem, 64)
		ra, rb := newBuf(t, a, arenaMem, 64), newBuf(t, b, arenaMem, 64)
		const rounds = 300
		done := make(chan struct{})
		go func() { // b: echo
			defer close(done)
			for i := range uint64(rounds) {
				if err := b.qp.PostRecv(&verbs.RecvWR{WRID: i, Local: rb.b, LKey: rb.key}); err != nil {
					t.Error(err)
					return
				}
				for got := false; !got; {
					wc, err := waitWCErr(b.cq)
					if err != nil || wc.Status != verbs.Success {
						t.Errorf("b: %+v %v", wc, err)
						return
					}
					got = wc.Op == verbs.WCRecv
				}
				if err := b.qp.PostSend(&verbs.SendWR{WRID: 1000 + i, Op: verbs.OpSend, Flags: verbs.Signaled, Local: sb.b[:8], LKey: sb.key}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
		sends, recvs := 0, 0
		for i := range uint64(rounds) {
			postRecv(t, a.qp, verbs.RecvWR{WRID: i, Local: ra.b, LKey: ra.key})
			post(t, a.qp, verbs.SendWR{WRID: i, Op: verbs.OpSend, Flags: verbs.Signaled, Local: sa.b[:8], LKey: sa.key})
			switch i % 3 {
			case 1:
				post(t, a.qp, verbs.SendWR{WRID: 5000 + i, Op: verbs.OpRDMARead, Flags: verbs.Signaled, Local: sa.b[8:16],
					LKey: sa.key, Remote: verbs.RemoteAddr{RKey: sb.key, Offset: 8}})
				sends++
			case 2:
				post(t, a.qp, verbs.SendWR{WRID: 5000 + i, Op: verbs.OpAtomicCmpSwap, Flags: verbs.Signaled, Local: sa.b[8:16],
					LKey: sa.key, Remote: verbs.RemoteAddr{RKey: sb.key, Offset: 16}})
				sends++
			}
			sends++
			for recvs <= int(i) {
				wc := waitWC(t, a.cq)
				if wc.Status != verbs.Success {
					t.Fatalf("a: %+v", wc)
				}
				if wc.Op == verbs.WCRecv {
					recvs++
				} else {
					sends--
				}
			}
		}
		for sends > 0 {
			if wc := waitWC(t, a.cq); wc.Status != verbs.Success || wc.Op == verbs.WCRecv {
				t.Fatalf("a: %+v", wc)
			}
			sends--
		}
		<-done
	})
}

// TestLeaderOwedAck: the receiver waits on its CQ when each Send arrives and never sends
// anything back; the sender's Sends must still complete (the ack is flushed by whoever
// reads next, before it blocks).
func TestLeaderOwedAck(t *testing.T) {
	leaderModes(t, func(t *testing.T, a, b *side) {
		src, dst := newBuf(t, a, arenaMem, 64), newBuf(t, b, arenaMem, 64)
		for i := range uint64(30) {
			postRecv(t, b.qp, verbs.RecvWR{WRID: i, Local: dst.b, LKey: dst.key})
			got := waitWCAsync(t, b.cq)
			post(t, a.qp, verbs.SendWR{WRID: i, Op: verbs.OpSend, Flags: verbs.Signaled, Local: src.b[:8], LKey: src.key})
			wantWC(t, waitWC(t, a.cq), i, verbs.Success, verbs.WCSend)
			wantWC(t, <-got, i, verbs.Success, verbs.WCRecv)
		}
	})
}

// TestLeaderPassiveTarget: after b's application led (waited on its CQ and got a
// completion), it computes without calling the provider; a's reads of b's memory must
// still be served.
func TestLeaderPassiveTarget(t *testing.T) {
	leaderModes(t, func(t *testing.T, a, b *side) {
		src, dst := newBuf(t, a, arenaMem, 64), newBuf(t, b, arenaMem, 64)
		for i := range uint64(5) {
			postRecv(t, b.qp, verbs.RecvWR{WRID: i, Local: dst.b, LKey: dst.key})
			post(t, a.qp, verbs.SendWR{WRID: i, Op: verbs.OpSend, Local: src.b[:8], LKey: src.key})
			wantWC(t, waitWC(t, b.cq), i, verbs.Success, verbs.WCRecv)
			var served atomic.Bool
			go func() {
				post(t, a.qp, verbs.SendWR{WRID: 100 + i, Op: verbs.OpRDMARead, Flags: verbs.Signaled, Local: src.b[8:16],
					LKey: src.key, Remote: verbs.RemoteAddr{RKey: dst.key}})
				wantWC(t, waitWC(t, a.cq), 100+i, verbs.Success, verbs.WCRDMARead)
				served.Store(true)
			}()
			deadline := time.Now().Add(testbudget.Scale(10 * time.Second))
			for x := 0; !served.Load(); x++ { // b computes
				if x%1024 == 0 && time.Now().After(deadline) {
					t.Fatal("b's memory was not served while its application computed")
				}
			}
		}
	})
}

// TestLeaderWokenByOtherPush: a waiter reading its connection wakes for a completion that
// another goroutine pushes (a request failing its local key check), and for ctx.
func TestLeaderWokenByOtherPush(t *testing.T) {
	leaderModes(t, func(t *testing.T, a, b *side) {
		src, dst := newBuf(t, a, arenaMem, 64), newBuf(t, b, arenaMem, 64)
		// Get the role to a's waiters: one completion through the eventfd waiter first.
		post(t, a.qp, verbs.SendWR{WRID: 1, Op: verbs.OpRDMAWrite, Flags: verbs.Signaled, Local: src.b[:8], LKey: src.key,
			Remote: verbs.RemoteAddr{RKey: dst.key}})
		wantWC(t, waitWC(t, a.cq), 1, verbs.Success, verbs.WCRDMAWrite)
		for range 3 {
			ctx, cancel := context.WithCancel(context.Background())
			errc := make(chan error, 1)
			go func() { errc <- a.cq.Wait(ctx) }()
			time.Sleep(10 * time.Millisecond)
			cancel()
			if err := <-errc; err == nil {
				t.Fatal("Wait returned nil after cancel without a completion")
			}
		}
		errc := make(chan error, 1)
		go func() { errc <- a.cq.Wait(context.Background()) }()
		time.Sleep(10 * time.Millisecond)
		post(t, a.qp, verbs.SendWR{WRID: 2, Op: verbs.OpRDMAWrite, Flags: verbs.Signaled, Local: src.b[:8], LKey: src.key + 1,
			Remote: verbs.RemoteAddr{RKey: dst.key}})
		select {
		case err := <-errc:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(testbudget.Scale(10 * time.Second)):
			t.Fatal("a completion pushed by PostSend did not wake the leader")
		}
		wantWC(t, waitWC(t, a.cq), 2, verbs.LocProtErr, verbs.WCRDMAWrite)
	})
}
