package ulfm

import "math/bits"

// Bitmap is a set of members, bit i of word i/64 standing for member i. The machines
// size every Bitmap they make to the group (Words(n) words); a shorter one reads as
// zeros past its end.
type Bitmap []uint64

// Words is the number of 64-bit words that hold n bits.
func Words(n int) int { return (n + 63) / 64 }

// NewBitmap returns an empty Bitmap for a group of n members.
func NewBitmap(n int) Bitmap { return make(Bitmap, Words(n)) }

// Has reports whether member i is in b.
func (b Bitmap) Has(i int) bool {
	return i >= 0 && i/64 < len(b) && b[i/64]&(1<<(i%64)) != 0
}

// Set adds member i to b. It panics if b has no bit for i.
func (b Bitmap) Set(i int) { b[i/64] |= 1 << (i % 64) }

// Union adds the members of o to b. It panics if o has a word past b's end.
func (b Bitmap) Union(o Bitmap) {
	for i, w := range o {
		b[i] |= w
	}
}

// Members lists the members of b in ascending order.
func (b Bitmap) Members() []int {
	out := make([]int, 0, b.Len())
	for i, w := range b {
		for w != 0 {
			out = append(out, i*64+bits.TrailingZeros64(w))
			w &= w - 1
		}
	}
	return out
}

// Len is the number of members in b.
func (b Bitmap) Len() int {
	n := 0
	for _, w := range b {
		n += bits.OnesCount64(w)
	}
	return n
}

// Clone returns a copy of b that shares no memory with it.
func (b Bitmap) Clone() Bitmap {
	if b == nil {
		return nil
	}
	return append(Bitmap(nil), b...)
}

// fits reports whether b has no member at or past n.
func (b Bitmap) fits(n int) bool {
	if len(b) > Words(n) {
		return false
	}
	if len(b) == Words(n) && n%64 != 0 {
		return b[len(b)-1]>>(n%64) == 0
	}
	return true
}
