package launcher

import (
	"bytes"
	"slices"
	"testing"

	"github.com/gorma-hpc/gorma/pmi"
)

// TestFenceDoneWire: a fence-done payload carries the round and every agent's card block
// as they came; its puts are the blocks' cards, and a rank in two blocks is refused.
func TestFenceDoneWire(t *testing.T) {
	b0, _ := pmi.AppendCards(nil, []pmi.Card{{Rank: 0, Key: "card", Value: []byte("0a0b")}, {Rank: 1, Key: "card", Value: []byte("0a0c")}})
	b1, _ := pmi.AppendCards(nil, []pmi.Card{{Rank: 2, Key: "k", Value: []byte("two")}})
	p := appendFenceDone(nil, 3, [][]byte{b0, b1})
	m, err := decodeFenceDone(p)
	if err != nil || m.Round != 3 || len(m.Blocks) != 2 || !bytes.Equal(m.Blocks[0], b0) || !bytes.Equal(m.Blocks[1], b1) {
		t.Fatalf("decoded %+v, %v", m, err)
	}
	puts, err := m.puts(4)
	if err != nil || string(puts[1]["card"]) != "0a0c" || string(puts[2]["k"]) != "two" || len(puts) != 3 {
		t.Fatalf("puts %v, %v", puts, err)
	}
	if m, err := decodeFenceDone(appendFenceDone(nil, 9, nil)); err != nil || m.Round != 9 || len(m.Blocks) != 0 {
		t.Fatalf("a barrier's payload: %+v, %v", m, err)
	}
	if _, err := decodeFenceDone(append(p, 0)); err == nil {
		t.Fatal("a trailing byte was taken")
	}
	if _, err := decodeFenceDone(p[:len(p)-1]); err == nil {
		t.Fatal("a short block was taken")
	}
	twice, _ := decodeFenceDone(appendFenceDone(nil, 1, [][]byte{b1, b1}))
	if _, err := twice.puts(4); err == nil {
		t.Fatal("a rank in two blocks was taken")
	}
	if _, err := m.puts(2); err == nil {
		t.Fatal("a rank beyond the job's size was taken")
	}
}

func FuzzFenceDone(f *testing.F) {
	b, _ := pmi.AppendCards(nil, []pmi.Card{{Rank: 1, Key: "k", Value: []byte{1, 2}}})
	f.Add(appendFenceDone(nil, 2, [][]byte{b}))
	f.Add(appendFenceDone(nil, 1, nil))
	f.Fuzz(func(t *testing.T, p []byte) {
		m, err := decodeFenceDone(p)
		if err != nil {
			return
		}
		again, err := decodeFenceDone(appendFenceDone(nil, m.Round, m.Blocks))
		if err != nil || again.Round != m.Round || len(again.Blocks) != len(m.Blocks) {
			t.Fatalf("%q decodes to %+v, which does not survive encoding: %+v, %v", p, m, again, err)
		}
		m.puts(16)
	})
}

// TestLocalRound: an agent tells of its round once every live rank it runs has fenced,
// with the gathering ranks' puts in the block; a rank failed (--ft) is not waited for,
// and ranks added to a round told of already go in a frame of their own.
func TestLocalRound(t *testing.T) {
	j := &agentJob{local: []int{4, 5, 6}, failed: map[int]bool{}}
	note := func(round, rank int, gather map[string][]byte) *agentFenceMsg {
		t.Helper()
		m, err := j.fencedLocked(round, rank, gather)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	if m := note(1, 5, map[string][]byte{"k": []byte("five")}); m != nil {
		t.Fatalf("told with ranks 4 and 6 out: %+v", m)
	}
	if m := note(1, 4, nil); m != nil {
		t.Fatalf("told with rank 6 out: %+v", m)
	}
	j.failed[6] = true
	m, err := j.roundReadyLocked()
	if err != nil || m == nil || m.Round != 1 || !slices.Equal(m.Ranks, []int{4, 5}) {
		t.Fatalf("after rank 6 failed: %+v, %v", m, err)
	}
	cards, err := pmi.DecodeCards(m.Block, 8, 1<<10)
	if err != nil || len(cards) != 1 || cards[0].Rank != 5 || string(cards[0].Value) != "five" {
		t.Fatalf("block %v, %v", cards, err)
	}
	if m, _ := j.roundReadyLocked(); m != nil {
		t.Fatalf("told twice: %+v", m)
	}
	j.local = append(j.local, 7) // a spawn placed rank 7 here during the round
	if m := note(1, 7, nil); m == nil || !slices.Equal(m.Ranks, []int{7}) || m.Block != nil {
		t.Fatalf("the spawned rank's fence: %+v", m)
	}
	if m := note(2, 4, nil); m != nil {
		t.Fatalf("round 2 told with ranks 5 and 7 out: %+v", m)
	}
}
