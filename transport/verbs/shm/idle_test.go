package shm

import (
	"context"
	"os"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/gorma-hpc/gorma/transport/verbs"
)

// resident reports whether the page holding b[0] is in memory (mincore). The rings live
// in memfd arenas, so a page that nobody wrote or read is absent.
func resident(t *testing.T, b []byte) bool {
	t.Helper()
	pg := uintptr(os.Getpagesize())
	addr := uintptr(unsafe.Pointer(&b[0])) &^ (pg - 1)
	vec := []byte{0}
	if _, _, errno := unix.Syscall(unix.SYS_MINCORE, addr, pg, uintptr(unsafe.Pointer(&vec[0]))); errno != 0 {
		t.Fatalf("mincore: %v", errno)
	}
	return vec[0]&1 != 0
}

// TestIdleRingUntouched: a connected QP whose peer never sends has its inbound ring's
// data read by no poll and no wait, so none of its pages is faulted in (ring.ready,
// started), Wait's included; the first record makes the receiver read it.
func TestIdleRingUntouched(t *testing.T) {
	for _, mode := range []verbs.WaitMode{verbs.WaitSpin, verbs.WaitBlock} {
		a, b := pair(t, verbs.Config{Wait: mode}, verbs.QPAttr{})
		dst := b.allocMR(t, 8, verbs.LocalWrite)
		b.recv(t, verbs.RecvWR{WRID: 1, Local: dst.Bytes(), LKey: dst.LKey()})
		data := b.qp.(*qp).rx.data
		if !b.qp.(*qp).rxRegs[1].Zero {
			t.Skip("the ring's data reused arena memory: its pages are resident anyway")
		}
		for range 1000 {
			b.none(t)
			a.none(t)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		if err := b.cq.Wait(ctx); err == nil {
			t.Fatalf("mode %v: Wait returned with nothing sent", mode)
		}
		cancel()
		if resident(t, data) {
			t.Fatalf("mode %v: the idle ring's first page is resident after 2000 polls", mode)
		}
		src := a.allocMR(t, 8, 0)
		a.post(t, verbs.SendWR{WRID: 2, Op: verbs.OpSend, Local: src.Bytes(), LKey: src.LKey()})
		wc := b.next(t, a)
		wantWC(t, wc, 1, verbs.Success, verbs.WCRecv)
		if !resident(t, data) {
			t.Fatalf("mode %v: the ring's first page is absent after a record", mode)
		}
	}
}
