package shm

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"testing"

	"github.com/gorma-hpc/gorma/transport/verbs"
)

func TestRegistered(t *testing.T) {
	p, ok := verbs.Lookup(Name)
	if !ok {
		t.Fatal("shm not registered")
	}
	want := verbs.CapSend | verbs.CapRDMAWrite | verbs.CapRDMARead | verbs.CapAtomic |
		verbs.CapUserMemRDMA | verbs.CapSameHost | verbs.CapZeroCopy | verbs.CapMap |
		verbs.CapCMA | verbs.CapLocalRTS
	if p.Caps() != want {
		t.Fatalf("caps %v, want %v", p.Caps(), want)
	}
}

func TestRDMAWriteRead(t *testing.T) {
	a, b := pair(t, verbs.Config{}, verbs.QPAttr{})
	const size = 1<<20 + 64
	target := b.allocMR(t, size, verbs.RemoteRead|verbs.RemoteWrite)
	local := a.allocMR(t, size, verbs.LocalWrite)
	for _, n := range []int{0, 1, 8, 4096, 1 << 20} {
		for _, off := range []int{0, 3} {
			t.Run(fmt.Sprintf("%dB+%d", n, off), func(t *testing.T) {
				src := pattern(n, byte(n+off))
				copy(local.Bytes()[off:], src)
				a.post(t, verbs.SendWR{WRID: 1, Op: verbs.OpRDMAWrite, Flags: verbs.Signaled,
					Local: local.Bytes()[off : off+n], LKey: local.LKey(),
					Remote: verbs.RemoteAddr{RKey: target.RKey(), Offset: uint64(off + 5)}})
				wc := a.next(t)
				wantWC(t, wc, 1, verbs.Success, verbs.WCRDMAWrite)
				if int(wc.ByteLen) != n {
					t.Fatalf("ByteLen %d, want %d", wc.ByteLen, n)
				}
				if !bytes.Equal(target.Bytes()[off+5:off+5+n], src) {
					t.Fatal("target bytes differ after write")
				}
				// Read it back into unregistered Go memory.
				back := make([]byte, n)
				a.post(t, verbs.SendWR{WRID: 2, Op: verbs.OpRDMARead, Flags: verbs.Signaled,
					Local: back, Remote: verbs.RemoteAddr{RKey: target.RKey(), Offset: uint64(off + 5)}})
				wantWC(t, a.next(t), 2, verbs.Success, verbs.WCRDMARead)
				if !bytes.Equal(back, src) {
					t.Fatal("read bytes differ")
				}
			})
		}
	}
	b.none(t) // the target saw nothing
}

func TestAtomics(t *testing.T) {
	a, b := pair(t, verbs.Config{}, verbs.QPAttr{})
	target := b.allocMR(t, 64, verbs.RemoteAtomic|verbs.RemoteRead)
	binary.LittleEndian.PutUint64(target.Bytes()[8:], 40)
	res := make([]byte, 8)
	a.post(t, verbs.SendWR{WRID: 1, Op: verbs.OpAtomicFetchAdd, Flags: verbs.Signaled, Local: res,
		Remote: verbs.RemoteAddr{RKey: target.RKey(), Offset: 8}, CompareAdd: 2})
	wantWC(t, a.next(t), 1, verbs.Success, verbs.WCFetchAdd)
	if got := binary.LittleEndian.Uint64(res); got != 40 {
		t.Fatalf("fetch-add returned %d, want 40", got)
	}
	a.post(t, verbs.SendWR{WRID: 2, Op: verbs.OpAtomicCmpSwap, Flags: verbs.Signaled, Local: res,
		Remote: verbs.RemoteAddr{RKey: target.RKey(), Offset: 8}, CompareAdd: 1, Swap: 7})
	wantWC(t, a.next(t), 2, verbs.Success, verbs.WCCmpSwap)
	if got := binary.LittleEndian.Uint64(res); got != 42 {
		t.Fatalf("failed cmp-swap returned %d, want 42", got)
	}
	a.post(t, verbs.SendWR{WRID: 3, Op: verbs.OpAtomicCmpSwap, Flags: verbs.Signaled, Local: res,
		Remote: verbs.RemoteAddr{RKey: target.RKey(), Offset: 8}, CompareAdd: 42, Swap: 7})
	wantWC(t, a.next(t), 3, verbs.Success, verbs.WCCmpSwap)
	if got, now := binary.LittleEndian.Uint64(res), binary.LittleEndian.Uint64(target.Bytes()[8:]); got != 42 || now != 7 {
		t.Fatalf("cmp-swap returned %d and left %d, want 42 and 7", got, now)
	}
	// A result buffer of the wrong size is refused at post.
	err := a.qp.PostSend(&verbs.SendWR{Op: verbs.OpAtomicFetchAdd, Local: make([]byte, 4),
		Remote: verbs.RemoteAddr{RKey: target.RKey()}})
	if !errors.Is(err, verbs.ErrInvalid) {
		t.Fatalf("4-byte atomic result: %v, want ErrInvalid", err)
	}
	// Misaligned: RemInvReqErr, then the QP is in Err.
	a.post(t, verbs.SendWR{WRID: 4, Op: verbs.OpAtomicFetchAdd, Flags: verbs.Signaled, Local: res,
		Remote: verbs.RemoteAddr{RKey: target.RKey(), Offset: 4}, CompareAdd: 1})
	wantWC(t, a.next(t), 4, verbs.RemInvReqErr, verbs.WCFetchAdd)
	if s := a.qp.State(); s != verbs.Err {
		t.Fatalf("state %v after error, want Err", s)
	}
	a.post(t, verbs.SendWR{WRID: 5, Op: verbs.OpRDMAWrite, Local: res,
		Remote: verbs.RemoteAddr{RKey: target.RKey()}})
	wantWC(t, a.next(t), 5, verbs.WRFlushErr, verbs.WCRDMAWrite)
}

