package verbstest

import (
	"bytes"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/transport/verbs"
)

// Stress cases (Stress/...): adversarial runs of the verbs API that each provider once
// carried a copy of in its stress_test.go. Error runs among unsignaled requests, Dereg
// racing remote access (this file). Atomics at the edges of an MR, zero-length operations
// and QP transitions out of order (stress_ops.go). CQs filled to exactly their depth and
// beyond, concurrent posters under back-pressure, and waiters cancelled and closed under
// a stream of completions (stress_cq.go).

func testStress(t *testing.T, f Factory) {
	t.Run("FlushedWritesDoNotLand", func(t *testing.T) { stressFlushedWritesDoNotLand(t, f) })
	t.Run("SharedCQDepth", func(t *testing.T) { stressSharedCQDepth(t, f) })
	t.Run("ConcurrentPosters", func(t *testing.T) { stressConcurrentPosters(t, f) })
	t.Run("RoleHandoffCancel", func(t *testing.T) { stressRoleHandoffCancel(t, f) })
	t.Run("DeregDuringRDMA", func(t *testing.T) { stressDeregDuringRDMA(t, f) })
	t.Run("AtomicEdges", func(t *testing.T) { stressAtomicEdges(t, f) })
	t.Run("ZeroLength", func(t *testing.T) { stressZeroLength(t, f) })
	t.Run("StatesOutOfOrder", func(t *testing.T) { stressStatesOutOfOrder(t, f) })
}

// stressFlushedWritesDoNotLand posts a run of unsignaled RDMA writes with a forged key in
// the middle, back to back, so that on a network provider the later writes are on the
// wire before the target's refusal comes back (tcp's target once let them land). The
// verbs doc says a WRFlushErr request did not run: the completions are exactly the
// refusal (RemAccessErr) then one WRFlushErr per later request, in post order. The QP is
// in Err. The writes before the refused one landed and the later ones did not. 20 rounds,
// each on a fresh QP pair (on tcp a fresh connection).
func stressFlushedWritesDoNotLand(t *testing.T, f Factory) {
	const rounds = 20
	e := newEnv(f)
	a, b := e.open(t, "A"), e.open(t, "B")
	needCaps(t, verbs.CapRDMAWrite, a, b)
	for round := range rounds {
		t.Run(fmt.Sprint("round", round), func(t *testing.T) { flushedWritesRound(t, e, a, b, round) })
	}
}

func flushedWritesRound(t *testing.T, e *env, a, b *node, round int) {
	const before, after, sz = 8, 24, 256
	x, _ := e.link(t, a, b, qpOpts{sendWR: 64})
	dst := b.alloc(t, arenaMem, (before+1+after)*sz, verbs.AccessAll)
	clear(dst.b)
	src := a.alloc(t, arenaMem, sz, verbs.AccessAll)
	fill(src.b, uint64(round+1))
	for i := range before + 1 + after {
		wr := writeWR(uint64(i), 0, src, dst, 0, sz)
		wr.Remote.Offset = uint64(i * sz)
		if i == before {
			wr.Remote.RKey ^= 1 // a forged generation: RemAccessErr at the target
		}
		post(t, x, wr)
	}
	wcs := e.wait(t, x.cq, 1+after)
	checkWC(t, "refused write", wcs[0], verbs.WC{WRID: before, Status: verbs.RemAccessErr, Op: verbs.WCRDMAWrite, QPN: x.qp.Num()}, fBasic)
	for i, wc := range wcs[1:] {
		checkWC(t, "write after the refused one", wc,
			verbs.WC{WRID: uint64(before + 1 + i), Status: verbs.WRFlushErr, Op: verbs.WCRDMAWrite, QPN: x.qp.Num()}, fBasic)
	}
	// On a provider whose target CPU takes part, an ack the target already owed may still
	// arrive: give it time to process everything sent, and watch for extra completions
	// meanwhile. With CapZeroCopy the initiator did every copy before completing.
	settle := 20 * time.Millisecond
	if caps(a, b).Has(verbs.CapZeroCopy) {
		settle = time.Millisecond
	}
	e.quiet(t, x.cq, settle, "after the refusal and the flushes")
	zero := make([]byte, sz)
	for i := range before + 1 + after {
		got := dst.b[i*sz : (i+1)*sz]
		switch {
		case i < before:
			checkBytes(t, fmt.Sprintf("write %d, before the refused one", i), got, src.b)
		case i == before:
			checkBytes(t, fmt.Sprintf("target of write %d, refused with RemAccessErr", i), got, zero)
		default:
			checkBytes(t, fmt.Sprintf("target of write %d, completed with WRFlushErr", i), got, zero)
		}
	}
	wantState(t, "after the refusal", x.qp, verbs.Err)
}

// stressDeregDuringRDMA streams RDMA writes and reads at a target MR, in arena or user
// memory, while another goroutine deregisters it and allocates the same bytes again,
// filled with a marker. Every request completes with Success or, from the first refusal
// on, RemAccessErr and then WRFlushErr; nothing posted after Dereg returned succeeds, and
// the new MR's bytes are never touched through the old key. Two schedules: one request in
// flight (as shm's copy had it) and four (tcp's, so that requests are on the wire while
// the key dies).
func stressDeregDuringRDMA(t *testing.T, f Factory) {
	schedules := []struct {
		inflight, sendWR int
		delay            time.Duration // before the Dereg
	}{{1, 8, time.Millisecond}, {4, 16, 2 * time.Millisecond}}
	for _, user := range []bool{false, true} {
		t.Run(fmt.Sprintf("user=%v", user), func(t *testing.T) {
			for _, s := range schedules {
				t.Run(fmt.Sprintf("inflight=%d", s.inflight), func(t *testing.T) {
					deregDuringRDMA(t, f, user, s.inflight, s.sendWR, s.delay)
				})
			}
		})
	}
}

