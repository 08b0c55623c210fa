package verbstest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/transport/verbs"
)

// edgeMR is the size of AtomicEdges' target MR.
const edgeMR = 64

// atomicEdges are atomic target offsets in an edgeMR-byte MR and the status each must
// get. Out of range wins over misaligned (edgeMR-7).
var atomicEdges = []struct {
	off  uint64
	want verbs.Status
}{
	{edgeMR - 8, verbs.Success}, {edgeMR - 7, verbs.RemAccessErr}, {edgeMR, verbs.RemAccessErr},
	{1 << 63, verbs.RemAccessErr}, {edgeMR - 12, verbs.RemInvReqErr}, {3, verbs.RemInvReqErr},
}

// stressAtomicEdges: atomics on the last 8 bytes of an MR work; one byte further, beyond
// the end, or misaligned, they fail (RemAccessErr, RemInvReqErr) and change neither the
// target MR nor the local result buffer.
func stressAtomicEdges(t *testing.T, f Factory) {
	const sz = edgeMR
	e := newEnv(f)
	a, b := e.open(t, "A"), e.open(t, "B")
	needCaps(t, verbs.CapAtomic, a, b)
	for _, c := range atomicEdges {
		for _, op := range []verbs.Opcode{verbs.OpAtomicFetchAdd, verbs.OpAtomicCmpSwap} {
			t.Run(fmt.Sprintf("%v@%d", op, c.off), func(t *testing.T) {
				x, _ := e.link(t, a, b, qpOpts{})
				mr := b.alloc(t, arenaMem, sz, verbs.AccessAll)
				ref := patterned(sz, 77)
				put64(ref[sz-8:], 41)
				copy(mr.b, ref)
				res := a.alloc(t, arenaMem, 8, verbs.AccessAll)
				put64(res.b, 0xdead)
				post(t, x, verbs.SendWR{WRID: 1, Op: op, Flags: verbs.Signaled, Local: res.b, LKey: res.lkey(),
					Remote: verbs.RemoteAddr{RKey: mr.rkey(), Offset: c.off}, CompareAdd: 41, Swap: 99})
				wc := e.waitOne(t, x.cq)
				if !checkWC(t, "atomic", wc, verbs.WC{WRID: 1, Status: c.want, Op: verbs.WCOpcodeOf(op), QPN: x.qp.Num()}, fBasic) {
					t.FailNow()
				}
				if c.want != verbs.Success {
					checkBytes(t, "target MR after a refused atomic", mr.b, ref)
					if got := get64(res.b); got != 0xdead {
						t.Errorf("result buffer %#x after a refused atomic, want 0xdead", got)
					}
					return
				}
				if got := get64(res.b); got != 41 {
					t.Errorf("old value %d, want 41", got)
				}
				want := uint64(82)
				if op == verbs.OpAtomicCmpSwap {
					want = 99
				}
				if got := get64(mr.b[sz-8:]); got != want {
					t.Errorf("target word %d, want %d", got, want)
				}
				checkBytes(t, "target MR before the last word", mr.b[:sz-8], ref[:sz-8])
			})
		}
	}
}

// stressZeroLength: zero-length Send, SendWithImm, RDMAWrite, RDMAWriteWithImm and
// RDMARead, at offset 0 and at the MR's end, from no buffer at all, complete with 0 bytes.
// The receives report 0 bytes and the immediates. No byte of the target or the receive
// buffer changes, and nothing else completes.
func stressZeroLength(t *testing.T, f Factory) {
	e := newEnv(f)
	a, b := e.open(t, "A"), e.open(t, "B")
	needCaps(t, verbs.CapSend|verbs.CapRDMAWrite|verbs.CapRDMARead, a, b)
	x, y := e.link(t, a, b, qpOpts{})
	mr := b.alloc(t, arenaMem, 32, verbs.AccessAll)
	ref := patterned(32, 1)
	copy(mr.b, ref)
	rbuf := b.alloc(t, arenaMem, 16, verbs.AccessAll)
	copy(rbuf.b, ref[:16])
	ops := []verbs.Opcode{verbs.OpSend, verbs.OpSendWithImm, verbs.OpRDMAWrite, verbs.OpRDMAWriteWithImm, verbs.OpRDMARead}
	for i, op := range ops {
		for _, off := range []uint64{0, 32} {
			id := uint64(10*i) + off
			what := fmt.Sprintf("zero-length %v at offset %d", op, off)
			if op != verbs.OpRDMAWrite && op != verbs.OpRDMARead {
				postRecv(t, y, verbs.RecvWR{WRID: id, Local: rbuf.b, LKey: rbuf.lkey()})
			}
			post(t, x, verbs.SendWR{WRID: id, Op: op, Flags: verbs.Signaled, Imm: uint32(id + 7),
				Remote: verbs.RemoteAddr{RKey: mr.rkey(), Offset: off}})
			wc := e.waitOne(t, x.cq)
			if !checkWC(t, what, wc, verbs.WC{WRID: id, Op: verbs.WCOpcodeOf(op), QPN: x.qp.Num()}, fBasic|fByteLen) {
				t.FailNow()
			}
			if op == verbs.OpRDMAWrite || op == verbs.OpRDMARead {
				continue
			}
			want := verbs.WC{WRID: id, Op: verbs.WCRecv, QPN: y.qp.Num(), HasImm: op != verbs.OpSend, Imm: uint32(id + 7)}
			if op == verbs.OpRDMAWriteWithImm {
				want.Op = verbs.WCRecvRDMAWithImm
			}
			if !checkWC(t, what+": receive", e.waitOne(t, y.cq), want, fBasic|fByteLen|fImm) {
				t.FailNow()
			}
		}
	}
	checkBytes(t, "target MR after zero-length operations", mr.b, ref)
	checkBytes(t, "receive buffer after zero-length messages", rbuf.b, ref[:16])
	e.quiet(t, x.cq, time.Millisecond, "initiator after zero-length operations")
	e.quiet(t, y.cq, time.Millisecond, "target after zero-length operations")
}

