package tcp

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/transport/verbs"
)

// Adversarial tests of the tcp provider: flushed requests that must not run, shared CQs
// at and below their documented size, concurrent posters under back-pressure, the
// reading role handed between waiters with cancellation and Close, and garbage peers.

// stressPoll polls cq until want completions arrived (10 s bound) and returns them.
func stressPoll(t *testing.T, cq verbs.CQ, want int) []verbs.WC {
	t.Helper()
	var out []verbs.WC
	wcs := make([]verbs.WC, 16)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for len(out) < want {
		n, err := cq.Poll(wcs)
		if err != nil {
			t.Fatalf("poll after %d of %d completions: %v", len(out), want, err)
		}
		out = append(out, wcs[:n]...)
		if n == 0 && len(out) < want {
			if err := cq.Wait(ctx); err != nil {
				t.Fatalf("wait after %d of %d completions: %v", len(out), want, err)
			}
		}
	}
	return out
}

// TestStressFlushedWritesDoNotLand posts a run of unsignaled RDMA writes with one bad key
// in the middle, back to back so that the later writes are on the wire before the
// target's refusal comes back. The verbs doc says a WRFlushErr request did not run: the
// writes after the refused one must leave target memory untouched, the ones before it
// must have landed, and the completions are exactly the refusal then one flush per later
// request, in post order.
func TestStressFlushedWritesDoNotLand(t *testing.T) {
	for round := range 20 {
		a, b := pair(t, testCfg(), verbs.QPAttr{MaxSendWR: 64})
		const before, after, sz = 8, 24, 256
		dst := allocMR(t, b, (before+after+1)*sz)
		clear(dst.Bytes())
		src := allocMR(t, a, sz)
		pattern(src.Bytes(), byte(round+1))
		for i := range before + 1 + after {
			wr := verbs.SendWR{WRID: uint64(i), Op: verbs.OpRDMAWrite, Local: src.Bytes(), LKey: src.LKey(),
				Remote: verbs.RemoteAddr{RKey: dst.RKey(), Offset: uint64(i * sz)}}
			if i == before {
				wr.Remote.RKey ^= 1 // a forged generation: RemAccessErr at the target
			}
			post(t, a.qp, wr)
		}
		wcs := stressPoll(t, a.cq, 1+after)
		wantWC(t, wcs[0], before, verbs.RemAccessErr, verbs.WCRDMAWrite)
		for i, wc := range wcs[1:] {
			wantWC(t, wc, uint64(before+1+i), verbs.WRFlushErr, verbs.WCRDMAWrite)
		}
		// An ack of b's that was already owed may still arrive: give the target time to
		// process everything a sent, then look at its memory.
		time.Sleep(20 * time.Millisecond)
		mem := dst.Bytes()
		for i := range before + 1 + after {
			got := mem[i*sz : (i+1)*sz]
			landed := got[0] != 0 || got[sz-1] != 0
			switch {
			case i < before && string(got) != string(src.Bytes()):
				t.Fatalf("round %d: write %d before the refused one did not land", round, i)
			case i >= before && landed:
				t.Fatalf("round %d: write %d completed with %v but its data landed at the target",
					round, i, map[bool]verbs.Status{true: verbs.RemAccessErr, false: verbs.WRFlushErr}[i == before])
			}
		}
		if n, _ := a.cq.Poll(make([]verbs.WC, 4)); n != 0 {
			t.Fatalf("round %d: %d extra completions", round, n)
		}
	}
}

