package verbstest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/transport/verbs"
)

// testQPStates walks the state machine Reset → Init → RTR → RTS, checking at each step that
// posts the state does not allow fail with ErrQPState, and that illegal transitions fail
// and leave the state unchanged.
func testQPStates(t *testing.T, f Factory) {
	e := newEnv(f)
	a, b := e.open(t, "A"), e.open(t, "B")
	x := e.newEnd(t, a, "A.qp", qpOpts{})
	y := e.newEnd(t, b, "B.qp", qpOpts{})
	buf := a.alloc(t, arenaMem, 64, verbs.AccessAll)
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()

	send := func(state verbs.QPState) {
		t.Helper()
		wr := verbs.SendWR{WRID: 1, Op: verbs.OpRDMAWrite, Flags: verbs.Signaled, Local: buf.b[:8], LKey: buf.lkey(),
			Remote: verbs.RemoteAddr{RKey: buf.rkey()}}
		wantCallErr(t, "PostSend in "+state.String(), x.qp.PostSend(&wr), verbs.ErrQPState)
	}
	illegal := func(state verbs.QPState, name string, fn func() error) {
		t.Helper()
		var err error
		if p := catch(func() { err = fn() }); p != nil {
			t.Errorf("%s in %v panicked: %v", name, state, p)
			return
		}
		if err == nil {
			t.Errorf("%s in %v succeeded, want an error (verbs.QPState.CanTransition forbids it)", name, state)
		}
		wantState(t, "after refused "+name, x.qp, state)
	}
	toInit := x.qp.ToInit
	toRTR := func() error { return x.qp.ToRTR(ctx, y.qp.Endpoint()) }
	toRTS := func() error { return x.qp.ToRTS(ctx) }

	// Reset
	send(verbs.Reset)
	rwr := verbs.RecvWR{WRID: 2, Local: buf.b[:8], LKey: buf.lkey()}
	wantCallErr(t, "PostRecv in Reset", x.qp.PostRecv(&rwr), verbs.ErrQPState)
	if err := y.qp.ToInit(); err != nil {
		t.Fatal(err)
	}
	illegal(verbs.Reset, "ToRTR", toRTR)
	illegal(verbs.Reset, "ToRTS", toRTS)
	if err := toInit(); err != nil {
		t.Fatalf("ToInit from Reset: %v", err)
	}
	wantState(t, "after ToInit", x.qp, verbs.Init)

	// Init: receives are allowed, sends are not.
	send(verbs.Init)
	postRecv(t, x, verbs.RecvWR{WRID: 3, Local: buf.b[:8], LKey: buf.lkey()})
	illegal(verbs.Init, "ToInit", toInit)
	illegal(verbs.Init, "ToRTS", toRTS)

	// Connect both: y goes through the whole sequence concurrently.
	errc := make(chan error, 1)
	go func() { errc <- verbs.Connect(ctx, y.qp, x.qp.Endpoint()) }()
	if err := toRTR(); err != nil {
		t.Fatalf("ToRTR from Init: %v", err)
	}
	wantState(t, "after ToRTR", x.qp, verbs.RTR)
	send(verbs.RTR)
	postRecv(t, x, verbs.RecvWR{WRID: 4, Local: buf.b[8:16], LKey: buf.lkey()})
	illegal(verbs.RTR, "ToInit", toInit)
	illegal(verbs.RTR, "ToRTR", toRTR)
	if err := toRTS(); err != nil {
		t.Fatalf("ToRTS from RTR: %v", err)
	}
	if err := <-errc; err != nil {
		t.Fatalf("peer Connect: %v", err)
	}
	wantState(t, "after ToRTS", x.qp, verbs.RTS)
	illegal(verbs.RTS, "ToInit", toInit)
	illegal(verbs.RTS, "ToRTR", toRTR)
	illegal(verbs.RTS, "ToRTS", toRTS)

	// Err: no way back; receives posted in Init and RTR flush.
	if err := x.qp.ToErr(); err != nil {
		t.Fatalf("ToErr from RTS: %v", err)
	}
	wantState(t, "after ToErr", x.qp, verbs.Err)
	for _, wc := range e.wait(t, x.cq, 2) {
		checkWC(t, "receive posted before ToErr", wc, verbs.WC{Status: verbs.WRFlushErr, Op: verbs.WCRecv, QPN: x.qp.Num()},
			fStatus|fOp|fQPN)
	}
	illegal(verbs.Err, "ToInit", toInit)
	illegal(verbs.Err, "ToRTR", toRTR)
	illegal(verbs.Err, "ToRTS", toRTS)
	if err := x.qp.ToErr(); err != nil {
		t.Errorf("ToErr in Err: %v (CanTransition allows any state to go to Err)", err)
	}
}

