package collectives_test

import (
	"fmt"

	"github.com/gorma-hpc/gorma/collectives"
)

func ExampleOp() {
	sum := collectives.Sum[float64]()
	a, b := []float64{1, 2}, []float64{10, 20}
	sum.Apply(a, b)
	fmt.Println(a, sum.Name(), sum.Commutative())
	// Output: [11 22] sum true
}
