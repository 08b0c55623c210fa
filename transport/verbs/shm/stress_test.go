package shm

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/transport/verbs"
)

// Adversarial tests of the shm provider: shared CQs at and below their documented size,
// concurrent posters under back-pressure, error runs among unsignaled requests, Dereg
// racing remote access, atomics at the edges of an MR, zero-length operations and QP
// state transitions out of order.

// drain polls s until want completions arrived, driving the others' progress.
func drain(t *testing.T, s *side, want int, others ...*side) []verbs.WC {
	t.Helper()
	out := make([]verbs.WC, 0, want)
	for len(out) < want {
		out = append(out, s.next(t, others...))
	}
	return out
}

// TestStressFlushedWritesDoNotLand: a run of unsignaled RDMA writes with a forged key in
// the middle. The refused write completes with RemAccessErr, the later ones with
// WRFlushErr, in post order; the earlier ones landed and the later ones did not.
func TestStressFlushedWritesDoNotLand(t *testing.T) {
	a, b := pair(t, verbs.Config{}, verbs.QPAttr{MaxSendWR: 64})
	const before, after, sz = 8, 24, 256
	dst := b.allocMR(t, (before+after+1)*sz, verbs.AccessAll)
	clear(dst.Bytes())
	src := a.allocMR(t, sz, verbs.AccessAll)
	copy(src.Bytes(), pattern(sz, 9))
	for i := range before + 1 + after {
		wr := verbs.SendWR{WRID: uint64(i), Op: verbs.OpRDMAWrite, Local: src.Bytes(), LKey: src.LKey(),
			Remote: verbs.RemoteAddr{RKey: dst.RKey(), Offset: uint64(i * sz)}}
		if i == before {
			wr.Remote.RKey ^= 1
		}
		a.post(t, wr)
	}
	wcs := drain(t, a, 1+after, b)
	wantWC(t, wcs[0], before, verbs.RemAccessErr, verbs.WCRDMAWrite)
	for i, wc := range wcs[1:] {
		wantWC(t, wc, uint64(before+1+i), verbs.WRFlushErr, verbs.WCRDMAWrite)
	}
	a.none(t)
	for i := range before + 1 + after {
		got := dst.Bytes()[i*sz : (i+1)*sz]
		if i < before && string(got) != string(src.Bytes()) {
			t.Fatalf("write %d before the refused one did not land", i)
		}
		if i >= before && (got[0] != 0 || got[sz-1] != 0) {
			t.Fatalf("write %d was refused or flushed but landed", i)
		}
	}
	if st := a.qp.State(); st != verbs.Err {
		t.Fatalf("state %v after the error, want Err", st)
	}
}

