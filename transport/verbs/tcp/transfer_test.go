package tcp

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/transport/verbs"
)

// memKind is where a test buffer lives.
type memKind int

const (
	arenaMem memKind = iota // PD.AllocMR
	userMem                 // PD.RegMR of a Go slice
	unregMem                // a Go slice, LKey 0 (local side of RDMA only)
)

func (k memKind) String() string { return [...]string{"arena", "user", "unreg"}[k] }

// buf is a test buffer: its bytes and key (0 for unregistered memory).
type buf struct {
	b   []byte
	key uint64
}

func newBuf(t testing.TB, s *side, k memKind, n int) buf {
	t.Helper()
	switch k {
	case arenaMem:
		mr := allocMR(t, s, n)
		return buf{mr.Bytes(), mr.LKey()}
	case userMem:
		mr := regMR(t, s, make([]byte, n))
		return buf{mr.Bytes(), mr.LKey()}
	}
	return buf{make([]byte, n), 0}
}

var sizes = []int{0, 1, 8, 4096, 1 << 20}

// TestRDMAWriteRead writes and reads every size, at offset 0 and at an unaligned offset,
// between every kind of local and remote memory, and checks the bytes and canaries.
func TestRDMAWriteRead(t *testing.T) {
	a, b := pair(t, testCfg(), verbs.QPAttr{})
	const pad = 64
	for _, lk := range []memKind{arenaMem, userMem, unregMem} {
		for _, rk := range []memKind{arenaMem, userMem} {
			for _, n := range sizes {
				for _, off := range []int{0, 3} {
					name := fmt.Sprintf("%v-to-%v/%dB@%d", lk, rk, n, off)
					t.Run(name, func(t *testing.T) {
						loc := newBuf(t, a, lk, n+pad)
						rem := newBuf(t, b, rk, n+2*pad)
						pattern(loc.b, 1)
						pattern(rem.b, 99)
						want := bytes.Clone(rem.b)
						copy(want[pad+off:], loc.b[off:off+n])
						post(t, a.qp, verbs.SendWR{WRID: 1, Op: verbs.OpRDMAWrite, Flags: verbs.Signaled,
							Local: loc.b[off : off+n], LKey: loc.key, Remote: verbs.RemoteAddr{RKey: rem.key, Offset: uint64(pad + off)}})
						wc := waitWC(t, a.cq)
						wantWC(t, wc, 1, verbs.Success, verbs.WCRDMAWrite)
						if int(wc.ByteLen) != n {
							t.Errorf("write ByteLen %d, want %d", wc.ByteLen, n)
						}
						if !bytes.Equal(rem.b, want) {
							t.Fatalf("target after write differs (canaries included)")
						}
						pattern(rem.b[pad+off:pad+off+n], 55)
						sink := bytes.Clone(loc.b)
						post(t, a.qp, verbs.SendWR{WRID: 2, Op: verbs.OpRDMARead, Flags: verbs.Signaled,
							Local: loc.b[off : off+n], LKey: loc.key, Remote: verbs.RemoteAddr{RKey: rem.key, Offset: uint64(pad + off)}})
						wantWC(t, waitWC(t, a.cq), 2, verbs.Success, verbs.WCRDMARead)
						copy(sink[off:], rem.b[pad+off:pad+off+n])
						if !bytes.Equal(loc.b, sink) {
							t.Fatalf("local after read differs (canaries included)")
						}
					})
				}
			}
		}
	}
}

