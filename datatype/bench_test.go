package datatype_test

import (
	"testing"

	"github.com/gorma-hpc/gorma/datatype"
)

// BenchmarkPackColumn packs and unpacks a column of a 4096 x 4098 row-major float64
// matrix (halobench's ghost column): 4096 blocks of 8 bytes.
func BenchmarkPackColumn(b *testing.B) {
	const n = 4096
	col, err := datatype.Vector[float64](n, 1, n+2)
	if err != nil {
		b.Fatal(err)
	}
	m := make([]float64, n*(n+2))
	buf := make([]byte, n*8)
	b.SetBytes(2 * n * 8)
	for b.Loop() {
		if _, err := datatype.Pack(buf, m[n:], 1, col); err != nil {
			b.Fatal(err)
		}
		if _, err := datatype.Unpack(m[1:], buf, 1, col); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPackColumnByHand is BenchmarkPackColumn's loop written out, the floor.
func BenchmarkPackColumnByHand(b *testing.B) {
	const n = 4096
	m := make([]float64, n*(n+2))
	buf := make([]float64, n)
	b.SetBytes(2 * n * 8)
	for b.Loop() {
		for i := range buf {
			buf[i] = m[i*(n+2)+n]
		}
		for i, v := range buf {
			m[i*(n+2)+1] = v
		}
	}
}
