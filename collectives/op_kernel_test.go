package collectives

import (
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"
)

// kernelCase is one predefined operator on one element type, checked by checkKernel.
type kernelCase struct {
	name  string
	check func(t *testing.T, rng *rand.Rand, n, offA, offB, offOut int)
}

// kernelCases lists every operator that has vector kernels (Sum, Min, Max, Band, Bor,
// Bxor) on every element type that orders: the types with kernels, plus a defined type,
// which takes the scalar loops.
func kernelCases() []kernelCase {
	var cs []kernelCase
	cs = append(cs, kernelIntCases[int64]("int64")...)
	cs = append(cs, kernelIntCases[uint64]("uint64")...)
	cs = append(cs, kernelIntCases[int32]("int32")...)
	cs = append(cs, kernelIntCases[uint32]("uint32")...)
	cs = append(cs, kernelIntCases[int16]("int16")...)
	cs = append(cs, kernelIntCases[uint16]("uint16")...)
	cs = append(cs, kernelIntCases[int8]("int8")...)
	cs = append(cs, kernelIntCases[uint8]("uint8")...)
	cs = append(cs, kernelIntCases[kernelInt]("kernelInt")...)
	cs = append(cs, kernelOrderedCases[float64]("float64")...)
	cs = append(cs, kernelOrderedCases[float32]("float32")...)
	cs = append(cs, kernelOrderedCases[kernelFloat]("kernelFloat")...)
	return cs
}

type (
	kernelInt   int64
	kernelFloat float64
)

func kernelOrderedCases[T Ordered](typ string) []kernelCase {
	return []kernelCase{
		kernelCheck(typ, Sum[T](), func(x, y T) T { return x + y }),
		kernelCheck(typ, Min[T](), func(x, y T) T { return min(x, y) }),
		kernelCheck(typ, Max[T](), func(x, y T) T { return max(x, y) }),
	}
}

func kernelIntCases[T interface {
	Ordered
	Integer
}](typ string) []kernelCase {
	return append(kernelOrderedCases[T](typ),
		kernelCheck(typ, Band[T](), func(x, y T) T { return x & y }),
		kernelCheck(typ, Bor[T](), func(x, y T) T { return x | y }),
		kernelCheck(typ, Bxor[T](), func(x, y T) T { return x ^ y }),
	)
}

func kernelCheck[T Ordered](typ string, op Op[T], ref func(x, y T) T) kernelCase {
	return kernelCase{op.Name() + "/" + typ, func(t *testing.T, rng *rand.Rand, n, offA, offB, offOut int) {
		t.Helper()
		checkKernel(t, rng, op, ref, n, offA, offB, offOut)
	}}
}

// kernelGuard is the number of elements after out, in out's buffer, that no combination
// may write (as it may not write the offset's elements before out).
const kernelGuard = 40

// checkKernel combines two random vectors of n elements with op, starting offA, offB
// and offOut elements into their buffers, so that the three have different alignments.
// Every way to combine (Apply, combine into a fresh out, into a, into b) must give, bit
// for bit, ref on each pair of elements and the scalar loops' result: op applied to
// pieces shorter than vecMin, which no kernel takes. No element around out may change.
func checkKernel[T Ordered](t *testing.T, rng *rand.Rand, op Op[T], ref func(x, y T) T, n, offA, offB, offOut int) {
	t.Helper()
	fill := func(off int) (buf, s []T) {
		buf = make([]T, off+n+kernelGuard)
		for i := range buf {
			buf[i] = kernelElem[T](rng)
		}
		return buf, buf[off : off+n]
	}
	_, a := fill(offA)
	_, b := fill(offB)
	want := make([]T, n)
	for i := range want {
		want[i] = ref(a[i], b[i])
	}
	scalar := append([]T(nil), a...)
	for lo := 0; lo < n; lo += vecMin - 1 {
		hi := min(lo+vecMin-1, n)
		op.Apply(scalar[lo:hi], b[lo:hi])
	}
	check := func(how string, got []T) {
		t.Helper()
		for i := range want {
			if !kernelEqual(op, a[i], b[i], got[i], want[i]) || !kernelEqual(op, a[i], b[i], scalar[i], want[i]) {
				t.Fatalf("n=%d offsets a %d b %d out %d, %s: element %d is %v (%#x), scalar %v (%#x), want %v (%#x) from %v and %v",
					n, offA, offB, offOut, how, i, got[i], kernelBits(got[i]), scalar[i], kernelBits(scalar[i]),
					want[i], kernelBits(want[i]), a[i], b[i])
			}
		}
	}
	outBuf, out := fill(offOut)
	guard := append([]T(nil), outBuf...)
	op.combine(out, a, b)
	check("combine", out)
	for i := range outBuf {
		if (i < offOut || i >= offOut+n) && !kernelSame(outBuf[i], guard[i]) {
			t.Fatalf("n=%d offset %d: combine wrote element %d of the buffer, outside out", n, offOut, i)
		}
	}
	inBuf, inout := fill(offA)
	copy(inout, a)
	guard = append(guard[:0], inBuf...)
	op.Apply(inout, b)
	check("Apply", inout)
	for i := range inBuf {
		if (i < offA || i >= offA+n) && !kernelSame(inBuf[i], guard[i]) {
			t.Fatalf("n=%d offset %d: Apply wrote element %d of the buffer, outside inout", n, offA, i)
		}
	}
	intoA := append([]T(nil), a...)
	op.combine(intoA, intoA, b)
	check("combine into a", intoA)
	intoB := append([]T(nil), b...)
	op.combine(intoB, a, intoB)
	check("combine into b", intoB)
}

