package verbstest

import (
	"fmt"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/transport/verbs"
)

// localCase is a work request whose local side is wrong.
type localCase struct {
	name string
	op   verbs.Opcode
	// prep returns the Local slice and LKey to use.
	prep func(t *testing.T, a *node) (local []byte, lkey uint64)
}

var localProtCases = []localCase{
	{"LocalOutsideMR/GoMemory", verbs.OpRDMAWrite, func(t *testing.T, a *node) ([]byte, uint64) {
		mr := a.alloc(t, arenaMem, 64, verbs.LocalWrite)
		return make([]byte, 64), mr.lkey()
	}},
	{"LocalOutsideMR/OtherArenaMR", verbs.OpRDMAWrite, func(t *testing.T, a *node) ([]byte, uint64) {
		mr := a.alloc(t, arenaMem, 64, verbs.LocalWrite)
		other := a.alloc(t, arenaMem, 64, verbs.LocalWrite)
		return other.b, mr.lkey()
	}},
	{"LocalOutsideMR/Send", verbs.OpSend, func(t *testing.T, a *node) ([]byte, uint64) {
		mr := a.alloc(t, arenaMem, 64, verbs.LocalWrite)
		return make([]byte, 64), mr.lkey()
	}},
	{"StaleLKey", verbs.OpRDMAWrite, func(t *testing.T, a *node) ([]byte, uint64) {
		mr := a.alloc(t, arenaMem, 64, verbs.LocalWrite)
		b, key := mr.b, mr.lkey()
		deregOK(t, mr)
		return b, key // the bytes stay mapped (lazy unmapping) but the key is dead
	}},
	{"ForgedLKey", verbs.OpRDMAWrite, func(t *testing.T, a *node) ([]byte, uint64) {
		mr := a.alloc(t, arenaMem, 64, verbs.LocalWrite)
		return mr.b, mr.lkey() ^ 1<<63
	}},
	{"ReadIntoMRWithoutLocalWrite", verbs.OpRDMARead, func(t *testing.T, a *node) ([]byte, uint64) {
		mr := a.alloc(t, arenaMem, 64, verbs.RemoteRead)
		return mr.b, mr.lkey()
	}},
	{"AtomicResultIntoMRWithoutLocalWrite", verbs.OpAtomicFetchAdd, func(t *testing.T, a *node) ([]byte, uint64) {
		mr := a.alloc(t, arenaMem, 64, verbs.RemoteRead)
		return mr.b[:8], mr.lkey()
	}},
}

// testLocalProtection checks LocProtErr for a Local that is not inside the MR its LKey names
// (or that MR lacks LocalWrite for an incoming result): the remote side stays untouched and
// the QP goes to Err.
func testLocalProtection(t *testing.T, f Factory) {
	e := newEnv(f)
	a, b := e.open(t, "A"), e.open(t, "B")
	for _, c := range localProtCases {
		t.Run(c.name, func(t *testing.T) {
			needCaps(t, opCaps[c.op], a, b)
			x, y := e.link(t, a, b, qpOpts{})
			rem := b.alloc(t, arenaMem, 64, verbs.AccessAll)
			fill(rem.b, 81)
			before := clone(rem.b)
			if c.op == verbs.OpSend {
				postRecv(t, y, verbs.RecvWR{WRID: 5, Local: rem.b, LKey: rem.lkey()})
			}
			local, lkey := c.prep(t, a)
			post(t, x, verbs.SendWR{WRID: 1, Op: c.op, Flags: verbs.Signaled, Local: local, LKey: lkey,
				Remote: verbs.RemoteAddr{RKey: rem.rkey()}, CompareAdd: 1})
			checkWC(t, c.name, e.waitOne(t, x.cq),
				verbs.WC{WRID: 1, Status: verbs.LocProtErr, Op: verbs.WCOpcodeOf(c.op), QPN: x.qp.Num()}, fBasic)
			afterError(t, e, x, rem, c.name)
			checkBytes(t, c.name+": remote memory", rem.b, before)
		})
	}
}

