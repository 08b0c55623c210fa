package ulfm

import (
	"bytes"
	"encoding/binary"
	"errors"
	"reflect"
	"testing"
)

// sampleMsgs returns one message of every kind, as the machines make them.
func sampleMsgs() []Msg {
	failed := NewBitmap(70)
	failed.Set(3)
	failed.Set(69)
	v := Decision{And: []uint64{1, ^uint64(0)}, Failed: failed}
	w := Decision{And: []uint64{0, 7}, Failed: NewBitmap(70)}
	return []Msg{
		{Kind: KindContrib, Seq: 9, N: 70, Ballot: 1, Value: v},
		{Kind: KindContrib, Seq: 9, N: 70, Ballot: 5, Value: v, Accepted: 2, AcceptedValue: w},
		{Kind: KindQuery, Seq: 1, N: 70, Ballot: 70},
		{Kind: KindPropose, Seq: 2, N: 70, Ballot: 3, Value: w},
		{Kind: KindAck, Seq: 3, N: 70, Ballot: 3},
		{Kind: KindDecide, Seq: 1<<32 - 1, N: 70, Value: v},
		{Kind: KindRevoke, N: 1},
		{Kind: KindDecide, N: 1, Value: Decision{Failed: NewBitmap(1)}},
	}
}

func TestMsgRoundTrip(t *testing.T) {
	for _, m := range sampleMsgs() {
		b := m.Append(nil)
		got, err := Decode(b)
		if err != nil {
			t.Fatalf("%v: %v", m.Kind, err)
		}
		if !reflect.DeepEqual(got, m) {
			t.Fatalf("%v: decoded %+v, want %+v", m.Kind, got, m)
		}
	}
}

// TestDecodeRejects: each malformed message names what is wrong.
func TestDecodeRejects(t *testing.T) {
	contrib := sampleMsgs()[0]
	good := contrib.Append(nil)
	// Offsets in good: header 9, ballot 4, And count at 13, And words at 17..33, Failed
	// count at 33, Failed words at 37..53, Accepted at 53.
	patch := func(off int, v uint32) []byte {
		b := bytes.Clone(good)
		binary.LittleEndian.PutUint32(b[off:], v)
		return b
	}
	high := bytes.Clone(good)
	binary.LittleEndian.PutUint64(high[45:], 1<<6) // member 70 of 70
	tests := []struct {
		name string
		b    []byte
	}{
		{"empty", nil},
		{"short header", good[:8]},
		{"kind 0", append([]byte{0}, good[1:]...)},
		{"unknown kind", append([]byte{byte(kindEnd)}, good[1:]...)},
		{"no members", patch(5, 0)},
		{"too many members", patch(5, MaxMembers+1)},
		{"ballot 0", patch(9, 0)},
		{"ballot past n", patch(9, 71)},
		{"And too long", patch(13, MaxAndWords+1)},
		{"And truncated", patch(13, 100)},
		{"failed set too long", patch(33, 3)},
		{"failed member past n", high},
		{"accepted past n", patch(53, 71)},
		{"accepted value missing", patch(53, 1)},
		{"trailing byte", append(bytes.Clone(good), 0)},
		{"truncated", good[:len(good)-1]},
	}
	for _, tc := range tests {
		if _, err := Decode(tc.b); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: Decode returned %v, want ErrMalformed", tc.name, err)
		}
	}
}

// FuzzDecode: Decode never panics, and what it accepts is the canonical wire form of
// what it returns.
func FuzzDecode(f *testing.F) {
	for _, m := range sampleMsgs() {
		b := m.Append(nil)
		f.Add(b)
		f.Add(b[:len(b)-1])
	}
	f.Add([]byte{byte(KindAck), 0, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0})
	f.Add([]byte{byte(KindDecide), 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := Decode(b)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v does not match ErrMalformed", err)
			}
			return
		}
		again := m.Append(nil)
		if !bytes.Equal(again, b) {
			t.Fatalf("Decode accepted % x, which encodes back as % x", b, again)
		}
		m2, err := Decode(again)
		if err != nil || !reflect.DeepEqual(m2, m) {
			t.Fatalf("round trip of %+v gave %+v, %v", m, m2, err)
		}
	})
}
