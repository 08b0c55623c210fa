package verbstest

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/gorma-hpc/gorma/transport/verbs"
)

// testMultiProcess runs the cases whose peers are separate processes (see child.go).
func testMultiProcess(t *testing.T, f Factory) {
	t.Run("RMA", func(t *testing.T) { multiRMA(t, f) })
	t.Run("SendRecv", func(t *testing.T) { multiSendRecv(t, f) })
	t.Run("Atomics", func(t *testing.T) { multiAtomics(t, f) })
	t.Run("KillTarget", func(t *testing.T) { killTarget(t, f) })
	t.Run("KillInitiator", func(t *testing.T) { killInitiator(t, f) })
	t.Run("CompleteAfterDeath", func(t *testing.T) { completeAfterDeath(t, f) })
}

// helperTarget is what a "target" helper announced.
type helperTarget struct {
	p       *proc
	x       *end // the parent's QP, connected to the helper's
	regions []region
}

type region struct {
	name string
	rkey uint64
	len  int
}

// startTarget starts a "target" helper and connects a QP of n to it.
func startTarget(t *testing.T, e *env, n *node, o qpOpts) *helperTarget {
	p := startProc(t, e.f, "target")
	h := p.expect("HELLO")
	if len(h) != 5 {
		t.Fatalf("target said HELLO %q", h)
	}
	ht := &helperTarget{p: p, regions: []region{{"arena", parseU64(h, 1), atoi(h, 2)}}}
	if key := parseU64(h, 3); key != 0 {
		ht.regions = append(ht.regions, region{"user", key, atoi(h, 4)})
	}
	ht.x = connectHelper(t, e, n, p, h[0], o)
	return ht
}

// connectHelper connects a new QP of n to the helper's endpoint epHex, sending CONNECT with
// the parent's endpoint and extra fields.
func connectHelper(t *testing.T, e *env, n *node, p *proc, epHex string, o qpOpts, extra ...any) *end {
	t.Helper()
	ep, err := unhex(epHex)
	if err != nil {
		t.Fatal(err)
	}
	x := e.newEnd(t, n, fmt.Sprintf("%s.qp-to-pid%d", n.name, p.pid()), o)
	if err := x.qp.ToInit(); err != nil {
		t.Fatal(err)
	}
	p.say(append([]any{"CONNECT", hexOf(x.qp.Endpoint())}, extra...)...)
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if err := verbs.Connect(ctx, x.qp, ep); err != nil {
		t.Fatalf("connect to helper %q (pid %d): %v%s", p.role, p.pid(), err, p.describe())
	}
	p.expect("READY")
	return x
}

