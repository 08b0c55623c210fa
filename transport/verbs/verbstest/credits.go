package verbstest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/transport/verbs"
)

// The cases below follow the verbs doc on back-pressure: a QP holds at most MaxSendWR
// outstanding send requests and MaxRecvWR posted receives, past which PostSend and PostRecv
// return ErrQueueFull at once. A send request stays outstanding until its completion, or the
// completion of a later signaled request on the QP, has been polled. They poll only the
// initiator's CQ (RDMA writes need no target CPU), so that the suite controls exactly when
// completions are consumed.

// testUnsignaled checks that unsignaled requests produce no completion and that a later
// signaled one does, after which all of them have taken effect.
func testUnsignaled(t *testing.T, f Factory) {
	e := newEnv(f)
	a, b := e.open(t, "A"), e.open(t, "B")
	needCaps(t, verbs.CapRDMAWrite, a, b)
	const n, chunk = 16, 512
	x, _ := e.link(t, a, b, qpOpts{sendWR: 32})
	src := a.alloc(t, arenaMem, n*chunk, verbs.LocalWrite)
	fill(src.b, 61)
	dst := b.alloc(t, arenaMem, n*chunk, verbs.AccessAll)
	for i := range n - 1 {
		post(t, x, writeWR(uint64(i), 0, src, dst, i*chunk, chunk))
	}
	e.quiet(t, x.cq, quietPeriod, "unsignaled RDMA writes")
	post(t, x, writeWR(99, verbs.Signaled, src, dst, (n-1)*chunk, chunk))
	wcs := e.wait(t, x.cq, 1)
	checkWC(t, "signaled write after unsignaled ones", wcs[0], verbs.WC{WRID: 99, Op: verbs.WCRDMAWrite, QPN: x.qp.Num()}, fBasic)
	e.quiet(t, x.cq, quietPeriod, "after the signaled completion")
	checkBytes(t, "target after unsignaled writes and a signaled one", dst.b, src.b)
}

// writeWR is an RDMA write of n bytes at off from src to the same offset of dst.
func writeWR(wrid uint64, flags verbs.SendFlags, src, dst *buffer, off, n int) verbs.SendWR {
	return verbs.SendWR{WRID: wrid, Op: verbs.OpRDMAWrite, Flags: flags, Local: src.b[off : off+n],
		LKey: src.lkey(), Remote: verbs.RemoteAddr{RKey: dst.rkey(), Offset: uint64(off)}}
}

// testSendQueueFull checks ErrQueueFull on the send queue and slot accounting.
func testSendQueueFull(t *testing.T, f Factory) {
	e := newEnv(f)
	a, b := e.open(t, "A"), e.open(t, "B")
	needCaps(t, verbs.CapRDMAWrite, a, b)
	const depth = 8
	src := a.alloc(t, arenaMem, 64, verbs.LocalWrite)
	dst := b.alloc(t, arenaMem, 64, verbs.AccessAll)
	w := func(wrid uint64, flags verbs.SendFlags) verbs.SendWR { return writeWR(wrid, flags, src, dst, 0, 8) }
	full := func(t *testing.T, x *end, what string) {
		t.Helper()
		wr := w(1000, verbs.Signaled)
		wantCallErr(t, what, x.qp.PostSend(&wr), verbs.ErrQueueFull)
	}

	t.Run("Signaled", func(t *testing.T) {
		x, _ := e.link(t, a, b, qpOpts{sendWR: depth})
		for i := range depth {
			post(t, x, w(uint64(i), verbs.Signaled))
		}
		full(t, x, fmt.Sprintf("post %d with MaxSendWR %d", depth+1, depth))
		waitAvailable(t, x.cq)
		time.Sleep(quietPeriod) // let every write finish: slots are freed by polling, not by finishing
		full(t, x, "post with all requests finished but none polled")
		for i := range depth {
			wc := pollOne(t, x.cq)
			checkWC(t, "completion", wc, verbs.WC{WRID: uint64(i), Status: verbs.Success}, fWRID|fStatus)
			post(t, x, w(uint64(depth+i), verbs.Signaled)) // one polled, one slot free
			full(t, x, fmt.Sprintf("post after polling %d and reposting %d", i+1, i+1))
		}
		e.wait(t, x.cq, depth)
	})

	t.Run("UnsignaledHoldSlots", func(t *testing.T) {
		x, _ := e.link(t, a, b, qpOpts{sendWR: depth})
		for i := range depth {
			post(t, x, w(uint64(i), 0))
		}
		time.Sleep(quietPeriod)
		x.cq.pump()
		if got := x.cq.take(x.cq.count()); len(got) > 0 {
			t.Errorf("unsignaled writes produced completions: %s", fmtWCs(got))
		}
		full(t, x, fmt.Sprintf("post after %d unsignaled requests (they hold their slots until a later signaled completion is polled)", depth))
	})

	t.Run("SignaledFreesEarlierUnsignaled", func(t *testing.T) {
		x, _ := e.link(t, a, b, qpOpts{sendWR: depth})
		for round := range 3 {
			for i := range depth - 1 {
				post(t, x, w(uint64(i), 0))
			}
			post(t, x, w(uint64(100+round), verbs.Signaled))
			full(t, x, fmt.Sprintf("round %d: post with %d unsignaled and 1 signaled outstanding", round, depth-1))
			waitAvailable(t, x.cq)
			full(t, x, fmt.Sprintf("round %d: post with the signaled completion available but not polled", round))
			wc := pollOne(t, x.cq)
			checkWC(t, "signaled completion", wc, verbs.WC{WRID: uint64(100 + round), Op: verbs.WCRDMAWrite, QPN: x.qp.Num()}, fBasic)
			time.Sleep(quietPeriod)
			x.cq.pump()
			if got := x.cq.take(x.cq.count()); len(got) > 0 {
				t.Fatalf("round %d: completions of unsignaled writes: %s", round, fmtWCs(got))
			}
		}
	})
}

