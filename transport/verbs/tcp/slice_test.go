package tcp

import (
	"bytes"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/transport/verbs"
)

// startTxq runs a txq on one end of a loopback connection and returns it, the other
// end, and a function that sends a frame through it.
func startTxq(t *testing.T) (tx *txq, r *net.TCPConn, send func(h header, pay []byte)) {
	t.Helper()
	w, r := tcpPair(t)
	if err := tuneConn(w, ""); err != nil {
		t.Fatal(err)
	}
	ws, err := newSock(w)
	if err != nil {
		t.Fatal(err)
	}
	tx = newTxq(ws, nil, 64)
	go tx.run()
	t.Cleanup(tx.shutdown)
	send = func(h header, pay []byte) {
		t.Helper()
		var b [hdrSize]byte
		h.put(&b)
		if err := tx.send(&b, pay, 0); err != nil {
			t.Fatal(err)
		}
	}
	return tx, r, send
}

// waitQueued waits until stream s of tx holds n frames: the socket is full.
func waitQueued(t *testing.T, tx *txq, s, n int) {
	t.Helper()
	for deadline := time.Now().Add(testbudget.Scale(5 * time.Second)); ; time.Sleep(time.Millisecond) {
		tx.mu.Lock()
		q := tx.qs[s].n
		tx.mu.Unlock()
		if q == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("stream %d holds %d frames, want %d", s, q, n)
		}
	}
}

// frameLog reads frames from r until stop says the log is complete, landing read
// response payloads at land[seq] (slices in turn), and returns one line per frame.
func frameLog(t *testing.T, r *net.TCPConn, land map[uint64][]byte, stop func(log []string) bool) []string {
	t.Helper()
	r.SetReadDeadline(time.Now().Add(testbudget.Scale(20 * time.Second)))
	rd := newFrameReader(r, nil)
	got := map[uint64]int{}
	var log []string
	for !stop(log) {
		h, err := rd.header()
		if err != nil {
			t.Fatalf("after %v: %v", log, err)
		}
		switch h.op {
		case opReadResp:
			dst := land[h.seq]
			at := got[h.seq]
			more := h.flags&flagMore != 0
			if dst == nil || at+int(h.payloadLen) > len(dst) || more != (at+int(h.payloadLen) < len(dst)) {
				t.Fatalf("read response %+v at %d", h, at)
			}
			if more && h.payloadLen != respSlice {
				t.Fatalf("slice of %d bytes, want %d", h.payloadLen, respSlice)
			}
			if (at == 0) != (h.credits != 0) {
				t.Fatalf("credits %d on a slice at %d; only the first slice carries them", h.credits, at)
			}
			if err := rd.readFull(dst[at : at+int(h.payloadLen)]); err != nil {
				t.Fatal(err)
			}
			got[h.seq] = at + int(h.payloadLen)
			switch {
			case !more && at == 0:
				log = append(log, fmt.Sprintf("whole %d", h.seq))
			case !more:
				log = append(log, fmt.Sprintf("last slice %d", h.seq))
			case at == 0:
				log = append(log, fmt.Sprintf("first slice %d", h.seq))
			}
		case opSend:
			b := make([]byte, h.payloadLen)
			if err := rd.readFull(b); err != nil {
				t.Fatal(err)
			}
			ack := ""
			if h.flags&flagAck != 0 {
				ack = fmt.Sprintf(" ack %d", h.ack)
			}
			log = append(log, fmt.Sprintf("request %d%s", h.seq, ack))
		case opAck:
			log = append(log, fmt.Sprintf("ack %d", h.seq))
		case opWrite:
			if err := rd.discard(int(h.payloadLen)); err != nil {
				t.Fatal(err)
			}
			log = append(log, fmt.Sprintf("write %d", h.seq))
		default:
			t.Fatalf("unexpected frame %+v", h)
		}
	}
	return log
}

