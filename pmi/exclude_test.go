package pmi

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
)

// waitMissing waits until the exchange's current round waits for n ranks only.
func waitMissing(t *testing.T, x *Exchange, n int) {
	t.Helper()
	deadline := time.Now().Add(testbudget.Scale(10 * time.Second))
	for x.missing() != n {
		if time.Now().After(deadline) {
			t.Fatalf("the round waits for %d ranks, want %d", x.missing(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// A rank that fails while the others wait in a fence (golaunch --ft): the agent announces
// it and excludes it, the pending fence completes for the others, later rounds go without
// it, and a connection that inits later gets the announced event too.
func TestExcludeCompletesPendingFence(t *testing.T) {
	h := newJob(3)
	s := serve(t, h)
	var cs []*Client
	for r := range 2 {
		c, err := Dial(ctx(t), s.Path(), r, "job1")
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		cs = append(cs, c)
	}
	fence := func(round int) []chan error {
		var done []chan error
		for r, c := range cs {
			ch := make(chan error, 1)
			done = append(done, ch)
			go func() {
				if err := c.Put(ctx(t), "k", []byte(fmt.Sprintf("%d-%d", r, round))); err != nil {
					ch <- err
					return
				}
				ch <- c.Fence(ctx(t))
			}()
		}
		return done
	}
	done := fence(1)
	waitMissing(t, h.x, 1) // both survivors wait for rank 2
	ev := Event{Kind: ProcFailed, Rank: 2, Host: "h1", Code: 137, Cause: "rank 2 (host h1, pid 12) killed by signal 9 (SIGKILL)"}
	s.Announce(ev)
	h.x.Exclude(2)
	h.x.Exclude(2) // twice: nothing more
	for r, ch := range done {
		if err := <-ch; err != nil {
			t.Fatalf("rank %d: fence pending when rank 2 failed: %v", r, err)
		}
	}
	for r, c := range cs {
		other := 1 - r
		if v, err := c.Get(ctx(t), other, "k"); err != nil || string(v) != fmt.Sprintf("%d-1", other) {
			t.Errorf("rank %d: get of rank %d: %q %v", r, other, v, err)
		}
		select {
		case got := <-c.Events():
			if got != ev {
				t.Errorf("rank %d: event %+v, want %+v", r, got, ev)
			}
		case <-time.After(testbudget.Scale(5 * time.Second)):
			t.Fatalf("rank %d: no ProcFailed event", r)
		}
	}
	for r, ch := range fence(2) {
		if err := <-ch; err != nil {
			t.Fatalf("rank %d: the round after the failure: %v", r, err)
		}
	}
	for r, c := range cs {
		select {
		case got := <-c.Events():
			t.Errorf("rank %d: a second event %+v", r, got)
		default:
		}
	}
	late, err := Dial(ctx(t), s.Path(), 2, "job1")
	if err != nil {
		t.Fatal(err)
	}
	defer late.Close()
	select {
	case got := <-late.Events():
		if got != ev {
			t.Errorf("a rank that inits after the announcement: event %+v, want %+v", got, ev)
		}
	case <-time.After(testbudget.Scale(5 * time.Second)):
		t.Fatal("a rank that inits after the announcement got no event")
	}
	if err := late.Fence(ctx(t)); err == nil || !strings.Contains(err.Error(), "reported failed") {
		t.Errorf("fence of an excluded rank: %v", err)
	}
}

// A rank excluded after it fenced in the current round: the round still waits for the
// ranks that did not fence, and publishes the excluded rank's puts with theirs.
func TestExcludeAfterItsFence(t *testing.T) {
	x := NewExchange(3)
	bg := context.Background()
	done := make(chan error, 2)
	for _, r := range []int{0, 2} {
		go func() { done <- x.Fence(bg, r, map[string][]byte{"k": []byte(fmt.Sprint(r))}) }()
	}
	waitMissing(t, x, 1)
	x.Exclude(2)
	if n := x.missing(); n != 1 {
		t.Fatalf("after excluding a rank that fenced, the round waits for %d ranks, want 1", n)
	}
	go func() { done <- x.Fence(bg, 1, map[string][]byte{"k": []byte("1")}) }()
	for range 3 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	for r := range 3 {
		if v, err := x.Get(r, "k"); err != nil || string(v) != fmt.Sprint(r) {
			t.Errorf("get of rank %d: %q %v", r, v, err)
		}
	}
	// Every rank but one excluded: a round no rank fenced in stays open until it does.
	x.Exclude(0)
	if n := x.missing(); n != 1 {
		t.Fatalf("with ranks 0 and 2 excluded the round waits for %d ranks, want 1", n)
	}
	if err := x.Fence(bg, 1, nil); err != nil {
		t.Fatal(err)
	}
}
