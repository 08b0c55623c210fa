package shm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/transport/verbs"
)

func TestSendRecv(t *testing.T) {
	a, b := pair(t, verbs.Config{}, verbs.QPAttr{})
	const max = 3<<20 + 5 // larger than the ring: streams in fragments
	src := a.allocMR(t, max, 0)
	dst := b.allocMR(t, max, verbs.LocalWrite)
	for _, n := range []int{0, 1, 8, 48, 49, 4096, 1 << 20, max} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			data := pattern(n, byte(n))
			copy(src.Bytes(), data)
			clear(dst.Bytes()[:n])
			b.recv(t, verbs.RecvWR{WRID: 9, Local: dst.Bytes(), LKey: dst.LKey()})
			a.post(t, verbs.SendWR{WRID: 1, Op: verbs.OpSend, Flags: verbs.Signaled, Local: src.Bytes()[:n], LKey: src.LKey()})
			wc := b.next(t, a)
			wantWC(t, wc, 9, verbs.Success, verbs.WCRecv)
			if int(wc.ByteLen) != n || wc.HasImm {
				t.Fatalf("recv %+v, want ByteLen %d and no imm", wc, n)
			}
			if !bytes.Equal(dst.Bytes()[:n], data) {
				t.Fatal("received bytes differ")
			}
			wantWC(t, a.next(t, b), 1, verbs.Success, verbs.WCSend)
		})
	}
}

func TestSendOrderAndImm(t *testing.T) {
	a, b := pair(t, verbs.Config{}, verbs.QPAttr{MaxSendWR: 64, MaxRecvWR: 64})
	src := a.allocMR(t, 1<<16, 0)
	dst := b.allocMR(t, 21<<12, verbs.LocalWrite)
	target := b.allocMR(t, 64, verbs.RemoteWrite)
	// Post sends before any receive: they wait in the ring, in order.
	for i := range 20 {
		src.Bytes()[i] = byte(i)
		op := verbs.OpSend
		if i%3 == 1 {
			op = verbs.OpSendWithImm
		}
		a.post(t, verbs.SendWR{WRID: uint64(i), Op: op, Local: src.Bytes()[i : i+1+i*100], LKey: src.LKey(), Imm: uint32(1000 + i)})
	}
	a.post(t, verbs.SendWR{WRID: 100, Op: verbs.OpRDMAWriteWithImm, Flags: verbs.Signaled, Local: []byte("hello"),
		Remote: verbs.RemoteAddr{RKey: target.RKey(), Offset: 3}, Imm: 77})
	b.none(t)
	for i := range 21 {
		b.recv(t, verbs.RecvWR{WRID: uint64(i), Local: dst.Bytes()[i<<12 : (i+1)<<12], LKey: dst.LKey()})
	}
	for i := range 20 {
		wc := b.next(t, a)
		wantWC(t, wc, uint64(i), verbs.Success, verbs.WCRecv)
		if int(wc.ByteLen) != 1+i*100 || dst.Bytes()[i<<12] != byte(i) {
			t.Fatalf("message %d: %+v first byte %d", i, wc, dst.Bytes()[i<<12])
		}
		if wc.HasImm != (i%3 == 1) || (wc.HasImm && wc.Imm != uint32(1000+i)) {
			t.Fatalf("message %d imm: %+v", i, wc)
		}
	}
	wc := b.next(t, a)
	wantWC(t, wc, 20, verbs.Success, verbs.WCRecvRDMAWithImm)
	if !wc.HasImm || wc.Imm != 77 || wc.ByteLen != 5 || string(target.Bytes()[3:8]) != "hello" {
		t.Fatalf("write with imm: %+v, target %q", wc, target.Bytes()[3:8])
	}
	wantWC(t, a.next(t, b), 100, verbs.Success, verbs.WCRDMAWrite)
}

