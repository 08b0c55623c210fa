package main

import (
	"github.com/gorma-hpc/gorma/collectives"
	"github.com/gorma-hpc/gorma/runtime"
)

// kind is an element type with an operator and its sequential reference.
type kind[T runtime.Elem] struct {
	name    string
	op      collectives.Op[T]
	combine func(a, b T) T   // the reference: one element of a ∘ b
	value   func(h uint64) T // an input element from a hash
}

// input is rank's element i in the call with sequence number seq.
func (k kind[T]) input(rank, i, seq int) T {
	return k.value(mix(uint64(rank)<<48 ^ uint64(seq)<<32 ^ uint64(i)))
}

// poison is what a receive buffer holds before a call.
func (k kind[T]) poison() T { return k.value(0x5eed_dead_beef_f00d) }

// reduced is element i of x0 ∘ x1 ∘ ... ∘ x(p-1), in rank order.
func (k kind[T]) reduced(p, i, seq int) T {
	v := k.input(0, i, seq)
	for r := 1; r < p; r++ {
		v = k.combine(v, k.input(r, i, seq))
	}
	return v
}

// mix is splitmix64's finalizer.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// affine is an associative, non-commutative operator on int64: an element packs the map
// x -> a*x + b mod 2^32 (a in the high half, b in the low half), and a ∘ b applies a
// first, then b.
func affine(x, y int64) int64 {
	a1, b1 := uint32(uint64(x)>>32), uint32(x)
	a2, b2 := uint32(uint64(y)>>32), uint32(y)
	return int64(uint64(a1*a2)<<32 | uint64(a2*b1+b2))
}

var affineOp = collectives.NewOp("affine", func(inout, in []int64) {
	for i := range inout {
		inout[i] = affine(inout[i], in[i])
	}
}, false)

// affineValue makes a odd, so that no product of maps collapses to a constant.
func affineValue(h uint64) int64 { return int64(h | 1<<32) }