func deregDuringRDMA(t *testing.T, f Factory, user bool, inflight, sendWR int, delay time.Duration) {
	const sz = 64 << 10
	e := newEnv(f)
	a, b := e.open(t, "A"), e.open(t, "B")
	need := verbs.CapRDMAWrite | verbs.CapRDMARead
	kind := arenaMem
	if user {
		need, kind = need|verbs.CapUserMemRDMA, userMem
	}
	needCaps(t, need, a, b)
	x, _ := e.link(t, a, b, qpOpts{sendWR: sendWR})
	target := b.alloc(t, kind, sz, b.fullAccess(kind))
	rkey := target.rkey()
	src := a.alloc(t, arenaMem, sz, verbs.LocalWrite)
	fill(src.b, 5)
	sinks := make([]*buffer, inflight)
	for i := range sinks {
		sinks[i] = a.alloc(t, arenaMem, sz, verbs.LocalWrite)
	}
	d := startDereg(t, target.mr, b.pd, sz, delay)
	defer d.wait() // it reports to t: it must be done before the test is
	// afterDereg[i]: Dereg had returned and the bytes were allocated again when request i
	// was posted.
	var afterDereg []bool
	postNext := func() {
		i := len(afterDereg)
		wr := verbs.SendWR{WRID: uint64(i), Op: verbs.OpRDMAWrite, Flags: verbs.Signaled, Local: src.b, LKey: src.lkey(),
			Remote: verbs.RemoteAddr{RKey: rkey}}
		if i%2 == 1 {
			s := sinks[i%inflight]
			wr.Op, wr.Local, wr.LKey = verbs.OpRDMARead, s.b, s.lkey()
		}
		afterDereg = append(afterDereg, d.ready.Load())
		post(t, x, wr)
	}
	for range inflight {
		postNext()
	}
	deadline := time.Now().Add(3 * waitTimeout)
	failed := false
	for i := 0; i < len(afterDereg); i++ {
		wc := e.waitOne(t, x.cq)
		switch {
		case wc.WRID != uint64(i):
			t.Fatalf("completion %s for request %d", fmtWC(wc), i)
		case wc.Status == verbs.Success && (failed || afterDereg[i]):
			t.Fatalf("request %d succeeded after Dereg returned (failed before: %v)", i, failed)
		case wc.Status == verbs.Success && i%2 == 1 && !bytes.Equal(sinks[i%inflight].b, src.b):
			t.Fatalf("read %d returned other bytes", i)
		case wc.Status == verbs.RemAccessErr && !failed:
			failed = true
		case wc.Status == verbs.WRFlushErr && failed:
		case wc.Status != verbs.Success:
			t.Fatalf("request %d: %v (failed before: %v)", i, wc.Status, failed)
		}
		// Keep inflight requests outstanding until the key has failed and Dereg returned:
		// requests posted after the failure must flush.
		if (!failed || !d.ready.Load()) && time.Now().Before(deadline) {
			postNext()
		}
	}
	if !d.wait() {
		t.Fatalf("Dereg and AllocMR did not return within %v", waitTimeout)
	}
	if !failed {
		t.Fatalf("no request failed after Dereg (%d posted)", len(afterDereg))
	}
	if d.fresh == nil {
		return // the goroutine reported why
	}
	t.Cleanup(func() { _ = d.fresh.Dereg() })
	time.Sleep(10 * time.Millisecond) // anything still on the wire reaches the target
	for i, c := range d.fresh.Bytes() {
		if c != 0xee {
			t.Fatalf("new MR byte %d = %#x: written through the old key", i, c)
		}
	}
}

// dereg deregisters an MR after a delay, on a goroutine of its own, and allocates as many
// bytes again from the same PD, filled with 0xee.
type dereg struct {
	done  chan struct{}
	ready atomic.Bool // Dereg returned and fresh is filled
	fresh verbs.MR    // the new MR; read it after done
}

func startDereg(t *testing.T, mr verbs.MR, pd verbs.PD, size int, delay time.Duration) *dereg {
	d := &dereg{done: make(chan struct{})}
	go func() {
		defer close(d.done)
		time.Sleep(delay)
		if err := mr.Dereg(); err != nil {
			t.Errorf("Dereg: %v", err)
		}
		m, err := pd.AllocMR(size, verbs.AccessAll)
		if err != nil {
			t.Errorf("AllocMR after Dereg: %v", err)
			return
		}
		for i := range m.Bytes() {
			m.Bytes()[i] = 0xee
		}
		d.fresh = m
		d.ready.Store(true)
	}()
	return d
}

// wait waits up to waitTimeout for the goroutine and reports whether it is done.
func (d *dereg) wait() bool {
	select {
	case <-d.done:
		return true
	case <-time.After(waitTimeout):
		return false
	}
}
