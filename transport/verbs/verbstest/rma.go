package verbstest

import (
	"fmt"
	"testing"

	"github.com/gorma-hpc/gorma/transport/verbs"
)

// sizeClass is a transfer length and the (deliberately unaligned) offset it is placed at,
// both in the local buffer and in the remote MR or receive buffer.
type sizeClass struct {
	name string
	n    int
	off  int
}

var sizeClasses = []sizeClass{
	{"0B", 0, 0},
	{"1B", 1, 0},
	{"8B", 8, 0},
	{"4KiB", 4 << 10, 0},
	{"1MiB", 1 << 20, 0},
	{"4093B@3", 4093, 3},
}

// pad is the canary margin kept after every transfer's target range.
const pad = 64

// opCaps are the capabilities each data-moving opcode needs.
var opCaps = map[verbs.Opcode]verbs.Caps{
	verbs.OpSend:             verbs.CapSend,
	verbs.OpSendWithImm:      verbs.CapSend,
	verbs.OpRDMAWrite:        verbs.CapRDMAWrite,
	verbs.OpRDMAWriteWithImm: verbs.CapRDMAWrite,
	verbs.OpRDMARead:         verbs.CapRDMARead,
	verbs.OpAtomicFetchAdd:   verbs.CapAtomic,
	verbs.OpAtomicCmpSwap:    verbs.CapAtomic,
}

// testTransfer runs every data-moving opcode for every size class, with the remote side in
// arena and in user memory and the local side in arena, user and unregistered memory.
// Data are checked byte for byte, including the canary bytes around the target range.
func testTransfer(t *testing.T, f Factory) {
	e := newEnv(f)
	a, b := e.open(t, "A"), e.open(t, "B")
	ops := []verbs.Opcode{verbs.OpRDMAWrite, verbs.OpRDMAWriteWithImm, verbs.OpRDMARead,
		verbs.OpSend, verbs.OpSendWithImm}
	for _, op := range ops {
		t.Run(op.String(), func(t *testing.T) {
			needCaps(t, opCaps[op], a, b)
			for _, remote := range []memKind{arenaMem, userMem} {
				for _, local := range []memKind{arenaMem, userMem, unregMem} {
					for _, sc := range sizeClasses {
						if isSendOp(op) && local == unregMem && sc.n > 0 {
							continue // verbs doc: Sends require a registered Local unless it is empty
						}
						name := fmt.Sprintf("%s/%s-to-%s", sc.name, local, remote)
						t.Run(name, func(t *testing.T) { transferOnce(t, e, a, b, op, sc, local, remote) })
					}
				}
			}
		})
	}
}

func isSendOp(op verbs.Opcode) bool { return op == verbs.OpSend || op == verbs.OpSendWithImm }

func transferOnce(t *testing.T, e *env, a, b *node, op verbs.Opcode, sc sizeClass, local, remote memKind) {
	if !isSendOp(op) && remote == userMem {
		needCaps(t, verbs.CapUserMemRDMA, a, b)
	}
	x, y := e.link(t, a, b, qpOpts{})
	switch op {
	case verbs.OpRDMAWrite, verbs.OpRDMAWriteWithImm:
		rdmaWriteOnce(t, e, x, y, op, sc, local, remote)
	case verbs.OpRDMARead:
		rdmaReadOnce(t, e, x, y, sc, local, remote)
	default:
		sendOnce(t, e, x, y, op, sc, local, remote)
	}
}

func rdmaWriteOnce(t *testing.T, e *env, x, y *end, op verbs.Opcode, sc sizeClass, local, remote memKind) {
	size := sc.off + sc.n + pad
	src := x.node.alloc(t, local, size, verbs.LocalWrite)
	fill(src.b, 1)
	dst := y.node.alloc(t, remote, size, verbs.LocalWrite|verbs.RemoteWrite)
	fill(dst.b, 2)
	before := clone(dst.b)
	const imm = 0xC0FFEE
	var rbuf *buffer
	if op == verbs.OpRDMAWriteWithImm {
		rbuf = y.node.alloc(t, arenaMem, 64, verbs.LocalWrite)
		postRecv(t, y, verbs.RecvWR{WRID: 77, Local: rbuf.b, LKey: rbuf.lkey()})
	}
	post(t, x, verbs.SendWR{WRID: 1, Op: op, Flags: verbs.Signaled, Imm: imm,
		Local: src.b[sc.off : sc.off+sc.n], LKey: src.lkey(),
		Remote: verbs.RemoteAddr{RKey: dst.rkey(), Offset: uint64(sc.off)}})
	wc := e.waitOne(t, x.cq)
	checkWC(t, "initiator", wc, verbs.WC{WRID: 1, Op: verbs.WCRDMAWrite, QPN: x.qp.Num()}, fBasic)
	if rbuf != nil {
		rwc := e.waitOne(t, y.cq)
		checkWC(t, "target receive", rwc, verbs.WC{WRID: 77, Op: verbs.WCRecvRDMAWithImm, QPN: y.qp.Num(),
			ByteLen: uint32(sc.n), Imm: imm, HasImm: true}, fBasic|fByteLen|fImm)
	}
	checkBytes(t, "target MR after RDMA write", dst.b, overlay(before, sc.off, src.b[sc.off:sc.off+sc.n]))
}

