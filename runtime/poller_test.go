package runtime

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/runtime/internal/subcore"
	"github.com/gorma-hpc/gorma/transport/verbs"
)

// fakeCQ is a completion queue whose Poll finds n completions from its readyAt-th call
// on (never when readyAt is 0), and whose Wait returns when ctx ends or ready is closed.
type fakeCQ struct {
	polls   atomic.Int32
	readyAt int32
	n       int
	err     error
	ready   chan struct{}
}

func (q *fakeCQ) Poll(wcs []verbs.WC) (int, error) {
	k := q.polls.Add(1)
	if q.readyAt == 0 || k < q.readyAt {
		return 0, nil
	}
	return q.n, q.err
}

func (q *fakeCQ) Wait(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-q.ready:
		return nil
	}
}

func (q *fakeCQ) Close() error { return nil }

func newTestPoller(mode verbs.WaitMode, cqs ...verbs.CQ) *poller {
	p := new(poller)
	p.init(mode)
	p.rule = subcore.NewWaiting(time.Hour, time.Hour, false, true)
	p.cqs = cqs
	p.spinBudget = time.Hour
	p.yieldAfter = neverYield
	return p
}

func TestPollerSpinning(t *testing.T) {
	for _, tc := range []struct {
		name     string
		mode     verbs.WaitMode
		provider bool
		budget   time.Duration
		want     bool
	}{
		{"block", verbs.WaitBlock, false, time.Hour, false},
		{"spin", verbs.WaitSpin, false, 0, true},
		{"hybrid within budget", verbs.WaitHybrid, false, time.Hour, true},
		{"hybrid, budget spent", verbs.WaitHybrid, false, 0, false},
		{"the provider spins", verbs.WaitHybrid, true, time.Hour, false},
	} {
		p := newTestPoller(tc.mode)
		p.providerSpins, p.spinBudget = tc.provider, tc.budget
		if got := p.spinning(true); got != tc.want {
			t.Errorf("%s: spinning = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestPollerSpinFinds: the spin returns what the first live CQ with completions (or an
// error) gave, and skips CQs that are not live.
func TestPollerSpinFinds(t *testing.T) {
	idle := &fakeCQ{}
	dead := &fakeCQ{readyAt: 1, n: 1}
	busy := &fakeCQ{readyAt: 500, n: 3}
	failing := &fakeCQ{readyAt: 900, err: errors.New("overrun")}
	p := newTestPoller(verbs.WaitSpin, idle, dead, busy, failing)
	var got polled
	if !p.spin(context.Background(), 0b1101, &got) || got != (polled{dev: 2, n: 3}) {
		t.Fatalf("spin found %+v, want 3 completions of CQ 2", got)
	}
	if dead.polls.Load() != 0 {
		t.Fatal("the spin polled a CQ that is not live")
	}
	got = polled{}
	if !p.spin(context.Background(), 0b1001, &got) || got.dev != 3 || got.err == nil {
		t.Fatalf("spin found %+v, want CQ 3's error", got)
	}
}

// TestPollerStamps: where the timeline alone observes (polled.stamps), a wait reads its
// clock once as it starts, whether it spins or sleeps; elsewhere it reads none.
func TestPollerStamps(t *testing.T) {
	obs, _ := subcore.NewObs(0, 2, false, 64, nil)
	p := newTestPoller(verbs.WaitSpin, &fakeCQ{readyAt: 3, n: 1})
	before := obs.Stamp()
	got := polled{stamps: obs}
	if p.wait(context.Background(), true, 1, &got); got.n != 1 {
		t.Fatalf("spinning wait found %+v, want 1 completion", got)
	}
	if got.from < before || got.from > obs.Stamp() {
		t.Fatalf("the wait's stamp %d: want one read in the wait, after %d", got.from, before)
	}
	ready := make(chan struct{})
	close(ready)
	b := newTestPoller(verbs.WaitBlock, &fakeCQ{ready: ready})
	got = polled{stamps: obs}
	b.wait(context.Background(), true, 1, &got)
	if got.from == 0 {
		t.Fatal("a wait that slept read no stamp before it slept")
	}
	q := newTestPoller(verbs.WaitSpin, &fakeCQ{readyAt: 1, n: 1})
	got = polled{}
	if q.wait(context.Background(), true, 1, &got); got.from != 0 {
		t.Fatalf("without stamps, the wait read %d", got.from)
	}
}

// TestPollerSpinEnds: a kick or the end of ctx ends a spin with nothing found; a spent
// hybrid budget ends it with false (sleep).
func TestPollerSpinEnds(t *testing.T) {
	p := newTestPoller(verbs.WaitSpin, &fakeCQ{})
	go func() {
		time.Sleep(time.Millisecond)
		p.kick()
	}()
	var got polled
	if !p.spin(context.Background(), 1, &got) || got != (polled{}) {
		t.Fatalf("kicked spin: found %+v", got)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if !p.spin(ctx, 1, &got) {
		t.Fatal("spin with an ended context returned false")
	}
	h := newTestPoller(verbs.WaitHybrid, &fakeCQ{})
	h.spinBudget = time.Millisecond
	h.spinning(true) // starts the budget
	if h.spin(context.Background(), 1, &got) {
		t.Fatal("hybrid spin past its budget returned true")
	}
}

// TestPollerSleep: with no CQ or two the poller sleeps on kickCh; with one, in CQ.Wait,
// which a kick interrupts by canceling the wait context, renewed afterwards. A watched
// context's end kicks.
func TestPollerSleep(t *testing.T) {
	for _, n := range []int{0, 1, 2} {
		cqs := make([]verbs.CQ, n)
		for i := range cqs {
			cqs[i] = &fakeCQ{ready: make(chan struct{})}
		}
		p := newTestPoller(verbs.WaitBlock, cqs...)
		done := make(chan struct{})
		go func() {
			var got polled
			p.wait(context.Background(), true, 0, &got)
			close(done)
		}()
		time.Sleep(time.Millisecond)
		p.kick()
		select {
		case <-done:
		case <-time.After(testbudget.Scale(10 * time.Second)):
			t.Fatalf("%d CQs: kick did not wake the sleeping poller", n)
		}
		if n == 1 && p.waitCtx.Err() != nil {
			t.Fatal("the wait context was not renewed after a kick")
		}
	}

	p := newTestPoller(verbs.WaitBlock, &fakeCQ{ready: make(chan struct{})})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		p.sleep(ctx)
		close(done)
	}()
	time.Sleep(time.Millisecond)
	cancel()
	select {
	case <-done:
	case <-time.After(testbudget.Scale(10 * time.Second)):
		t.Fatal("the end of the watched context did not wake the poller")
	}
	p.unwatch()
}

func TestSpinBudget(t *testing.T) {
	const spin = 50 * time.Microsecond
	for _, tc := range []struct {
		sendBytes int
		oversub   bool
		want      time.Duration
	}{
		{0, false, spin},
		{1 << 20, false, spin + time.Second*(1<<20)/rndvSpinRate},
		{rndvSpinRate, false, spin + maxRndvSpin},
		{rndvSpinRate, true, spin},
	} {
		if got := spinBudget(spin, tc.sendBytes, tc.oversub); got != tc.want {
			t.Errorf("spinBudget(%v, %d, %v) = %v, want %v", spin, tc.sendBytes, tc.oversub, got, tc.want)
		}
	}
}

// TestRelay: a relay kicks the poller when its CQ has completions, then waits for a poll
// pass before it waits on the CQ again, and stops with its context.
func TestRelay(t *testing.T) {
	cq := &fakeCQ{ready: make(chan struct{})}
	p := newTestPoller(verbs.WaitBlock)
	rl := &relay{cq: cq, polled: make(chan struct{}, 1)}
	p.relays = []*relay{rl}
	stop, halt := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		p.runRelay(rl, stop)
		close(done)
	}()
	close(cq.ready)
	select {
	case <-p.kickCh:
	case <-time.After(testbudget.Scale(10 * time.Second)):
		t.Fatal("the relay did not kick")
	}
	p.polledPass()
	halt()
	select {
	case <-done:
	case <-time.After(testbudget.Scale(10 * time.Second)):
		t.Fatal("the relay did not stop")
	}
}