// TestStressSharedCQDepth: four QPs on one CQ sized at exactly the sum of their queues,
// and one below (the doc promises an overflow list, not a loss). Every completion
// arrives exactly once, in order per QP, with its data.
func TestStressSharedCQDepth(t *testing.T) {
	const nqp, depthEach, msg = 4, 8, 64
	for _, short := range []bool{false, true} {
		t.Run(fmt.Sprintf("short=%v", short), func(t *testing.T) {
			da, err := verbs.Open(Name, testCfg)
			if err != nil {
				t.Fatal(err)
			}
			defer da.Close()
			db, err := verbs.Open(Name, testCfg)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			pa, _ := da.AllocPD()
			pb, _ := db.AllocPD()
			depth := nqp * 2 * depthEach
			if short {
				depth--
			}
			cqa, _ := da.CreateCQ(depth)
			cqb, _ := db.CreateCQ(1 << 10)
			A, B := &side{dev: da, pd: pa, cq: cqa}, &side{dev: db, pd: pb, cq: cqb}
			srcA := A.allocMR(t, nqp*depthEach*msg, verbs.AccessAll)
			dstB := B.allocMR(t, nqp*depthEach*msg, verbs.AccessAll)
			rbufA := A.allocMR(t, nqp*depthEach*msg, verbs.AccessAll)
			srcB := B.allocMR(t, nqp*depthEach*msg, verbs.AccessAll)
			copy(srcA.Bytes(), pattern(len(srcA.Bytes()), 3))
			copy(srcB.Bytes(), pattern(len(srcB.Bytes()), 101))
			clear(rbufA.Bytes())
			var qa, qb []verbs.QP
			for range nqp {
				attr := verbs.QPAttr{MaxSendWR: depthEach, MaxRecvWR: depthEach}
				attr.SendCQ, attr.RecvCQ = cqa, cqa
				x, _ := pa.CreateQP(attr)
				attr.SendCQ, attr.RecvCQ = cqb, cqb
				y, _ := pb.CreateQP(attr)
				x.ToInit()
				y.ToInit()
				ctx := context.Background()
				if err := verbs.Connect(ctx, x, y.Endpoint()); err != nil {
					t.Fatal(err)
				}
				if err := verbs.Connect(ctx, y, x.Endpoint()); err != nil {
					t.Fatal(err)
				}
				qa, qb = append(qa, x), append(qb, y)
			}
			for q := range nqp {
				for i := range depthEach {
					k := q*depthEach + i
					if err := qa[q].PostRecv(&verbs.RecvWR{WRID: uint64(1000 + k), Local: rbufA.Bytes()[k*msg : (k+1)*msg], LKey: rbufA.LKey()}); err != nil {
						t.Fatal(err)
					}
					if err := qa[q].PostSend(&verbs.SendWR{WRID: uint64(k), Op: verbs.OpRDMAWrite, Flags: verbs.Signaled,
						Local: srcA.Bytes()[k*msg : (k+1)*msg], LKey: srcA.LKey(),
						Remote: verbs.RemoteAddr{RKey: dstB.RKey(), Offset: uint64(k * msg)}}); err != nil {
						t.Fatal(err)
					}
				}
			}
			for q := range nqp {
				for i := range depthEach {
					k := q*depthEach + i
					if err := qb[q].PostSend(&verbs.SendWR{WRID: uint64(k), Op: verbs.OpSend, Flags: verbs.Signaled,
						Local: srcB.Bytes()[k*msg : (k+1)*msg], LKey: srcB.LKey()}); err != nil {
						t.Fatal(err)
					}
				}
			}
			drain(t, B, nqp*depthEach)
			// Drive A's progress with an empty slice: every receive completion goes into
			// the CQ, which then holds all of A's completions at once.
			cqa.Poll(nil)
			full := nqp * 2 * depthEach
			wcs := make([]verbs.WC, 2*full)
			n, err := cqa.Poll(wcs)
			if err != nil || n != full {
				t.Fatalf("Poll = %d, %v; want %d completions", n, err, full)
			}
			seen := map[uint64]bool{}
			lastSend, lastRecv := map[uint32]uint64{}, map[uint32]uint64{}
			for _, wc := range wcs[:n] {
				if seen[wc.WRID] || wc.Status != verbs.Success {
					t.Fatalf("completion %+v (seen before: %v)", wc, seen[wc.WRID])
				}
				seen[wc.WRID] = true
				last, k := lastSend, int(wc.WRID)
				if wc.Op == verbs.WCRecv {
					last, k = lastRecv, k-1000
					if wc.ByteLen != msg || string(rbufA.Bytes()[k*msg:(k+1)*msg]) != string(srcB.Bytes()[k*msg:(k+1)*msg]) {
						t.Fatalf("receive %d: %d bytes, data differs", k, wc.ByteLen)
					}
				}
				if p, ok := last[wc.QPN]; ok && wc.WRID <= p {
					t.Fatalf("qp %d: wrid %d completed after %d", wc.QPN, wc.WRID, p)
				}
				last[wc.QPN] = wc.WRID
			}
			if string(dstB.Bytes()) != string(srcA.Bytes()) {
				t.Fatal("RDMA write data differs at the target")
			}
			// Every slot was released: each QP takes MaxSendWR more at once.
			for q := range nqp {
				for i := range depthEach {
					if err := qa[q].PostSend(&verbs.SendWR{WRID: uint64(5000 + i), Op: verbs.OpRDMAWrite, Flags: verbs.Signaled,
						Local: srcA.Bytes()[:8], LKey: srcA.LKey(), Remote: verbs.RemoteAddr{RKey: dstB.RKey()}}); err != nil {
						t.Fatalf("qp %d post %d after draining: %v", q, i, err)
					}
				}
			}
			if got := drain(t, A, nqp*depthEach); len(got) != nqp*depthEach {
				t.Fatal("short")
			}
		})
	}
}

