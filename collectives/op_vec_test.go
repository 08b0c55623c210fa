package collectives

import (
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"
)

// TestSumVector: Sum's float64 and float32 loops (the AVX2 kernels on amd64) give bit
// for bit the scalar sums, for every length around the kernels' steps, at unaligned
// offsets, in place, with out aliasing either operand, and with NaN, infinities and
// signed zeros.
func TestSumVector(t *testing.T) {
	t.Run("float64", testSumVector[float64])
	t.Run("float32", testSumVector[float32])
}

func testSumVector[T float32 | float64](t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	special := []float64{math.NaN(), math.Inf(1), math.Inf(-1), 0, math.Copysign(0, -1), math.MaxFloat32, math.SmallestNonzeroFloat32}
	val := func(i int) T {
		if i%11 == 0 {
			return T(special[i%len(special)])
		}
		return T(rng.NormFloat64() * 1e6)
	}
	same := func(x, y T) bool {
		fx, fy := float64(x), float64(y)
		return math.Float64bits(fx) == math.Float64bits(fy) || (math.IsNaN(fx) && math.IsNaN(fy))
	}
	op := Sum[T]()
	for n := 0; n <= 80; n++ {
		for off := range 3 {
			a, b := make([]T, n+off), make([]T, n+off)
			for i := range a {
				a[i], b[i] = val(i), val(i+n)
			}
			want := make([]T, n)
			for i := range want {
				want[i] = a[off+i] + b[off+i]
			}
			check := func(how string, got []T) {
				t.Helper()
				for i := range want {
					if !same(got[i], want[i]) {
						t.Fatalf("n=%d off=%d %s: element %d is %v, want %v", n, off, how, i, got[i], want[i])
					}
				}
			}
			out := make([]T, n+off)
			op.combine(out[off:], a[off:], b[off:])
			check("combine", out[off:])
			for i := range off {
				if out[i] != 0 {
					t.Fatalf("n=%d off=%d: wrote before out", n, off)
				}
			}
			inout := append([]T(nil), a...)
			op.Apply(inout[off:], b[off:])
			check("Apply in place", inout[off:])
			alias := append([]T(nil), b...)
			op.combine(alias[off:], a[off:], alias[off:])
			check("combine into b", alias[off:])
		}
	}
}

// BenchmarkDirectCombine is allreduceDirect's combination at 4 ranks and 64 MiB: a
// 16 MiB block and three 16 MiB contributions, combined in directChunkBytes chunks.
func BenchmarkDirectCombine(b *testing.B) {
	b.Run("float64", benchDirectCombine[float64])
	b.Run("float32", benchDirectCombine[float32])
}

func benchDirectCombine[T float32 | float64](b *testing.B) {
	var z T
	es := int(unsafe.Sizeof(z))
	n := 16 << 20 / es
	own, src, tmp := make([]T, n), make([]T, n), make([]T, 3*n)
	op := Sum[T]()
	b.SetBytes(int64(5 * es * n))
	for b.Loop() {
		combineDirect(op, own, src, tmp, n, 4, 0, n)
	}
}
