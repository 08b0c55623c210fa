package verbstest

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/transport/verbs"
)

// testOrdering checks the orderings a reliable-connected QP guarantees.
func testOrdering(t *testing.T, f Factory) {
	e := newEnv(f)
	a, b := e.open(t, "A"), e.open(t, "B")
	t.Run("WritesThenSend", func(t *testing.T) { writesThenNotify(t, e, a, b, verbs.OpSend) })
	t.Run("WritesThenWriteWithImm", func(t *testing.T) { writesThenNotify(t, e, a, b, verbs.OpRDMAWriteWithImm) })
	t.Run("SendsInOrder", func(t *testing.T) { sendsInOrder(t, e, a, b) })
	t.Run("CompletionsInPostOrder", func(t *testing.T) { completionOrder(t, e, a, b) })
}

// writesThenNotify posts many unsignaled RDMA writes and then a notification (a Send or
// a write with immediate) on one QP: when the receiver sees the notification, every
// write must be visible in its memory.
func writesThenNotify(t *testing.T, e *env, a, b *node, notify verbs.Opcode) {
	needCaps(t, verbs.CapRDMAWrite|opCaps[notify], a, b)
	const writes, chunk, rounds = 32, 4 << 10, 20
	x, y := e.link(t, a, b, qpOpts{sendWR: 64})
	src := a.alloc(t, arenaMem, writes*chunk+8, verbs.LocalWrite)
	dst := b.alloc(t, arenaMem, writes*chunk+8, verbs.AccessAll)
	rb := b.alloc(t, arenaMem, 64, verbs.LocalWrite)
	for round := range rounds {
		fill(src.b, uint64(1000+round))
		postRecv(t, y, verbs.RecvWR{WRID: uint64(round), Local: rb.b, LKey: rb.lkey()})
		for i := range writes {
			post(t, x, verbs.SendWR{WRID: 1, Op: verbs.OpRDMAWrite, Local: src.b[i*chunk : (i+1)*chunk],
				LKey: src.lkey(), Remote: verbs.RemoteAddr{RKey: dst.rkey(), Offset: uint64(i * chunk)}})
		}
		wr := verbs.SendWR{WRID: 2, Op: notify, Flags: verbs.Signaled, Imm: uint32(round),
			Local: src.b[writes*chunk:], LKey: src.lkey()}
		if notify == verbs.OpRDMAWriteWithImm {
			wr.Remote = verbs.RemoteAddr{RKey: dst.rkey(), Offset: writes * chunk}
		}
		post(t, x, wr)
		rwc := e.waitOne(t, y.cq)
		if !checkWC(t, fmt.Sprint("round ", round), rwc, verbs.WC{WRID: uint64(round), Status: verbs.Success}, fWRID|fStatus) {
			return
		}
		// The receiver has seen the notification: all writes must be visible now.
		written := writes * chunk
		if notify == verbs.OpRDMAWriteWithImm {
			written += 8
		}
		if !checkBytes(t, fmt.Sprintf("round %d: target memory when the %v arrived", round, notify), dst.b[:written], src.b[:written]) {
			return
		}
		checkWC(t, "notification", e.waitOne(t, x.cq), verbs.WC{WRID: 2, Status: verbs.Success}, fWRID|fStatus)
	}
}

// sendsInOrder sends messages of varied length: they land in the receives in post order.
func sendsInOrder(t *testing.T, e *env, a, b *node) {
	needCaps(t, verbs.CapSend, a, b)
	const msgs, slot = 64, 2048
	x, y := e.link(t, a, b, qpOpts{sendWR: msgs, recvWR: msgs})
	src := a.alloc(t, arenaMem, msgs*slot, verbs.LocalWrite)
	fill(src.b, 31)
	rb := b.alloc(t, arenaMem, msgs*slot, verbs.LocalWrite)
	for i := range msgs {
		postRecv(t, y, verbs.RecvWR{WRID: uint64(100 + i), Local: rb.b[i*slot : (i+1)*slot], LKey: rb.lkey()})
	}
	lens := func(i int) int { return (i*397 + 1) % slot }
	for i := range msgs {
		post(t, x, verbs.SendWR{WRID: uint64(i), Op: verbs.OpSendWithImm, Flags: verbs.Signaled, Imm: uint32(i),
			Local: src.b[i*slot : i*slot+lens(i)], LKey: src.lkey()})
	}
	rwcs := e.wait(t, y.cq, msgs)
	for i, wc := range rwcs {
		checkWC(t, fmt.Sprint("receive ", i), wc, verbs.WC{WRID: uint64(100 + i), Op: verbs.WCRecv,
			QPN: y.qp.Num(), ByteLen: uint32(lens(i)), Imm: uint32(i), HasImm: true}, fBasic|fByteLen|fImm)
		checkBytes(t, fmt.Sprint("message ", i), rb.b[i*slot:i*slot+lens(i)], src.b[i*slot:i*slot+lens(i)])
	}
	for i, wc := range e.wait(t, x.cq, msgs) {
		checkWC(t, fmt.Sprint("send ", i), wc, verbs.WC{WRID: uint64(i), Op: verbs.WCSend, QPN: x.qp.Num()}, fBasic)
	}
}

