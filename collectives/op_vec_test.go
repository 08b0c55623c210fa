package collectives

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestSumVector: Sum's float64 loops (the AVX2 kernel on amd64) give bit for bit the
// scalar sums, for every length around the kernel's steps, at unaligned offsets, in
// place, with out aliasing either operand, and with NaN, infinities and signed zeros.
func TestSumVector(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	special := []float64{math.NaN(), math.Inf(1), math.Inf(-1), 0, math.Copysign(0, -1), math.MaxFloat64, math.SmallestNonzeroFloat64}
	val := func(i int) float64 {
		if i%11 == 0 {
			return special[i%len(special)]
		}
		return rng.NormFloat64() * 1e6
	}
	same := func(x, y float64) bool {
		return math.Float64bits(x) == math.Float64bits(y) || (math.IsNaN(x) && math.IsNaN(y))
	}
	op := Sum[float64]()
	for n := 0; n <= 70; n++ {
		for off := range 3 {
			a, b := make([]float64, n+off), make([]float64, n+off)
			for i := range a {
				a[i], b[i] = val(i), val(i+n)
			}
			want := make([]float64, n)
			for i := range want {
				want[i] = a[off+i] + b[off+i]
			}
			check := func(how string, got []float64) {
				t.Helper()
				for i := range want {
					if !same(got[i], want[i]) {
						t.Fatalf("n=%d off=%d %s: element %d is %v, want %v", n, off, how, i, got[i], want[i])
					}
				}
			}
			out := make([]float64, n+off)
			op.combine(out[off:], a[off:], b[off:])
			check("combine", out[off:])
			inout := append([]float64(nil), a...)
			op.Apply(inout[off:], b[off:])
			check("Apply in place", inout[off:])
			alias := append([]float64(nil), b...)
			op.combine(alias[off:], a[off:], alias[off:])
			check("combine into b", alias[off:])
			if n > 0 && out[0] != 0 && off > 0 {
				t.Fatalf("n=%d off=%d: wrote before out", n, off)
			}
		}
	}
}

// BenchmarkDirectCombine is allreduceDirect's combination at 4 ranks and 64 MiB: a
// 16 MiB block and three 16 MiB contributions, combined in directChunkBytes chunks.
func BenchmarkDirectCombine(b *testing.B) {
	const n = 2 << 20
	own, src, tmp := make([]float64, n), make([]float64, n), make([]float64, 3*n)
	op := Sum[float64]()
	step := directChunkBytes / 8
	b.SetBytes(5 * 8 * n)
	for b.Loop() {
		for off := 0; off < n; off += step {
			end := min(off+step, n)
			op.combine(own[off:end], src[off:end], tmp[off:end])
			op.fn(own[off:end], tmp[n+off:n+end])
			op.fn(own[off:end], tmp[2*n+off:2*n+end])
		}
	}
}