// TestStressSharedCQDepth connects four QPs whose completions all go to one CQ sized at
// exactly the sum of their MaxSendWR and MaxRecvWR, fills every queue and checks that
// each completion arrives once with the right data; one entry smaller, the CQ must
// report ErrCQOverrun (never lose a completion silently, never duplicate one).
func TestStressSharedCQDepth(t *testing.T) {
	const nqp, depthEach, msg = 4, 8, 64
	for _, short := range []bool{false, true} {
		t.Run(fmt.Sprintf("short=%v", short), func(t *testing.T) {
			da, db := openDev(t, testCfg()), openDev(t, testCfg())
			pa, _ := da.AllocPD()
			pb, _ := db.AllocPD()
			depth := nqp * 2 * depthEach
			if short {
				depth--
			}
			cqa, err := da.CreateCQ(depth)
			if err != nil {
				t.Fatal(err)
			}
			cqb, _ := db.CreateCQ(1 << 10)
			attr := verbs.QPAttr{MaxSendWR: depthEach, MaxRecvWR: depthEach}
			srcA, _ := pa.AllocMR(nqp*depthEach*msg, verbs.AccessAll)
			dstB, _ := pb.AllocMR(nqp*depthEach*msg, verbs.AccessAll)
			rbufA, _ := pa.AllocMR(nqp*depthEach*msg, verbs.AccessAll)
			srcB, _ := pb.AllocMR(nqp*depthEach*msg, verbs.AccessAll)
			pattern(srcA.Bytes(), 3)
			pattern(srcB.Bytes(), 101)
			clear(rbufA.Bytes())
			var qa, qb []verbs.QP
			for range nqp {
				x, _ := pa.CreateQP(verbs.QPAttr{SendCQ: cqa, RecvCQ: cqa, MaxSendWR: attr.MaxSendWR, MaxRecvWR: attr.MaxRecvWR})
				y, _ := pb.CreateQP(verbs.QPAttr{SendCQ: cqb, RecvCQ: cqb, MaxSendWR: attr.MaxSendWR, MaxRecvWR: attr.MaxRecvWR})
				x.ToInit()
				y.ToInit()
				connect(t, &side{qp: x}, &side{qp: y})
				qa, qb = append(qa, x), append(qb, y)
			}
			// Fill every queue of A: MaxRecvWR receives, and MaxSendWR signaled writes.
			for q := range nqp {
				for i := range depthEach {
					k := q*depthEach + i
					postRecv(t, qa[q], verbs.RecvWR{WRID: uint64(1000 + k), Local: rbufA.Bytes()[k*msg : (k+1)*msg], LKey: rbufA.LKey()})
					post(t, qa[q], verbs.SendWR{WRID: uint64(k), Op: verbs.OpRDMAWrite, Flags: verbs.Signaled,
						Local: srcA.Bytes()[k*msg : (k+1)*msg], LKey: srcA.LKey(),
						Remote: verbs.RemoteAddr{RKey: dstB.RKey(), Offset: uint64(k * msg)}})
				}
			}
			// B sends depthEach messages to each QP of A.
			for q := range nqp {
				for i := range depthEach {
					k := q*depthEach + i
					post(t, qb[q], verbs.SendWR{WRID: uint64(k), Op: verbs.OpSend, Flags: verbs.Signaled,
						Local: srcB.Bytes()[k*msg : (k+1)*msg], LKey: srcB.LKey()})
				}
			}
			if got := stressPoll(t, cqb, nqp*depthEach); len(got) != nqp*depthEach {
				t.Fatalf("b: %d completions", len(got))
			}
			// Let A's readers push every completion before anything is polled.
			c := cqa.(*cq)
			full := nqp * 2 * depthEach
			deadline := time.Now().Add(10 * time.Second)
			for {
				c.mu.Lock()
				n, over := c.n, c.overrun
				c.mu.Unlock()
				if n == full || (short && over) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("cq holds %d of %d completions (overrun %v)", n, full, over)
				}
				time.Sleep(time.Millisecond)
			}
			wcs := make([]verbs.WC, 2*full)
			n, err := cqa.Poll(wcs)
			if short {
				if !errors.Is(err, verbs.ErrCQOverrun) {
					t.Fatalf("undersized CQ: Poll = %d, %v; want ErrCQOverrun", n, err)
				}
				if n != depth {
					t.Fatalf("undersized CQ returned %d completions, want the %d it held", n, depth)
				}
				if _, err := cqa.Poll(wcs); !errors.Is(err, verbs.ErrCQOverrun) {
					t.Fatalf("second Poll after overrun: %v, want ErrCQOverrun", err)
				}
			} else if err != nil || n != full {
				t.Fatalf("Poll = %d, %v; want %d completions", n, err, full)
			}
			seen := map[uint64]bool{}
			lastSend := map[uint32]uint64{}
			lastRecv := map[uint32]uint64{}
			for _, wc := range wcs[:n] {
				if seen[wc.WRID] {
					t.Fatalf("completion for wrid %d twice", wc.WRID)
				}
				seen[wc.WRID] = true
				if wc.Status != verbs.Success {
					t.Fatalf("completion %+v", wc)
				}
				last := lastSend
				k := int(wc.WRID)
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
		})
	}
}