// kernelElem returns random bits, a small number or one of the edge values of T, so that
// equal elements, extremes, NaNs with distinct payloads, infinities and signed zeros all
// come up.
func kernelElem[T Ordered](rng *rand.Rand) T {
	switch rng.IntN(8) {
	case 0, 1:
		edges := kernelEdges[T]()
		return kernelFromBits[T](edges[rng.IntN(len(edges))])
	case 2, 3:
		return T(rng.IntN(5)) - T(2) // wraps for unsigned types
	}
	return kernelFromBits[T](rng.Uint64())
}

// kernelEdges are the bit patterns of T's edge values.
func kernelEdges[T Ordered]() []uint64 {
	var z T
	switch any(z).(type) {
	case float64, kernelFloat:
		return []uint64{
			0, 1 << 63, // +0, -0
			math.Float64bits(math.Inf(1)), math.Float64bits(math.Inf(-1)),
			0x7ff8000000000000, 0xfff8000000000000, // quiet NaNs of either sign
			0x7ff800000000dead, 0xfff00000beef0001, // NaNs with payloads, the second signaling
			0x7ff0000000000001, // a signaling NaN
			math.Float64bits(math.MaxFloat64), math.Float64bits(-math.MaxFloat64),
			1, 1<<63 | 1, // ±the smallest subnormal
			math.Float64bits(1), math.Float64bits(-1),
		}
	case float32:
		return []uint64{
			0, 1 << 31,
			uint64(math.Float32bits(float32(math.Inf(1)))), uint64(math.Float32bits(float32(math.Inf(-1)))),
			0x7fc00000, 0xffc00000, 0x7fc0dead, 0xff80beef, 0x7f800001,
			uint64(math.Float32bits(math.MaxFloat32)), uint64(math.Float32bits(-math.MaxFloat32)),
			1, 1<<31 | 1,
			uint64(math.Float32bits(1)), uint64(math.Float32bits(-1)),
		}
	}
	bits := 8 * unsafe.Sizeof(z)
	top := uint64(1) << (bits - 1)
	return []uint64{0, 1, top - 1, top, top + 1, 2*top - 1} // 0, 1, max int, min int, min int+1, -1
}

// kernelFromBits returns the T whose bits are u's low bits.
func kernelFromBits[T Ordered](u uint64) T { return *(*T)(unsafe.Pointer(&u)) }

// kernelBits returns x's bits.
func kernelBits[T Ordered](x T) uint64 {
	var u uint64
	*(*T)(unsafe.Pointer(&u)) = x
	return u
}

func kernelSame[T Ordered](x, y T) bool { return kernelBits(x) == kernelBits(y) }

// kernelEqual reports whether got, op's result on x and y, is want. That is bit for bit,
// except for the sum of two NaNs, where any NaN will do: the add returns its first
// operand's NaN, and the compiler orders the operands of the commutative add as it
// likes, so the scalar loops differ among themselves there.
func kernelEqual[T Ordered](op Op[T], x, y, got, want T) bool {
	if op.Kind() == OpSum && x != x && y != y {
		return got != got
	}
	return kernelSame(got, want)
}

// TestOpKernels: every operator with vector kernels, on every element type, gives bit for
// bit the scalar loops' results for each length from 0 to 300 (below vecMin, and tails of
// any length after the whole vectors), at random alignments of its three slices.
// GODEBUG=cpu.avx2=off runs it on the scalar loops alone.
func TestOpKernels(t *testing.T) {
	for _, c := range kernelCases() {
		t.Run(c.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(len(c.name)), 7))
			for n := 0; n <= 300; n++ {
				c.check(t, rng, n, rng.IntN(32), rng.IntN(32), rng.IntN(32))
			}
		})
	}
}