// TestStressConcurrentPosters: eight goroutines post signaled writes and Sends on one QP
// at once, retrying on ErrQueueFull; a poller on each side. Every accepted request
// completes once, in per-goroutine order; data and messages arrive in order.
func TestStressConcurrentPosters(t *testing.T) {
	const posters, per, slot = 8, 150, 16
	a, b := pair(t, verbs.Config{}, verbs.QPAttr{MaxSendWR: 16, MaxRecvWR: 32})
	src := a.allocMR(t, posters*per*slot, verbs.AccessAll)
	dst := b.allocMR(t, posters*per*slot, verbs.AccessAll)
	rbuf := b.allocMR(t, 32*slot, verbs.AccessAll)
	clear(dst.Bytes())
	for r := range 32 {
		b.recv(t, verbs.RecvWR{WRID: uint64(r), Local: rbuf.Bytes()[r*slot : (r+1)*slot], LKey: rbuf.LKey()})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	errc := make(chan error, posters+2)
	var wg sync.WaitGroup
	sends := 0
	for i := range per {
		if i%3 == 0 {
			sends += posters
		}
	}
	for g := range posters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range per {
				k := g*per + i
				buf := src.Bytes()[k*slot : (k+1)*slot]
				binary.LittleEndian.PutUint64(buf, uint64(g))
				binary.LittleEndian.PutUint64(buf[8:], uint64(i))
				wr := verbs.SendWR{WRID: uint64(k), Op: verbs.OpRDMAWrite, Flags: verbs.Signaled, Local: buf, LKey: src.LKey(),
					Remote: verbs.RemoteAddr{RKey: dst.RKey(), Offset: uint64(k * slot)}}
				if i%3 == 0 {
					wr.Op = verbs.OpSend
				}
				for {
					err := a.qp.PostSend(&wr)
					if err == nil {
						break
					}
					if !errors.Is(err, verbs.ErrQueueFull) || ctx.Err() != nil {
						errc <- fmt.Errorf("poster %d: %v", g, err)
						return
					}
					runtime.Gosched()
				}
			}
		}()
	}
	recvDone := make(chan struct{})
	go func() {
		defer close(recvDone)
		next := make([]int, posters)
		wcs := make([]verbs.WC, 8)
		for got := 0; got < sends; {
			n, err := b.cq.Poll(wcs)
			if err != nil {
				errc <- err
				return
			}
			if n == 0 {
				if ctx.Err() != nil {
					errc <- fmt.Errorf("receiver: %d of %d", got, sends)
					return
				}
				runtime.Gosched()
				continue
			}
			for _, wc := range wcs[:n] {
				if wc.Status != verbs.Success || wc.Op != verbs.WCRecv || wc.ByteLen != slot {
					errc <- fmt.Errorf("receiver: %+v", wc)
					return
				}
				m := rbuf.Bytes()[int(wc.WRID)*slot : int(wc.WRID+1)*slot]
				g, i := int(binary.LittleEndian.Uint64(m)), int(binary.LittleEndian.Uint64(m[8:]))
				if g >= posters || i != next[g] {
					errc <- fmt.Errorf("receiver: message (%d, %d) out of order", g, i)
					return
				}
				next[g] += 3
				got++
				if err := b.qp.PostRecv(&verbs.RecvWR{WRID: wc.WRID, Local: m, LKey: rbuf.LKey()}); err != nil {
					errc <- err
					return
				}
			}
		}
	}()
	total := posters * per
	seen := make([]bool, total)
	lastOf := make([]int, posters)
	for i := range lastOf {
		lastOf[i] = -1
	}
	wcs := make([]verbs.WC, 8)
	for got := 0; got < total; {
		select {
		case err := <-errc:
			t.Fatal(err)
		default:
		}
		n, err := a.cq.Poll(wcs)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			if ctx.Err() != nil {
				t.Fatalf("initiator: %d of %d completions", got, total)
			}
			runtime.Gosched()
			continue
		}
		for _, wc := range wcs[:n] {
			k := int(wc.WRID)
			if wc.Status != verbs.Success || k >= total || seen[k] {
				t.Fatalf("completion %+v", wc)
			}
			seen[k] = true
			g, i := k/per, k%per
			if i <= lastOf[g] {
				t.Fatalf("poster %d: request %d completed after %d", g, i, lastOf[g])
			}
			lastOf[g] = i
			got++
		}
	}
	wg.Wait()
	<-recvDone
	select {
	case err := <-errc:
		t.Fatal(err)
	default:
	}
	for k := range total {
		if k%per%3 != 0 && string(dst.Bytes()[k*slot:(k+1)*slot]) != string(src.Bytes()[k*slot:(k+1)*slot]) {
			t.Fatalf("write %d did not land", k)
		}
	}
}