// testSendUnregistered posts a non-empty Send with LKey 0, which the verbs doc forbids
// (Sends require a registered Local unless it is empty): PostSend returns ErrInvalid or
// the request completes with LocProtErr. Nothing arrives at the receiver.
func testSendUnregistered(t *testing.T, f Factory) {
	e := newEnv(f)
	a, b := e.open(t, "A"), e.open(t, "B")
	needCaps(t, verbs.CapSend, a, b)
	x, y := e.link(t, a, b, qpOpts{})
	rb := b.alloc(t, arenaMem, 64, verbs.LocalWrite)
	postRecv(t, y, verbs.RecvWR{WRID: 1, Local: rb.b, LKey: rb.lkey()})
	wr := verbs.SendWR{WRID: 2, Op: verbs.OpSend, Flags: verbs.Signaled, Local: make([]byte, 32)}
	if err := x.qp.PostSend(&wr); err != nil {
		wantCallErr(t, "unregistered Send", err, verbs.ErrInvalid)
		return
	}
	checkWC(t, "unregistered Send", e.waitOne(t, x.cq), verbs.WC{WRID: 2, Status: verbs.LocProtErr, Op: verbs.WCSend, QPN: x.qp.Num()}, fBasic)
	noDelivery(t, e, y, "receiver of a refused Send")
}

// noDelivery fails t if y receives a message within quietPeriod. Flushed receives are
// allowed: a provider may move the peer of a failed QP to Err as well.
func noDelivery(t *testing.T, e *env, y *end, why string) {
	t.Helper()
	deadline := time.Now().Add(quietPeriod)
	for time.Now().Before(deadline) {
		e.pumpAll()
		time.Sleep(time.Millisecond)
	}
	for _, wc := range y.cq.take(y.cq.count()) {
		if wc.Status == verbs.Success {
			t.Errorf("%s: a message arrived: %s", why, fmtWC(wc))
		} else {
			t.Logf("%s: %s (the provider failed the peer too)", why, fmtWC(wc))
		}
	}
}

// testRecvProtection posts receives whose buffer is outside the LKey's MR or lacks
// LocalWrite: PostRecv returns ErrInvalid, or the receive completes with LocProtErr when a
// Send arrives, and the bytes stay untouched.
func testRecvProtection(t *testing.T, f Factory) {
	e := newEnv(f)
	a, b := e.open(t, "A"), e.open(t, "B")
	needCaps(t, verbs.CapSend, a, b)
	cases := []struct {
		name string
		prep func(t *testing.T) ([]byte, uint64)
	}{
		{"OutsideMR", func(t *testing.T) ([]byte, uint64) {
			return make([]byte, 64), b.alloc(t, arenaMem, 64, verbs.LocalWrite).lkey()
		}},
		{"WithoutLocalWrite", func(t *testing.T) ([]byte, uint64) {
			mr := b.alloc(t, arenaMem, 64, verbs.RemoteRead)
			return mr.b, mr.lkey()
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			x, y := e.link(t, a, b, qpOpts{})
			local, lkey := c.prep(t)
			fill(local, 82)
			before := clone(local)
			wr := verbs.RecvWR{WRID: 3, Local: local, LKey: lkey}
			if err := y.qp.PostRecv(&wr); err != nil {
				wantCallErr(t, "PostRecv", err, verbs.ErrInvalid)
				return
			}
			src := a.alloc(t, arenaMem, 64, verbs.LocalWrite)
			post(t, x, verbs.SendWR{WRID: 4, Op: verbs.OpSend, Flags: verbs.Signaled, Local: src.b, LKey: src.lkey()})
			checkWC(t, c.name, e.waitOne(t, y.cq), verbs.WC{WRID: 3, Status: verbs.LocProtErr, Op: verbs.WCRecv,
				QPN: y.qp.Num()}, fBasic)
			wantState(t, "receiver after LocProtErr", y.qp, verbs.Err)
			checkBytes(t, "refused receive buffer", local, before)
			e.waitOne(t, x.cq) // the sender's request completes too, with some status
		})
	}
}