// TestStressConcurrentPosters has eight goroutines post signaled RDMA writes and Sends on
// one QP at once, retrying on ErrQueueFull, while one goroutine polls. Every accepted
// request completes exactly once and each goroutine's requests complete in its post
// order; the writes' data and the Sends' payloads arrive, in per-goroutine order.
func TestStressConcurrentPosters(t *testing.T) {
	const posters, per, slot = 8, 150, 16
	a, b := pair(t, testCfg(), verbs.QPAttr{MaxSendWR: 16, MaxRecvWR: 32})
	src := allocMR(t, a, posters*per*slot)
	dst := allocMR(t, b, posters*per*slot)
	rbuf := allocMR(t, b, 32*slot)
	clear(dst.Bytes())
	for r := range 32 {
		postRecv(t, b.qp, verbs.RecvWR{WRID: uint64(r), Local: rbuf.Bytes()[r*slot : (r+1)*slot], LKey: rbuf.LKey()})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	errc := make(chan error, posters+2)
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
	total := posters * per
	sends := 0
	for g := range posters {
		for i := range per {
			_ = g
			if i%3 == 0 {
				sends++
			}
		}
	}
	// Receiver: check per-poster order of arriving Sends, repost.
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
				if err := b.cq.Wait(ctx); err != nil {
					errc <- fmt.Errorf("receiver after %d of %d: %v", got, sends, err)
					return
				}
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
					errc <- fmt.Errorf("receiver: message (%d, %d), want index %d", g, i, next[min(g, posters-1)])
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
			wctx, wcancel := context.WithTimeout(ctx, 50*time.Millisecond)
			err := a.cq.Wait(wctx)
			wcancel()
			if err != nil && ctx.Err() != nil {
				t.Fatalf("initiator: %d of %d completions: %v", got, total, err)
			}
			continue
		}
		for _, wc := range wcs[:n] {
			k := int(wc.WRID)
			if wc.Status != verbs.Success || k >= total || seen[k] {
				t.Fatalf("completion %+v (seen %v)", wc, k < total && seen[k])
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
	select {
	case <-recvDone:
	case <-ctx.Done():
		t.Fatal("receiver did not finish")
	}
	select {
	case err := <-errc:
		t.Fatal(err)
	default:
	}
	for k := range total {
		if k%per%3 == 0 {
			continue
		}
		if string(dst.Bytes()[k*slot:(k+1)*slot]) != string(src.Bytes()[k*slot:(k+1)*slot]) {
			t.Fatalf("write %d did not land", k)
		}
	}
}

// TestStressRoleHandoffCancel runs several goroutines in CQ.Wait on the CQ of one
// connection (so the reading role moves between them and the reader goroutine), with
// contexts cancelled at random points, while the peer streams RDMA-write-with-immediate
// and the initiator reads back. Every completion must be polled exactly once; the test
// ends with Close racing the waiters, which must all return.
func TestStressRoleHandoffCancel(t *testing.T) {
	const msgs = 400
	a, b := pair(t, testCfg(), verbs.QPAttr{MaxSendWR: 32, MaxRecvWR: 64})
	dst := allocMR(t, a, 8*msgs)
	src := allocMR(t, b, 8*msgs)
	for i := range msgs {
		binary.LittleEndian.PutUint64(src.Bytes()[8*i:], uint64(i)+1)
	}
	var mu sync.Mutex
	seen := make(map[uint32]int)
	posted := 0
	mu.Lock()
	for ; posted < 64; posted++ {
		postRecv(t, a.qp, verbs.RecvWR{WRID: uint64(posted)})
	}
	mu.Unlock()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	errc := make(chan error, 16)
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewSource(int64(w)))
			wcs := make([]verbs.WC, 1+w)
			for {
				select {
				case <-stop:
					return
				default:
				}
				ctx, cancel := context.WithCancel(context.Background())
				if rng.Intn(2) == 0 {
					d := time.Duration(rng.Intn(200)) * time.Microsecond
					go func() { time.Sleep(d); cancel() }()
				}
				err := a.cq.Wait(ctx)
				cancel()
				if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, verbs.ErrClosed) {
					errc <- fmt.Errorf("waiter %d: %v", w, err)
					return
				}
				if errors.Is(err, verbs.ErrClosed) {
					return
				}
				n, err := a.cq.Poll(wcs)
				if err != nil {
					if !errors.Is(err, verbs.ErrClosed) {
						errc <- fmt.Errorf("waiter %d poll: %v", w, err)
					}
					return
				}
				mu.Lock()
				for _, wc := range wcs[:n] {
					if wc.Status != verbs.Success || wc.Op != verbs.WCRecvRDMAWithImm || !wc.HasImm {
						errc <- fmt.Errorf("completion %+v", wc)
					}
					seen[wc.Imm]++
					if posted < msgs {
						if err := a.qp.PostRecv(&verbs.RecvWR{WRID: uint64(posted)}); err != nil {
							errc <- err
						}
						posted++
					}
				}
				mu.Unlock()
			}
		}()
	}
	// The peer streams writes with immediate, one per receive (credits hold it back).
	for i := range msgs {
		wr := verbs.SendWR{WRID: uint64(i), Op: verbs.OpRDMAWriteWithImm, Imm: uint32(i), Flags: verbs.Signaled,
			Local: src.Bytes()[8*i : 8*i+8], LKey: src.LKey(), Remote: verbs.RemoteAddr{RKey: dst.RKey(), Offset: uint64(8 * i)}}
		for {
			err := b.qp.PostSend(&wr)
			if err == nil {
				break
			}
			if !errors.Is(err, verbs.ErrQueueFull) {
				t.Fatal(err)
			}
			if wc, err := waitWCErr(b.cq); err != nil || wc.Status != verbs.Success {
				t.Fatalf("sender: %+v %v", wc, err)
			}
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		n := len(seen)
		mu.Unlock()
		if n == msgs {
			break
		}
		select {
		case err := <-errc:
			t.Fatal(err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d immediates polled", n, msgs)
		}
		time.Sleep(time.Millisecond)
	}
	close(stop)
	a.cq.Close() // races the waiters, which must all return
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("waiters hang after Close")
	}
	select {
	case err := <-errc:
		t.Fatal(err)
	default:
	}
	for imm, k := range seen {
		if k != 1 || imm >= msgs {
			t.Fatalf("immediate %d polled %d times", imm, k)
		}
	}
	for i := range msgs {
		if binary.LittleEndian.Uint64(dst.Bytes()[8*i:]) != uint64(i)+1 {
			t.Fatalf("write %d did not land", i)
		}
	}
}