// TestStressDeregDuringRDMA: one goroutine streams RDMA writes and reads at a target MR
// while another deregisters it and allocates the same bytes again, filled with a marker.
// Every request completes with Success or (from the first refusal on) RemAccessErr and
// then WRFlushErr; the new MR's bytes are never touched through the old key.
func TestStressDeregDuringRDMA(t *testing.T) {
	for _, user := range []bool{false, true} {
		t.Run(fmt.Sprintf("user=%v", user), func(t *testing.T) {
			const sz = 64 << 10
			a, b := pair(t, verbs.Config{}, verbs.QPAttr{MaxSendWR: 8})
			var target verbs.MR
			if user {
				var err error
				if target, err = b.pd.RegMR(make([]byte, sz), verbs.LocalWrite|verbs.RemoteRead|verbs.RemoteWrite); err != nil {
					t.Fatal(err)
				}
			} else {
				target = b.allocMR(t, sz, verbs.AccessAll)
			}
			rkey := target.RKey()
			src := a.allocMR(t, sz, verbs.AccessAll)
			sink := a.allocMR(t, sz, verbs.AccessAll)
			copy(src.Bytes(), pattern(sz, 5))
			var dereged atomic.Bool
			var fresh verbs.MR
			done := make(chan struct{})
			go func() {
				defer close(done)
				time.Sleep(time.Millisecond)
				if err := target.Dereg(); err != nil {
					t.Error(err)
				}
				m, err := b.pd.AllocMR(sz, verbs.AccessAll)
				if err != nil {
					t.Error(err)
					return
				}
				for i := range m.Bytes() {
					m.Bytes()[i] = 0xee
				}
				fresh = m
				dereged.Store(true)
			}()
			failed := false
			for i := 0; ; i++ {
				wasDereged := dereged.Load()
				wr := verbs.SendWR{WRID: uint64(i), Op: verbs.OpRDMAWrite, Flags: verbs.Signaled, Local: src.Bytes(), LKey: src.LKey(),
					Remote: verbs.RemoteAddr{RKey: rkey}}
				if i%2 == 1 {
					wr.Op, wr.Local, wr.LKey = verbs.OpRDMARead, sink.Bytes(), sink.LKey()
				}
				a.post(t, wr)
				wc := a.next(t, b)
				switch {
				case wc.WRID != uint64(i):
					t.Fatalf("completion %+v for request %d", wc, i)
				case wc.Status == verbs.Success && (failed || wasDereged):
					t.Fatalf("request %d succeeded after Dereg returned (failed before: %v)", i, failed)
				case wc.Status == verbs.Success && wr.Op == verbs.OpRDMARead && string(sink.Bytes()) != string(src.Bytes()):
					t.Fatalf("read %d returned other bytes", i)
				case wc.Status == verbs.RemAccessErr && !failed:
					failed = true
				case wc.Status == verbs.WRFlushErr && failed:
				case wc.Status != verbs.Success:
					t.Fatalf("request %d: %v (failed before: %v)", i, wc.Status, failed)
				}
				if failed && wasDereged {
					break
				}
			}
			<-done
			for i, c := range fresh.Bytes() {
				if c != 0xee {
					t.Fatalf("new MR byte %d = %#x: written through the old key", i, c)
				}
			}
		})
	}
}

