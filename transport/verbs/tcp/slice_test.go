package tcp

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gorma-hpc/gorma/transport/verbs"
)

// TestRequestPassesReadResponse queues a read response far longer than the socket
// buffers while the peer reads nothing, then a request that carries a piggybacked ack.
// The peer must see the response in slices, the request before the response's last
// slice (it waits for one slice at most, not for the whole response), and the ack moved
// behind the response as an opAck frame of its own; and the connection must have
// TCP_NOTSENT_LOWAT from then on.
func TestRequestPassesReadResponse(t *testing.T) {
	w, r := tcpPair(t)
	if err := tuneConn(w); err != nil {
		t.Fatal(err)
	}
	tx, err := newTxq(w, nil, 64)
	if err != nil {
		t.Fatal(err)
	}
	go tx.run()
	t.Cleanup(tx.shutdown)

	const n = 24 << 20 // more than the 4 MiB send and the 128 KiB receive buffers hold
	data := make([]byte, n)
	pattern(data, 7)
	var hb [hdrSize]byte
	(&header{op: opReadResp, seq: 5, payloadLen: n, credits: 3}).put(&hb)
	if err := tx.send(&hb, data, 0); err != nil {
		t.Fatal(err)
	}
	// Let the writer fill the socket, so the response is partly queued in tx.
	deadline := time.Now().Add(5 * time.Second)
	for {
		tx.mu.Lock()
		queued := tx.qs[streamResp].n
		tx.mu.Unlock()
		if queued == 1 || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	req := []byte("rendezvous offer")
	(&header{op: opSend, seq: 11, payloadLen: uint32(len(req)), flags: flagAck, ack: 4}).put(&hb)
	if err := tx.send(&hb, req, 0); err != nil {
		t.Fatal(err)
	}
	tx.mu.Lock()
	lowat := tx.lowat
	tx.mu.Unlock()
	if !lowat {
		t.Error("the connection did not get TCP_NOTSENT_LOWAT when a request queued behind an answer")
	}
	raw, _ := w.SyscallConn()
	var got int
	raw.Control(func(fd uintptr) { got, _ = unix.GetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_NOTSENT_LOWAT) })
	if got != notsentLowat {
		t.Errorf("TCP_NOTSENT_LOWAT is %d, want %d", got, notsentLowat)
	}

	// The peer reads everything and logs the frames.
	r.SetReadDeadline(time.Now().Add(10 * time.Second))
	rd := newFrameReader(r, nil)
	land := make([]byte, n)
	var log []string
	at, reqAt, slices := 0, -1, 0
	for at < n || reqAt < 0 || len(log) == 0 || log[len(log)-1] != "ack 4" {
		h, err := rd.header()
		if err != nil {
			t.Fatalf("after %v: %v", log, err)
		}
		switch h.op {
		case opReadResp:
			if h.seq != 5 || h.payloadLen > respSlice || (h.flags&flagMore != 0) != (at+int(h.payloadLen) < n) {
				t.Fatalf("slice %d: %+v at %d", slices, h, at)
			}
			if (slices == 0) != (h.credits == 3) {
				t.Fatalf("slice %d carries credits %d; only the first should", slices, h.credits)
			}
			if err := rd.readFull(land[at : at+int(h.payloadLen)]); err != nil {
				t.Fatal(err)
			}
			at += int(h.payloadLen)
			slices++
			log = append(log, fmt.Sprintf("slice to %d", at))
		case opSend:
			if h.flags&flagAck != 0 || h.seq != 11 {
				t.Fatalf("request %+v: its ack should have been left behind the response", h)
			}
			b := make([]byte, h.payloadLen)
			if err := rd.readFull(b); err != nil || !bytes.Equal(b, req) {
				t.Fatalf("request payload %q, %v", b, err)
			}
			reqAt = at
			log = append(log, "request")
		case opAck:
			if at != n {
				t.Fatalf("ack %d before the response's end (%d of %d bytes)", h.seq, at, n)
			}
			log = append(log, fmt.Sprintf("ack %d", h.seq))
		default:
			t.Fatalf("unexpected frame %+v", h)
		}
	}
	if !bytes.Equal(land, data) {
		t.Fatal("the response's slices do not add up to its data")
	}
	if reqAt < 0 || reqAt >= n {
		t.Fatalf("the request came after the whole response (%d of %d bytes)", reqAt, n)
	}
	t.Logf("request after %d of %d response bytes, %d slices", reqAt, n, slices)
}

