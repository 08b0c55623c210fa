package tcp

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/transport/verbs"
)

// TestWriterMarksDeepStreams: the writer goroutine marks an RDMA write without immediate
// flagLater when more than ackBatch request frames are queued behind it as it starts the
// write, and nothing else: not a write with immediate, not a send, not the frames near the
// end of the queue, not a frame the fast path began. quiet says whether frames wait.
func TestWriterMarksDeepStreams(t *testing.T) {
	tx, r, send := startTxq(t)
	big := make([]byte, 32<<20) // more than the socket buffers take: the rest queues behind it
	send(header{op: opWrite, seq: 0, payloadLen: uint32(len(big))}, big)
	type frame struct {
		op    wireOp
		flags uint8
	}
	plan := make([]frame, 2*ackBatch+3)
	for i := range plan {
		plan[i].op = opWrite
	}
	plan[2].flags = flagImm
	plan[4].op = opSend
	pay := make([]byte, 4096)
	for i, f := range plan {
		send(header{op: f.op, flags: f.flags, seq: uint64(i + 1), payloadLen: uint32(len(pay))}, pay)
	}
	waitQueued(t, tx, streamReq, 1+len(plan))
	if tx.quiet() {
		t.Error("quiet with frames queued")
	}

	r.SetReadDeadline(time.Now().Add(testbudget.Scale(20 * time.Second)))
	rd := newFrameReader(r, nil)
	for i := -1; i < len(plan); i++ {
		h, err := rd.header()
		if err != nil {
			t.Fatalf("frame %d: %v", i+1, err)
		}
		if err := rd.discard(int(h.payloadLen)); err != nil {
			t.Fatal(err)
		}
		want := false
		if i >= 0 {
			behind := len(plan) - 1 - i
			want = plan[i].op == opWrite && plan[i].flags&flagImm == 0 && behind > ackBatch
		}
		if h.seq != uint64(i+1) || (h.flags&flagLater != 0) != want {
			t.Errorf("frame %d: %v seq %d flags %#x, want the mark %v", i+1, h.op, h.seq, h.flags, want)
		}
	}
	for end := time.Now().Add(testbudget.Scale(5 * time.Second)); !tx.quiet(); time.Sleep(time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("not quiet after every frame was written")
		}
	}
}

// fakeInitiator connects a raw connection to b's QP as its peer, through the real
// handshake, so that a test can write the peer's frames by hand.
func fakeInitiator(t *testing.T, b *side) *net.TCPConn {
	t.Helper()
	me := peerInfo{devID: 1, qpn: 1, maxSend: 64}
	if !dialsTo(me.devID, me.qpn, b.dev.id, b.qp.Num()) {
		t.Skip("the device drew id 0 or 1: the fake peer would have to accept")
	}
	ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(10*time.Second))
	defer cancel()
	ep := appendEndpoint(nil, endpoint{devID: me.devID, qpn: me.qpn, addr: "127.0.0.1:1"})
	if err := b.qp.ToRTR(ctx, ep); err != nil {
		t.Fatal(err)
	}
	c, err := net.DialTimeout("tcp", b.dev.addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	tc := c.(*net.TCPConn)
	t.Cleanup(func() { tc.Close() })
	tc.SetDeadline(time.Now().Add(testbudget.Scale(10 * time.Second)))
	if _, err := clientHandshake(tc, testSecret, me, endpoint{devID: b.dev.id, qpn: b.qp.Num(), addr: b.dev.addr}); err != nil {
		t.Fatal(err)
	}
	tc.SetDeadline(time.Time{})
	if err := b.qp.ToRTS(ctx); err != nil {
		t.Fatal(err)
	}
	return tc
}

// fakeStream is the fake initiator's side of a connection to a target: it writes
// hand-made request frames and reads the target's answers.
type fakeStream struct {
	t   *testing.T
	c   *net.TCPConn
	rd  frameReader
	mem buf
	seq uint64
}

func newFakeStream(t *testing.T, mode verbs.WaitMode) (*fakeStream, *side) {
	cfg := testCfg()
	cfg.Wait = mode
	b := newSide(t, openDev(t, cfg), verbs.QPAttr{})
	f := &fakeStream{t: t, mem: newBuf(t, b, arenaMem, 4096)}
	f.c = fakeInitiator(t, b)
	f.rd = newFrameReader(f.c, nil)
	return f, b
}

// write sends an 8-byte RDMA write of seq+1 bytes to word seq of the target's buffer.
func (f *fakeStream) write(flags uint8) {
	f.t.Helper()
	var hb [hdrSize]byte
	(&header{op: opWrite, flags: flags, seq: f.seq, rkey: f.mem.key, offset: f.seq * 8, payloadLen: 8}).put(&hb)
	if _, err := f.c.Write(append(hb[:], bytes.Repeat([]byte{byte(f.seq + 1)}, 8)...)); err != nil {
		f.t.Fatal(err)
	}
	f.seq++
}

