package pmi

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// spawnHandler is jobHandler that grows: a spawn of n ranks takes the next job ranks,
// unless it asks for more than room allows.
type spawnHandler struct {
	*jobHandler
	room int
	asks []string
}

func (h *spawnHandler) Spawn(_ context.Context, rank, n int) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.asks = append(h.asks, fmt.Sprintf("%d:%d", rank, n))
	if n > h.room {
		return 0, fmt.Errorf("%w: no free slots for %d ranks", ErrRefused, n)
	}
	first := h.size
	h.size += n
	h.room -= n
	h.x.Grow(h.size)
	return first, nil
}

// TestSpawn: gorma-spawn answers the first new rank from a Spawner; a refusal reaches
// the client as ErrRefused with the Handler's words; a Handler that is no Spawner
// refuses; a PMI-1 connection may not ask.
func TestSpawn(t *testing.T) {
	h := &spawnHandler{jobHandler: newJob(2), room: 3}
	s := serve(t, h)
	c, err := Dial(ctx(t), s.Path(), 1, "job1")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if first, err := c.Spawn(ctx(t), 2); err != nil || first != 2 {
		t.Fatalf("spawn 2: first %d, %v; want 2", first, err)
	}
	if first, err := c.Spawn(ctx(t), 1); err != nil || first != 4 {
		t.Fatalf("spawn 1: first %d, %v; want 4", first, err)
	}
	_, err = c.Spawn(ctx(t), 2)
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "no free slots for 2 ranks") || strings.Count(err.Error(), "pmi:") != 1 {
		t.Errorf("spawn past the room: %v, want ErrRefused naming the free slots, with one pmi: prefix", err)
	}
	if _, err := c.Spawn(ctx(t), 0); err == nil || !strings.Contains(err.Error(), "at least 1 rank") {
		t.Errorf("spawn of 0 ranks: %v, want a refusal asking for at least 1 rank", err)
	}
	if got := strings.Join(h.asks, " "); got != "1:2 1:1 1:2" {
		t.Errorf("the Spawner was asked %q, want \"1:2 1:1 1:2\"", got)
	}

	plain := serve(t, newJob(1))
	c1, err := Dial(ctx(t), plain.Path(), 0, "job1")
	if err != nil {
		t.Fatal(err)
	}
	defer c1.Close()
	if _, err := c1.Spawn(ctx(t), 1); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "does not spawn") {
		t.Errorf("spawn from a Handler that is no Spawner: %v, want ErrRefused", err)
	}
}

// TestExchangeGrowPublish: a grown Exchange waits for the new ranks in its rounds;
// Publish makes puts visible without a round, the lowest rank owning a key; Snapshot
// copies the store's tables.
func TestExchangeGrowPublish(t *testing.T) {
	x := NewExchange(1)
	if err := x.Fence(context.Background(), 0, map[string][]byte{"card": []byte("a")}); err != nil {
		t.Fatal(err)
	}
	x.Grow(3)
	x.Grow(2) // never shrinks
	x.Publish(map[int]map[string][]byte{2: {"card": []byte("c"), "k": []byte("2")}, 1: {"card": []byte("b")}})
	for r, want := range []string{"a", "b", "c"} {
		if v, err := x.Get(r, "card"); err != nil || string(v) != want {
			t.Errorf("rank %d's card: %q, %v; want %q", r, v, err, want)
		}
	}
	if v, err := x.Get(AnyRank, "card"); err != nil || string(v) != "a" {
		t.Errorf("the job's card: %q, %v; want rank 0's", v, err)
	}
	snap := x.Snapshot()
	snap[2]["k"] = []byte("y")
	if v, _ := x.Get(2, "k"); string(v) != "2" {
		t.Errorf("Snapshot's copy changed the store: %q", v)
	}
	if len(snap) != 3 {
		t.Errorf("snapshot of %d ranks, want 3", len(snap))
	}
	done := make(chan error, 3)
	for r := range 3 {
		go func() { done <- x.Fence(context.Background(), r, nil) }()
	}
	for range 3 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}