// testToErrFromEveryState checks that a QP may go to Err from Reset, Init and RTR.
func testToErrFromEveryState(t *testing.T, f Factory) {
	e := newEnv(f)
	a, b := e.open(t, "A"), e.open(t, "B")
	y := e.newEnd(t, b, "B.qp", qpOpts{})
	if err := y.qp.ToInit(); err != nil {
		t.Fatal(err)
	}
	for _, s := range []verbs.QPState{verbs.Reset, verbs.Init, verbs.RTR} {
		x := e.newEnd(t, a, "A.qp."+s.String(), qpOpts{})
		if s >= verbs.Init {
			if err := x.qp.ToInit(); err != nil {
				t.Fatal(err)
			}
		}
		if s >= verbs.RTR {
			ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
			err := x.qp.ToRTR(ctx, y.qp.Endpoint())
			cancel()
			if err != nil {
				t.Fatal(err)
			}
		}
		if err := x.qp.ToErr(); err != nil {
			t.Errorf("ToErr from %v: %v", s, err)
		}
		wantState(t, "after ToErr from "+s.String(), x.qp, verbs.Err)
	}
}

// testBadEndpoint feeds ToRTR junk endpoint bytes: each must fail with an error (ideally
// ErrBadEndpoint), within the context's time, without a panic.
func testBadEndpoint(t *testing.T, f Factory) {
	e := newEnv(f)
	a, b := e.open(t, "A"), e.open(t, "B")
	peer := e.newEnd(t, b, "B.qp", qpOpts{})
	if err := peer.qp.ToInit(); err != nil {
		t.Fatal(err)
	}
	valid := clone(peer.qp.Endpoint())
	rng := rand.New(rand.NewPCG(1, 2))
	junk := make([]byte, 64)
	for i := range junk {
		junk[i] = byte(rng.Uint32())
	}
	cases := []struct {
		name string
		ep   []byte
	}{
		{"nil", nil},
		{"empty", []byte{}},
		{"one byte", []byte{0x01}},
		{"random 64 bytes", junk},
		{"all 0xff", []byte("\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff")},
		{"valid with garbage appended", append(clone(valid), junk...)},
	}
	for n := range len(valid) {
		cases = append(cases, struct {
			name string
			ep   []byte
		}{fmt.Sprintf("valid truncated to %d of %d bytes", n, len(valid)), clone(valid[:n])})
	}
	var bad []string // one line per misbehaviour; reported together, at most maxReport
	for _, c := range cases {
		x := e.newEnd(t, a, "A.qp", qpOpts{})
		if err := x.qp.ToInit(); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout/2)
		var err error
		p := catch(func() { err = x.qp.ToRTR(ctx, c.ep) })
		expired := ctx.Err() != nil
		cancel()
		switch {
		case p != nil:
			bad = append(bad, fmt.Sprintf("%s (%x): panic: %v", c.name, c.ep, p))
		case err == nil && c.name == "valid with garbage appended":
			// A decoder may ignore trailing bytes; the connection is then to the real peer.
		case err == nil:
			bad = append(bad, fmt.Sprintf("%s (%x): accepted", c.name, c.ep))
		case expired:
			bad = append(bad, fmt.Sprintf("%s: failed only when its context expired: %v", c.name, err))
		case !errors.Is(err, verbs.ErrBadEndpoint):
			bad = append(bad, fmt.Sprintf("%s: %v, want an error wrapping ErrBadEndpoint", c.name, err))
		}
		closeWithin(t, "close QP after a bad endpoint", ignoreErr(x.qp.Close))
	}
	const maxReport = 8
	for i, b := range bad {
		if i == maxReport {
			t.Errorf("... and %d more", len(bad)-maxReport)
			break
		}
		t.Errorf("ToRTR with junk endpoint bytes: %s", b)
	}
	t.Logf("%d junk endpoints tried, %d handled badly", len(cases), len(bad))
}