// completionOrder posts a mix of signaled operations: their completions arrive in post
// order, as on a libibverbs RC send queue.
func completionOrder(t *testing.T, e *env, a, b *node) {
	x, y := e.link(t, a, b, qpOpts{sendWR: 128, recvWR: 128})
	loc := a.alloc(t, arenaMem, 64<<10, verbs.LocalWrite)
	rem := b.alloc(t, arenaMem, 64<<10, verbs.AccessAll)
	rb := b.alloc(t, arenaMem, 128*64, verbs.LocalWrite)
	c := caps(a, b)
	var kinds []verbs.SendWR
	if c.Has(verbs.CapRDMAWrite) {
		kinds = append(kinds, verbs.SendWR{Op: verbs.OpRDMAWrite, Local: loc.b[:16<<10]})
	}
	if c.Has(verbs.CapRDMARead) {
		kinds = append(kinds, verbs.SendWR{Op: verbs.OpRDMARead, Local: loc.b[32<<10 : 48<<10]})
	}
	if c.Has(verbs.CapAtomic) {
		kinds = append(kinds, verbs.SendWR{Op: verbs.OpAtomicFetchAdd, Local: loc.b[60<<10 : 60<<10+8],
			Remote: verbs.RemoteAddr{Offset: 60 << 10}, CompareAdd: 1})
	}
	if c.Has(verbs.CapSend) {
		kinds = append(kinds, verbs.SendWR{Op: verbs.OpSend, Local: loc.b[:64]})
	}
	if len(kinds) == 0 {
		t.Skip("no data-moving capability")
	}
	const total = 120
	recvs := 0
	for i := range total {
		wr := kinds[i%len(kinds)]
		if wr.Op == verbs.OpSend {
			postRecv(t, y, verbs.RecvWR{WRID: uint64(i), Local: rb.b[recvs*64 : (recvs+1)*64], LKey: rb.lkey()})
			recvs++
		}
		wr.WRID, wr.Flags, wr.LKey, wr.Remote.RKey = uint64(i), verbs.Signaled, loc.lkey(), rem.rkey()
		post(t, x, wr)
	}
	for i, wc := range e.wait(t, x.cq, total) {
		want := verbs.WC{WRID: uint64(i), Op: verbs.WCOpcodeOf(kinds[i%len(kinds)].Op), QPN: x.qp.Num()}
		if !checkWC(t, fmt.Sprintf("completion %d of a mixed stream", i), wc, want, fBasic) {
			return
		}
	}
	e.wait(t, y.cq, recvs)
}

// testSharedCQ puts two QPs of a device on one CQ: completions carry the right QP number.
func testSharedCQ(t *testing.T, f Factory) {
	e := newEnv(f)
	a, b := e.open(t, "A"), e.open(t, "B")
	needCaps(t, verbs.CapSend, a, b)
	cq := e.newCQ(t, a, "A.shared")
	src := a.alloc(t, arenaMem, 64, verbs.LocalWrite)
	rb := b.alloc(t, arenaMem, 128, verbs.LocalWrite)
	var xs [2]*end
	for i := range xs {
		qp, err := a.pd.CreateQP(verbs.QPAttr{SendCQ: cq.cq, RecvCQ: cq.cq})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { closeWithin(t, "close QP", ignoreErr(qp.Close)) })
		xs[i] = &end{node: a, cq: cq, qp: qp}
		peer := e.newEnd(t, b, fmt.Sprint("B.qp", i), qpOpts{})
		connect(t, xs[i], peer)
		postRecv(t, peer, verbs.RecvWR{WRID: 1, Local: rb.b[i*64 : (i+1)*64], LKey: rb.lkey()})
	}
	if xs[0].qp.Num() == xs[1].qp.Num() {
		t.Fatalf("two QPs of one device share the number %d", xs[0].qp.Num())
	}
	for i, x := range xs {
		post(t, x, verbs.SendWR{WRID: uint64(10 + i), Op: verbs.OpSend, Flags: verbs.Signaled,
			Local: src.b, LKey: src.lkey()})
	}
	got := map[uint64]uint32{}
	for _, wc := range e.wait(t, cq, 2) {
		got[wc.WRID] = wc.QPN
		if wc.Status != verbs.Success {
			t.Errorf("completion %s", fmtWC(wc))
		}
	}
	for i, x := range xs {
		if got[uint64(10+i)] != x.qp.Num() {
			t.Errorf("completion of wrid %d carries qpn %d, want %d", 10+i, got[uint64(10+i)], x.qp.Num())
		}
	}
}

