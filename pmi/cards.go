package pmi

import (
	"cmp"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"slices"
)

// Card is one published value: rank's value under key, as a fence publishes it.
type Card struct {
	Rank  int
	Key   string
	Value []byte
}

// CardsOf returns the cards of puts (by rank, then key, as an Exchange holds them) in the
// order AppendCards takes: by rank, then by key. The values are shared, not copied.
func CardsOf(puts map[int]map[string][]byte) []Card {
	var cards []Card
	for r, p := range puts {
		for k, v := range p {
			cards = append(cards, Card{Rank: r, Key: k, Value: v})
		}
	}
	slices.SortFunc(cards, compareCards)
	return cards
}

// PutsOf is the inverse of CardsOf: the cards by rank, then key. The values are shared.
func PutsOf(cards []Card) map[int]map[string][]byte {
	puts := make(map[int]map[string][]byte)
	for _, c := range cards {
		p := puts[c.Rank]
		if p == nil {
			p = make(map[string][]byte)
			puts[c.Rank] = p
		}
		p[c.Key] = c.Value
	}
	return puts
}

func compareCards(a, b Card) int {
	if c := cmp.Compare(a.Rank, b.Rank); c != 0 {
		return c
	}
	return cmp.Compare(a.Key, b.Key)
}

// The card block is the compact binary form in which cards travel between agents. Every
// integer is an unsigned LEB128 varint (encoding/binary's Uvarint):
//
//	block = "GC" version(1 byte) count entry...
//	entry = rankDelta keyRef [keyLen keyBytes] form rawLen body
//
// rankDelta is the rank minus the previous entry's (the first entry's: its rank); keyRef
// indexes the keys the block has named so far, and the next index names a new key, whose
// length and bytes follow. Entries are sorted by rank, then key, without duplicates. form's
// bit cardHex says the value is lowercase hex text (a gorma rank's card on the PMI wire),
// carried as its rawLen bytes; the decoder rebuilds the text. Bit cardDelta says body
// describes the raw bytes against the raw bytes of the key's previous value in the block
// (its base): ops until rawLen bytes are made, each op an even 2n (copy n bytes of the base
// at the same offset) or an odd 2n+1 followed by n literal bytes. Without cardDelta, body
// is the rawLen bytes. Cards of ranks of one host differ in a few fields only (pid, port,
// processor), so most of a card is a copy.
const (
	cardMagic   = "GC"
	cardVersion = 1

	cardHex   = 1 << 0
	cardDelta = 1 << 1
	cardForms = cardHex | cardDelta

	// cardMinRun is the shortest run of equal bytes a delta copies; a shorter one costs
	// more as an op than as literal bytes.
	cardMinRun = 3
)

// AppendCards appends the block of cards to dst. The cards must be sorted by rank, then
// key (CardsOf's order), without duplicates, with ranks from 0 and keys of 1 to KeyLenMax
// bytes.
func AppendCards(dst []byte, cards []Card) ([]byte, error) {
	dst = append(dst, cardMagic...)
	dst = append(dst, cardVersion)
	dst = binary.AppendUvarint(dst, uint64(len(cards)))
	keys := map[string]int{}
	base := map[string][]byte{} // a key's previous raw value
	var raw, ops []byte
	for i, c := range cards {
		if c.Rank < 0 || len(c.Key) == 0 || len(c.Key) > KeyLenMax {
			return nil, fmt.Errorf("pmi: card of rank %d under a key of %d bytes", c.Rank, len(c.Key))
		}
		prev := 0
		if i > 0 {
			if compareCards(cards[i-1], c) >= 0 {
				return nil, fmt.Errorf("pmi: cards out of order: rank %d key %q after rank %d key %q",
					c.Rank, c.Key, cards[i-1].Rank, cards[i-1].Key)
			}
			prev = cards[i-1].Rank
		}
		dst = binary.AppendUvarint(dst, uint64(c.Rank-prev))
		ref, ok := keys[c.Key]
		if !ok {
			ref = len(keys)
			keys[c.Key] = ref
		}
		dst = binary.AppendUvarint(dst, uint64(ref))
		if !ok {
			dst = binary.AppendUvarint(dst, uint64(len(c.Key)))
			dst = append(dst, c.Key...)
		}
		form := byte(0)
		raw = append(raw[:0], c.Value...)
		if isLowerHex(c.Value) {
			form |= cardHex
			raw = raw[:hex.DecodedLen(len(c.Value))]
			hex.Decode(raw, c.Value)
		}
		b, hasBase := base[c.Key]
		if hasBase {
			ops = appendDelta(ops[:0], b, raw)
			if len(ops) < len(raw) {
				form |= cardDelta
			}
		}
		dst = append(dst, form)
		dst = binary.AppendUvarint(dst, uint64(len(raw)))
		if form&cardDelta != 0 {
			dst = append(dst, ops...)
		} else {
			dst = append(dst, raw...)
		}
		base[c.Key], raw = raw, b[:0] // raw's buffer becomes the key's base
	}
	return dst, nil
}