// TestSendRecv sends every size, with and without immediate data, and RDMA writes with
// immediate, and checks order, bytes, lengths and the immediates.
func TestSendRecv(t *testing.T) {
	a, b := pair(t, testCfg(), verbs.QPAttr{})
	src := newBuf(t, a, arenaMem, 1<<20)
	pattern(src.b, 7)
	var wrid uint64
	for _, n := range sizes {
		for _, imm := range []bool{false, true} {
			dst := newBuf(t, b, userMem, n+8)
			pattern(dst.b, 200)
			wrid++
			postRecv(t, b.qp, verbs.RecvWR{WRID: wrid, Local: dst.b[:n+4], LKey: dst.key})
			op := verbs.OpSend
			if imm {
				op = verbs.OpSendWithImm
			}
			post(t, a.qp, verbs.SendWR{WRID: wrid, Op: op, Flags: verbs.Signaled, Local: src.b[:n], LKey: src.key, Imm: uint32(n) + 77})
			wantWC(t, waitWC(t, a.cq), wrid, verbs.Success, verbs.WCSend)
			wc := waitWC(t, b.cq)
			wantWC(t, wc, wrid, verbs.Success, verbs.WCRecv)
			if int(wc.ByteLen) != n || wc.HasImm != imm || (imm && wc.Imm != uint32(n)+77) {
				t.Fatalf("%v of %d bytes: receive completion %+v", op, n, wc)
			}
			if !bytes.Equal(dst.b[:n], src.b[:n]) || dst.b[n+4] != 200+byte((n+4)*7) {
				t.Fatalf("%v of %d bytes: receive buffer differs or overrun", op, n)
			}
		}
	}
	// RDMA write with immediate: consumes a receive, lands the data.
	dst := newBuf(t, b, arenaMem, 4096)
	postRecv(t, b.qp, verbs.RecvWR{WRID: 500})
	post(t, a.qp, verbs.SendWR{WRID: 501, Op: verbs.OpRDMAWriteWithImm, Flags: verbs.Signaled, Local: src.b[:100],
		LKey: src.key, Remote: verbs.RemoteAddr{RKey: dst.key, Offset: 10}, Imm: 0xabcdef})
	wantWC(t, waitWC(t, a.cq), 501, verbs.Success, verbs.WCRDMAWrite)
	wc := waitWC(t, b.cq)
	wantWC(t, wc, 500, verbs.Success, verbs.WCRecvRDMAWithImm)
	if !wc.HasImm || wc.Imm != 0xabcdef || wc.ByteLen != 100 || !bytes.Equal(dst.b[10:110], src.b[:100]) {
		t.Fatalf("write with immediate: %+v", wc)
	}
}

// TestAtomics runs fetch-add and compare-swap (hit and miss) on arena and user memory.
func TestAtomics(t *testing.T) {
	a, b := pair(t, testCfg(), verbs.QPAttr{})
	for _, rk := range []memKind{arenaMem, userMem} {
		t.Run(rk.String(), func(t *testing.T) {
			rem := newBuf(t, b, rk, 64)
			loc := newBuf(t, a, arenaMem, 8)
			word := rem.b[16:24]
			binary.NativeEndian.PutUint64(word, 40)
			do := func(op verbs.Opcode, cmpAdd, swap, wantOld, wantNow uint64) {
				t.Helper()
				post(t, a.qp, verbs.SendWR{WRID: 9, Op: op, Flags: verbs.Signaled, Local: loc.b, LKey: loc.key,
					Remote: verbs.RemoteAddr{RKey: rem.key, Offset: 16}, CompareAdd: cmpAdd, Swap: swap})
				wc := waitWC(t, a.cq)
				wantWC(t, wc, 9, verbs.Success, verbs.WCOpcodeOf(op))
				if old := binary.NativeEndian.Uint64(loc.b); old != wantOld || wc.ByteLen != 8 {
					t.Fatalf("%v: old %d (ByteLen %d), want %d", op, old, wc.ByteLen, wantOld)
				}
				if now := binary.NativeEndian.Uint64(word); now != wantNow {
					t.Fatalf("%v: target %d, want %d", op, now, wantNow)
				}
			}
			do(verbs.OpAtomicFetchAdd, 2, 0, 40, 42)
			do(verbs.OpAtomicCmpSwap, 42, 7, 42, 7) // hit
			do(verbs.OpAtomicCmpSwap, 42, 9, 7, 7)  // miss
			do(verbs.OpAtomicFetchAdd, ^uint64(0), 0, 7, 6)
		})
	}
}

