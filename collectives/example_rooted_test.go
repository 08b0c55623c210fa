package collectives_test

import (
	"context"
	"fmt"

	"github.com/gorma-hpc/gorma/collectives"
)

func ExampleGather() {
	w, done := world()
	defer done()
	var all []int32 // used at root only
	if w.Rank() == 0 {
		all = make([]int32, 2*w.Size())
	}
	if err := collectives.Gather(context.Background(), w, []int32{int32(w.Rank()), 7}, all, 0); err != nil {
		fmt.Println(err)
		return
	}
	if w.Rank() == 0 {
		fmt.Println(all) // rank r's pair at all[2r:2r+2]
	}
	// Output: [0 7]
}

func ExampleScatter() {
	w, done := world()
	defer done()
	var all []float64 // used at root only: a pair for each rank
	if w.Rank() == 0 {
		all = make([]float64, 2*w.Size())
		for i := range all {
			all[i] = float64(i) / 2
		}
	}
	mine := make([]float64, 2)
	if err := collectives.Scatter(context.Background(), w, all, mine, 0); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(mine) // all[2r:2r+2] of root's
	// Output: [0 0.5]
}

// Running totals: rank r gets the sum of the values of ranks 0 to r.
func ExampleScan() {
	w, done := world()
	defer done()
	total := make([]int64, 1)
	if err := collectives.Scan(context.Background(), w, []int64{int64(10 + w.Rank())}, total, collectives.Sum[int64]()); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(total)
	// Output: [10]
}

// Each rank holds some items; the exclusive sum of the counts numbers them all: rank r's
// first item is number first[0]. Exscan leaves rank 0's recv as it is, so it starts at 0.
func ExampleExscan() {
	w, done := world()
	defer done()
	first := []int64{0}
	if err := collectives.Exscan(context.Background(), w, []int64{int64(3 + w.Rank())}, first, collectives.Sum[int64]()); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(first)
	// Output: [0]
}
