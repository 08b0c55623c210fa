package collectives_test

import (
	"context"
	"fmt"

	"github.com/gorma-hpc/gorma/collectives"
)

// Rank r contributes r+1 elements; root places each rank's block where displs says.
func ExampleGatherv() {
	w, done := world()
	defer done()
	mine := make([]int32, w.Rank()+1)
	for i := range mine {
		mine[i] = int32(10*w.Rank() + i)
	}
	var all []int32
	var counts, displs []int // read at root only
	if w.Rank() == 0 {
		counts, displs = make([]int, w.Size()), make([]int, w.Size())
		n := 0
		for r := range counts {
			counts[r], displs[r] = r+1, n
			n += r + 1
		}
		all = make([]int32, n)
	}
	if err := collectives.Gatherv(context.Background(), w, mine, all, counts, displs, 0); err != nil {
		fmt.Println(err)
		return
	}
	if w.Rank() == 0 {
		fmt.Println(all) // rank r's block at all[displs[r]:displs[r]+r+1]
	}
	// Output: [0]
}
