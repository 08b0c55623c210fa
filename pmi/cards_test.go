package pmi

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
)

// cardLimit bounds the values a test block may make.
const cardLimit = 64 << 20

// gormaCard is a card laid out as the runtime's (runtime/locality.go, card.encode, version
// 4) for local rank lr of host h: the fields a host's ranks share (boot id, namespaces, uid,
// the probe's address in one binary, eager limits, host name, IP), and those they do not
// (pid, the processor it is bound to, the listener's port).
func gormaCard(h, lr int, rng *rand.Rand) []byte {
	le := binary.LittleEndian
	b := []byte("GRMC\x04")
	boot := make([]byte, 16)
	for i := range boot {
		boot[i] = byte(h*131 + i*17)
	}
	b = append(b, boot...)
	b = le.AppendUint64(b, 4026531840+uint64(h%7))   // network namespace inode
	b = le.AppendUint64(b, 4026531836)               // pid namespace inode
	b = le.AppendUint32(b, 1000)                     // uid
	b = le.AppendUint32(b, uint32(200000+h*37+lr*3)) // pid
	b = le.AppendUint64(b, 0x4a7c20)                 // cmaProbe's address (one binary)
	b = le.AppendUint32(b, 16384)                    // eager limit over shm
	b = le.AppendUint32(b, 65536)                    // eager limit over tcp
	b = le.AppendUint32(b, uint32(lr))               // bound processor
	host := fmt.Sprintf("node%04d", h)
	b = le.AppendUint16(b, uint16(len(host)))
	b = append(b, host...)
	cm := fmt.Sprintf("10.1.%d.%d:%d", h>>8, h&255, 32768+rng.IntN(28000))
	b = le.AppendUint16(b, uint16(len(cm)))
	return append(b, cm...)
}

// simCard is launcher's control-plane simulation's card (ctlsim_test.go): 92 bytes of
// which every one differs from the next rank's.
func simCard(rank int) []byte {
	b := make([]byte, 92)
	copy(b, "GRMC")
	binary.LittleEndian.PutUint32(b[4:], uint32(rank))
	for i := 8; i < len(b); i++ {
		b[i] = byte(rank*31 + i)
	}
	return b
}

// hostCards is a round of hosts × perHost ranks, each putting its card under key as a
// gorma client does (hex text).
func hostCards(hosts, perHost int, card func(rank int) []byte) []Card {
	var cards []Card
	for r := range hosts * perHost {
		cards = append(cards, Card{Rank: r, Key: "gorma/card", Value: []byte(hex.EncodeToString(card(r)))})
	}
	return cards
}

func gormaCards(hosts, perHost int) []Card {
	rng := rand.New(rand.NewPCG(1, 2))
	return hostCards(hosts, perHost, func(r int) []byte { return gormaCard(r/perHost, r%perHost, rng) })
}

func roundTrip(t *testing.T, cards []Card, size int) []byte {
	t.Helper()
	b, err := AppendCards(nil, cards)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeCards(b, size, cardLimit)
	if err != nil {
		t.Fatalf("decode %x: %v", b, err)
	}
	if len(got) != len(cards) {
		t.Fatalf("%d cards back, %d in", len(got), len(cards))
	}
	for i := range cards {
		if got[i].Rank != cards[i].Rank || got[i].Key != cards[i].Key || !bytes.Equal(got[i].Value, cards[i].Value) {
			t.Fatalf("card %d: %+v back, %+v in", i, got[i], cards[i])
		}
	}
	return b
}