// TestSlicedReads reads sizes around the slice length and, at the same time, in the
// other direction, and checks every byte: the reader lands the slices in turn while
// frames of the peer's own requests come between them.
func TestSlicedReads(t *testing.T) {
	a, b := pair(t, testCfg(), verbs.QPAttr{})
	for _, n := range []int{respSlice - 1, respSlice, respSlice + 1, 3*respSlice + 7, 9 << 20} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			la, ra := allocMR(t, a, n), allocMR(t, a, n)
			lb, rb := allocMR(t, b, n), allocMR(t, b, n)
			pattern(ra.Bytes(), 1)
			pattern(rb.Bytes(), 2)
			clear(la.Bytes())
			clear(lb.Bytes())
			// Both read at once, and each also sends the other a small message while
			// the responses stream.
			ma, mb := allocMR(t, a, 64), allocMR(t, b, 64)
			postRecv(t, a.qp, verbs.RecvWR{WRID: 9, Local: ma.Bytes(), LKey: ma.LKey()})
			postRecv(t, b.qp, verbs.RecvWR{WRID: 9, Local: mb.Bytes(), LKey: mb.LKey()})
			post(t, a.qp, verbs.SendWR{WRID: 1, Op: verbs.OpRDMARead, Flags: verbs.Signaled,
				Local: la.Bytes(), LKey: la.LKey(), Remote: verbs.RemoteAddr{RKey: rb.RKey()}})
			post(t, b.qp, verbs.SendWR{WRID: 1, Op: verbs.OpRDMARead, Flags: verbs.Signaled,
				Local: lb.Bytes(), LKey: lb.LKey(), Remote: verbs.RemoteAddr{RKey: ra.RKey()}})
			sa, sb := allocMR(t, a, 6), allocMR(t, b, 6)
			copy(sa.Bytes(), "from a")
			copy(sb.Bytes(), "from b")
			post(t, a.qp, verbs.SendWR{WRID: 2, Op: verbs.OpSend, Flags: verbs.Signaled, Local: sa.Bytes(), LKey: sa.LKey()})
			post(t, b.qp, verbs.SendWR{WRID: 2, Op: verbs.OpSend, Flags: verbs.Signaled, Local: sb.Bytes(), LKey: sb.LKey()})
			for _, s := range []*side{a, b} {
				seen := map[uint64]verbs.WC{}
				for len(seen) < 3 {
					wc := waitWC(t, s.cq)
					if wc.Status != verbs.Success {
						t.Fatalf("completion %+v", wc)
					}
					seen[wc.WRID] = wc
				}
				if seen[1].ByteLen != uint32(n) || seen[9].ByteLen != 6 {
					t.Fatalf("byte counts: read %d, recv %d", seen[1].ByteLen, seen[9].ByteLen)
				}
			}
			if !bytes.Equal(la.Bytes(), rb.Bytes()) || !bytes.Equal(lb.Bytes(), ra.Bytes()) {
				t.Fatal("read data differs")
			}
			if string(ma.Bytes()[:6]) != "from b" || string(mb.Bytes()[:6]) != "from a" {
				t.Fatalf("messages %q %q", ma.Bytes()[:6], mb.Bytes()[:6])
			}
			for _, m := range []verbs.MR{la, ra, lb, rb, ma, mb, sa, sb} {
				m.Dereg()
			}
		})
	}
}

// TestToErrMidSlicedRead moves the reader's QP to Err while a long read's slices are
// landing: the read completes with WRFlushErr, and its buffer is never written after that
// completion (the later slices are answers to a flushed request and are skipped).
func TestToErrMidSlicedRead(t *testing.T) {
	const n = 24 << 20
	a, b := pair(t, testCfg(), verbs.QPAttr{})
	loc, rem := allocMR(t, a, n), allocMR(t, b, n)
	pattern(rem.Bytes(), 3)
	clear(loc.Bytes())
	post(t, a.qp, verbs.SendWR{WRID: 1, Op: verbs.OpRDMARead, Flags: verbs.Signaled,
		Local: loc.Bytes(), LKey: loc.LKey(), Remote: verbs.RemoteAddr{RKey: rem.RKey()}})
	// Wait for the first slice to land, so the flush comes between slices or in one.
	deadline := time.Now().Add(10 * time.Second)
	for loc.Bytes()[respSlice-1] == 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Microsecond)
	}
	if err := a.qp.ToErr(); err != nil {
		t.Fatal(err)
	}
	wc := waitWC(t, a.cq)
	if wc.WRID != 1 || wc.Status == verbs.Success && wc.ByteLen != n {
		t.Fatalf("completion %+v", wc)
	}
	if wc.Status == verbs.Success {
		t.Skip("the whole read landed before ToErr") // nothing to check about a flush
	}
	if wc.Status != verbs.WRFlushErr {
		t.Fatalf("read completed with %v, want WRFlushErr", wc.Status)
	}
	snap := bytes.Clone(loc.Bytes())
	time.Sleep(200 * time.Millisecond)
	if !bytes.Equal(snap, loc.Bytes()) {
		t.Fatal("the read's buffer changed after its flush completion")
	}
}

// TestPeerDeviceCloseMidSlicedReads closes the target's device under a stream of 4 MiB
// reads, each answered in slices: the oldest outstanding read fails with RetryExcErr,
// the rest flush, nothing hangs.
func TestPeerDeviceCloseMidSlicedReads(t *testing.T) {
	a, b := pair(t, testCfg(), verbs.QPAttr{MaxSendWR: 16})
	dst := newBuf(t, a, arenaMem, 4<<20)
	src := newBuf(t, b, arenaMem, 4<<20)
	checkFailingStream(t, a, verbs.SendWR{Op: verbs.OpRDMARead, Local: dst.b, LKey: dst.key, Remote: verbs.RemoteAddr{RKey: src.key}},
		func() { b.dev.Close() })
}
