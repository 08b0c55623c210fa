package verbstest

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/transport/verbs"
)

// killStream is the bookkeeping of a stream of signaled requests to a peer that dies.
type killStream struct {
	posted, outstanding, ok int
	okAfterKill             int       // successes completed after the SIGKILL
	firstErrAt              time.Time // when the first error was polled
	firstErr                *verbs.WC
	postedAtErr             int // requests posted when the first error was seen
	statuses                map[verbs.Status]int
	violations              []string
}

// complete accounts for one completion.
func (s *killStream) complete(wc verbs.WC) {
	s.outstanding--
	switch {
	case wc.Status == verbs.Success && s.firstErr != nil:
		s.violations = append(s.violations, fmt.Sprintf("%s succeeded after the first error", fmtWC(wc)))
	case wc.Status == verbs.Success:
		s.ok++
	default:
		if s.firstErr == nil {
			c := wc
			s.firstErr, s.postedAtErr, s.firstErrAt = &c, s.posted, time.Now()
		} else if wc.Status != verbs.WRFlushErr && wc.Status != verbs.RetryExcErr {
			s.violations = append(s.violations, fmt.Sprintf("%s after the first error, want WRFlushErr or RetryExcErr", fmtWC(wc)))
		}
		if int(wc.WRID) >= s.postedAtErr && wc.Status != verbs.WRFlushErr {
			s.violations = append(s.violations, fmt.Sprintf("%s was posted after the first error, want WRFlushErr", fmtWC(wc)))
		}
		s.statuses[wc.Status]++
	}
}

func (s *killStream) summary() string {
	var parts []string
	for st, n := range s.statuses {
		parts = append(parts, fmt.Sprintf("%v×%d", st, n))
	}
	sort.Strings(parts)
	return fmt.Sprintf("posted %d, succeeded %d, outstanding %d, errors %v", s.posted, s.ok, s.outstanding, parts)
}

// killTarget streams RDMA writes (and Sends) to a helper process and SIGKILLs it mid-stream.
// Every request completes; once the first error (RetryExcErr) is seen nothing succeeds any
// more and later requests flush; nothing hangs; no shared segment is left behind.
func killTarget(t *testing.T, f Factory) {
	before := strandedSegments()
	e := newEnv(f)
	a := e.open(t, "parent")
	needCaps(t, verbs.CapRDMAWrite, a)
	ht := startTarget(t, e, a, qpOpts{sendWR: 64})
	x, p, r := ht.x, ht.p, ht.regions[0]
	const chunk, window, killAfter, postsAfterErr = 64 << 10, 32, 200, 8
	loc := a.alloc(t, arenaMem, chunk, verbs.LocalWrite)
	fill(loc.b, 600)
	withSends := caps(a).Has(verbs.CapSend)
	st := killStream{statuses: map[verbs.Status]int{}, postedAtErr: 1 << 62}
	var wcs [32]verbs.WC
	start, killedAt := time.Now(), time.Time{}
	for {
		for st.outstanding < window && (st.firstErr == nil || st.posted < st.postedAtErr+postsAfterErr) {
			i := st.posted
			wr := verbs.SendWR{WRID: uint64(i), Op: verbs.OpRDMAWrite, Flags: verbs.Signaled, Local: loc.b, LKey: loc.lkey(),
				Remote: verbs.RemoteAddr{RKey: r.rkey, Offset: uint64((i * chunk) % (r.len - chunk))}}
			if withSends && i%4 == 3 {
				wr.Op, wr.Local = verbs.OpSend, loc.b[:1024]
			}
			err := x.qp.PostSend(&wr)
			if errors.Is(err, verbs.ErrQueueFull) {
				break
			}
			if err != nil {
				t.Fatalf("post %d (killed: %v): %v", i, !killedAt.IsZero(), err)
			}
			st.posted++
			st.outstanding++
		}
		k, err := x.cq.cq.Poll(wcs[:])
		if err != nil {
			t.Fatalf("Poll: %v", err)
		}
		for _, wc := range wcs[:k] {
			st.complete(wc)
			if !killedAt.IsZero() && wc.Status == verbs.Success {
				st.okAfterKill++
			}
		}
		if killedAt.IsZero() {
			if st.firstErr != nil {
				t.Fatalf("error before the target was killed: %s; %s", fmtWC(*st.firstErr), st.summary())
			}
			if st.ok >= killAfter {
				p.kill()
				killedAt = time.Now()
			} else if time.Since(start) > waitTimeout {
				t.Fatalf("only %d requests succeeded within %v; %s", st.ok, waitTimeout, st.summary())
			}
		}
		if st.firstErr != nil && st.posted >= st.postedAtErr+postsAfterErr && st.outstanding == 0 {
			break
		}
		if !killedAt.IsZero() && time.Since(killedAt) > waitTimeout {
			t.Fatalf("%v after SIGKILL of the target the stream has not failed and drained: %s", waitTimeout, st.summary())
		}
		if k == 0 {
			ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
			_ = x.cq.cq.Wait(ctx)
			cancel()
		}
	}
	t.Logf("target killed after %d successes; first error %v after SIGKILL, %d successes in between; %s",
		killAfter, st.firstErrAt.Sub(killedAt).Round(time.Microsecond), st.okAfterKill, st.summary())
	if st.firstErr.Status != verbs.RetryExcErr {
		t.Errorf("first error after the target died: %s, want RetryExcErr", fmtWC(*st.firstErr))
	}
	for _, v := range st.violations {
		t.Error(v)
	}
	wantState(t, "after the peer died", x.qp, verbs.Err)
	drainedWaitReturns(t, x.cq)
	a.close(t)
	checkNoStranded(t, before, "after SIGKILL of a target process")
}