func rdmaReadOnce(t *testing.T, e *env, x, y *end, sc sizeClass, local, remote memKind) {
	size := sc.off + sc.n + pad
	src := y.node.alloc(t, remote, size, verbs.LocalWrite|verbs.RemoteRead)
	fill(src.b, 3)
	srcBefore := clone(src.b)
	dst := x.node.alloc(t, local, size, verbs.LocalWrite)
	fill(dst.b, 4)
	dstBefore := clone(dst.b)
	post(t, x, verbs.SendWR{WRID: 2, Op: verbs.OpRDMARead, Flags: verbs.Signaled,
		Local: dst.b[sc.off : sc.off+sc.n], LKey: dst.lkey(),
		Remote: verbs.RemoteAddr{RKey: src.rkey(), Offset: uint64(sc.off)}})
	wc := e.waitOne(t, x.cq)
	checkWC(t, "initiator", wc, verbs.WC{WRID: 2, Op: verbs.WCRDMARead, QPN: x.qp.Num()}, fBasic)
	checkBytes(t, "local buffer after RDMA read", dst.b, overlay(dstBefore, sc.off, srcBefore[sc.off:sc.off+sc.n]))
	checkBytes(t, "remote MR after RDMA read (must be unchanged)", src.b, srcBefore)
}

func sendOnce(t *testing.T, e *env, x, y *end, op verbs.Opcode, sc sizeClass, local, remote memKind) {
	size := sc.off + sc.n + pad
	src := x.node.alloc(t, local, size, verbs.LocalWrite)
	fill(src.b, 5)
	rb := y.node.alloc(t, remote, size, verbs.LocalWrite)
	fill(rb.b, 6)
	before := clone(rb.b)
	recvEnd := sc.off + sc.n + pad/2 // the receive buffer is larger than the message
	postRecv(t, y, verbs.RecvWR{WRID: 9, Local: rb.b[sc.off:recvEnd], LKey: rb.lkey()})
	const imm = 0xFEED
	post(t, x, verbs.SendWR{WRID: 3, Op: op, Flags: verbs.Signaled, Imm: imm,
		Local: src.b[sc.off : sc.off+sc.n], LKey: src.lkey()})
	rwc := e.waitOne(t, y.cq)
	want := verbs.WC{WRID: 9, Op: verbs.WCRecv, QPN: y.qp.Num(), ByteLen: uint32(sc.n)}
	if op == verbs.OpSendWithImm {
		want.Imm, want.HasImm = imm, true
	}
	checkWC(t, "receiver", rwc, want, fBasic|fByteLen|fImm)
	wc := e.waitOne(t, x.cq)
	checkWC(t, "sender", wc, verbs.WC{WRID: 3, Op: verbs.WCSend, QPN: x.qp.Num()}, fBasic)
	got := rb.b[sc.off : sc.off+sc.n]
	checkBytes(t, "received message", got, src.b[sc.off:sc.off+sc.n])
	checkBytes(t, "receive MR before the receive buffer", rb.b[:sc.off], before[:sc.off])
	checkBytes(t, "receive MR after the receive buffer", rb.b[recvEnd:], before[recvEnd:])
}