// TestStressAtomicEdges: atomics on the last 8 bytes of an MR work; one byte further, or
// misaligned, they fail (RemAccessErr, RemInvReqErr) and leave memory untouched.
func TestStressAtomicEdges(t *testing.T) {
	const sz = 64
	cases := []struct {
		off  uint64
		want verbs.Status
	}{
		{sz - 8, verbs.Success}, {sz - 7, verbs.RemAccessErr}, {sz, verbs.RemAccessErr},
		{1 << 63, verbs.RemAccessErr}, {sz - 12, verbs.RemInvReqErr}, {3, verbs.RemInvReqErr},
	}
	for _, c := range cases {
		for _, op := range []verbs.Opcode{verbs.OpAtomicFetchAdd, verbs.OpAtomicCmpSwap} {
			t.Run(fmt.Sprintf("%v@%d", op, c.off), func(t *testing.T) {
				a, b := pair(t, verbs.Config{}, verbs.QPAttr{})
				mr := b.allocMR(t, sz, verbs.AccessAll)
				ref := pattern(sz, 77)
				binary.LittleEndian.PutUint64(ref[sz-8:], 41)
				copy(mr.Bytes(), ref)
				res := a.allocMR(t, 8, verbs.AccessAll)
				binary.LittleEndian.PutUint64(res.Bytes(), 0xdead)
				a.post(t, verbs.SendWR{WRID: 1, Op: op, Flags: verbs.Signaled, Local: res.Bytes(), LKey: res.LKey(),
					Remote: verbs.RemoteAddr{RKey: mr.RKey(), Offset: c.off}, CompareAdd: 41, Swap: 99})
				wc := a.next(t, b)
				wantWC(t, wc, 1, c.want, verbs.WCOpcodeOf(op))
				if c.want != verbs.Success {
					if string(mr.Bytes()) != string(ref) {
						t.Fatal("target memory changed by a refused atomic")
					}
					if binary.LittleEndian.Uint64(res.Bytes()) != 0xdead {
						t.Fatal("result written by a refused atomic")
					}
					return
				}
				if got := binary.LittleEndian.Uint64(res.Bytes()); got != 41 {
					t.Fatalf("old value %d", got)
				}
				want := uint64(82)
				if op == verbs.OpAtomicCmpSwap {
					want = 99
				}
				if got := binary.LittleEndian.Uint64(mr.Bytes()[sz-8:]); got != want || string(mr.Bytes()[:sz-8]) != string(ref[:sz-8]) {
					t.Fatalf("target word %d (want %d) or its neighbours changed", got, want)
				}
			})
		}
	}
}

// TestStressZeroLength: zero-length Sends, SendWithImm, writes (with and without
// immediate) and reads, at offset 0 and at the MR's end; the receives report 0 bytes and
// the immediates, and no byte of the target or the receive buffer changes.
func TestStressZeroLength(t *testing.T) {
	a, b := pair(t, verbs.Config{}, verbs.QPAttr{})
	mr := b.allocMR(t, 32, verbs.AccessAll)
	ref := pattern(32, 1)
	copy(mr.Bytes(), ref)
	rbuf := b.allocMR(t, 16, verbs.AccessAll)
	copy(rbuf.Bytes(), ref[:16])
	ops := []verbs.Opcode{verbs.OpSend, verbs.OpSendWithImm, verbs.OpRDMAWrite, verbs.OpRDMAWriteWithImm, verbs.OpRDMARead}
	for i, op := range ops {
		for _, off := range []uint64{0, 32} {
			id := uint64(10*i) + off
			if op != verbs.OpRDMAWrite && op != verbs.OpRDMARead {
				b.recv(t, verbs.RecvWR{WRID: id, Local: rbuf.Bytes(), LKey: rbuf.LKey()})
			}
			a.post(t, verbs.SendWR{WRID: id, Op: op, Flags: verbs.Signaled, Imm: uint32(id + 7),
				Remote: verbs.RemoteAddr{RKey: mr.RKey(), Offset: off}})
			wc := a.next(t, b)
			wantWC(t, wc, id, verbs.Success, verbs.WCOpcodeOf(op))
			if wc.ByteLen != 0 {
				t.Fatalf("%v: ByteLen %d", op, wc.ByteLen)
			}
			if op == verbs.OpRDMAWrite || op == verbs.OpRDMARead {
				continue
			}
			rc := b.next(t, a)
			wantOp := verbs.WCRecv
			if op == verbs.OpRDMAWriteWithImm {
				wantOp = verbs.WCRecvRDMAWithImm
			}
			wantWC(t, rc, id, verbs.Success, wantOp)
			hasImm := op != verbs.OpSend
			if rc.ByteLen != 0 || rc.HasImm != hasImm || (hasImm && rc.Imm != uint32(id+7)) {
				t.Fatalf("%v: receive %+v", op, rc)
			}
		}
	}
	if string(mr.Bytes()) != string(ref) || string(rbuf.Bytes()) != string(ref[:16]) {
		t.Fatal("a zero-length operation changed memory")
	}
	a.none(t)
	b.none(t)
}

