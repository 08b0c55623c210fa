package collectives_test

import (
	"context"
	"fmt"

	"github.com/gorma-hpc/gorma/collectives"
)

// Each rank holds a residual per row and the global row number; every rank learns the
// largest residual of each row and where it is (MPI_MAXLOC over MPI_DOUBLE_INT).
func ExampleAllreduceLoc() {
	w, done := world()
	defer done()
	residual := []float64{0.5 * float64(w.Rank()+1), 0.25}
	row := []int32{int32(2 * w.Rank()), int32(2*w.Rank() + 1)}
	maxRes, at := make([]float64, 2), make([]int32, 2)
	err := collectives.AllreduceLoc(context.Background(), w, residual, row, maxRes, at, collectives.MaxLoc)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(maxRes, at)
	// Output: [0.5 0.25] [0 1]
}