// expect reads the target's next frame, which must be an ack through want; with want < 0,
// the target must send nothing for a while.
func (f *fakeStream) expect(want int64, what string) {
	f.t.Helper()
	wait := 5 * time.Second
	if want < 0 {
		wait = 100 * time.Millisecond
	}
	f.c.SetReadDeadline(time.Now().Add(wait))
	h, err := f.next()
	switch {
	case want < 0 && errors.Is(err, os.ErrDeadlineExceeded):
	case want < 0 && err == nil:
		f.t.Fatalf("%s: the target sent %v %d, want nothing yet", what, h.op, h.seq)
	case err != nil:
		f.t.Fatalf("%s: %v", what, err)
	case h.op != opAck || h.status != verbs.Success || h.seq != uint64(want):
		f.t.Fatalf("%s: the target sent %v %d (%v), want an ack of %d", what, h.op, h.seq, h.status, want)
	}
}

// next reads the target's next frame but credit updates (a receive posted there).
func (f *fakeStream) next() (header, error) {
	for {
		h, err := f.rd.header()
		if err != nil || h.op != opCredit {
			return h, err
		}
	}
}

// landed checks the data of every write sent.
func (f *fakeStream) landed() {
	f.t.Helper()
	for i := range f.seq {
		if got := f.mem.b[i*8 : i*8+8]; !bytes.Equal(got, bytes.Repeat([]byte{byte(i + 1)}, 8)) {
			f.t.Fatalf("write %d landed %x", i, got)
		}
	}
}

// TestTargetHoldsAcks drives a target with hand-written frames. A write marked flagLater
// has its ack held while fewer than ackBatch-1 request frames followed it; then one ack
// covers them all; a write without the mark is acked as before, when the target would
// block. The data of every write lands.
func TestTargetHoldsAcks(t *testing.T) {
	for _, mode := range []verbs.WaitMode{verbs.WaitBlock, verbs.WaitHybrid} {
		t.Run(mode.String(), func(t *testing.T) {
			f, _ := newFakeStream(t, mode)
			f.write(0)
			f.expect(0, "a write without the mark")
			for range 3 {
				f.write(flagLater)
			}
			f.expect(-1, "three marked writes")
			for range ackBatch - 3 {
				f.write(flagLater)
			}
			// The first marked write (seq 1) lets ackBatch-1 more request frames pass
			// before its ack: the ack goes as the last of them (seq ackBatch) is read, and
			// covers the writes before it; that write, marked too, holds its own.
			f.expect(ackBatch-1, "ackBatch marked writes")
			f.expect(-1, "the last marked write")
			f.write(0)
			f.expect(int64(f.seq-1), "a write without the mark after marked ones")
			f.landed()
		})
	}
}

// TestLeaderFlushesHeldAck: a leader that returns with a completion sends the ack it
// holds for marked writes at once, since the role may then stay idle for a while and
// nobody read the frames the mark promised.
func TestLeaderFlushesHeldAck(t *testing.T) {
	f, b := newFakeStream(t, verbs.WaitHybrid)
	postRecv(t, b.qp, verbs.RecvWR{WRID: 9, Local: f.mem.b[1024:1032], LKey: f.mem.key})
	cn, bc := qconnOf(t, b), b.cq.(*cq)
	got := waitWCAsync(t, b.cq)
	// The reader offers the role to the waiter as it comes back to a frame boundary: each
	// unmarked write brings it there.
	waitLeading(t, bc, cn, "the waiter", func() {
		f.write(0)
		f.expect(int64(f.seq-1), "an unmarked write")
	})
	f.write(flagLater)
	var hb [hdrSize]byte // a write with immediate: a completion at the target
	(&header{op: opWrite, flags: flagImm, imm: 7, seq: f.seq, rkey: f.mem.key, offset: 2048}).put(&hb)
	if _, err := f.c.Write(hb[:]); err != nil {
		t.Fatal(err)
	}
	f.seq++
	select {
	case wc := <-got:
		wantWC(t, wc, 9, verbs.Success, verbs.WCRecvRDMAWithImm)
	case <-time.After(testbudget.Scale(10 * time.Second)):
		t.Fatal("no completion for the write with immediate")
	}
	f.expect(int64(f.seq-1), "the leader's return")
	for range ackBatch { // what the mark promised
		f.write(0)
	}
	f.expectThrough(f.seq-1, "the promised writes")
}

// expectThrough reads the target's acks until one covers want.
func (f *fakeStream) expectThrough(want uint64, what string) {
	f.t.Helper()
	f.c.SetReadDeadline(time.Now().Add(testbudget.Scale(5 * time.Second)))
	for {
		h, err := f.next()
		if err != nil || h.op != opAck || h.status != verbs.Success || h.seq > want {
			f.t.Fatalf("%s: the target sent %v %d (%v, %v), want acks up to %d", what, h.op, h.seq, h.status, err, want)
		}
		if h.seq == want {
			return
		}
	}
}
