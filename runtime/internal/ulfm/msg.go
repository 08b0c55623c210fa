package ulfm

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Kind says what a Msg is and fixes its wire form. Kinds are append-only: a message whose
// layout changes takes a new Kind.
type Kind uint8

// The message kinds.
const (
	KindContrib Kind = 1 + iota // a member's state, to the coordinator it reports to
	KindQuery                   // a new coordinator asks a member for its state
	KindPropose                 // a coordinator's value, for every live member to accept
	KindAck                     // a member accepted the Propose of Ballot
	KindDecide                  // the agreed value; a decided member answers with it
	KindRevoke                  // the group is revoked
)

// kindEnd is one past the last Kind.
const kindEnd = KindRevoke + 1

var kindNames = [...]string{"Kind(0)", "Contrib", "Query", "Propose", "Ack", "Decide", "Revoke"}

// String returns the kind's name.
func (k Kind) String() string {
	if k < kindEnd {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// Limits that Decode enforces.
const (
	MaxMembers  = 1 << 22 // members in a group
	MaxAndWords = 1 << 17 // words of a contribution's And
)

// ErrMalformed is what every Decode error matches.
var ErrMalformed = errors.New("malformed ulfm message")

// Msg is one protocol message. The fields a Kind does not carry are zero.
type Msg struct {
	Kind Kind
	Seq  uint32 // the agreement's number on its group; 0 for Revoke
	N    uint32 // members in the group

	// Ballot is a coordinator's ballot (its index plus one): the coordinator that a
	// Contrib reports to, or that sent a Query or Propose, or whose Propose an Ack accepts.
	Ballot uint32

	// Value is the sender's contribution (Contrib), or the value proposed or decided.
	Value Decision

	// Accepted is the Ballot of the Propose a Contrib's sender accepted, 0 if none;
	// AcceptedValue is that Propose's Value.
	Accepted      uint32
	AcceptedValue Decision
}

// Send is a message for the caller to send to member To.
type Send struct {
	To int
	M  Msg
}

const headerLen = 1 + 4 + 4

func hasBallot(k Kind) bool {
	return k == KindContrib || k == KindQuery || k == KindPropose || k == KindAck
}
func hasValue(k Kind) bool { return k == KindContrib || k == KindPropose || k == KindDecide }

// Append appends m's wire form to b: Kind (1 byte), then Seq and N, then per Kind Ballot,
// Value, Accepted and AcceptedValue, as Decode reads them. Integers are little endian; a
// word list is its length (4 bytes) followed by its words (8 bytes each).
func (m *Msg) Append(b []byte) []byte {
	b = append(b, byte(m.Kind))
	b = binary.LittleEndian.AppendUint32(b, m.Seq)
	b = binary.LittleEndian.AppendUint32(b, m.N)
	if hasBallot(m.Kind) {
		b = binary.LittleEndian.AppendUint32(b, m.Ballot)
	}
	if hasValue(m.Kind) {
		b = appendValue(b, m.Value)
	}
	if m.Kind == KindContrib {
		b = binary.LittleEndian.AppendUint32(b, m.Accepted)
		if m.Accepted != 0 {
			b = appendValue(b, m.AcceptedValue)
		}
	}
	return b
}

func appendValue(b []byte, v Decision) []byte {
	return appendWords(appendWords(b, v.And), v.Failed)
}

func appendWords(b []byte, w []uint64) []byte {
	b = binary.LittleEndian.AppendUint32(b, uint32(len(w)))
	for _, x := range w {
		b = binary.LittleEndian.AppendUint64(b, x)
	}
	return b
}

// Decode reads one message that fills b exactly. It rejects an unknown Kind, a short or
// long b, N outside [1, MaxMembers], a Ballot outside [1, N], an Accepted past N, an And
// longer than MaxAndWords, and a failed set with a member at or past N. An empty word
// list decodes as nil.
func Decode(b []byte) (Msg, error) {
	d := decoder{b: b}
	var m Msg
	if len(b) < headerLen {
		return m, d.fail("%d bytes, shorter than the %d-byte header", len(b), headerLen)
	}
	m.Kind = Kind(b[0])
	m.Seq = binary.LittleEndian.Uint32(b[1:])
	m.N = binary.LittleEndian.Uint32(b[5:])
	d.b = b[headerLen:]
	if m.Kind == 0 || m.Kind >= kindEnd {
		return Msg{}, d.fail("unknown kind %d", uint8(m.Kind))
	}
	if m.N == 0 || m.N > MaxMembers {
		return Msg{}, d.fail("%v for %d members, outside [1, %d]", m.Kind, m.N, MaxMembers)
	}
	n := int(m.N)
	if hasBallot(m.Kind) {
		m.Ballot = d.u32()
		if d.err == nil && (m.Ballot == 0 || m.Ballot > m.N) {
			return Msg{}, d.fail("%v ballot %d outside [1, %d]", m.Kind, m.Ballot, m.N)
		}
	}
	if hasValue(m.Kind) {
		m.Value = d.value(n)
	}
	if m.Kind == KindContrib {
		m.Accepted = d.u32()
		if d.err == nil && m.Accepted > m.N {
			return Msg{}, d.fail("Contrib accepted ballot %d past %d", m.Accepted, m.N)
		}
		if m.Accepted != 0 {
			m.AcceptedValue = d.value(n)
		}
	}
	if d.err != nil {
		return Msg{}, d.err
	}
	if len(d.b) != 0 {
		return Msg{}, d.fail("%v has %d trailing bytes", m.Kind, len(d.b))
	}
	return m, nil
}

// decoder reads b front to back; its first error sticks and later reads return zeros.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(format string, args ...any) error {
	if d.err == nil {
		d.err = fmt.Errorf("%w: "+format, append([]any{ErrMalformed}, args...)...)
	}
	return d.err
}

func (d *decoder) u32() uint32 {
	if d.err != nil {
		return 0
	}
	if len(d.b) < 4 {
		d.fail("truncated: %d bytes left for a 4-byte field", len(d.b))
		return 0
	}
	x := binary.LittleEndian.Uint32(d.b)
	d.b = d.b[4:]
	return x
}

// words reads a word list of at most max words.
func (d *decoder) words(max int, what string) []uint64 {
	c := d.u32()
	if d.err != nil {
		return nil
	}
	if uint64(c) > uint64(max) {
		d.fail("%s of %d words, more than %d", what, c, max)
		return nil
	}
	if uint64(len(d.b)) < 8*uint64(c) {
		d.fail("truncated: %s of %d words in %d bytes", what, c, len(d.b))
		return nil
	}
	if c == 0 {
		return nil
	}
	w := make([]uint64, c)
	for i := range w {
		w[i] = binary.LittleEndian.Uint64(d.b[8*i:])
	}
	d.b = d.b[8*c:]
	return w
}

func (d *decoder) value(n int) Decision {
	and := d.words(MaxAndWords, "And")
	failed := Bitmap(d.words(Words(n), "failed set"))
	if d.err == nil && !failed.fits(n) {
		d.fail("failed set names a member at or past %d", n)
	}
	return Decision{And: and, Failed: failed}
}