func TestAtomicConcurrent(t *testing.T) {
	a, b := pair(t, verbs.Config{}, verbs.QPAttr{})
	c := openSide(t, verbs.Config{}, verbs.QPAttr{})
	target := b.allocMR(t, 8, verbs.RemoteAtomic)
	// A second connection to b, from c.
	bq, err := b.pd.CreateQP(verbs.QPAttr{SendCQ: b.cq, RecvCQ: b.cq})
	if err != nil {
		t.Fatal(err)
	}
	bq.ToInit()
	if err := verbs.Connect(t.Context(), c.qp, bq.Endpoint()); err != nil {
		t.Fatal(err)
	}
	if err := verbs.Connect(t.Context(), bq, c.qp.Endpoint()); err != nil {
		t.Fatal(err)
	}
	const n = 2000
	done := make(chan struct{})
	for _, s := range []*side{a, c} {
		go func() {
			defer func() { done <- struct{}{} }()
			res := make([]byte, 8)
			for i := range n {
				wr := verbs.SendWR{WRID: uint64(i), Op: verbs.OpAtomicFetchAdd, Flags: verbs.Signaled, Local: res,
					Remote: verbs.RemoteAddr{RKey: target.RKey()}, CompareAdd: 1}
				if err := s.qp.PostSend(&wr); err != nil {
					t.Error(err)
					return
				}
				wc := make([]verbs.WC, 1)
				for {
					if k, _ := s.cq.Poll(wc); k == 1 {
						break
					}
				}
				if wc[0].Status != verbs.Success {
					t.Errorf("fetch-add: %v", wc[0].Status)
					return
				}
			}
		}()
	}
	<-done
	<-done
	if got := binary.LittleEndian.Uint64(target.Bytes()); got != 2*n {
		t.Fatalf("counter %d, want %d", got, 2*n)
	}
}

func TestStaleKey(t *testing.T) {
	a, b := pair(t, verbs.Config{}, verbs.QPAttr{})
	old := b.allocMR(t, 4096, verbs.RemoteWrite|verbs.RemoteRead)
	oldKey := old.RKey()
	if err := old.Dereg(); err != nil {
		t.Fatal(err)
	}
	fresh := b.allocMR(t, 4096, verbs.RemoteWrite|verbs.RemoteRead)
	copy(fresh.Bytes(), pattern(4096, 9))
	before := append([]byte(nil), fresh.Bytes()...)
	a.post(t, verbs.SendWR{WRID: 1, Op: verbs.OpRDMAWrite, Flags: verbs.Signaled, Local: make([]byte, 64),
		Remote: verbs.RemoteAddr{RKey: oldKey}})
	wantWC(t, a.next(t), 1, verbs.RemAccessErr, verbs.WCRDMAWrite)
	if !bytes.Equal(fresh.Bytes(), before) {
		t.Fatal("stale key wrote into reused memory")
	}
	if st := b.dev.Stats(); st.KeyRejections == 0 {
		t.Fatal("rejection not counted")
	}
	a.post(t, verbs.SendWR{WRID: 2, Op: verbs.OpRDMAWrite, Flags: verbs.Signaled, Local: make([]byte, 64),
		Remote: verbs.RemoteAddr{RKey: fresh.RKey()}})
	wantWC(t, a.next(t), 2, verbs.WRFlushErr, verbs.WCRDMAWrite)
	// As in InfiniBand, the target's QP is not told; it learns from its next request.
	b.cq.Poll(nil)
	if s := b.qp.State(); s != verbs.RTS {
		t.Fatalf("peer state %v, want RTS", s)
	}
	b.post(t, verbs.SendWR{WRID: 3, Op: verbs.OpRDMAWrite, Flags: verbs.Signaled})
	wantWC(t, b.next(t), 3, verbs.RetryExcErr, verbs.WCRDMAWrite)
}

