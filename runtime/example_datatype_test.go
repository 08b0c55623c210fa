package runtime_test

import (
	"context"
	"fmt"

	"github.com/gorma-hpc/gorma/datatype"
	"github.com/gorma-hpc/gorma/runtime"
)

// A halo exchange: send the last interior column of a row-major matrix to the next rank
// with a vector type, and receive the previous rank's into the left ghost column. Run on
// its own it is a world of one rank, which sends to itself.
func ExampleSendType() {
	ctx := context.Background()
	w, err := runtime.Init(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer w.Finalize(ctx)
	const rows, cols = 3, 4 // column 0 is the ghost column
	m := []float64{
		0, 1, 2, 3,
		0, 5, 6, 7,
		0, 9, 10, 11,
	}
	col, err := datatype.Vector[float64](rows, 1, cols) // one element per row, cols apart
	if err != nil {
		fmt.Println(err)
		return
	}
	next, prev := (w.Rank()+1)%w.Size(), (w.Rank()+w.Size()-1)%w.Size()
	if err := runtime.SendType(ctx, w, m[cols-1:], 1, col, next, 0); err != nil { // column 3
		fmt.Println(err)
		return
	}
	if _, err := runtime.RecvType(ctx, w, m, 1, col, prev, 0); err != nil { // into column 0
		fmt.Println(err)
		return
	}
	fmt.Println(m)
	// Output: [3 1 2 3 7 5 6 7 11 9 10 11]
}