// A long stream of sends larger than the ring, with a receiver in another goroutine.
func TestSendStream(t *testing.T) {
	a, b := pair(t, verbs.Config{}, verbs.QPAttr{MaxSendWR: 16, MaxRecvWR: 16})
	const msg, count = 100000, 200
	src := a.allocMR(t, msg, 0)
	dst := b.allocMR(t, 16*msg, verbs.LocalWrite)
	done := make(chan error, 1)
	go func() {
		wcs := make([]verbs.WC, 16)
		for i := range 16 {
			b.recv(t, verbs.RecvWR{WRID: uint64(i), Local: dst.Bytes()[i*msg : (i+1)*msg], LKey: dst.LKey()})
		}
		for got := 0; got < count; {
			if err := b.cq.Wait(t.Context()); err != nil {
				done <- err
				return
			}
			n, _ := b.cq.Poll(wcs)
			for _, wc := range wcs[:n] {
				i := int(wc.WRID)
				buf := dst.Bytes()[i*msg : (i+1)*msg]
				if wc.Status != verbs.Success || buf[0] != byte(got) || buf[msg-1] != byte(got) {
					done <- fmt.Errorf("message %d: %v first %d last %d", got, wc.Status, buf[0], buf[msg-1])
					return
				}
				got++
				if err := b.qp.PostRecv(&verbs.RecvWR{WRID: wc.WRID, Local: buf, LKey: dst.LKey()}); err != nil {
					done <- err
					return
				}
			}
		}
		done <- nil
	}()
	wcs := make([]verbs.WC, 16)
	for i := 0; i < count; {
		src.Bytes()[0], src.Bytes()[msg-1] = byte(i), byte(i)
		err := a.qp.PostSend(&verbs.SendWR{WRID: uint64(i), Op: verbs.OpSend, Flags: verbs.Signaled, Local: src.Bytes(), LKey: src.LKey()})
		if errors.Is(err, verbs.ErrQueueFull) {
			a.cq.Wait(t.Context())
			a.cq.Poll(wcs)
			continue
		} else if err != nil {
			t.Fatal(err)
		}
		// Wait for this send before rewriting the source buffer.
		for {
			if err := a.cq.Wait(t.Context()); err != nil {
				t.Fatal(err)
			}
			if n, _ := a.cq.Poll(wcs); n == 1 {
				if wcs[0].Status != verbs.Success {
					t.Fatal(wcs[0].Status)
				}
				break
			}
		}
		i++
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestLocLenErr(t *testing.T) {
	a, b := pair(t, verbs.Config{}, verbs.QPAttr{})
	src := a.allocMR(t, 100, 0)
	dst := b.allocMR(t, 10, verbs.LocalWrite)
	copy(src.Bytes(), pattern(100, 1))
	b.recv(t, verbs.RecvWR{WRID: 5, Local: dst.Bytes(), LKey: dst.LKey()})
	b.recv(t, verbs.RecvWR{WRID: 6, Local: dst.Bytes(), LKey: dst.LKey()})
	a.post(t, verbs.SendWR{WRID: 1, Op: verbs.OpSend, Flags: verbs.Signaled, Local: src.Bytes(), LKey: src.LKey()})
	wantWC(t, a.next(t), 1, verbs.Success, verbs.WCSend) // complete once in the ring
	wantWC(t, b.next(t), 5, verbs.LocLenErr, verbs.WCRecv)
	wantWC(t, b.next(t), 6, verbs.WRFlushErr, verbs.WCRecv)
	if !bytes.Equal(dst.Bytes(), src.Bytes()[:10]) {
		t.Fatal("truncated receive should hold the prefix")
	}
	// The sender learns on its next request.
	a.post(t, verbs.SendWR{WRID: 2, Op: verbs.OpSend, Flags: verbs.Signaled, Local: src.Bytes()[:1], LKey: src.LKey()})
	a.post(t, verbs.SendWR{WRID: 3, Op: verbs.OpSend, Flags: verbs.Signaled, Local: src.Bytes()[:1], LKey: src.LKey()})
	wantWC(t, a.next(t), 2, verbs.RemOpErr, verbs.WCSend)
	wantWC(t, a.next(t), 3, verbs.WRFlushErr, verbs.WCSend)
}

func TestRecvProtection(t *testing.T) {
	a, b := pair(t, verbs.Config{}, verbs.QPAttr{})
	src := a.allocMR(t, 8, 0)
	ro := b.allocMR(t, 8, 0)
	b.recv(t, verbs.RecvWR{WRID: 5, Local: ro.Bytes(), LKey: ro.LKey()})
	a.post(t, verbs.SendWR{WRID: 1, Op: verbs.OpSend, Local: src.Bytes(), LKey: src.LKey()})
	wantWC(t, b.next(t), 5, verbs.LocProtErr, verbs.WCRecv)
}

func TestFlushOnClose(t *testing.T) {
	a, b := pair(t, verbs.Config{}, verbs.QPAttr{})
	src := a.allocMR(t, 1<<20, 0)
	// No receive at b: the first send fills the ring and waits; the rest queue behind it.
	for i := range 3 {
		a.post(t, verbs.SendWR{WRID: uint64(i), Op: verbs.OpSend, Local: src.Bytes(), LKey: src.LKey()})
	}
	b.recv(t, verbs.RecvWR{WRID: 9})
	a.none(t)
	if err := b.qp.Close(); err != nil {
		t.Fatal(err)
	}
	wantWC(t, b.next(t), 9, verbs.WRFlushErr, verbs.WCRecv)
	wantWC(t, a.next(t), 0, verbs.RetryExcErr, verbs.WCSend)
	wantWC(t, a.next(t), 1, verbs.WRFlushErr, verbs.WCSend)
	wantWC(t, a.next(t), 2, verbs.WRFlushErr, verbs.WCSend)
	if err := b.qp.PostSend(&verbs.SendWR{}); !errors.Is(err, verbs.ErrClosed) {
		t.Fatalf("post on closed QP: %v", err)
	}
	// Closing the sender's device flushes and releases everything.
	a.post(t, verbs.SendWR{WRID: 7, Op: verbs.OpRDMAWrite})
	if err := a.dev.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := a.cq.Poll(make([]verbs.WC, 1)); !errors.Is(err, verbs.ErrClosed) {
		t.Fatalf("poll after device close: %v", err)
	}
}

func TestDeviceCloseFailsPeer(t *testing.T) {
	a, b := pair(t, verbs.Config{}, verbs.QPAttr{})
	b.recv(t, verbs.RecvWR{WRID: 4})
	target := b.allocMR(t, 8, verbs.RemoteWrite)
	rkey := target.RKey()
	done := make(chan error, 1)
	go func() { done <- b.cq.Wait(context.Background()) }()
	time.Sleep(20 * time.Millisecond)
	a.dev.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	wantWC(t, b.next(t), 4, verbs.WRFlushErr, verbs.WCRecv)
	b.post(t, verbs.SendWR{WRID: 5, Op: verbs.OpRDMAWrite, Local: make([]byte, 8), Remote: verbs.RemoteAddr{RKey: rkey}})
	wantWC(t, b.next(t), 5, verbs.WRFlushErr, verbs.WCRDMAWrite)
}

func TestWaitModes(t *testing.T) {
	for _, mode := range []verbs.WaitMode{verbs.WaitHybrid, verbs.WaitSpin, verbs.WaitBlock} {
		t.Run(mode.String(), func(t *testing.T) {
			a, b := pair(t, verbs.Config{Wait: mode, Spin: time.Microsecond}, verbs.QPAttr{})
			src := a.allocMR(t, 8, 0)
			// A wait with nothing to come ends with the context.
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
			defer cancel()
			start := time.Now()
			if err := b.cq.Wait(ctx); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("wait: %v", err)
			}
			if d := time.Since(start); d > testbudget.Scale(time.Second) {
				t.Fatalf("cancelled wait took %v", d)
			}
			// A send from another goroutine wakes a sleeping receiver.
			b.recv(t, verbs.RecvWR{WRID: 1})
			go func() {
				time.Sleep(20 * time.Millisecond)
				a.qp.PostSend(&verbs.SendWR{Op: verbs.OpSend, LKey: src.LKey()})
			}()
			if err := b.cq.Wait(context.Background()); err != nil {
				t.Fatal(err)
			}
			wantWC(t, b.next(t), 1, verbs.Success, verbs.WCRecv)
		})
	}
}

func TestCloseWakesWaiter(t *testing.T) {
	a := openSide(t, verbs.Config{Wait: verbs.WaitBlock}, verbs.QPAttr{})
	done := make(chan error, 1)
	go func() { done <- a.cq.Wait(context.Background()) }()
	time.Sleep(20 * time.Millisecond)
	a.cq.Close()
	select {
	case err := <-done:
		if !errors.Is(err, verbs.ErrClosed) {
			t.Fatalf("wait on closed CQ: %v", err)
		}
	case <-time.After(testbudget.Scale(5 * time.Second)):
		t.Fatal("wait did not end when its CQ closed")
	}
}

func TestStateErrors(t *testing.T) {
	s := openSide(t, verbs.Config{}, verbs.QPAttr{})
	if err := s.qp.PostSend(&verbs.SendWR{Op: verbs.OpRDMAWrite}); !errors.Is(err, verbs.ErrQPState) {
		t.Fatalf("post send in Init: %v", err)
	}
	if err := s.qp.ToRTS(context.Background()); !errors.Is(err, verbs.ErrQPState) {
		t.Fatalf("Init to RTS: %v", err)
	}
	for _, bad := range [][]byte{nil, []byte("junk"), make([]byte, 200)} {
		if err := s.qp.ToRTR(context.Background(), bad); !errors.Is(err, verbs.ErrBadEndpoint) {
			t.Fatalf("ToRTR(%q): %v", bad, err)
		}
	}
	// Endpoint from another host.
	ep, _ := decodeEndpoint(s.qp.Endpoint())
	ep.host.name += "-elsewhere"
	other, _ := ep.appendBinary(nil)
	err := s.qp.ToRTR(context.Background(), other)
	if !errors.Is(err, verbs.ErrBadEndpoint) {
		t.Fatalf("ToRTR from another host: %v", err)
	}
	var ve *verbs.Error
	if !errors.As(err, &ve) || ve.Provider != Name || ve.QPN != s.qp.Num() {
		t.Fatalf("error %#v", err)
	}
	// A second QP cannot connect to an endpoint that is already taken.
	a, _ := pair(t, verbs.Config{}, verbs.QPAttr{})
	if err := s.qp.ToRTR(context.Background(), a.qp.Endpoint()); err == nil {
		t.Fatal("connected to a ring that already has a sender")
	}
}

// Closing connected QPs returns their rings to the arena once both sides are closed.
func TestRingReuse(t *testing.T) {
	a, b := pair(t, verbs.Config{}, verbs.QPAttr{})
	base := a.dev.Stats().InUse
	for range 20 {
		qa, _ := a.pd.CreateQP(verbs.QPAttr{SendCQ: a.cq, RecvCQ: a.cq})
		qb, _ := b.pd.CreateQP(verbs.QPAttr{SendCQ: b.cq, RecvCQ: b.cq})
		qa.ToInit()
		qb.ToInit()
		if err := verbs.Connect(t.Context(), qa, qb.Endpoint()); err != nil {
			t.Fatal(err)
		}
		if err := verbs.Connect(t.Context(), qb, qa.Endpoint()); err != nil {
			t.Fatal(err)
		}
		qa.Close()
		qb.Close()
	}
	// A's rings wait for B's acknowledgement (B's close); the next QP creation sweeps them.
	qa, _ := a.pd.CreateQP(verbs.QPAttr{SendCQ: a.cq, RecvCQ: a.cq})
	defer qa.Close()
	if grown := a.dev.Stats().InUse - base; grown > 2*(defaultRingSlots*slotSize+ringHdrSize) {
		t.Fatalf("arena use grew by %d bytes over 20 QP lifetimes", grown)
	}
}

// TestWaitLeavesWholeMessageToPoll: a Wait that finds a whole message at a ring's head
// ends without draining it, and the Poll after it takes the completion straight from the
// ring (nothing passes through the CQ's own ring). A second Wait on the same record, with
// no Poll between, drains as usual, so a record a Poll would not take never makes Wait
// return at once forever.
func TestWaitLeavesWholeMessageToPoll(t *testing.T) {
	for _, mode := range []verbs.WaitMode{verbs.WaitSpin, verbs.WaitHybrid, verbs.WaitBlock} {
		a, b := pair(t, verbs.Config{Wait: mode}, verbs.QPAttr{})
		src := a.allocMR(t, 8, 0)
		dst := b.allocMR(t, 8, verbs.LocalWrite)
		b.recv(t, verbs.RecvWR{WRID: 7, Local: dst.Bytes(), LKey: dst.LKey()})
		copy(src.Bytes(), "whole!!!")
		if err := a.qp.PostSend(&verbs.SendWR{Op: verbs.OpSend, Local: src.Bytes(), LKey: src.LKey()}); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(5*time.Second))
		if err := b.cq.Wait(ctx); err != nil {
			t.Fatalf("%v: Wait: %v", mode, err)
		}
		c := b.cq.(*cq)
		if n := c.avail.Load(); n != 0 {
			t.Errorf("%v: Wait drained the message into the CQ (%d completions there)", mode, n)
		}
		if err := b.cq.Wait(ctx); err != nil { // no Poll between: this one drains
			t.Fatalf("%v: second Wait: %v", mode, err)
		}
		if n := c.avail.Load(); n != 1 {
			t.Errorf("%v: second Wait left %d completions in the CQ, want 1", mode, n)
		}
		cancel()
		wcs := make([]verbs.WC, 4)
		n, err := b.cq.Poll(wcs)
		if err != nil || n != 1 {
			t.Fatalf("%v: Poll = %d, %v; want the one receive", mode, n, err)
		}
		wantWC(t, wcs[0], 7, verbs.Success, verbs.WCRecv)
		if string(dst.Bytes()) != "whole!!!" {
			t.Errorf("%v: received %q", mode, dst.Bytes())
		}
	}
}