// TestStressGarbagePeer connects to a device's listener and sends junk and truncated
// handshakes; each connection must be dropped (counted as a rejection) and the device
// must keep serving its real QP.
func TestStressGarbagePeer(t *testing.T) {
	a, b := pair(t, testCfg(), verbs.QPAttr{})
	addr := a.dev.ln.Addr().String()
	rng := rand.New(rand.NewSource(7))
	junks := [][]byte{nil, {0}, make([]byte, 63), make([]byte, 64), make([]byte, 4096)}
	for i := range junks {
		rng.Read(junks[i])
	}
	for _, j := range junks {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		c.Write(j)
		c.(*net.TCPConn).CloseWrite() // a truncated handshake: the device must not wait 5 s
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		buf := make([]byte, 1024)
		for {
			if _, err := c.Read(buf); err != nil {
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() {
					t.Fatalf("junk of %d bytes: connection not dropped", len(j))
				}
				break
			}
		}
		c.Close()
	}
	waitRejections(t, a.dev, int64(len(junks)))
	// The real QP still works.
	mr := allocMR(t, b, 8)
	binary.LittleEndian.PutUint64(mr.Bytes(), 42)
	got := make([]byte, 8)
	post(t, a.qp, verbs.SendWR{WRID: 1, Op: verbs.OpRDMARead, Flags: verbs.Signaled, Local: got,
		Remote: verbs.RemoteAddr{RKey: mr.RKey()}})
	wantWC(t, waitWC(t, a.cq), 1, verbs.Success, verbs.WCRDMARead)
	if binary.LittleEndian.Uint64(got) != 42 {
		t.Fatalf("read %x", got)
	}
}

