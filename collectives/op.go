package collectives

import (
	"cmp"

	"github.com/gorma-hpc/gorma/runtime"
)

// OpKind identifies a predefined operator, so that a layer with a faster path for one
// (a hardware fetch-and-add for Sum on integers, say) can recognise it. User-defined
// operators are OpUser.
type OpKind uint8

// Operator kinds.
const (
	OpUser OpKind = iota
	OpSum
	OpProd
	OpMin
	OpMax
	OpBand
	OpBor
	OpBxor
	OpReplace
	OpNoOp
)

var opKindNames = [...]string{"user", "sum", "prod", "min", "max", "band", "bor", "bxor", "replace", "no_op", "land", "lor", "lxor"}

// String returns the operator kind's name.
func (k OpKind) String() string {
	if int(k) < len(opKindNames) {
		return opKindNames[k]
	}
	return "OpKind(?)"
}

// Ordered are the element types with an order (Min, Max).
type Ordered interface {
	runtime.Elem
	cmp.Ordered
}

// Integer are the element types with bitwise operators (Band, Bor, Bxor).
type Integer interface {
	~int8 | ~int16 | ~int32 | ~int64 | ~uint8 | ~uint16 | ~uint32 | ~uint64
}

// Op is a reduction operator over elements of type T. The zero Op is invalid (Valid
// reports false).
type Op[T runtime.Elem] struct {
	name        string
	kind        OpKind
	commutative bool
	fn          func(inout, in []T)
	fn2         func(out, a, b []T) // out[i] = a[i] ∘ b[i] in one pass; nil for user operators
}

// combine sets out[i] = a[i] ∘ b[i] for i < len(out) (a and b at least as long). out may
// be a itself, not b. A predefined operator does it in one pass over the three slices;
// otherwise a is copied into out, then combined with b.
func (o Op[T]) combine(out, a, b []T) {
	if o.fn2 != nil {
		o.fn2(out, a, b)
		return
	}
	if len(out) > 0 && &out[0] != &a[0] {
		copy(out, a)
	}
	o.fn(out, b[:len(out)])
}

// NewOp returns a user-defined operator named name: fn(inout, in) must set inout[i] to
// inout[i] ∘ in[i] for every i (the slices have equal length), and must not retain
// either slice. Declare commutative only if a ∘ b == b ∘ a: non-commutative operators are
// applied in rank order by the collectives.
func NewOp[T runtime.Elem](name string, fn func(inout, in []T), commutative bool) Op[T] {
	return Op[T]{name: name, kind: OpUser, commutative: commutative, fn: fn}
}

// Name is the operator's name ("sum", or a user operator's name).
func (o Op[T]) Name() string { return o.name }

// Kind tells which predefined operator o is, or OpUser.
func (o Op[T]) Kind() OpKind { return o.kind }

// Commutative reports whether the operands may be combined in any order.
func (o Op[T]) Commutative() bool { return o.commutative }

// Valid reports whether o is an operator (not the zero Op).
func (o Op[T]) Valid() bool { return o.fn != nil }

// Apply sets inout[i] = inout[i] ∘ in[i] for i < min(len(inout), len(in)).
func (o Op[T]) Apply(inout, in []T) {
	n := min(len(inout), len(in))
	o.fn(inout[:n], in[:n])
}

// Sum adds.
func Sum[T runtime.Elem]() Op[T] { return Op[T]{"sum", OpSum, true, sumOf[T], sum2[T]} }

// Prod multiplies.
func Prod[T runtime.Elem]() Op[T] { return Op[T]{"prod", OpProd, true, prodOf[T], prod2[T]} }

// Min keeps the smaller element (for floating point, as Go's min: a NaN wins).
func Min[T Ordered]() Op[T] { return Op[T]{"min", OpMin, true, minOf[T], min2[T]} }

// Max keeps the larger element (for floating point, as Go's max: a NaN wins).
func Max[T Ordered]() Op[T] { return Op[T]{"max", OpMax, true, maxOf[T], max2[T]} }

// Band is bitwise and.
func Band[T Integer]() Op[T] { return Op[T]{"band", OpBand, true, bandOf[T], band2[T]} }

// Bor is bitwise or.
func Bor[T Integer]() Op[T] { return Op[T]{"bor", OpBor, true, borOf[T], bor2[T]} }

// Bxor is bitwise exclusive or.
func Bxor[T Integer]() Op[T] { return Op[T]{"bxor", OpBxor, true, bxorOf[T], bxor2[T]} }

// Replace keeps the second operand: inout[i] = in[i] (MPI_REPLACE). It is not
// commutative.
func Replace[T runtime.Elem]() Op[T] { return Op[T]{"replace", OpReplace, false, replaceOf[T], nil} }

