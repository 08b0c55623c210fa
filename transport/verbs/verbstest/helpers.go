package verbstest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/transport/verbs"
)

// waitTimeout bounds every wait for an event the suite expects (a completion, a
// connection, a child's answer, a Close): 10 s scaled by the test slack. Exceeding it
// fails the test.
var waitTimeout = testbudget.Scale(10 * time.Second)

const (
	// quietPeriod is how long the suite watches for an event that must not happen.
	quietPeriod = 50 * time.Millisecond
	// cqDepth is the depth of every CQ the suite creates.
	cqDepth = 4096
)

// env is the fixture of one case: the Factory and every CQ the case polls. Waiting for a
// completion on one CQ polls all of them, because CQ.Poll may drive a provider's progress
// (a held Send, say) for the QPs on that CQ.
type env struct {
	f  Factory
	mu sync.Mutex
	// cqs are the open CQs of the case, guarded by mu.
	cqs []*cqBuf
}

func newEnv(f Factory) *env { return &env{f: f} }

// node is an opened device with one PD.
type node struct {
	name   string
	dev    verbs.Device
	pd     verbs.PD
	closed atomic.Bool // set before Close: the suite stops polling its CQs
}

// config returns the Factory's configuration for a new device called name.
func (e *env) config(name string) verbs.Config {
	return factoryConfig(e.f, name)
}

func factoryConfig(f Factory, name string) verbs.Config {
	var cfg verbs.Config
	if f.Config != nil {
		cfg = f.Config()
	}
	if cfg.Name == "" {
		cfg.Name = name
	}
	return cfg
}

// open opens a device; t's cleanup closes it.
func (e *env) open(t testing.TB, name string, mods ...func(*verbs.Config)) *node {
	t.Helper()
	cfg := e.config(name)
	for _, m := range mods {
		m(&cfg)
	}
	dev, err := verbs.Open(e.f.Provider, cfg)
	if err != nil {
		t.Fatalf("open %s device %q: %v", e.f.Provider, name, err)
	}
	n := &node{name: name, dev: dev}
	t.Cleanup(func() { n.close(t) })
	n.pd, err = dev.AllocPD()
	if err != nil {
		t.Fatalf("%s: AllocPD: %v", name, err)
	}
	return n
}

// close closes the device once, failing t if Close errs or does not return in time.
func (n *node) close(t testing.TB) {
	if n.closed.Swap(true) {
		return
	}
	closeWithin(t, "close device "+n.name, n.dev.Close)
}

// caps are the capabilities every given node advertises.
func caps(nodes ...*node) verbs.Caps {
	c := ^verbs.Caps(0)
	for _, n := range nodes {
		c &= n.dev.Caps()
	}
	return c
}

// needCaps skips t unless every node advertises want.
func needCaps(t testing.TB, want verbs.Caps, nodes ...*node) {
	t.Helper()
	if have := caps(nodes...); !have.Has(want) {
		t.Skipf("provider does not advertise %v (has %v)", want&^have, have)
	}
}

// cqBuf wraps a CQ with a buffer of completions polled but not yet consumed by the case.
type cqBuf struct {
	name string
	node *node
	cq   verbs.CQ

	mu      sync.Mutex
	pending []verbs.WC
	scratch [16]verbs.WC
	err     error // first Poll error
	closed  bool
}

// pump moves every available completion into the buffer.
func (c *cqBuf) pump() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || c.err != nil || c.node.closed.Load() {
		return
	}
	for range 256 {
		n, err := c.cq.Poll(c.scratch[:])
		if n < 0 || n > len(c.scratch) {
			c.err = fmt.Errorf("poll with room for %d returned n=%d", len(c.scratch), n)
			return
		}
		c.pending = append(c.pending, c.scratch[:n]...)
		if err != nil {
			c.err = err
			return
		}
		if n < len(c.scratch) {
			return
		}
	}
}

func (c *cqBuf) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.pending)
}