// TestStressStatesOutOfOrder: every out-of-order transition and post returns ErrQPState
// (or ErrBadEndpoint) and leaves the QP in its state.
func TestStressStatesOutOfOrder(t *testing.T) {
	ctx := context.Background()
	peer := openSide(t, verbs.Config{}, verbs.QPAttr{})
	s := openSide(t, verbs.Config{}, verbs.QPAttr{}) // in Init
	q, _ := s.pd.CreateQP(verbs.QPAttr{SendCQ: s.cq, RecvCQ: s.cq})
	if err := q.ToRTS(ctx); !errors.Is(err, verbs.ErrQPState) {
		t.Fatalf("Reset→RTS: %v", err)
	}
	if err := q.ToRTR(ctx, peer.qp.Endpoint()); !errors.Is(err, verbs.ErrQPState) {
		t.Fatalf("Reset→RTR: %v", err)
	}
	if err := q.PostSend(&verbs.SendWR{Op: verbs.OpRDMAWrite}); !errors.Is(err, verbs.ErrQPState) {
		t.Fatalf("PostSend in Reset: %v", err)
	}
	if err := q.PostRecv(&verbs.RecvWR{}); !errors.Is(err, verbs.ErrQPState) {
		t.Fatalf("PostRecv in Reset: %v", err)
	}
	if q.State() != verbs.Reset {
		t.Fatalf("state %v", q.State())
	}
	if err := s.qp.ToInit(); !errors.Is(err, verbs.ErrQPState) {
		t.Fatalf("Init→Init: %v", err)
	}
	if err := s.qp.ToRTS(ctx); !errors.Is(err, verbs.ErrQPState) {
		t.Fatalf("Init→RTS: %v", err)
	}
	if err := s.qp.PostSend(&verbs.SendWR{Op: verbs.OpRDMAWrite}); !errors.Is(err, verbs.ErrQPState) {
		t.Fatalf("PostSend in Init: %v", err)
	}
	if err := s.qp.ToRTR(ctx, []byte("junk")); !errors.Is(err, verbs.ErrBadEndpoint) || s.qp.State() != verbs.Init {
		t.Fatalf("ToRTR(junk): %v, state %v", err, s.qp.State())
	}
	if err := verbs.Connect(ctx, s.qp, peer.qp.Endpoint()); err != nil {
		t.Fatal(err)
	}
	if err := s.qp.ToRTR(ctx, peer.qp.Endpoint()); !errors.Is(err, verbs.ErrQPState) {
		t.Fatalf("RTS→RTR: %v", err)
	}
	if err := s.qp.ToInit(); !errors.Is(err, verbs.ErrQPState) || s.qp.State() != verbs.RTS {
		t.Fatalf("RTS→Init: %v, state %v", err, s.qp.State())
	}
	if err := s.qp.ToErr(); err != nil {
		t.Fatal(err)
	}
	for _, f := range []func() error{s.qp.ToInit, func() error { return s.qp.ToRTS(ctx) }} {
		if err := f(); !errors.Is(err, verbs.ErrQPState) || s.qp.State() != verbs.Err {
			t.Fatalf("from Err: %v, state %v", err, s.qp.State())
		}
	}
	// In Err, posts are accepted and flushed, exactly once each.
	s.post(t, verbs.SendWR{WRID: 5, Op: verbs.OpRDMAWrite})
	s.recv(t, verbs.RecvWR{WRID: 6})
	wantWC(t, s.next(t), 5, verbs.WRFlushErr, verbs.WCRDMAWrite)
	wantWC(t, s.next(t), 6, verbs.WRFlushErr, verbs.WCRecv)
	s.none(t)
	if err := s.qp.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.qp.PostSend(&verbs.SendWR{Op: verbs.OpRDMAWrite}); !errors.Is(err, verbs.ErrClosed) {
		t.Fatalf("PostSend after Close: %v", err)
	}
}