// testRecvQueueFull checks ErrQueueFull on the receive queue: a slot comes back once a
// receive's completion has been polled.
func testRecvQueueFull(t *testing.T, f Factory) {
	e := newEnv(f)
	a, b := e.open(t, "A"), e.open(t, "B")
	needCaps(t, verbs.CapSend, a, b)
	const depth = 4
	x, y := e.link(t, a, b, qpOpts{recvWR: depth})
	src := a.alloc(t, arenaMem, 64, verbs.LocalWrite)
	rb := b.alloc(t, arenaMem, (depth+2)*64, verbs.LocalWrite)
	recv := func(i int) verbs.RecvWR {
		return verbs.RecvWR{WRID: uint64(i), Local: rb.b[i*64 : (i+1)*64], LKey: rb.lkey()}
	}
	for i := range depth {
		postRecv(t, y, recv(i))
	}
	wr := recv(depth)
	wantCallErr(t, fmt.Sprintf("receive %d with MaxRecvWR %d", depth+1, depth), y.qp.PostRecv(&wr), verbs.ErrQueueFull)
	post(t, x, verbs.SendWR{WRID: 1, Op: verbs.OpSend, Flags: verbs.Signaled, Local: src.b, LKey: src.lkey()})
	checkWC(t, "receive", e.waitOne(t, y.cq), verbs.WC{WRID: 0, Op: verbs.WCRecv, QPN: y.qp.Num()}, fBasic)
	postRecv(t, y, recv(depth)) // the polled receive's slot is free again
	wr = recv(depth + 1)
	wantCallErr(t, "receive past MaxRecvWR after one slot was reused", y.qp.PostRecv(&wr), verbs.ErrQueueFull)
	e.waitOne(t, x.cq)
}

// waitAvailable blocks in CQ.Wait until a completion can be polled, without consuming it.
func waitAvailable(t testing.TB, c *cqBuf) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if err := c.cq.Wait(ctx); err != nil {
		t.Fatalf("CQ.Wait for a completion: %v", err)
	}
}

// pollOne polls exactly one completion with a one-element slice.
func pollOne(t testing.TB, c *cqBuf) verbs.WC {
	t.Helper()
	if got := c.take(1); len(got) == 1 {
		return got[0]
	}
	var wc [1]verbs.WC
	deadline := time.Now().Add(waitTimeout)
	for time.Now().Before(deadline) {
		n, err := c.cq.Poll(wc[:])
		if err != nil {
			t.Fatalf("Poll: %v", err)
		}
		if n == 1 {
			return wc[0]
		}
		time.Sleep(100 * time.Microsecond)
	}
	t.Fatalf("no completion within %v", waitTimeout)
	return verbs.WC{}
}