func (c *cqBuf) take(n int) []verbs.WC {
	c.mu.Lock()
	defer c.mu.Unlock()
	n = min(n, len(c.pending))
	out := append([]verbs.WC(nil), c.pending[:n]...)
	c.pending = c.pending[n:]
	return out
}

func (c *cqBuf) pollErr() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// newCQ creates a CQ on n, polled by every wait of the case; t's cleanup closes it.
func (e *env) newCQ(t testing.TB, n *node, name string) *cqBuf {
	t.Helper()
	cq, err := n.dev.CreateCQ(cqDepth)
	if err != nil {
		t.Fatalf("%s: CreateCQ(%d): %v", n.name, cqDepth, err)
	}
	c := &cqBuf{name: name, node: n, cq: cq}
	e.mu.Lock()
	e.cqs = append(e.cqs, c)
	e.mu.Unlock()
	t.Cleanup(func() { e.closeCQ(t, c) })
	return c
}

func (e *env) closeCQ(t testing.TB, c *cqBuf) {
	e.mu.Lock()
	for i, x := range e.cqs {
		if x == c {
			e.cqs = append(e.cqs[:i], e.cqs[i+1:]...)
			break
		}
	}
	e.mu.Unlock()
	c.mu.Lock()
	done := c.closed
	c.closed = true
	c.mu.Unlock()
	switch {
	case done:
	case c.node.closed.Load(): // the device's Close destroyed it already
		closeWithin(t, "close CQ "+c.name, ignoreErr(c.cq.Close))
	default:
		closeWithin(t, "close CQ "+c.name, c.cq.Close)
	}
}

func (e *env) pumpAll() {
	e.mu.Lock()
	cqs := append([]*cqBuf(nil), e.cqs...)
	e.mu.Unlock()
	for _, c := range cqs {
		c.pump()
	}
}

// pumpInBackground polls every CQ of the case until stop is called, for cases whose
// test goroutine blocks on something else (a child process's answer).
func (e *env) pumpInBackground() (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-done:
				return
			case <-time.After(100 * time.Microsecond):
				e.pumpAll()
			}
		}
	})
	return func() { close(done); wg.Wait() }
}

// end is one side of a connection: a QP with its own CQ for sends and receives.
type end struct {
	node *node
	cq   *cqBuf
	qp   verbs.QP
}

// qpOpts are the queue depths of a new QP; zero means the verbs default.
type qpOpts struct{ sendWR, recvWR int }

// newEnd creates a CQ and a QP (in Reset) on n; t's cleanup closes both.
func (e *env) newEnd(t testing.TB, n *node, name string, o qpOpts) *end {
	t.Helper()
	cq := e.newCQ(t, n, name)
	qp, err := n.pd.CreateQP(verbs.QPAttr{SendCQ: cq.cq, RecvCQ: cq.cq, MaxSendWR: o.sendWR, MaxRecvWR: o.recvWR})
	if err != nil {
		t.Fatalf("%s: CreateQP: %v", name, err)
	}
	if s := qp.State(); s != verbs.Reset {
		t.Fatalf("%s: new QP is in %v, want Reset", name, s)
	}
	x := &end{node: n, cq: cq, qp: qp}
	t.Cleanup(func() { closeWithin(t, "close QP of "+name, ignoreErr(qp.Close)) })
	return x
}