// TestOpKernelEdges: the edge values of each type (extremes, NaNs, infinities, signed
// zeros) against every other.
func TestOpKernelEdges(t *testing.T) {
	t.Run("int64", testKernelEdges[int64])
	t.Run("uint64", testKernelEdges[uint64])
	t.Run("int32", testKernelEdges[int32])
	t.Run("uint32", testKernelEdges[uint32])
	t.Run("int16", testKernelEdges[int16])
	t.Run("uint16", testKernelEdges[uint16])
	t.Run("int8", testKernelEdges[int8])
	t.Run("uint8", testKernelEdges[uint8])
	t.Run("float64", testKernelEdges[float64])
	t.Run("float32", testKernelEdges[float32])
}

func testKernelEdges[T Ordered](t *testing.T) {
	edges := kernelEdges[T]()
	var a, b []T
	for _, x := range edges {
		for _, y := range edges {
			a, b = append(a, kernelFromBits[T](x)), append(b, kernelFromBits[T](y))
		}
	}
	for _, c := range []struct {
		op  Op[T]
		ref func(x, y T) T
	}{
		{Sum[T](), func(x, y T) T { return x + y }},
		{Min[T](), func(x, y T) T { return min(x, y) }},
		{Max[T](), func(x, y T) T { return max(x, y) }},
	} {
		got := append([]T(nil), a...)
		c.op.Apply(got, b)
		for i := range got {
			if want := c.ref(a[i], b[i]); !kernelEqual(c.op, a[i], b[i], got[i], want) {
				t.Errorf("%s(%v (%#x), %v (%#x)) at %d of %d: got %v (%#x), want %v (%#x)", c.op.Name(),
					a[i], kernelBits(a[i]), b[i], kernelBits(b[i]), i, len(got), got[i], kernelBits(got[i]), want, kernelBits(want))
			}
		}
	}
}

// TestOpKernelFloatSemantics pins the float Min and Max results the kernels reproduce:
// a NaN wins, and min(-0, +0) is -0 and max(-0, +0) is +0 in either order.
func TestOpKernelFloatSemantics(t *testing.T) {
	negZero := math.Copysign(0, -1)
	nan := math.NaN()
	cases := []struct {
		op      Op[float64]
		x, y    float64
		want    float64
		wantNaN bool
	}{
		{Min[float64](), negZero, 0, negZero, false},
		{Min[float64](), 0, negZero, negZero, false},
		{Max[float64](), negZero, 0, 0, false},
		{Max[float64](), 0, negZero, 0, false},
		{Min[float64](), nan, 1, 0, true},
		{Min[float64](), 1, nan, 0, true},
		{Max[float64](), nan, math.Inf(1), 0, true},
		{Max[float64](), math.Inf(-1), nan, 0, true},
		{Min[float64](), math.Inf(-1), 3, math.Inf(-1), false},
		{Max[float64](), -2, -3, -2, false},
	}
	for _, c := range cases {
		x, y := make([]float64, 4*vecMin), make([]float64, 4*vecMin)
		for i := range x {
			x[i], y[i] = c.x, c.y
		}
		c.op.Apply(x, y)
		for i, got := range x {
			if c.wantNaN && !math.IsNaN(got) || !c.wantNaN && math.Float64bits(got) != math.Float64bits(c.want) {
				t.Fatalf("%s(%v, %v) element %d: got %v, want %v (NaN %v)", c.op.Name(), c.x, c.y, i, got, c.want, c.wantNaN)
			}
		}
	}
}

// TestOpKernelsAllocateNothing: Apply and combine with a kernel allocate nothing.
func TestOpKernelsAllocateNothing(t *testing.T) {
	a, b := make([]int64, 100), make([]int64, 100)
	f, g := make([]float32, 100), make([]float32, 100)
	ops := []func(){
		func() { Sum[int64]().Apply(a, b) },
		func() { Min[int64]().combine(a, a, b) },
		func() { Bxor[int64]().Apply(a, b) },
		func() { Max[float32]().Apply(f, g) },
	}
	for i, f := range ops {
		if n := testing.AllocsPerRun(100, f); n != 0 {
			t.Fatalf("op %d allocates %v times", i, n)
		}
	}
}

// FuzzOpKernels checks every operator and element type, as TestOpKernels does, at one length
// (0 to 300) and one set of alignments of its slices.
func FuzzOpKernels(f *testing.F) {
	f.Add(uint64(1), uint16(0), uint8(0), uint8(0), uint8(0))
	f.Add(uint64(2), uint16(vecMin-1), uint8(1), uint8(2), uint8(3))
	f.Add(uint64(3), uint16(vecMin), uint8(0), uint8(5), uint8(31))
	f.Add(uint64(4), uint16(67), uint8(7), uint8(0), uint8(1))
	f.Add(uint64(5), uint16(300), uint8(31), uint8(30), uint8(29))
	cases := kernelCases()
	f.Fuzz(func(t *testing.T, seed uint64, n uint16, offA, offB, offOut uint8) {
		rng := rand.New(rand.NewPCG(seed, 11))
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				c.check(t, rng, int(n%301), int(offA%32), int(offB%32), int(offOut%32))
			})
		}
	})
}