// stressStatesOutOfOrder: every out-of-order transition and post returns ErrQPState (junk
// endpoint bytes ErrBadEndpoint) and leaves the QP in its state; in Err, posts are
// accepted and flushed exactly once each, signaled or not; after Close, PostSend returns
// ErrClosed.
func stressStatesOutOfOrder(t *testing.T, f Factory) {
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	e := newEnv(f)
	a, b := e.open(t, "A"), e.open(t, "B")
	peer := e.newEnd(t, b, "B.qp", qpOpts{})
	s := e.newEnd(t, a, "A.qp", qpOpts{})
	q := e.newEnd(t, a, "A.qp-in-reset", qpOpts{}).qp
	for _, z := range []*end{peer, s} {
		if err := z.qp.ToInit(); err != nil {
			t.Fatalf("%s: ToInit: %v", z.cq.name, err)
		}
	}
	want := func(what string, err, sentinel error, qp verbs.QP, state verbs.QPState) {
		t.Helper()
		if !errors.Is(err, sentinel) || qp.State() != state {
			t.Fatalf("%s: %v, state %v; want %v and %v", what, err, qp.State(), sentinel, state)
		}
	}
	want("Reset→RTS", q.ToRTS(ctx), verbs.ErrQPState, q, verbs.Reset)
	want("Reset→RTR", q.ToRTR(ctx, peer.qp.Endpoint()), verbs.ErrQPState, q, verbs.Reset)
	want("PostSend in Reset", q.PostSend(&verbs.SendWR{Op: verbs.OpRDMAWrite}), verbs.ErrQPState, q, verbs.Reset)
	want("PostRecv in Reset", q.PostRecv(&verbs.RecvWR{}), verbs.ErrQPState, q, verbs.Reset)
	want("Init→Init", s.qp.ToInit(), verbs.ErrQPState, s.qp, verbs.Init)
	want("Init→RTS", s.qp.ToRTS(ctx), verbs.ErrQPState, s.qp, verbs.Init)
	want("PostSend in Init", s.qp.PostSend(&verbs.SendWR{Op: verbs.OpRDMAWrite}), verbs.ErrQPState, s.qp, verbs.Init)
	want("ToRTR(junk)", s.qp.ToRTR(ctx, []byte("junk")), verbs.ErrBadEndpoint, s.qp, verbs.Init)
	// Both sides connect at once: a network provider's ToRTS may wait for the peer.
	errc := make(chan error, 1)
	go func() { errc <- verbs.Connect(ctx, peer.qp, s.qp.Endpoint()) }()
	if err := verbs.Connect(ctx, s.qp, peer.qp.Endpoint()); err != nil {
		t.Fatalf("Connect after a refused ToRTR: %v", err)
	}
	if err := <-errc; err != nil {
		t.Fatalf("peer's Connect: %v", err)
	}
	want("RTS→RTR", s.qp.ToRTR(ctx, peer.qp.Endpoint()), verbs.ErrQPState, s.qp, verbs.RTS)
	want("RTS→Init", s.qp.ToInit(), verbs.ErrQPState, s.qp, verbs.RTS)
	if err := s.qp.ToErr(); err != nil {
		t.Fatalf("ToErr from RTS: %v", err)
	}
	want("Err→Init", s.qp.ToInit(), verbs.ErrQPState, s.qp, verbs.Err)
	want("Err→RTS", s.qp.ToRTS(ctx), verbs.ErrQPState, s.qp, verbs.Err)
	// In Err, posts are accepted and flushed, exactly once each.
	post(t, s, verbs.SendWR{WRID: 5, Op: verbs.OpRDMAWrite})
	postRecv(t, s, verbs.RecvWR{WRID: 6})
	wcs := e.wait(t, s.cq, 2)
	checkWC(t, "unsignaled send posted in Err", wcs[0], verbs.WC{WRID: 5, Status: verbs.WRFlushErr, Op: verbs.WCRDMAWrite}, fWRID|fStatus|fOp)
	checkWC(t, "receive posted in Err", wcs[1], verbs.WC{WRID: 6, Status: verbs.WRFlushErr, Op: verbs.WCRecv}, fWRID|fStatus|fOp)
	e.quiet(t, s.cq, time.Millisecond, "after the two flushes")
	if err := s.qp.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := s.qp.PostSend(&verbs.SendWR{Op: verbs.OpRDMAWrite}); !errors.Is(err, verbs.ErrClosed) {
		t.Fatalf("PostSend after Close: %v, want ErrClosed", err)
	}
}