// isLowerHex reports whether v is non-empty lowercase hex text of even length, which
// hex.EncodeToString gives back from its bytes.
func isLowerHex(v []byte) bool {
	if len(v) == 0 || len(v)%2 != 0 {
		return false
	}
	for _, c := range v {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// appendDelta appends the ops that make v from base.
func appendDelta(dst, base, v []byte) []byte {
	lit := 0 // start of the pending literal run
	flush := func(end int) {
		if end > lit {
			dst = binary.AppendUvarint(dst, uint64(end-lit)<<1|1)
			dst = append(dst, v[lit:end]...)
		}
	}
	for i := 0; i < len(v); {
		n := 0
		for i+n < len(v) && i+n < len(base) && v[i+n] == base[i+n] {
			n++
		}
		if n >= cardMinRun || n > 0 && i+n == len(v) && i == lit {
			flush(i)
			dst = binary.AppendUvarint(dst, uint64(n)<<1)
			i += n
			lit = i
			continue
		}
		i += max(n, 1)
	}
	flush(len(v))
	return dst
}

// DecodeCards decodes a card block of a job of size ranks. It makes at most limit bytes
// of values (hex text counted as text), so a small block cannot ask for a large memory.
// The values share one new buffer, none of b.
func DecodeCards(b []byte, size, limit int) ([]Card, error) {
	if size < 1 {
		return nil, fmt.Errorf("pmi: card block of a job of %d ranks", size)
	}
	d := cardDec{b: b}
	if len(b) < len(cardMagic)+1 || string(b[:len(cardMagic)]) != cardMagic {
		return nil, fmt.Errorf("%w: not a card block (%d bytes)", ErrProtocol, len(b))
	}
	if v := b[len(cardMagic)]; v != cardVersion {
		return nil, fmt.Errorf("%w: card block version %d, this build speaks %d", ErrProtocol, v, cardVersion)
	}
	d.b = b[len(cardMagic)+1:]
	n := d.uvarint(uint64(len(d.b)/4), "card count") // an entry takes at least 4 bytes
	cards := make([]Card, 0, n)
	var keys []string
	var raws [][]byte             // raw bytes by key index: the key's previous value
	var scratch []byte            // the next value's raw bytes
	var arena []byte              // every value's bytes, grown as needed
	spans := make([][2]int, 0, n) // each card's value in arena
	rank, total := 0, 0           // total: bytes of values made
	for i := 0; i < int(n) && d.err == nil; i++ {
		rank += int(d.uvarint(uint64(size-1-rank), "rank delta"))
		ref := int(d.uvarint(uint64(len(keys)), "key index"))
		if d.err != nil {
			break
		}
		if ref == len(keys) {
			k := d.bytes(d.uvarint(KeyLenMax, "key length"), "key")
			if d.err == nil && len(k) == 0 {
				d.fail("empty key")
			}
			keys = append(keys, string(k))
			raws = append(raws, nil)
		}
		form := d.byte("form")
		if d.err == nil && form&^cardForms != 0 {
			d.fail(fmt.Sprintf("form %#x", form))
		}
		rawLen := int(d.uvarint(uint64(limit), "value length"))
		if d.err != nil {
			break
		}
		c := Card{Rank: rank, Key: keys[ref]}
		if i > 0 && compareCards(cards[i-1], c) >= 0 {
			d.fail(fmt.Sprintf("rank %d key %q out of order", rank, c.Key))
			break
		}
		var raw []byte // made in scratch, which then becomes the key's base
		if form&cardDelta != 0 {
			raw = d.delta(scratch[:0], raws[ref], rawLen)
		} else {
			raw = append(scratch[:0], d.bytes(uint64(rawLen), "value")...)
		}
		made := len(raw)
		if form&cardHex != 0 {
			made *= 2
			if made == 0 {
				d.fail("empty hex value")
			}
		}
		if total += made; d.err == nil && total > limit {
			d.fail(fmt.Sprintf("values of more than %d bytes", limit))
		}
		if d.err != nil {
			break
		}
		raws[ref], scratch = raw, raws[ref][:0]
		start := len(arena)
		if form&cardHex != 0 {
			arena = hex.AppendEncode(arena, raw)
		} else {
			arena = append(arena, raw...)
		}
		spans = append(spans, [2]int{start, len(arena)})
		cards = append(cards, c)
	}
	if d.err == nil && len(d.b) != 0 {
		d.fail(fmt.Sprintf("%d bytes after the last card", len(d.b)))
	}
	if d.err != nil {
		return nil, fmt.Errorf("%w: card block: %v", ErrProtocol, d.err)
	}
	for i, s := range spans {
		cards[i].Value = arena[s[0]:s[1]:s[1]]
	}
	return cards, nil
}

// cardDec reads a card block; the first error sticks and later reads return zero values.
type cardDec struct {
	b   []byte
	err error
}

func (d *cardDec) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("%s", what)
	}
}

// uvarint reads a varint of at most max.
func (d *cardDec) uvarint(max uint64, what string) uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	switch {
	case n <= 0:
		d.fail("truncated or overlong " + what)
		return 0
	case v > max:
		d.fail(fmt.Sprintf("%s %d exceeds %d", what, v, max))
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *cardDec) byte(what string) byte {
	if d.err == nil && len(d.b) == 0 {
		d.fail("truncated " + what)
	}
	if d.err != nil {
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

// bytes returns the next n bytes of the block, not copied.
func (d *cardDec) bytes(n uint64, what string) []byte {
	if d.err == nil && n > uint64(len(d.b)) {
		d.fail(fmt.Sprintf("%s of %d bytes, %d present", what, n, len(d.b)))
	}
	if d.err != nil {
		return nil
	}
	p := d.b[:n:n]
	d.b = d.b[n:]
	return p
}

// delta appends to out the n bytes that base and the ops that follow make.
func (d *cardDec) delta(out, base []byte, n int) []byte {
	for len(out) < n && d.err == nil {
		op := d.uvarint(uint64(n-len(out))<<1|1, "delta op")
		k := int(op >> 1)
		switch {
		case d.err != nil:
		case k == 0:
			d.fail("empty delta op")
		case op&1 == 1:
			out = append(out, d.bytes(uint64(k), "literal")...)
		case len(out)+k > len(base):
			d.fail(fmt.Sprintf("copy of %d bytes at %d from a base of %d", k, len(out), len(base)))
		default:
			out = append(out, base[len(out):len(out)+k]...)
		}
	}
	return out
}