func TestRemoteBounds(t *testing.T) {
	cases := []struct {
		name string
		off  uint64
		n    int
		acc  verbs.Access
		op   verbs.Opcode
	}{
		{"past end", 4090, 8, verbs.RemoteWrite, verbs.OpRDMAWrite},
		{"huge offset", 1 << 63, 8, verbs.RemoteWrite, verbs.OpRDMAWrite},
		{"no write right", 0, 8, verbs.RemoteRead, verbs.OpRDMAWrite},
		{"no read right", 0, 8, verbs.RemoteWrite, verbs.OpRDMARead},
		{"no atomic right", 0, 8, verbs.RemoteWrite, verbs.OpAtomicFetchAdd},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a, b := pair(t, verbs.Config{}, verbs.QPAttr{})
			m := b.allocMR(t, 4096, c.acc)
			a.post(t, verbs.SendWR{WRID: 7, Op: c.op, Flags: verbs.Signaled, Local: make([]byte, c.n),
				Remote: verbs.RemoteAddr{RKey: m.RKey(), Offset: c.off}})
			wantWC(t, a.next(t), 7, verbs.RemAccessErr, verbs.WCOpcodeOf(c.op))
			if !bytes.Equal(m.Bytes(), make([]byte, 4096)) {
				t.Fatal("refused access changed target memory")
			}
		})
	}
}

func TestLocalProtection(t *testing.T) {
	a, b := pair(t, verbs.Config{}, verbs.QPAttr{})
	target := b.allocMR(t, 64, verbs.RemoteRead|verbs.RemoteWrite)
	ro := a.allocMR(t, 64, 0)
	other := a.allocMR(t, 64, verbs.LocalWrite)
	cases := []struct {
		name  string
		op    verbs.Opcode
		local []byte
		lkey  uint64
	}{
		{"read into MR without LocalWrite", verbs.OpRDMARead, ro.Bytes()[:8], ro.LKey()},
		{"write from outside the MR", verbs.OpRDMAWrite, make([]byte, 8), other.LKey()},
		{"unknown lkey", verbs.OpRDMAWrite, other.Bytes()[:8], other.LKey() + 1},
		{"send of unregistered memory", verbs.OpSend, make([]byte, 8), 0},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if i > 0 {
				a, b = pair(t, verbs.Config{}, verbs.QPAttr{})
				target = b.allocMR(t, 64, verbs.RemoteRead|verbs.RemoteWrite)
			}
			a.post(t, verbs.SendWR{WRID: 3, Op: c.op, Flags: verbs.Signaled, Local: c.local, LKey: c.lkey,
				Remote: verbs.RemoteAddr{RKey: target.RKey()}})
			wantWC(t, a.next(t), 3, verbs.LocProtErr, verbs.WCOpcodeOf(c.op))
		})
	}
}