// testFlush checks WRFlushErr for work outstanding when the QP goes to Err or is closed,
// and for work posted in Err.
func testFlush(t *testing.T, f Factory) {
	e := newEnv(f)
	a, b := e.open(t, "A"), e.open(t, "B")
	needCaps(t, verbs.CapSend, a, b)
	src := a.alloc(t, arenaMem, 64, verbs.LocalWrite)
	rb := b.alloc(t, arenaMem, 8*64, verbs.LocalWrite)
	recvs := func(t *testing.T, y *end, n int) {
		for i := range n {
			postRecv(t, y, verbs.RecvWR{WRID: uint64(i), Local: rb.b[i*64 : (i+1)*64], LKey: rb.lkey()})
		}
	}
	flushed := func(t *testing.T, x *end, n int, op verbs.WCOpcode, what string) {
		t.Helper()
		for i, wc := range e.wait(t, x.cq, n) {
			checkWC(t, what, wc, verbs.WC{WRID: uint64(i), Status: verbs.WRFlushErr, Op: op, QPN: x.qp.Num()}, fBasic)
		}
	}

	t.Run("ReceivesAtToErr", func(t *testing.T) {
		_, y := e.link(t, a, b, qpOpts{})
		recvs(t, y, 3)
		if err := y.qp.ToErr(); err != nil {
			t.Fatal(err)
		}
		flushed(t, y, 3, verbs.WCRecv, "receive outstanding at ToErr")
	})
	t.Run("PostedInErr", func(t *testing.T) {
		x, y := e.link(t, a, b, qpOpts{})
		if err := x.qp.ToErr(); err != nil {
			t.Fatal(err)
		}
		post(t, x, verbs.SendWR{WRID: 0, Op: verbs.OpSend, Flags: verbs.Signaled, Local: src.b, LKey: src.lkey()})
		flushed(t, x, 1, verbs.WCSend, "send posted in Err")
		postRecv(t, x, verbs.RecvWR{WRID: 0, Local: src.b, LKey: src.lkey()})
		flushed(t, x, 1, verbs.WCRecv, "receive posted in Err")
		e.quiet(t, y.cq, quietPeriod, "peer of a QP whose sends were flushed")
	})
	t.Run("HeldSendsAtToErr", func(t *testing.T) { heldSendsAtToErr(t, e, a, b) })
	t.Run("ReceivesAtClose", func(t *testing.T) {
		_, y := e.link(t, a, b, qpOpts{})
		recvs(t, y, 3)
		closeWithin(t, "QP.Close", y.qp.Close)
		flushed(t, y, 3, verbs.WCRecv, "receive outstanding at Close")
		var err error
		wr := verbs.RecvWR{WRID: 9, Local: rb.b[:8], LKey: rb.lkey()}
		if p := catch(func() { err = y.qp.PostRecv(&wr) }); p != nil {
			t.Errorf("PostRecv on a closed QP panicked: %v", p)
		} else if err == nil {
			t.Errorf("PostRecv on a closed QP succeeded")
		}
	})
}