// killInitiator SIGKILLs a helper process while it writes into the parent's memory. The
// parent deregisters that memory within waitTimeout (pins of a dead process do not block
// it), allocates again, sees its own QP to the dead process fail, and leaves no segment.
func killInitiator(t *testing.T, f Factory) {
	before := strandedSegments()
	e := newEnv(f)
	a := e.open(t, "parent")
	needCaps(t, verbs.CapRDMAWrite, a)
	mr := a.alloc(t, arenaMem, 1<<20, verbs.AccessAll)
	p := startProc(t, f, "writer")
	h := p.expect("HELLO")
	x := connectHelper(t, e, a, p, h[0], qpOpts{}, mr.rkey(), 1<<20)
	theirKey := parseU64(h, 1)
	p.expect("STREAMING")
	time.Sleep(5 * time.Millisecond)
	p.kill()
	deregOK(t, mr)
	again := a.alloc(t, arenaMem, 1<<20, verbs.AccessAll)
	fill(again.b, 601)

	src := a.alloc(t, unregMem, 4096, 0)
	var first *verbs.WC
	deadline := time.Now().Add(waitTimeout)
	for i := uint64(0); first == nil; i++ {
		if time.Now().After(deadline) {
			t.Fatalf("writes to a killed process still succeed %v after SIGKILL", waitTimeout)
		}
		post(t, x, verbs.SendWR{WRID: i, Op: verbs.OpRDMAWrite, Flags: verbs.Signaled, Local: src.b,
			Remote: verbs.RemoteAddr{RKey: theirKey}})
		if wc := e.waitOne(t, x.cq); wc.Status != verbs.Success {
			first = &wc
		}
	}
	if first.Status != verbs.RetryExcErr {
		t.Errorf("write to a killed process: %s, want RetryExcErr", fmtWC(*first))
	}
	wantState(t, "QP to a killed process", x.qp, verbs.Err)
	drainedWaitReturns(t, x.cq)
	a.close(t)
	checkNoStranded(t, before, "after SIGKILL of an initiator process")
}

// completeAfterDeath SIGKILLs an idle target process and reaps it, so that its death is
// observable by any means (its process is gone, its sockets closed, its pidfd
// readable), then runs an RDMA write (and a read, and an atomic where the provider has
// them) to it, each on its own QP. Each completes with an error, never Success: memory
// that outlives the process (a shared mapping) may still take the copy, but the rank
// that would read it is gone.
func completeAfterDeath(t *testing.T, f Factory) {
	before := strandedSegments()
	e := newEnv(f)
	a := e.open(t, "parent")
	needCaps(t, verbs.CapRDMAWrite, a)
	ops := []verbs.Opcode{verbs.OpRDMAWrite}
	if caps(a).Has(verbs.CapRDMARead) {
		ops = append(ops, verbs.OpRDMARead)
	}
	if caps(a).Has(verbs.CapAtomic) {
		ops = append(ops, verbs.OpAtomicFetchAdd)
	}
	loc := a.alloc(t, arenaMem, 64, verbs.LocalWrite)
	for _, op := range ops {
		ht := startTarget(t, e, a, qpOpts{})
		x, r := ht.x, ht.regions[0]
		wr := verbs.SendWR{WRID: 1, Op: op, Flags: verbs.Signaled, Local: loc.b[:8], LKey: loc.lkey(),
			Remote: verbs.RemoteAddr{RKey: r.rkey}}
		post(t, x, wr)
		if wc := e.waitOne(t, x.cq); wc.Status != verbs.Success {
			t.Fatalf("%v to a live target: %s", op, fmtWC(wc))
		}
		ht.p.kill() // returns once the target is reaped
		wr.WRID = 2
		post(t, x, wr)
		wc := e.waitOne(t, x.cq)
		if wc.Status != verbs.RetryExcErr && wc.Status != verbs.WRFlushErr {
			t.Errorf("%v to a target reaped after SIGKILL: %s, want RetryExcErr (or WRFlushErr)", op, fmtWC(wc))
		}
		wantState(t, "QP to a reaped target", x.qp, verbs.Err)
	}
	a.close(t)
	checkNoStranded(t, before, "after SIGKILL of idle targets")
}

// drainedWaitReturns checks that CQ.Wait on a drained CQ of a failed QP honours its context.
func drainedWaitReturns(t *testing.T, c *cqBuf) {
	t.Helper()
	c.pump()
	if extra := c.take(c.count()); len(extra) > 0 {
		t.Errorf("completions after every request had completed: %s", fmtWCs(extra))
	}
	ctx, cancel := context.WithTimeout(context.Background(), quietPeriod)
	defer cancel()
	err, ok := within(waitTimeout, func() error { return c.cq.Wait(ctx) })
	if !ok {
		t.Fatalf("CQ.Wait after the peer died ignored its context for %v", waitTimeout)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("CQ.Wait on a drained CQ after the peer died: %v, want context.DeadlineExceeded", err)
	}
}