// testHeldSends posts more Sends than the receiver has receives: they are neither lost nor
// failed but held, and delivered in order as receives are posted.
func testHeldSends(t *testing.T, f Factory) {
	e := newEnv(f)
	a, b := e.open(t, "A"), e.open(t, "B")
	needCaps(t, verbs.CapSend, a, b)
	const msgs, recvWR = 12, 3
	x, y := e.link(t, a, b, qpOpts{sendWR: 32, recvWR: recvWR})
	src := a.alloc(t, arenaMem, msgs*64, verbs.LocalWrite)
	fill(src.b, 41)
	rb := b.alloc(t, arenaMem, msgs*64, verbs.LocalWrite)
	for i := range msgs {
		post(t, x, verbs.SendWR{WRID: uint64(i), Op: verbs.OpSend, Flags: verbs.Signaled,
			Local: src.b[i*64 : (i+1)*64], LKey: src.lkey()})
	}
	e.quiet(t, y.cq, 4*quietPeriod, "receiver without receives")
	for next := 0; next < msgs; next += recvWR {
		for i := next; i < next+recvWR; i++ {
			postRecv(t, y, verbs.RecvWR{WRID: uint64(i), Local: rb.b[i*64 : (i+1)*64], LKey: rb.lkey()})
		}
		for k, wc := range e.wait(t, y.cq, recvWR) {
			i := next + k
			checkWC(t, fmt.Sprint("held message ", i), wc, verbs.WC{WRID: uint64(i), Op: verbs.WCRecv,
				QPN: y.qp.Num(), ByteLen: 64}, fBasic|fByteLen)
		}
	}
	checkBytes(t, "held messages, in order", rb.b, src.b)
	for i, wc := range e.wait(t, x.cq, msgs) {
		checkWC(t, fmt.Sprint("send ", i), wc, verbs.WC{WRID: uint64(i), Op: verbs.WCSend, QPN: x.qp.Num()}, fBasic)
	}
}

// testConcurrentPosters has several goroutines post on one QP and poll its CQ at once.
func testConcurrentPosters(t *testing.T, f Factory) {
	e := newEnv(f)
	a, b := e.open(t, "A"), e.open(t, "B")
	needCaps(t, verbs.CapRDMAWrite, a, b)
	const posters, each, chunk = 4, 200, 256
	x, _ := e.link(t, a, b, qpOpts{sendWR: 32})
	src := a.alloc(t, arenaMem, posters*chunk, verbs.LocalWrite)
	fill(src.b, 51)
	dst := b.alloc(t, arenaMem, posters*each*chunk, verbs.AccessAll)
	var (
		wg   sync.WaitGroup
		errs = make([]error, posters)
	)
	deadline := time.Now().Add(3 * waitTimeout)
	for p := range posters {
		wg.Go(func() {
			for i := 0; i < each; {
				wr := verbs.SendWR{WRID: uint64(p*each + i), Op: verbs.OpRDMAWrite, Flags: verbs.Signaled,
					Local: src.b[p*chunk : (p+1)*chunk], LKey: src.lkey(),
					Remote: verbs.RemoteAddr{RKey: dst.rkey(), Offset: uint64((p*each + i) * chunk)}}
				err := x.qp.PostSend(&wr)
				switch {
				case err == nil:
					i++
				case errors.Is(err, verbs.ErrQueueFull):
					x.cq.pump()
					if time.Now().After(deadline) {
						errs[p] = fmt.Errorf("poster %d: queue still full after %v", p, 3*waitTimeout)
						return
					}
					runtime.Gosched()
				default:
					errs[p] = fmt.Errorf("poster %d: %w", p, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	seen := make(map[uint64]bool)
	for _, wc := range e.wait(t, x.cq, posters*each) {
		if wc.Status != verbs.Success || seen[wc.WRID] {
			t.Fatalf("completion %s (duplicate: %v)", fmtWC(wc), seen[wc.WRID])
		}
		seen[wc.WRID] = true
	}
	for p := range posters {
		for i := range each {
			off := (p*each + i) * chunk
			if !checkBytes(t, fmt.Sprintf("write %d of poster %d", i, p), dst.b[off:off+chunk], src.b[p*chunk:(p+1)*chunk]) {
				return
			}
		}
	}
}