func TestCardsRoundTrip(t *testing.T) {
	long := bytes.Repeat([]byte("0123456789abcdef"), 300)
	for _, tc := range []struct {
		name  string
		cards []Card
	}{
		{"none", nil},
		{"one hex", []Card{{0, "gorma/card", []byte("00ff10")}}},
		{"empty value", []Card{{3, "k", nil}}},
		{"text", []Card{{0, "P0-businesscard", []byte("description#node1$port#40123$ifname#10.0.0.1$")}}},
		{"upper-case hex stays text", []Card{{0, "k", []byte("00FF")}, {1, "k", []byte("00ff")}}},
		{"odd hex stays text", []Card{{0, "k", []byte("abc")}, {1, "k", []byte("abd")}}},
		{"binary", []Card{{0, "pmix-data", []byte{0, 1, 2, 255, 254}}, {1, "pmix-data", []byte{0, 1, 2, 255, 253, 7}}}},
		{"keys per rank", []Card{{0, "a", []byte("x")}, {0, "b", []byte("y")}, {2, "a", []byte("x")}, {2, "c", nil}}},
		{"shorter and longer than the base", []Card{{0, "k", long}, {1, "k", long[:100]}, {2, "k", append(long[:10:10], long...)}}},
		{"hex after text", []Card{{0, "k", []byte("zz")}, {1, "k", []byte("7a7a")}}},
		{"gorma cards", gormaCards(4, 10)},
		{"simulation cards", hostCards(3, 10, simCard)},
	} {
		t.Run(tc.name, func(t *testing.T) { roundTrip(t, tc.cards, 1000) })
	}
}

func TestCardsOfPutsOf(t *testing.T) {
	puts := map[int]map[string][]byte{2: {"b": []byte("1"), "a": []byte("2")}, 0: {"z": nil}}
	cards := CardsOf(puts)
	want := []Card{{0, "z", nil}, {2, "a", []byte("2")}, {2, "b", []byte("1")}}
	if !reflect.DeepEqual(cards, want) {
		t.Fatalf("CardsOf: %+v, want %+v", cards, want)
	}
	if back := PutsOf(cards); !reflect.DeepEqual(back, puts) {
		t.Fatalf("PutsOf: %+v, want %+v", back, puts)
	}
}

func TestAppendCardsRefuses(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cards []Card
	}{
		{"unsorted", []Card{{1, "k", nil}, {0, "k", nil}}},
		{"duplicate", []Card{{1, "k", nil}, {1, "k", nil}}},
		{"negative rank", []Card{{-1, "k", nil}}},
		{"empty key", []Card{{0, "", nil}}},
		{"long key", []Card{{0, string(make([]byte, KeyLenMax+1)), nil}}},
	} {
		if _, err := AppendCards(nil, tc.cards); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
}

func TestDecodeCardsErrors(t *testing.T) {
	good, err := AppendCards(nil, []Card{{0, "k", []byte("aaaaaaaaaa")}, {5, "k", []byte("aaaaaaaaab")}})
	if err != nil {
		t.Fatal(err)
	}
	hdr := []byte("GC\x01")
	for _, tc := range []struct {
		name string
		b    []byte
		size int
	}{
		{"empty", nil, 10},
		{"magic", []byte("XC\x01\x00"), 10},
		{"version", []byte("GC\x02\x00"), 10},
		{"truncated", good[:len(good)-1], 10},
		{"trailing", append(good[:len(good):len(good)], 0), 10},
		{"rank beyond the job", good, 5},
		{"count beyond the bytes", append(hdr, 9, 0, 0, 1, 'k', 0, 0), 10},
		{"key index ahead", append(hdr, 1, 0, 1, 0, 0), 10},
		{"empty key", append(hdr, 1, 0, 0, 0, 0), 10},
		{"unknown form", append(hdr, 1, 0, 0, 1, 'k', 4, 0), 10},
		{"empty hex", append(hdr, 1, 0, 0, 1, 'k', cardHex, 0), 10},
		{"duplicate", append(hdr, 2, 0, 0, 1, 'k', 0, 0, 0, 0, 0, 0), 10},
		{"copy without a base", append(hdr, 1, 0, 0, 1, 'k', cardDelta, 2, 4), 10},
		{"empty op", append(hdr, 1, 0, 0, 1, 'k', cardDelta, 2, 0), 10},
		{"op past the value", append(hdr, 1, 0, 0, 1, 'k', cardDelta, 1, 5, 'a', 'b'), 10},
		{"size", good, 0},
	} {
		if _, err := DecodeCards(tc.b, tc.size, cardLimit); err == nil {
			t.Errorf("%s: %x decoded", tc.name, tc.b)
		} else if tc.size > 0 && !errors.Is(err, ErrProtocol) {
			t.Errorf("%s: %v is not ErrProtocol", tc.name, err)
		}
	}
	if _, err := DecodeCards(good, 10, 19); err == nil {
		t.Error("20 bytes of values decoded under a limit of 19")
	}
}