// testByteLen checks WC.ByteLen of initiator completions, which the verbs doc defines as the
// bytes transferred (libibverbs leaves it undefined there, so it has a case of its own).
func testByteLen(t *testing.T, f Factory) {
	e := newEnv(f)
	a, b := e.open(t, "A"), e.open(t, "B")
	const n = 1000
	cases := []struct {
		op   verbs.Opcode
		want verbs.WCOpcode
		n    int
	}{
		{verbs.OpSend, verbs.WCSend, n},
		{verbs.OpRDMAWrite, verbs.WCRDMAWrite, n},
		{verbs.OpRDMARead, verbs.WCRDMARead, n},
		{verbs.OpAtomicFetchAdd, verbs.WCFetchAdd, 8},
		{verbs.OpAtomicCmpSwap, verbs.WCCmpSwap, 8},
	}
	for _, c := range cases {
		t.Run(c.op.String(), func(t *testing.T) {
			needCaps(t, opCaps[c.op], a, b)
			x, y := e.link(t, a, b, qpOpts{})
			loc := a.alloc(t, arenaMem, n, verbs.LocalWrite)
			rem := b.alloc(t, arenaMem, n, verbs.AccessAll)
			if c.op == verbs.OpSend {
				postRecv(t, y, verbs.RecvWR{WRID: 1, Local: rem.b, LKey: rem.lkey()})
			}
			post(t, x, verbs.SendWR{WRID: 5, Op: c.op, Flags: verbs.Signaled, Local: loc.b[:c.n],
				LKey: loc.lkey(), Remote: verbs.RemoteAddr{RKey: rem.rkey()}})
			wc := e.waitOne(t, x.cq)
			checkWC(t, c.op.String(), wc, verbs.WC{WRID: 5, Op: c.want, QPN: x.qp.Num(), ByteLen: uint32(c.n)},
				fBasic|fByteLen)
		})
	}
}

// testLoopback connects two QPs of one device and moves data between them.
func testLoopback(t *testing.T, f Factory) {
	e := newEnv(f)
	a := e.open(t, "A")
	needCaps(t, verbs.CapRDMAWrite|verbs.CapSend, a)
	x, y := e.link(t, a, a, qpOpts{})
	mr := a.alloc(t, arenaMem, 8192, verbs.AccessAll)
	want := patterned(4096, 11)
	copy(mr.b, want)
	post(t, x, verbs.SendWR{WRID: 1, Op: verbs.OpRDMAWrite, Flags: verbs.Signaled, Local: mr.b[:4096],
		LKey: mr.lkey(), Remote: verbs.RemoteAddr{RKey: mr.rkey(), Offset: 4096}})
	checkWC(t, "loopback write", e.waitOne(t, x.cq), verbs.WC{WRID: 1, Op: verbs.WCRDMAWrite, QPN: x.qp.Num()}, fBasic)
	checkBytes(t, "loopback write target", mr.b[4096:], want)
	rb := a.alloc(t, arenaMem, 64, verbs.LocalWrite)
	postRecv(t, y, verbs.RecvWR{WRID: 2, Local: rb.b, LKey: rb.lkey()})
	post(t, x, verbs.SendWR{WRID: 3, Op: verbs.OpSend, Flags: verbs.Signaled, Local: mr.b[:64], LKey: mr.lkey()})
	checkWC(t, "loopback receive", e.waitOne(t, y.cq), verbs.WC{WRID: 2, Op: verbs.WCRecv, QPN: y.qp.Num(), ByteLen: 64},
		fBasic|fByteLen)
	checkBytes(t, "loopback message", rb.b, want[:64])
}

// testPassiveTarget checks that RDMA reads, writes and atomics complete while the target
// never polls its CQ nor calls the provider (DESIGN.md: passive-target operations complete
// while the target computes without calling the runtime).
func testPassiveTarget(t *testing.T, f Factory) {
	e := newEnv(f)
	a, b := e.open(t, "A"), e.open(t, "B")
	x, _ := e.link(t, a, b, qpOpts{})
	loc := a.alloc(t, arenaMem, 4096, verbs.LocalWrite)
	rem := b.alloc(t, arenaMem, 4096, verbs.AccessAll)
	fill(loc.b, 12)
	steps := []struct {
		op   verbs.Opcode
		need verbs.Caps
		wr   verbs.SendWR
	}{
		{verbs.OpRDMAWrite, verbs.CapRDMAWrite, verbs.SendWR{Local: loc.b[:1024]}},
		{verbs.OpRDMARead, verbs.CapRDMARead, verbs.SendWR{Local: loc.b[2048:3072]}},
		{verbs.OpAtomicFetchAdd, verbs.CapAtomic, verbs.SendWR{Local: loc.b[3072:3080], CompareAdd: 1,
			Remote: verbs.RemoteAddr{Offset: 2048}}},
	}
	for i, s := range steps {
		if !caps(a, b).Has(s.need) {
			continue
		}
		wr := s.wr
		wr.WRID, wr.Op, wr.Flags, wr.LKey, wr.Remote.RKey = uint64(i+1), s.op, verbs.Signaled, loc.lkey(), rem.rkey()
		post(t, x, wr)
		wcs, err := e.collect(x.cq, 1, false, waitTimeout)
		if err != nil {
			t.Fatalf("%v with a target that never polls: %v", s.op, err)
		}
		checkWC(t, s.op.String(), wcs[0], verbs.WC{WRID: wr.WRID, Op: verbs.WCOpcodeOf(s.op), QPN: x.qp.Num()}, fBasic)
	}
	if caps(a, b).Has(verbs.CapRDMAWrite | verbs.CapRDMARead) {
		checkBytes(t, "written then read back", loc.b[2048:3072], rem.b[:1024])
		checkBytes(t, "target memory", rem.b[:1024], loc.b[:1024])
	}
}