// TestOnRemoteAtomic: the target device's Config.OnRemoteAtomic runs after each remote
// atomic it served, with the MR's key and the word's offset, once the word holds its new
// value; an atomic refused for its key does not call it.
func TestOnRemoteAtomic(t *testing.T) {
	type call struct{ key, off, now uint64 }
	calls := make(chan call, 8)
	var word atomic.Pointer[[]byte] // set before the first atomic; read by the reader goroutine
	tcfg := testCfg()
	tcfg.OnRemoteAtomic = func(key, off uint64) {
		calls <- call{key, off, binary.NativeEndian.Uint64(*word.Load())}
	}
	a := newSide(t, openDev(t, testCfg()), verbs.QPAttr{})
	b := newSide(t, openDev(t, tcfg), verbs.QPAttr{})
	connect(t, a, b)
	rem := newBuf(t, b, arenaMem, 64)
	w := rem.b[24:32]
	word.Store(&w)
	loc := newBuf(t, a, arenaMem, 8)
	do := func(op verbs.Opcode, key, cmpAdd uint64, st verbs.Status) {
		t.Helper()
		post(t, a.qp, verbs.SendWR{WRID: 3, Op: op, Flags: verbs.Signaled, Local: loc.b, LKey: loc.key,
			Remote: verbs.RemoteAddr{RKey: key, Offset: 24}, CompareAdd: cmpAdd, Swap: 9})
		if wc := waitWC(t, a.cq); wc.Status != st {
			t.Fatalf("%v: %+v, want %v", op, wc, st)
		}
	}
	do(verbs.OpAtomicFetchAdd, rem.key, 5, verbs.Success)
	do(verbs.OpAtomicCmpSwap, rem.key, 5, verbs.Success) // hit: 5 -> 9
	for _, want := range []uint64{5, 9} {
		select {
		case c := <-calls:
			if c.key != rem.key || c.off != 24 || c.now != want {
				t.Fatalf("hook got key %#x offset %d word %d, want %#x 24 %d", c.key, c.off, c.now, rem.key, want)
			}
		case <-time.After(testbudget.Scale(10 * time.Second)):
			t.Fatal("OnRemoteAtomic not called")
		}
	}
	do(verbs.OpAtomicFetchAdd, rem.key^1<<40, 1, verbs.RemAccessErr) // a forged key; the QP is in Err after it
	select {
	case c := <-calls:
		t.Fatalf("hook called for a refused atomic: %+v", c)
	case <-time.After(50 * time.Millisecond):
	}
}

// TestConcurrentFetchAdd races remote fetch-adds from two devices with local atomic adds
// on the same word: no increment is lost.
func TestConcurrentFetchAdd(t *testing.T) {
	tgt := newSide(t, openDev(t, testCfg()), verbs.QPAttr{})
	word := newBuf(t, tgt, arenaMem, 8)
	const per = 300
	done := make(chan error, 3)
	for i := range 2 {
		peer := newSide(t, openDev(t, testCfg()), verbs.QPAttr{})
		me := newSide(t, tgt.dev, verbs.QPAttr{})
		connect(t, peer, me)
		go func() {
			loc := newBuf(t, peer, arenaMem, 8)
			for range per {
				wr := verbs.SendWR{Op: verbs.OpAtomicFetchAdd, Flags: verbs.Signaled, Local: loc.b, LKey: loc.key,
					Remote: verbs.RemoteAddr{RKey: word.key}, CompareAdd: 1}
				if err := peer.qp.PostSend(&wr); err != nil {
					done <- err
					return
				}
				if wc, err := waitWCErr(peer.cq); err != nil || wc.Status != verbs.Success {
					done <- fmt.Errorf("peer %d: %+v %v", i, wc, err)
					return
				}
			}
			done <- nil
		}()
	}
	go func() {
		p := (*uint64)(unsafePointer(word.b))
		for range per {
			dmaAdd64(p, 1)
		}
		done <- nil
	}()
	for range 3 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if got := binary.NativeEndian.Uint64(word.b); got != 3*per {
		t.Fatalf("word %d after %d increments", got, 3*per)
	}
}
