package ulfm

import (
	"slices"
	"testing"
)

func TestBitmap(t *testing.T) {
	b := NewBitmap(130)
	if len(b) != 3 || b.Len() != 0 || b.Has(0) || b.Has(-1) || b.Has(500) {
		t.Fatalf("new bitmap of 130 members: %v", b)
	}
	for _, m := range []int{0, 63, 64, 129} {
		b.Set(m)
	}
	o := NewBitmap(130)
	o.Set(5)
	o.Set(64)
	b.Union(o)
	if got := b.Members(); !slices.Equal(got, []int{0, 5, 63, 64, 129}) || b.Len() != 5 {
		t.Fatalf("members %v, len %d", got, b.Len())
	}
	c := b.Clone()
	c.Set(1)
	if b.Has(1) || !c.Has(1) {
		t.Fatal("a clone shares memory with its original")
	}
	tests := []struct {
		b    Bitmap
		n    int
		fits bool
	}{
		{nil, 1, true},
		{Bitmap{1}, 1, true},
		{Bitmap{2}, 1, false},
		{Bitmap{1 << 63}, 64, true},
		{Bitmap{0, 0}, 64, false},
		{Bitmap{0, 1 << 1}, 66, true},
		{Bitmap{0, 1 << 2}, 66, false},
	}
	for _, tc := range tests {
		if got := tc.b.fits(tc.n); got != tc.fits {
			t.Errorf("%v fits %d members: %v, want %v", tc.b, tc.n, got, tc.fits)
		}
	}
}

// TestMisuse: calls that break the caller's contract panic with what was wrong.
func TestMisuse(t *testing.T) {
	tests := []struct {
		name string
		call func()
	}{
		{"member past the group", func() { NewAgreement(3, 3, 0, nil, nil) }},
		{"own index failed", func() { NewAgreement(1, 3, 0, nil, Bitmap{2}) }},
		{"failed member past the group", func() { NewAgreement(0, 3, 0, nil, Bitmap{8}) }},
		{"Recv before Start", func() { NewAgreement(0, 2, 0, nil, nil).Recv(1, Msg{Kind: KindAck, N: 2, Ballot: 1}) }},
		{"Start twice", func() { a := NewAgreement(0, 1, 0, nil, nil); a.Start(); a.Start() }},
		{"verdict on itself", func() { NewAgreement(0, 2, 0, nil, nil).Failed(0) }},
		{"message of another seq", func() {
			a := NewAgreement(0, 2, 5, nil, nil)
			a.Start()
			a.Recv(1, Msg{Kind: KindAck, Seq: 4, N: 2, Ballot: 1})
		}},
		{"value of another length", func() {
			a := NewAgreement(0, 2, 5, []uint64{1}, nil)
			a.Start()
			a.Recv(1, Msg{Kind: KindContrib, Seq: 5, N: 2, Ballot: 1, Value: Decision{Failed: NewBitmap(2)}})
		}},
		{"revoke from itself", func() { NewRevoke(1, 2, nil).Recv(1) }},
	}
	for _, tc := range tests {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", tc.name)
				}
			}()
			tc.call()
		}()
	}
}