// NoOp keeps the first operand (MPI_NO_OP): with GetAccumulate it fetches atomically.
func NoOp[T runtime.Elem]() Op[T] { return Op[T]{"no_op", OpNoOp, false, func(_, _ []T) {}, nil} }

// vecMin is the shortest vector (elements) handed to a vector kernel (sumVec and the
// others, op_amd64.go): below it the call costs more than the loop.
const vecMin = 16

func sumOf[T runtime.Elem](inout, in []T) {
	in = in[:len(inout)]
	k := sumVec(inout, inout, in)
	inout, in = inout[k:], in[k:]
	for i := range inout {
		inout[i] += in[i]
	}
}

func prodOf[T runtime.Elem](inout, in []T) {
	in = in[:len(inout)]
	for i := range inout {
		inout[i] *= in[i]
	}
}

func minOf[T Ordered](inout, in []T) {
	in = in[:len(inout)]
	k := minVec(inout, inout, in)
	inout, in = inout[k:], in[k:]
	for i := range inout {
		inout[i] = min(inout[i], in[i])
	}
}

func maxOf[T Ordered](inout, in []T) {
	in = in[:len(inout)]
	k := maxVec(inout, inout, in)
	inout, in = inout[k:], in[k:]
	for i := range inout {
		inout[i] = max(inout[i], in[i])
	}
}

func bandOf[T Integer](inout, in []T) {
	in = in[:len(inout)]
	k := bandVec(inout, inout, in)
	inout, in = inout[k:], in[k:]
	for i := range inout {
		inout[i] &= in[i]
	}
}

func borOf[T Integer](inout, in []T) {
	in = in[:len(inout)]
	k := borVec(inout, inout, in)
	inout, in = inout[k:], in[k:]
	for i := range inout {
		inout[i] |= in[i]
	}
}

func bxorOf[T Integer](inout, in []T) {
	in = in[:len(inout)]
	k := bxorVec(inout, inout, in)
	inout, in = inout[k:], in[k:]
	for i := range inout {
		inout[i] ^= in[i]
	}
}

func replaceOf[T runtime.Elem](inout, in []T) { copy(inout, in) }

// sum2 and the other two-operand loops below (Op.fn2) make out[i] = a[i] ∘ b[i]. sum2,
// the common case, is unrolled by four, which beats the rolled loop on vectors in cache
// (`go test -bench DirectCombine ./collectives` measures it).
func sum2[T runtime.Elem](out, a, b []T) {
	a, b = a[:len(out)], b[:len(out)]
	k := sumVec(out, a, b)
	out, a, b = out[k:], a[k:], b[k:]
	i := 0
	for ; i+4 <= len(out); i += 4 {
		o, x, y := out[i:i+4:i+4], a[i:i+4:i+4], b[i:i+4:i+4]
		o[0] = x[0] + y[0]
		o[1] = x[1] + y[1]
		o[2] = x[2] + y[2]
		o[3] = x[3] + y[3]
	}
	for ; i < len(out); i++ {
		out[i] = a[i] + b[i]
	}
}

func prod2[T runtime.Elem](out, a, b []T) {
	a, b = a[:len(out)], b[:len(out)]
	for i := range out {
		out[i] = a[i] * b[i]
	}
}

func min2[T Ordered](out, a, b []T) {
	a, b = a[:len(out)], b[:len(out)]
	k := minVec(out, a, b)
	out, a, b = out[k:], a[k:], b[k:]
	for i := range out {
		out[i] = min(a[i], b[i])
	}
}

func max2[T Ordered](out, a, b []T) {
	a, b = a[:len(out)], b[:len(out)]
	k := maxVec(out, a, b)
	out, a, b = out[k:], a[k:], b[k:]
	for i := range out {
		out[i] = max(a[i], b[i])
	}
}

func band2[T Integer](out, a, b []T) {
	a, b = a[:len(out)], b[:len(out)]
	k := bandVec(out, a, b)
	out, a, b = out[k:], a[k:], b[k:]
	for i := range out {
		out[i] = a[i] & b[i]
	}
}

func bor2[T Integer](out, a, b []T) {
	a, b = a[:len(out)], b[:len(out)]
	k := borVec(out, a, b)
	out, a, b = out[k:], a[k:], b[k:]
	for i := range out {
		out[i] = a[i] | b[i]
	}
}

func bxor2[T Integer](out, a, b []T) {
	a, b = a[:len(out)], b[:len(out)]
	k := bxorVec(out, a, b)
	out, a, b = out[k:], a[k:], b[k:]
	for i := range out {
		out[i] = a[i] ^ b[i]
	}
}