// TestCardsSize pins the bytes per card of a round of 1,000 hosts × 10 ranks: runtime-like
// cards (92 to 100 bytes, hex on the PMI wire) and the control-plane simulation's (92
// bytes, no two alike), against the JSON of the control protocol's fence frames (base64
// of the hex text). BenchmarkCards reports the same figures.
func TestCardsSize(t *testing.T) {
	for _, tc := range []struct {
		name      string
		cards     []Card
		atMost    float64 // bytes per card in a block
		jsonAbove float64 // bytes per card in the fence frames' JSON
	}{
		{"runtime-like", gormaCards(1000, 10), 24, 260},
		{"simulation", hostCards(1000, 10, simCard), 100, 260},
	} {
		b := roundTrip(t, tc.cards, len(tc.cards))
		j, err := json.Marshal(PutsOf(tc.cards))
		if err != nil {
			t.Fatal(err)
		}
		per, jper := float64(len(b))/float64(len(tc.cards)), float64(len(j))/float64(len(tc.cards))
		t.Logf("%s: %.1f B/card in a block, %.1f B/card as JSON", tc.name, per, jper)
		if per > tc.atMost || jper < tc.jsonAbove {
			t.Errorf("%s: %.1f B/card in a block (want at most %v), %.1f as JSON (want above %v)", tc.name, per, tc.atMost, jper, tc.jsonAbove)
		}
	}
}

// BenchmarkCards encodes and decodes one fence round of 1,000 hosts × 10 ranks of
// runtime-like cards:
//
//	go test -run '^$' -bench 'BenchmarkCards' ./pmi
func BenchmarkCards(b *testing.B) {
	cards := gormaCards(1000, 10)
	blk, err := AppendCards(nil, cards)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("encode", func(b *testing.B) {
		var buf []byte
		for b.Loop() {
			buf, _ = AppendCards(buf[:0], cards)
		}
		b.ReportMetric(float64(len(blk))/float64(len(cards)), "B/card")
	})
	b.Run("decode", func(b *testing.B) {
		for b.Loop() {
			if _, err := DecodeCards(blk, len(cards), cardLimit); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(len(blk))/float64(len(cards)), "B/card")
	})
}

// FuzzDecodeCards decodes any bytes without panicking or making more than its limit; what
// decodes encodes again to a block that decodes to the same cards.
func FuzzDecodeCards(f *testing.F) {
	for _, cards := range [][]Card{nil, gormaCards(2, 3), hostCards(1, 2, simCard),
		{{0, "a", []byte("x")}, {0, "b", nil}, {4, "a", []byte("xy")}}} {
		b, err := AppendCards(nil, cards)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("GC\x01\x01\x00\x00\x01k\x02\x04\x09"))
	const limit = 1 << 16
	f.Fuzz(func(t *testing.T, b []byte) {
		cards, err := DecodeCards(b, 64, limit)
		if err != nil {
			if !errors.Is(err, ErrProtocol) {
				t.Fatalf("error %v is not ErrProtocol", err)
			}
			return
		}
		total := 0
		for _, c := range cards {
			total += len(c.Value)
		}
		if total > limit {
			t.Fatalf("%d bytes of values under a limit of %d", total, limit)
		}
		again, err := AppendCards(nil, cards)
		if err != nil {
			t.Fatalf("decoded cards do not encode: %v", err)
		}
		back, err := DecodeCards(again, 64, limit)
		if err != nil || len(back) != len(cards) {
			t.Fatalf("re-encoded block: %d cards, %v; want %d", len(back), err, len(cards))
		}
		for i := range cards {
			if back[i].Rank != cards[i].Rank || back[i].Key != cards[i].Key || !bytes.Equal(back[i].Value, cards[i].Value) {
				t.Fatalf("card %d: %+v, then %+v", i, cards[i], back[i])
			}
		}
	})
}