// testPeerClose closes the device of one side: the other side's work fails (verbs doc,
// Device.Close: connected peers see their QPs fail) within waitTimeout.
func testPeerClose(t *testing.T, f Factory) {
	e := newEnv(f)
	a := e.open(t, "A")
	b := e.open(t, "B")
	needCaps(t, verbs.CapRDMAWrite, a, b)
	x, _ := e.link(t, a, b, qpOpts{})
	src := a.alloc(t, arenaMem, 4096, verbs.LocalWrite)
	dst := b.alloc(t, arenaMem, 4096, verbs.AccessAll)
	post(t, x, writeWR(1, verbs.Signaled, src, dst, 0, 4096))
	checkWC(t, "write before the peer closed", e.waitOne(t, x.cq), verbs.WC{WRID: 1, Status: verbs.Success}, fWRID|fStatus)
	b.close(t)
	var failed *verbs.WC
	for i := uint64(2); failed == nil && i < 1000; i++ {
		wr := writeWR(i, verbs.Signaled, src, dst, 0, 4096)
		if err := x.qp.PostSend(&wr); err != nil {
			t.Fatalf("PostSend after the peer closed: %v (a QP accepts work in every state but Reset/Init/RTR)", err)
		}
		wc := e.waitOne(t, x.cq)
		if wc.Status != verbs.Success {
			failed = &wc
		}
	}
	if failed == nil {
		t.Fatalf("999 writes to a closed peer device all succeeded")
	}
	if failed.Status != verbs.RetryExcErr {
		t.Errorf("first failed write to a closed peer: %s, want RetryExcErr (the QP fails with an error "+
			"completion naming the cause; only later work flushes)", fmtWC(*failed))
	}
	wantState(t, "after the failed write", x.qp, verbs.Err)
}

// heldSendsAtToErr posts more Sends than a receiver without receives takes. The provider
// may complete some at once (buffered at the receiver); the rest are held, and must
// complete with WRFlushErr, in order, when the sender goes to Err, and never be delivered.
func heldSendsAtToErr(t *testing.T, e *env, a, b *node) {
	const n, size = 32, 64 << 10
	x, y := e.link(t, a, b, qpOpts{sendWR: n, recvWR: n})
	src := a.alloc(t, arenaMem, size, verbs.LocalWrite)
	for i := range n {
		post(t, x, verbs.SendWR{WRID: uint64(i), Op: verbs.OpSend, Flags: verbs.Signaled, Local: src.b, LKey: src.lkey()})
	}
	for deadline := time.Now().Add(4 * quietPeriod); time.Now().Before(deadline); {
		e.pumpAll()
		time.Sleep(time.Millisecond)
	}
	done := x.cq.take(x.cq.count())
	for i, wc := range done {
		checkWC(t, "send completed without a receive posted", wc,
			verbs.WC{WRID: uint64(i), Status: verbs.Success, Op: verbs.WCSend, QPN: x.qp.Num()}, fBasic)
	}
	if len(done) == n {
		t.Skipf("all %d sends of %d bytes completed without a receive posted: none was held", n, size)
	}
	if err := x.qp.ToErr(); err != nil {
		t.Fatal(err)
	}
	for i, wc := range e.wait(t, x.cq, n-len(done)) {
		checkWC(t, "send held at ToErr", wc,
			verbs.WC{WRID: uint64(len(done) + i), Status: verbs.WRFlushErr, Op: verbs.WCSend, QPN: x.qp.Num()}, fBasic)
	}
	rb := b.alloc(t, arenaMem, n*size, verbs.LocalWrite)
	for i := range n {
		postRecv(t, y, verbs.RecvWR{WRID: uint64(i), Local: rb.b[i*size : (i+1)*size], LKey: rb.lkey()})
	}
	for deadline := time.Now().Add(4 * quietPeriod); time.Now().Before(deadline); {
		e.pumpAll()
		time.Sleep(time.Millisecond)
	}
	delivered := 0
	for _, wc := range y.cq.take(y.cq.count()) {
		if wc.Status == verbs.Success {
			delivered++
		}
	}
	if delivered > len(done) {
		t.Errorf("%d messages delivered, but only %d sends completed successfully (flushed sends must not arrive)", delivered, len(done))
	}
	t.Logf("%d sends completed before a receive was posted, %d held and flushed; %d delivered afterwards",
		len(done), n-len(done), delivered)
}
