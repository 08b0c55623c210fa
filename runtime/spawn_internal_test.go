package runtime

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
)

// TestSpawnNeedsGolaunch: in a world of one and under a foreign process manager, Spawn
// fails at once with ErrInvalid saying that it needs golaunch; Parent is nil there, and
// Spawn refuses an intercommunicator and a count below 1.
func TestSpawnNeedsGolaunch(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(30*time.Second))
	defer cancel()
	one := worldOfOne(config{}, options{getenv: func(string) string { return "" }, exit: func(int) {}})
	if _, err := one.Spawn(ctx, 1); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "Spawn needs golaunch: rank 0 was not started by a launcher") {
		t.Errorf("spawn in a world of one: %v", err)
	}
	if _, err := one.Spawn(ctx, 0); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "want at least 1") {
		t.Errorf("spawn of 0 ranks: %v", err)
	}
	if one.Parent() != nil {
		t.Errorf("a world of one has a parent")
	}

	worlds := startFake(t, ctx, newFakePM(t, 2, "(vector,(0,1,2))"), make([]string, 2))
	errs := make(chan error, 2)
	for _, w := range worlds {
		go func() { _, err := w.Spawn(ctx, 2); errs <- err }()
	}
	for range worlds {
		if err := <-errs; !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "Spawn needs golaunch") ||
			!strings.Contains(err.Error(), "Slurm, Hydra or Flux") {
			t.Errorf("spawn under a foreign PM: %v", err)
		}
	}
	for _, w := range worlds {
		if w.Parent() != nil {
			t.Errorf("rank %d has a parent", w.Rank())
		}
	}
	ringAndFinalize(t, ctx, worlds)
}

// TestSpawnAnswer: rank 0's answer carries the first rank and the cards, or the failure's
// words, to the World's other ranks; a cut or garbled answer is an error, never a panic.
func TestSpawnAnswer(t *testing.T) {
	cards := [][]byte{(&card{host: "h1", pid: 7, cm: "10.0.0.2:4000"}).encode(), (&card{host: "h2", cpu: -1}).encode()}
	b := encodeAnswer(5, cards)
	first, got, err := decodeAnswer(b, 2)
	if err != nil || first != 5 || got[0].host != "h1" || got[0].cm != "10.0.0.2:4000" || got[1].host != "h2" || got[1].cpu != -1 {
		t.Fatalf("round trip: first %d, cards %+v, %v", first, got, err)
	}
	if _, _, err := decodeAnswer(failAnswer("no free slots for 2 ranks"), 2); !errors.Is(err, ErrInvalid) || !strings.HasSuffix(err.Error(), ": no free slots for 2 ranks") {
		t.Errorf("a failure: %v", err)
	}
	for n := range len(b) {
		if _, _, err := decodeAnswer(b[:n], 2); err == nil {
			t.Errorf("an answer cut to %d of %d bytes decoded", n, len(b))
		}
	}
	if _, _, err := decodeAnswer(b, 3); err == nil {
		t.Errorf("an answer of 2 cards decoded as 3")
	}
}

// FuzzSpawnAnswer: decodeAnswer never panics, and what it accepts re-encodes to the
// cards it read.
func FuzzSpawnAnswer(f *testing.F) {
	f.Add(encodeAnswer(4, [][]byte{(&card{host: "a"}).encode()}), 1)
	f.Add(failAnswer("refused"), 2)
	f.Add([]byte{1, 0, 0, 0, 0, 3, 0, 'G', 'R', 'M'}, 1)
	f.Fuzz(func(t *testing.T, b []byte, n int) {
		if n < 0 || n > 64 {
			return
		}
		first, cards, err := decodeAnswer(b, n)
		if err != nil {
			return
		}
		enc := make([][]byte, len(cards))
		for i := range cards {
			enc[i] = cards[i].encode()
		}
		if again := encodeAnswer(first, enc); !bytes.HasPrefix(b, again[:5]) {
			t.Errorf("first rank %d re-encodes as %x, read from %x", first, again[:5], b[:5])
		}
	})
}
