package collectives_test

import (
	"fmt"
	"testing"
	"unsafe"

	"github.com/gorma-hpc/gorma/collectives"
)

// BenchmarkApply measures Op.Apply, the in-place combination inout[i] = inout[i] ∘ in[i]
// that Accumulate and the reductions run, at 8 B, 64 KiB and 1 MiB of inout.
func BenchmarkApply(b *testing.B) {
	benchApply(b, "sum/int64", collectives.Sum[int64]())
	benchApply(b, "sum/float64", collectives.Sum[float64]())
	benchApply(b, "sum/int32", collectives.Sum[int32]())
	benchApply(b, "min/int64", collectives.Min[int64]())
	benchApply(b, "max/int32", collectives.Max[int32]())
	benchApply(b, "min/float64", collectives.Min[float64]())
	benchApply(b, "max/float32", collectives.Max[float32]())
	benchApply(b, "bxor/int64", collectives.Bxor[int64]())
}

func benchApply[T collectives.Ordered](b *testing.B, name string, op collectives.Op[T]) {
	var z T
	es := int(unsafe.Sizeof(z))
	for _, bytes := range []int{8, 64 << 10, 1 << 20} {
		b.Run(fmt.Sprintf("%s/%s", name, applySizeName(bytes)), func(b *testing.B) {
			n := max(bytes/es, 1)
			inout, in := make([]T, n), make([]T, n)
			for i := range in {
				inout[i], in[i] = T(i%97), T(i%89)
			}
			b.SetBytes(int64(n * es))
			for b.Loop() {
				op.Apply(inout, in)
			}
		})
	}
}

func applySizeName(bytes int) string {
	switch {
	case bytes >= 1<<20:
		return fmt.Sprintf("%dMiB", bytes>>20)
	case bytes >= 1<<10:
		return fmt.Sprintf("%dKiB", bytes>>10)
	}
	return fmt.Sprintf("%dB", bytes)
}