// multiRMA writes, reads and runs atomics on a helper process's memory, and has the helper
// check and prepare its side.
func multiRMA(t *testing.T, f Factory) {
	e := newEnv(f)
	a := e.open(t, "parent")
	needCaps(t, verbs.CapRDMAWrite|verbs.CapRDMARead, a)
	ht := startTarget(t, e, a, qpOpts{})
	x, p := ht.x, ht.p
	for _, r := range ht.regions {
		for i, sc := range sizeClasses {
			t.Run(r.name+"/"+sc.name, func(t *testing.T) {
				seed := uint64(300 + 2*i)
				loc := a.alloc(t, arenaMem, sc.off+sc.n, verbs.LocalWrite)
				fill(loc.b[sc.off:], seed)
				post(t, x, verbs.SendWR{WRID: 1, Op: verbs.OpRDMAWrite, Flags: verbs.Signaled, Local: loc.b[sc.off:],
					LKey: loc.lkey(), Remote: verbs.RemoteAddr{RKey: r.rkey, Offset: uint64(sc.off)}})
				checkWC(t, "write to helper", e.waitOne(t, x.cq), verbs.WC{WRID: 1, Op: verbs.WCRDMAWrite, QPN: x.qp.Num()}, fBasic)
				p.say("CHECK", r.name, sc.off, sc.n, seed)
				if got := p.expect("CHECK"); strings.Join(got, " ") != "ok" {
					t.Errorf("helper's memory after RDMA write: %s", strings.Join(got, " "))
				}
				p.say("FILL", r.name, sc.off, sc.n, seed+1)
				p.expect("OK")
				clear(loc.b)
				post(t, x, verbs.SendWR{WRID: 2, Op: verbs.OpRDMARead, Flags: verbs.Signaled, Local: loc.b[sc.off:],
					LKey: loc.lkey(), Remote: verbs.RemoteAddr{RKey: r.rkey, Offset: uint64(sc.off)}})
				checkWC(t, "read from helper", e.waitOne(t, x.cq), verbs.WC{WRID: 2, Op: verbs.WCRDMARead, QPN: x.qp.Num()}, fBasic)
				checkBytes(t, "read from helper", loc.b[sc.off:], patterned(sc.n, seed+1))
			})
		}
		need := verbs.CapAtomic
		if r.name == "user" {
			need |= verbs.CapUserMemAtomic
		}
		if caps(a).Has(need) {
			t.Run(r.name+"/Atomics", func(t *testing.T) { multiAtomicSteps(t, e, a, ht, r) })
		}
	}
	t.Run("ForgedKey", func(t *testing.T) {
		r := ht.regions[0]
		p.say("FILL", r.name, 0, 4096, 7)
		p.expect("OK")
		src := a.alloc(t, unregMem, 4096, 0)
		post(t, x, verbs.SendWR{WRID: 3, Op: verbs.OpRDMAWrite, Flags: verbs.Signaled, Local: src.b,
			Remote: verbs.RemoteAddr{RKey: r.rkey ^ 1<<63}})
		checkWC(t, "write with a forged key to another process", e.waitOne(t, x.cq),
			verbs.WC{WRID: 3, Status: verbs.RemAccessErr, Op: verbs.WCRDMAWrite, QPN: x.qp.Num()}, fBasic)
		p.say("CHECK", r.name, 0, 4096, 7)
		if got := p.expect("CHECK"); strings.Join(got, " ") != "ok" {
			t.Errorf("helper's memory after a refused write: %s", strings.Join(got, " "))
		}
	})
	p.finish()
}

// multiAtomicSteps runs fetch-add and compare-swap on a word of the helper's region r.
func multiAtomicSteps(t *testing.T, e *env, a *node, ht *helperTarget, r region) {
	x, p := ht.x, ht.p
	loc := a.alloc(t, arenaMem, 8, verbs.LocalWrite)
	const off = 64
	get := func() uint64 {
		p.say("GET64", r.name, off)
		return parseU64(p.expect("VAL"), 0)
	}
	p.say("PUT64", r.name, off, 5)
	p.expect("OK")
	steps := []struct {
		op               verbs.Opcode
		compareAdd, swap uint64
		old, after       uint64
	}{
		{verbs.OpAtomicFetchAdd, 7, 0, 5, 12},
		{verbs.OpAtomicCmpSwap, 12, 99, 12, 99},
		{verbs.OpAtomicCmpSwap, 12, 1, 99, 99},
	}
	for i, s := range steps {
		post(t, x, verbs.SendWR{WRID: uint64(i), Op: s.op, Flags: verbs.Signaled, Local: loc.b, LKey: loc.lkey(),
			Remote: verbs.RemoteAddr{RKey: r.rkey, Offset: off}, CompareAdd: s.compareAdd, Swap: s.swap})
		checkWC(t, s.op.String(), e.waitOne(t, x.cq), verbs.WC{WRID: uint64(i), Op: verbs.WCOpcodeOf(s.op), QPN: x.qp.Num()}, fBasic)
		if got := get64(loc.b); got != s.old {
			t.Errorf("step %d %v: fetched %d, want %d", i, s.op, got, s.old)
		}
		if got := get(); got != s.after {
			t.Errorf("step %d %v: helper's word %d, want %d", i, s.op, got, s.after)
		}
	}
}