// testLocLen sends a message larger than the posted receive: the receive completes with
// LocLenErr, bytes past the receive buffer stay untouched, the receiver's QP goes to Err
// (later receives flush) and the sender's request completes (with any status).
func testLocLen(t *testing.T, f Factory) {
	e := newEnv(f)
	a, b := e.open(t, "A"), e.open(t, "B")
	needCaps(t, verbs.CapSend, a, b)
	x, y := e.link(t, a, b, qpOpts{})
	rb := b.alloc(t, arenaMem, 128, verbs.LocalWrite)
	fill(rb.b, 83)
	before := clone(rb.b)
	postRecv(t, y, verbs.RecvWR{WRID: 1, Local: rb.b[:16], LKey: rb.lkey()})
	src := a.alloc(t, arenaMem, 64, verbs.LocalWrite)
	fill(src.b, 84)
	post(t, x, verbs.SendWR{WRID: 2, Op: verbs.OpSend, Flags: verbs.Signaled, Local: src.b, LKey: src.lkey()})
	checkWC(t, "receive of 16 bytes for a 64-byte message", e.waitOne(t, y.cq),
		verbs.WC{WRID: 1, Status: verbs.LocLenErr, Op: verbs.WCRecv, QPN: y.qp.Num()}, fBasic)
	checkBytes(t, "bytes after the too-small receive buffer", rb.b[16:], before[16:])
	wantState(t, "receiver after LocLenErr", y.qp, verbs.Err)
	postRecv(t, y, verbs.RecvWR{WRID: 3, Local: rb.b[:16], LKey: rb.lkey()})
	checkWC(t, "receive posted after LocLenErr", e.waitOne(t, y.cq),
		verbs.WC{WRID: 3, Status: verbs.WRFlushErr, Op: verbs.WCRecv, QPN: y.qp.Num()}, fBasic)
	wc := e.waitOne(t, x.cq)
	t.Logf("sender's completion for a message its peer could not take: %s", fmtWC(wc))
}

// testInvalidRequests checks call errors for malformed requests: ErrInvalid, returned at
// once, with the QP still in RTS and usable afterwards.
func testInvalidRequests(t *testing.T, f Factory) {
	e := newEnv(f)
	a, b := e.open(t, "A"), e.open(t, "B")
	x, _ := e.link(t, a, b, qpOpts{})
	loc := a.alloc(t, arenaMem, 64, verbs.LocalWrite)
	rem := b.alloc(t, arenaMem, 64, verbs.AccessAll)
	var wrs []verbs.SendWR
	if caps(a, b).Has(verbs.CapAtomic) {
		for _, op := range []verbs.Opcode{verbs.OpAtomicFetchAdd, verbs.OpAtomicCmpSwap} {
			for _, n := range []int{0, 4, 16} {
				wrs = append(wrs, verbs.SendWR{Op: op, Local: loc.b[:n]})
			}
		}
	}
	wrs = append(wrs, verbs.SendWR{Op: verbs.Opcode(99), Local: loc.b[:8]})
	for i, wr := range wrs {
		wr.WRID, wr.Flags, wr.LKey, wr.Remote.RKey = uint64(i), verbs.Signaled, loc.lkey(), rem.rkey()
		what := fmt.Sprintf("%v with a %d-byte Local", wr.Op, len(wr.Local))
		var err error
		if p := catch(func() { err = x.qp.PostSend(&wr) }); p != nil {
			t.Errorf("%s panicked: %v", what, p)
			continue
		}
		wantCallErr(t, what, err, verbs.ErrInvalid)
	}
	e.quiet(t, x.cq, quietPeriod, "refused requests")
	wantState(t, "after refused requests", x.qp, verbs.RTS)
	if caps(a, b).Has(verbs.CapRDMAWrite) {
		post(t, x, writeWR(100, verbs.Signaled, loc, rem, 0, 8))
		checkWC(t, "write after refused requests", e.waitOne(t, x.cq), verbs.WC{WRID: 100, Status: verbs.Success}, fWRID|fStatus)
	}
}