// connect connects x and y: both go to Init, exchange endpoints and run verbs.Connect
// concurrently (a network provider's ToRTS may wait for the peer's RTR).
func connect(t testing.TB, x, y *end) {
	t.Helper()
	for _, z := range []*end{x, y} {
		if err := z.qp.ToInit(); err != nil {
			t.Fatalf("%s: ToInit: %v", z.cq.name, err)
		}
	}
	epx, epy := clone(x.qp.Endpoint()), clone(y.qp.Endpoint())
	if len(epx) == 0 || len(epy) == 0 {
		t.Fatalf("Endpoint in Init is empty (%d and %d bytes); verbs doc: valid from Init on", len(epx), len(epy))
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	errc := make(chan error, 2)
	go func() { errc <- wrap(x.cq.name+": Connect", verbs.Connect(ctx, x.qp, epy)) }()
	go func() { errc <- wrap(y.cq.name+": Connect", verbs.Connect(ctx, y.qp, epx)) }()
	for range 2 {
		select {
		case err := <-errc:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(waitTimeout + time.Second):
			t.Fatalf("Connect did not return within %v despite its context", waitTimeout)
		}
	}
	for _, z := range []*end{x, y} {
		if s := z.qp.State(); s != verbs.RTS {
			t.Fatalf("%s: state after Connect is %v, want RTS", z.cq.name, s)
		}
	}
}

// link creates a connected QP pair between a and b (a may equal b: loopback).
func (e *env) link(t testing.TB, a, b *node, o qpOpts) (x, y *end) {
	t.Helper()
	x = e.newEnd(t, a, a.name+".qp", o)
	y = e.newEnd(t, b, b.name+".qp", o)
	connect(t, x, y)
	return x, y
}

// collect waits up to d for n completions on c. With all set it polls every CQ of the
// case while waiting; otherwise only c.
func (e *env) collect(c *cqBuf, n int, all bool, d time.Duration) ([]verbs.WC, error) {
	deadline := time.Now().Add(d)
	for {
		if all {
			e.pumpAll()
		} else {
			c.pump()
		}
		if c.count() >= n {
			return c.take(n), nil
		}
		if err := c.pollErr(); err != nil {
			return c.take(c.count()), fmt.Errorf("poll %s: %w", c.name, err)
		}
		if time.Now().After(deadline) {
			got := c.take(c.count())
			return got, fmt.Errorf("waited %v for %d completion(s) on %s, got %d: %s", d, n, c.name, len(got), fmtWCs(got))
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
		_ = c.cq.Wait(ctx)
		cancel()
	}
}

// wait returns the next n completions of c, failing t after waitTimeout.
func (e *env) wait(t testing.TB, c *cqBuf, n int) []verbs.WC {
	t.Helper()
	wcs, err := e.collect(c, n, true, waitTimeout)
	if err != nil {
		t.Fatal(err)
	}
	return wcs
}

// waitOne returns the next completion of c.
func (e *env) waitOne(t testing.TB, c *cqBuf) verbs.WC { t.Helper(); return e.wait(t, c, 1)[0] }

// quiet fails t if c gets a completion within d (while every CQ is polled).
func (e *env) quiet(t testing.TB, c *cqBuf, d time.Duration, why string) {
	t.Helper()
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		e.pumpAll()
		time.Sleep(time.Millisecond)
	}
	if got := c.take(c.count()); len(got) > 0 {
		t.Errorf("%s: got %d unexpected completion(s) on %s: %s", why, len(got), c.name, fmtWCs(got))
	}
}

// wcField selects the fields checkWC compares.
type wcField uint8

const (
	fWRID wcField = 1 << iota
	fStatus
	fOp
	fQPN
	fByteLen
	fImm   // HasImm, and Imm when set
	fBasic = fWRID | fStatus | fOp | fQPN
)

// checkWC reports the fields of got that differ from want.
func checkWC(t testing.TB, what string, got, want verbs.WC, fields wcField) bool {
	t.Helper()
	var bad []string
	if fields&fStatus != 0 && got.Status != want.Status {
		bad = append(bad, fmt.Sprintf("status %v, want %v", got.Status, want.Status))
	}
	if fields&fWRID != 0 && got.WRID != want.WRID {
		bad = append(bad, fmt.Sprintf("wrid %d, want %d", got.WRID, want.WRID))
	}
	if fields&fOp != 0 && got.Op != want.Op {
		bad = append(bad, fmt.Sprintf("op %v, want %v", got.Op, want.Op))
	}
	if fields&fQPN != 0 && got.QPN != want.QPN {
		bad = append(bad, fmt.Sprintf("qpn %d, want %d (the local QP)", got.QPN, want.QPN))
	}
	if fields&fByteLen != 0 && got.ByteLen != want.ByteLen {
		bad = append(bad, fmt.Sprintf("byte len %d, want %d", got.ByteLen, want.ByteLen))
	}
	if fields&fImm != 0 && (got.HasImm != want.HasImm || (want.HasImm && got.Imm != want.Imm)) {
		bad = append(bad, fmt.Sprintf("imm %v/%#x, want %v/%#x", got.HasImm, got.Imm, want.HasImm, want.Imm))
	}
	if len(bad) > 0 {
		t.Errorf("%s: completion %s: %s", what, fmtWC(got), strings.Join(bad, "; "))
		return false
	}
	return true
}

func fmtWC(wc verbs.WC) string {
	s := fmt.Sprintf("{wrid %d %v %v qpn %d len %d", wc.WRID, wc.Op, wc.Status, wc.QPN, wc.ByteLen)
	if wc.HasImm {
		s += fmt.Sprintf(" imm %#x", wc.Imm)
	}
	return s + "}"
}

func fmtWCs(wcs []verbs.WC) string {
	if len(wcs) == 0 {
		return "none"
	}
	const max = 8
	var parts []string
	for i, wc := range wcs {
		if i == max {
			parts = append(parts, fmt.Sprintf("... %d more", len(wcs)-max))
			break
		}
		parts = append(parts, fmtWC(wc))
	}
	return strings.Join(parts, " ")
}

// post posts wr on x, failing t if PostSend errs.
func post(t testing.TB, x *end, wr verbs.SendWR) {
	t.Helper()
	if err := x.qp.PostSend(&wr); err != nil {
		t.Fatalf("%s: PostSend %v wrid %d (QP in %v): %v", x.cq.name, wr.Op, wr.WRID, x.qp.State(), err)
	}
}

// postRecv posts wr on x, failing t if PostRecv errs.
func postRecv(t testing.TB, x *end, wr verbs.RecvWR) {
	t.Helper()
	if err := x.qp.PostRecv(&wr); err != nil {
		t.Fatalf("%s: PostRecv wrid %d (QP in %v): %v", x.cq.name, wr.WRID, x.qp.State(), err)
	}
}

// wantCallErr checks that a call failed with a *verbs.Error wrapping sentinel.
func wantCallErr(t testing.TB, what string, err, sentinel error) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: got no error, want %v", what, sentinel)
		return
	}
	if !errors.Is(err, sentinel) {
		t.Errorf("%s: got %q, want an error wrapping %q", what, err, sentinel)
	}
	var ve *verbs.Error
	if !errors.As(err, &ve) {
		t.Errorf("%s: error %q is a %T, want a *verbs.Error (verbs doc: errors of calls are *Error values)", what, err, err)
	}
}