// TestStressDeregDuringRDMA: RDMA writes and reads stream at a target MR, four in flight,
// while another goroutine deregisters it and allocates the same bytes again, filled with
// a marker. Every request completes with Success or, from the first refusal on,
// RemAccessErr then WRFlushErr; nothing succeeds after Dereg returned, and the new MR's
// bytes are never touched through the old key.
func TestStressDeregDuringRDMA(t *testing.T) {
	for _, user := range []bool{false, true} {
		t.Run(fmt.Sprintf("user=%v", user), func(t *testing.T) {
			const sz, inflight = 64 << 10, 4
			a, b := pair(t, testCfg(), verbs.QPAttr{MaxSendWR: 16})
			var target verbs.MR
			if user {
				target = regMR(t, b, make([]byte, sz))
			} else {
				target = allocMR(t, b, sz)
			}
			rkey := target.RKey()
			src := allocMR(t, a, sz)
			pattern(src.Bytes(), 5)
			sinks := make([]verbs.MR, inflight)
			for i := range sinks {
				sinks[i] = allocMR(t, a, sz)
			}
			var deregAt atomic.Uint64 // 1 + the number of requests posted when Dereg returned
			var fresh verbs.MR
			done := make(chan struct{})
			go func() {
				defer close(done)
				time.Sleep(2 * time.Millisecond)
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
				deregAt.Store(1)
			}()
			postedAtDereg := -1
			post := func(i int) {
				wr := verbs.SendWR{WRID: uint64(i), Op: verbs.OpRDMAWrite, Flags: verbs.Signaled, Local: src.Bytes(), LKey: src.LKey(),
					Remote: verbs.RemoteAddr{RKey: rkey}}
				if i%2 == 1 {
					s := sinks[i%inflight]
					wr.Op, wr.Local, wr.LKey = verbs.OpRDMARead, s.Bytes(), s.LKey()
				}
				if err := a.qp.PostSend(&wr); err != nil {
					t.Fatal(err)
				}
			}
			posted := 0
			for ; posted < inflight; posted++ {
				post(posted)
			}
			failed := false
			for i := 0; i < posted; i++ {
				if postedAtDereg < 0 && deregAt.Load() != 0 {
					postedAtDereg = posted
				}
				wc := waitWC(t, a.cq)
				switch {
				case wc.WRID != uint64(i):
					t.Fatalf("completion %+v for request %d", wc, i)
				case wc.Status == verbs.Success && (failed || (postedAtDereg >= 0 && i >= postedAtDereg)):
					t.Fatalf("request %d succeeded after Dereg returned (failed before: %v)", i, failed)
				case wc.Status == verbs.Success && i%2 == 1 && string(sinks[i%inflight].Bytes()) != string(src.Bytes()):
					t.Fatalf("read %d returned other bytes", i)
				case wc.Status == verbs.RemAccessErr && !failed:
					failed = true
				case wc.Status == verbs.WRFlushErr && failed:
				case wc.Status != verbs.Success:
					t.Fatalf("request %d: %v (failed before: %v)", i, wc.Status, failed)
				}
				if !failed {
					post(posted)
					posted++
				}
			}
			<-done
			if !failed {
				t.Fatal("no request failed")
			}
			time.Sleep(10 * time.Millisecond) // anything still on the wire reaches b
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
	a, b := pair(t, testCfg(), verbs.QPAttr{})
	for _, c := range cases {
		for _, op := range []verbs.Opcode{verbs.OpAtomicFetchAdd, verbs.OpAtomicCmpSwap} {
			if a.qp.State() == verbs.Err {
				a, b = pair(t, testCfg(), verbs.QPAttr{})
			}
			mr := allocMR(t, b, sz)
			ref := make([]byte, sz)
			pattern(ref, 77)
			binary.LittleEndian.PutUint64(ref[sz-8:], 41)
			copy(mr.Bytes(), ref)
			res := allocMR(t, a, 8)
			binary.LittleEndian.PutUint64(res.Bytes(), 0xdead)
			post(t, a.qp, verbs.SendWR{WRID: 1, Op: op, Flags: verbs.Signaled, Local: res.Bytes(), LKey: res.LKey(),
				Remote: verbs.RemoteAddr{RKey: mr.RKey(), Offset: c.off}, CompareAdd: 41, Swap: 99})
			wantWC(t, waitWC(t, a.cq), 1, c.want, verbs.WCOpcodeOf(op))
			if c.want != verbs.Success {
				if string(mr.Bytes()) != string(ref) || binary.LittleEndian.Uint64(res.Bytes()) != 0xdead {
					t.Fatalf("%v@%d: memory changed by a refused atomic", op, c.off)
				}
				continue
			}
			want := uint64(82)
			if op == verbs.OpAtomicCmpSwap {
				want = 99
			}
			if got := binary.LittleEndian.Uint64(res.Bytes()); got != 41 {
				t.Fatalf("%v@%d: old value %d", op, c.off, got)
			}
			if got := binary.LittleEndian.Uint64(mr.Bytes()[sz-8:]); got != want || string(mr.Bytes()[:sz-8]) != string(ref[:sz-8]) {
				t.Fatalf("%v@%d: target word %d (want %d) or its neighbours changed", op, c.off, got, want)
			}
		}
	}
}

// TestStressZeroLength: zero-length Sends, SendWithImm, writes (with and without
// immediate) and reads at offset 0 and at the MR's end complete with 0 bytes and the
// immediates, and change no memory.
func TestStressZeroLength(t *testing.T) {
	a, b := pair(t, testCfg(), verbs.QPAttr{})
	mr := allocMR(t, b, 32)
	ref := make([]byte, 32)
	pattern(ref, 1)
	copy(mr.Bytes(), ref)
	rbuf := allocMR(t, b, 16)
	copy(rbuf.Bytes(), ref[:16])
	ops := []verbs.Opcode{verbs.OpSend, verbs.OpSendWithImm, verbs.OpRDMAWrite, verbs.OpRDMAWriteWithImm, verbs.OpRDMARead}
	for i, op := range ops {
		for _, off := range []uint64{0, 32} {
			id := uint64(10*i) + off
			if op != verbs.OpRDMAWrite && op != verbs.OpRDMARead {
				postRecv(t, b.qp, verbs.RecvWR{WRID: id, Local: rbuf.Bytes(), LKey: rbuf.LKey()})
			}
			post(t, a.qp, verbs.SendWR{WRID: id, Op: op, Flags: verbs.Signaled, Imm: uint32(id + 7),
				Remote: verbs.RemoteAddr{RKey: mr.RKey(), Offset: off}})
			wc := waitWC(t, a.cq)
			wantWC(t, wc, id, verbs.Success, verbs.WCOpcodeOf(op))
			if wc.ByteLen != 0 {
				t.Fatalf("%v: ByteLen %d", op, wc.ByteLen)
			}
			if op == verbs.OpRDMAWrite || op == verbs.OpRDMARead {
				continue
			}
			rc := waitWC(t, b.cq)
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
	for _, s := range []*side{a, b} {
		if n, _ := s.cq.Poll(make([]verbs.WC, 1)); n != 0 {
			t.Fatal("extra completion")
		}
	}
}
