package datatype_test

import (
	"fmt"

	"github.com/gorma-hpc/gorma/datatype"
)

// A column of a row-major 3x4 matrix is a vector of 3 blocks of 1 element, 4 apart.
func ExampleVector() {
	m := []float64{
		0, 1, 2, 3,
		10, 11, 12, 13,
		20, 21, 22, 23,
	}
	col, err := datatype.Vector[float64](3, 1, 4)
	if err != nil {
		panic(err)
	}
	packed := make([]byte, col.Size())
	if _, err := datatype.Pack(packed, m[2:], 1, col); err != nil { // column 2
		panic(err)
	}
	out := make([]float64, 3)
	one := datatype.Of[float64]() // unpack the bytes as 3 contiguous elements
	all, _ := one.Contiguous(3)
	if _, err := datatype.Unpack(out, packed, 1, all); err != nil {
		panic(err)
	}
	fmt.Println(out, col.Size(), col.Extent(), col.NumBlocks())
	// Output: [2 12 22] 24 72 3
}

// The interior 2x2 block of a 4x4 row-major grid.
func ExampleSubarray() {
	sub, err := datatype.Subarray[int32]([]int{4, 4}, []int{2, 2}, []int{1, 1}, datatype.OrderC)
	if err != nil {
		panic(err)
	}
	fmt.Println(sub.Blocks(), sub.Extent())
	// Output: [{20 8} {36 8}] 64
}

// An array of structs: only the position fields of each particle are packed.
func ExampleFromStruct() {
	type particle struct {
		ID  int32
		Pos [2]float32
	}
	pos, err := datatype.FromStruct[particle]("Pos")
	if err != nil {
		panic(err)
	}
	ps := []particle{{1, [2]float32{1.5, 2.5}}, {2, [2]float32{3.5, 4.5}}}
	packed := make([]byte, 2*pos.Size())
	n, err := datatype.Pack(packed, ps, len(ps), pos)
	fmt.Println(n, err, pos.Extent())
	// Output: 16 <nil> 12
}