// wantState checks a QP's state.
func wantState(t testing.TB, what string, qp verbs.QP, want verbs.QPState) {
	t.Helper()
	if s := qp.State(); s != want {
		t.Errorf("%s: QP state %v, want %v", what, s, want)
	}
}

// within runs fn, giving up after d. ok is false if fn did not return in time.
func within(d time.Duration, fn func() error) (err error, ok bool) {
	done := make(chan error, 1)
	go func() { done <- fn() }()
	select {
	case err := <-done:
		return err, true
	case <-time.After(d):
		return nil, false
	}
}

// closeWithin runs a Close-like fn and reports an error or a hang as a failure of t.
func closeWithin(t testing.TB, what string, fn func() error) {
	err, ok := within(waitTimeout, fn)
	if !ok {
		t.Errorf("%s did not return within %v", what, waitTimeout)
	} else if err != nil {
		t.Errorf("%s: %v", what, err)
	}
}

func ignoreErr(fn func() error) func() error { return func() error { _ = fn(); return nil } }

// catch runs fn and returns what it panicked with, if anything.
func catch(fn func()) (p any) {
	defer func() { p = recover() }()
	fn()
	return nil
}

func wrap(what string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", what, err)
}

func clone(b []byte) []byte { return append([]byte(nil), b...) }
