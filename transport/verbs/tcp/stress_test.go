package tcp

import (
	"encoding/binary"
	"errors"
	"math/rand"
	"net"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/transport/verbs"
)

// Adversarial tests of what only tcp has: its listener, fed garbage. The provider-agnostic
// stress tests (flushed writes, shared CQ depth, concurrent posters, role hand-off under
// cancellation, Dereg during RDMA, atomic edges, zero length) run as the conformance
// suite's Stress cases (verbstest, stress*.go), with the hook below.

// CQHeld reports how many completions cq holds that Poll has not returned, and whether
// it has overrun (dropped one). It is verbstest.Factory.CQHeld for the conformance suite
// (conformance_test.go): nothing in the verbs API tells.
func CQHeld(c verbs.CQ) (held int, overrun bool) {
	q := c.(*cq)
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.n, q.overrun
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
		c.SetReadDeadline(time.Now().Add(testbudget.Scale(10 * time.Second)))
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