// multiSendRecv sends messages to a helper process and has it send messages back.
func multiSendRecv(t *testing.T, f Factory) {
	e := newEnv(f)
	a := e.open(t, "parent")
	needCaps(t, verbs.CapSend, a)
	ht := startTarget(t, e, a, qpOpts{})
	x, p := ht.x, ht.p
	const msgs, slot = 32, 4096
	src := a.alloc(t, arenaMem, msgs*slot, verbs.LocalWrite)
	fill(src.b, 400)
	var want []string
	for i := range msgs {
		n := (i * 397) % slot
		wr := verbs.SendWR{WRID: uint64(i), Op: verbs.OpSend, Flags: verbs.Signaled, Local: src.b[i*slot : i*slot+n], LKey: src.lkey()}
		if i%2 == 1 {
			wr.Op, wr.Imm = verbs.OpSendWithImm, uint32(i)
		}
		post(t, x, wr)
		want = append(want, fmt.Sprintf("%d:%d:%v:%x", n, wr.Imm, i%2 == 1, hash64(wr.Local)))
	}
	for i, wc := range e.wait(t, x.cq, msgs) {
		checkWC(t, fmt.Sprint("send ", i), wc, verbs.WC{WRID: uint64(i), Op: verbs.WCSend, QPN: x.qp.Num()}, fBasic)
	}
	p.say("MSGS", msgs)
	got := p.expect("MSGS")
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("helper received (len:imm:hasImm:hash)\n%v\nwant\n%v", got, want)
	}

	const echoes = 16
	rb := a.alloc(t, arenaMem, echoes*slot, verbs.LocalWrite)
	for i := range echoes {
		postRecv(t, x, verbs.RecvWR{WRID: uint64(100 + i), Local: rb.b[i*slot : (i+1)*slot], LKey: rb.lkey()})
	}
	p.say("ECHO", echoes)
	if got := p.expect("ECHOED"); strings.Join(got, " ") != "ok" {
		t.Fatalf("helper's sends: %s", strings.Join(got, " "))
	}
	for i, wc := range e.wait(t, x.cq, echoes) {
		n, imm, seed := echoMsg(i)
		checkWC(t, fmt.Sprint("echo ", i), wc, verbs.WC{WRID: uint64(100 + i), Op: verbs.WCRecv, QPN: x.qp.Num(),
			ByteLen: uint32(n), Imm: imm, HasImm: true}, fBasic|fByteLen|fImm)
		checkBytes(t, fmt.Sprint("echo ", i), rb.b[i*slot:i*slot+n], patterned(n, seed))
	}
	p.finish()
}

// multiAtomics has several helper processes and one in-process initiator do fetch-adds on
// one word of the parent concurrently: the final value and the fetched values are exact.
func multiAtomics(t *testing.T, f Factory) {
	e := newEnv(f)
	target := e.open(t, "parent")
	needCaps(t, verbs.CapAtomic, target)
	const procs, n = 3, 1000
	word := target.alloc(t, arenaMem, 64, verbs.AccessAll)
	clear(word.b)
	var helpers []*proc
	var targetCQs []*cqBuf
	for range procs {
		p := startProc(t, f, "fetchadd")
		h := p.expect("HELLO")
		x := connectHelper(t, e, target, p, h[0], qpOpts{}, word.rkey(), 8, n)
		helpers, targetCQs = append(helpers, p), append(targetCQs, x.cq)
	}
	ini := e.open(t, "in-process initiator")
	local, _ := e.link(t, ini, target, qpOpts{sendWR: 32})
	stop := pumpInBackground(targetCQs...) // for providers whose target progresses in Poll
	defer stop()
	for _, p := range helpers {
		p.say("GO")
	}
	var (
		wg     sync.WaitGroup
		mine   []uint64
		errMin error
	)
	wg.Go(func() { mine, errMin = faWorker(local, word.rkey(), 8, n, 8) })
	olds := []uint64{}
	for _, p := range helpers {
		fields, err := p.recv("OLDS", 3*waitTimeout)
		if err != nil {
			t.Fatalf("%v%s", err, p.describe())
		}
		var theirs []uint64
		for _, s := range strings.Split(strings.Join(fields, ""), ",") {
			v, err := strconv.ParseUint(s, 10, 64)
			if err != nil {
				t.Fatalf("helper sent OLDS with %q", s)
			}
			theirs = append(theirs, v)
		}
		if len(theirs) != n {
			t.Errorf("helper pid %d reported %d values, want %d", p.pid(), len(theirs), n)
		}
		olds = append(olds, theirs...)
	}
	wg.Wait()
	if errMin != nil {
		t.Fatalf("in-process initiator: %v", errMin)
	}
	olds = append(olds, mine...)
	if got := get64(word.b[8:]); got != (procs+1)*n {
		t.Errorf("word after %d fetch-adds of 1 from %d processes and this one: %d", (procs+1)*n, procs, got)
	}
	checkPermutation(t, olds)
	for _, p := range helpers {
		p.finish()
	}
}

// pumpInBackground polls the given CQs until stop is called.
func pumpInBackground(cqs ...*cqBuf) (stop func()) {
	var e env
	e.cqs = cqs
	return e.pumpInBackground()
}