func TestUserMemory(t *testing.T) {
	a, b := pair(t, verbs.Config{}, verbs.QPAttr{})
	if _, err := b.pd.RegMR(make([]byte, 8), verbs.RemoteAtomic); !errors.Is(err, verbs.ErrUnsupported) {
		t.Fatalf("RegMR with RemoteAtomic: %v, want ErrUnsupported", err)
	}
	buf := make([]byte, 100000)
	m, err := b.pd.RegMR(buf, verbs.RemoteRead|verbs.RemoteWrite)
	if err != nil {
		t.Fatal(err)
	}
	src := pattern(50000, 3)
	a.post(t, verbs.SendWR{WRID: 1, Op: verbs.OpRDMAWrite, Flags: verbs.Signaled, Local: src,
		Remote: verbs.RemoteAddr{RKey: m.RKey(), Offset: 1001}})
	wantWC(t, a.next(t), 1, verbs.Success, verbs.WCRDMAWrite)
	if !bytes.Equal(buf[1001:51001], src) {
		t.Fatal("write to user memory did not land")
	}
	back := make([]byte, 50000)
	a.post(t, verbs.SendWR{WRID: 2, Op: verbs.OpRDMARead, Flags: verbs.Signaled, Local: back,
		Remote: verbs.RemoteAddr{RKey: m.RKey(), Offset: 1001}})
	wantWC(t, a.next(t), 2, verbs.Success, verbs.WCRDMARead)
	if !bytes.Equal(back, src) {
		t.Fatal("read from user memory differs")
	}
	// Atomics on user memory fail (the key lacks RemoteAtomic).
	a.post(t, verbs.SendWR{WRID: 3, Op: verbs.OpAtomicFetchAdd, Flags: verbs.Signaled, Local: make([]byte, 8),
		Remote: verbs.RemoteAddr{RKey: m.RKey()}})
	wantWC(t, a.next(t), 3, verbs.RemAccessErr, verbs.WCFetchAdd)
	if err := m.Dereg(); err != nil {
		t.Fatal(err)
	}
	if err := m.Dereg(); !errors.Is(err, verbs.ErrClosed) {
		t.Fatalf("second Dereg: %v", err)
	}
}

func TestQueueFull(t *testing.T) {
	a, b := pair(t, verbs.Config{}, verbs.QPAttr{MaxSendWR: 4, MaxRecvWR: 2})
	target := b.allocMR(t, 64, verbs.RemoteWrite)
	wr := verbs.SendWR{Op: verbs.OpRDMAWrite, Local: make([]byte, 8), Remote: verbs.RemoteAddr{RKey: target.RKey()}}
	for i := range 3 {
		wr.WRID = uint64(i)
		a.post(t, wr) // unsignaled: hold their slots
	}
	wr.WRID, wr.Flags = 3, verbs.Signaled
	a.post(t, wr)
	if err := a.qp.PostSend(&wr); !errors.Is(err, verbs.ErrQueueFull) {
		t.Fatalf("fifth post: %v, want ErrQueueFull", err)
	}
	wantWC(t, a.next(t), 3, verbs.Success, verbs.WCRDMAWrite)
	for i := range 4 { // the signaled completion released all four slots
		wr.WRID = uint64(10 + i)
		a.post(t, wr)
	}
	// Receives.
	for i := range 2 {
		b.recv(t, verbs.RecvWR{WRID: uint64(i)})
	}
	if err := b.qp.PostRecv(&verbs.RecvWR{}); !errors.Is(err, verbs.ErrQueueFull) {
		t.Fatalf("third receive: %v, want ErrQueueFull", err)
	}
}

func TestCQOverflow(t *testing.T) {
	// A CQ of depth 2 under a QP that may have 8 requests outstanding: no completion is
	// lost and order is kept.
	a := openSide(t, verbs.Config{}, verbs.QPAttr{})
	b := openSide(t, verbs.Config{}, verbs.QPAttr{})
	cq, err := a.dev.CreateCQ(2)
	if err != nil {
		t.Fatal(err)
	}
	qa, _ := a.pd.CreateQP(verbs.QPAttr{SendCQ: cq, RecvCQ: cq, MaxSendWR: 8})
	qa.ToInit()
	if err := verbs.Connect(t.Context(), qa, b.qp.Endpoint()); err != nil {
		t.Fatal(err)
	}
	verbs.Connect(t.Context(), b.qp, qa.Endpoint())
	target := b.allocMR(t, 64, verbs.RemoteWrite)
	wcs := make([]verbs.WC, 3)
	var ids []uint64
	for round := range 3 {
		for i := range 5 {
			wr := verbs.SendWR{WRID: uint64(10*round + i), Op: verbs.OpRDMAWrite, Flags: verbs.Signaled, Local: []byte{byte(i)},
				Remote: verbs.RemoteAddr{RKey: target.RKey(), Offset: uint64(i)}}
			if err := qa.PostSend(&wr); err != nil {
				t.Fatal(err)
			}
		}
		for len(ids) < 5*(round+1) {
			n, _ := cq.Poll(wcs)
			for _, wc := range wcs[:n] {
				if wc.Status != verbs.Success {
					t.Fatal(wc.Status)
				}
				ids = append(ids, wc.WRID)
			}
		}
	}
	if fmt.Sprint(ids) != "[0 1 2 3 4 10 11 12 13 14 20 21 22 23 24]" {
		t.Fatalf("completion order %v", ids)
	}
}