// testWRReuse posts one SendWR value twice, changed in between: providers copy what they
// need during PostSend and never retain the *SendWR.
func testWRReuse(t *testing.T, f Factory) {
	e := newEnv(f)
	a, b := e.open(t, "A"), e.open(t, "B")
	needCaps(t, verbs.CapRDMAWrite, a, b)
	x, _ := e.link(t, a, b, qpOpts{})
	loc := a.alloc(t, arenaMem, 2048, verbs.LocalWrite)
	fill(loc.b, 13)
	rem := b.alloc(t, arenaMem, 2048, verbs.AccessAll)
	wr := &verbs.SendWR{WRID: 1, Op: verbs.OpRDMAWrite, Flags: verbs.Signaled, Local: loc.b[:1024],
		LKey: loc.lkey(), Remote: verbs.RemoteAddr{RKey: rem.rkey(), Offset: 0}}
	if err := x.qp.PostSend(wr); err != nil {
		t.Fatal(err)
	}
	wr.WRID, wr.Local, wr.Remote.Offset = 2, loc.b[1024:], 1024
	if err := x.qp.PostSend(wr); err != nil {
		t.Fatal(err)
	}
	*wr = verbs.SendWR{WRID: 999, Op: verbs.OpRDMARead} // scribble over it
	wcs := e.wait(t, x.cq, 2)
	for i, wc := range wcs {
		checkWC(t, fmt.Sprint("write ", i), wc, verbs.WC{WRID: uint64(i + 1), Op: verbs.WCRDMAWrite, QPN: x.qp.Num()}, fBasic)
	}
	checkBytes(t, "target after two writes from one reused SendWR", rem.b, loc.b)
}

// testFence checks the Fence flag: a fenced write waits for an earlier RDMA read on the QP,
// so the read returns the value from before the write.
func testFence(t *testing.T, f Factory) {
	e := newEnv(f)
	a, b := e.open(t, "A"), e.open(t, "B")
	needCaps(t, verbs.CapRDMAWrite|verbs.CapRDMARead, a, b)
	x, _ := e.link(t, a, b, qpOpts{})
	const n = 64 << 10
	loc := a.alloc(t, arenaMem, 2*n, verbs.LocalWrite)
	rem := b.alloc(t, arenaMem, n, verbs.AccessAll)
	for round := range 20 {
		old := patterned(n, uint64(100+round))
		copy(rem.b, old)
		fill(loc.b[n:], uint64(200+round))
		post(t, x, verbs.SendWR{WRID: 1, Op: verbs.OpRDMARead, Flags: verbs.Signaled, Local: loc.b[:n],
			LKey: loc.lkey(), Remote: verbs.RemoteAddr{RKey: rem.rkey()}})
		post(t, x, verbs.SendWR{WRID: 2, Op: verbs.OpRDMAWrite, Flags: verbs.Signaled | verbs.Fence,
			Local: loc.b[n:], LKey: loc.lkey(), Remote: verbs.RemoteAddr{RKey: rem.rkey()}})
		wcs := e.wait(t, x.cq, 2)
		for i, wc := range wcs {
			checkWC(t, "fence round", wc, verbs.WC{WRID: uint64(i + 1), Status: verbs.Success}, fWRID|fStatus)
		}
		if !checkBytes(t, fmt.Sprintf("round %d: read before a fenced write", round), loc.b[:n], old) {
			return
		}
		if !checkBytes(t, fmt.Sprintf("round %d: fenced write", round), rem.b, loc.b[n:]) {
			return
		}
	}
}