// TestRequestPassesReadResponse queues read responses far longer than the socket
// buffers while the peer reads nothing, then requests. The first request to queue behind
// an answer switches the connection to mixed traffic: it waits for the response being
// written (whole, as begun), but passes the one queued behind it, which goes in slices
// from then on, and its piggybacked ack moves behind both as an opAck frame. Later long
// responses go in slices, and a request waits for one slice at most.
func TestRequestPassesReadResponse(t *testing.T) {
	tx, r, send := startTxq(t)
	queued := func(n int) { t.Helper(); waitQueued(t, tx, streamResp, n) }
	const big, small = 24 << 20, 8 << 20 // more than the 4 MiB send and 128 KiB receive buffers hold
	data := map[uint64][]byte{5: make([]byte, big), 6: make([]byte, small), 7: make([]byte, big)}
	for seq, b := range data {
		pattern(b, byte(seq))
	}
	land := map[uint64][]byte{5: make([]byte, big), 6: make([]byte, small), 7: make([]byte, big)}
	req := []byte("rendezvous offer")

	send(header{op: opReadResp, seq: 5, payloadLen: big, credits: 3}, data[5])
	send(header{op: opReadResp, seq: 6, payloadLen: small, credits: 1}, data[6])
	queued(2)
	send(header{op: opSend, seq: 11, payloadLen: uint32(len(req)), flags: flagAck, ack: 4}, req)
	tx.mu.Lock()
	mixed := tx.mixed
	tx.mu.Unlock()
	if !mixed {
		t.Fatal("the connection did not switch to mixed traffic when a request queued behind an answer")
	}
	var lowat int
	tx.conn.Control(func(fd uintptr) { lowat, _ = unix.GetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_NOTSENT_LOWAT) })
	if lowat != notsentLowat {
		t.Errorf("TCP_NOTSENT_LOWAT is %d, want %d", lowat, notsentLowat)
	}
	log := frameLog(t, r, land, func(log []string) bool { return len(log) > 0 && log[len(log)-1] == "ack 4" })
	want := []string{"whole 5", "request 11", "first slice 6", "last slice 6", "ack 4"}
	if fmt.Sprint(log) != fmt.Sprint(want) {
		t.Fatalf("frames %v, want %v", log, want)
	}

	send(header{op: opReadResp, seq: 7, payloadLen: big, credits: 2}, data[7])
	queued(1)
	send(header{op: opSend, seq: 12, payloadLen: uint32(len(req))}, req)
	log = frameLog(t, r, land, func(log []string) bool { return len(log) == 3 })
	want = []string{"first slice 7", "request 12", "last slice 7"}
	if fmt.Sprint(log) != fmt.Sprint(want) {
		t.Fatalf("frames %v, want %v", log, want)
	}
	for seq := range data {
		if !bytes.Equal(land[seq], data[seq]) {
			t.Fatalf("read response %d: the slices do not add up to its data", seq)
		}
	}
}

// mix switches the connections of both sides to mixed traffic, as the first request to
// queue behind an answer would, so that their long read responses go in slices.
func mix(t *testing.T, sides ...*side) {
	t.Helper()
	for _, s := range sides {
		cn := liveConn(t, s)
		cn.tx.mu.Lock()
		cn.tx.mixLocked()
		cn.tx.mu.Unlock()
	}
}

// liveConn returns s's live connection, failing the test if it has none.
func liveConn(t *testing.T, s *side) *qconn {
	t.Helper()
	q := s.qp.(*qp)
	q.mu.Lock()
	cn := q.cn
	q.mu.Unlock()
	if cn == nil {
		t.Fatal("the queue pair has no connection")
	}
	return cn
}

// TestAnswerWaitsForQueuedAck queues a request that carries an ack behind a long write
// (the socket is full), then an answer, which is for a later request than the ack covers:
// the ack must reach the peer before the answer, though the answer may pass the request.
func TestAnswerWaitsForQueuedAck(t *testing.T) {
	tx, r, send := startTxq(t)
	send(header{op: opWrite, seq: 10, payloadLen: 24 << 20}, make([]byte, 24<<20))
	waitQueued(t, tx, streamReq, 1)
	req := []byte("offer")
	send(header{op: opSend, seq: 11, payloadLen: uint32(len(req)), flags: flagAck, ack: 4}, req)
	send(header{op: opReadResp, seq: 9, payloadLen: 8, credits: 1}, make([]byte, 8))
	land := map[uint64][]byte{9: make([]byte, 8)}
	log := frameLog(t, r, land, func(log []string) bool {
		var answered, requested bool
		for _, l := range log {
			answered = answered || l == "whole 9"
			requested = requested || strings.HasPrefix(l, "request 11")
		}
		return answered && requested
	})
	ack, answer := -1, -1
	for i, l := range log {
		switch l {
		case "ack 4", "request 11 ack 4":
			ack = i
		case "whole 9":
			answer = i
		}
	}
	if ack < 0 || answer < 0 || ack > answer || log[0] != "write 10" {
		t.Fatalf("frames %v: the ack must come before the answer, after the begun write", log)
	}
}

// TestSlicedReads reads sizes around the slice length and, at the same time, in the
// other direction, and checks every byte: the reader lands the slices in turn while
// frames of the peer's own requests come between them.
func TestSlicedReads(t *testing.T) {
	a, b := pair(t, testCfg(), verbs.QPAttr{})
	mix(t, a, b)
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
	mix(t, a, b)
	loc, rem := allocMR(t, a, n), allocMR(t, b, n)
	pattern(rem.Bytes(), 3)
	clear(loc.Bytes())
	post(t, a.qp, verbs.SendWR{WRID: 1, Op: verbs.OpRDMARead, Flags: verbs.Signaled,
		Local: loc.Bytes(), LKey: loc.LKey(), Remote: verbs.RemoteAddr{RKey: rem.RKey()}})
	// Wait for the first slice to land, so the flush comes between slices or in one.
	deadline := time.Now().Add(testbudget.Scale(10 * time.Second))
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
	mix(t, a, b)
	dst := newBuf(t, a, arenaMem, 4<<20)
	src := newBuf(t, b, arenaMem, 4<<20)
	checkFailingStream(t, a, verbs.SendWR{Op: verbs.OpRDMARead, Local: dst.b, LKey: dst.key, Remote: verbs.RemoteAddr{RKey: src.key}},
		func() { b.dev.Close() })
}
