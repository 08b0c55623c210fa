package collectives_test

import (
	"math"
	"slices"
	"testing"

	"github.com/gorma-hpc/gorma/collectives"
)

func TestOps(t *testing.T) {
	a := []int32{1, -2, 7, 0}
	b := []int32{3, 5, -7, 9}
	cases := []struct {
		op   collectives.Op[int32]
		want []int32
		comm bool
	}{
		{collectives.Sum[int32](), []int32{4, 3, 0, 9}, true},
		{collectives.Prod[int32](), []int32{3, -10, -49, 0}, true},
		{collectives.Min[int32](), []int32{1, -2, -7, 0}, true},
		{collectives.Max[int32](), []int32{3, 5, 7, 9}, true},
		{collectives.Band[int32](), []int32{1 & 3, -2 & 5, 7 & -7, 0}, true},
		{collectives.Bor[int32](), []int32{1 | 3, -2 | 5, 7 | -7, 9}, true},
		{collectives.Bxor[int32](), []int32{1 ^ 3, -2 ^ 5, 7 ^ -7, 9}, true},
		{collectives.Replace[int32](), b, false},
		{collectives.NoOp[int32](), a, false},
		{collectives.NewOp("first-minus", func(x, y []int32) {
			for i := range x {
				x[i] -= y[i]
			}
		}, false), []int32{-2, -7, 14, -9}, false},
	}
	for _, c := range cases {
		t.Run(c.op.Name(), func(t *testing.T) {
			got := slices.Clone(a)
			c.op.Apply(got, b)
			if !slices.Equal(got, c.want) {
				t.Fatalf("%s: got %v, want %v", c.op.Name(), got, c.want)
			}
			if c.op.Commutative() != c.comm || !c.op.Valid() {
				t.Fatalf("%s: commutative %v valid %v", c.op.Name(), c.op.Commutative(), c.op.Valid())
			}
		})
	}
	if (collectives.Op[int32]{}).Valid() {
		t.Fatal("zero Op is valid")
	}
}

func TestOpsFloatAndLengths(t *testing.T) {
	x := []float64{1.5, math.Inf(-1), 2}
	collectives.Max[float64]().Apply(x, []float64{1, 0})
	if x[0] != 1.5 || x[1] != 0 || x[2] != 2 {
		t.Fatalf("max over the shorter length: %v", x)
	}
	c := []complex128{1 + 2i}
	collectives.Prod[complex128]().Apply(c, []complex128{2i})
	if c[0] != -4+2i {
		t.Fatalf("complex prod: %v", c)
	}
	if k := collectives.Sum[uint8]().Kind(); k != collectives.OpSum || k.String() != "sum" {
		t.Fatalf("kind %v", k)
	}
}

func TestApplyAllocatesNothing(t *testing.T) {
	a, b := make([]float64, 64), make([]float64, 64)
	op := collectives.Sum[float64]()
	if n := testing.AllocsPerRun(100, func() { op.Apply(a, b) }); n != 0 {
		t.Fatalf("Apply allocates %v times", n)
	}
}
