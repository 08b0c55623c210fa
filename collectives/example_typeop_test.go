package collectives_test

import (
	"context"
	"fmt"

	"github.com/gorma-hpc/gorma/collectives"
	"github.com/gorma-hpc/gorma/datatype"
)

// A user operator over a struct layout: each element is a (value, count) pair, and the
// operator keeps the larger value, counting how many ranks hold it.
func ExampleAllreduceType() {
	w, done := world()
	defer done()
	type best struct {
		V float64
		N int32
	}
	t, err := datatype.FromStruct[best]()
	if err != nil {
		fmt.Println(err)
		return
	}
	op := collectives.NewTypeOp("best", func(inout, in []best, count int) {
		for i := range count {
			switch {
			case in[i].V > inout[i].V:
				inout[i] = in[i]
			case in[i].V == inout[i].V:
				inout[i].N += in[i].N
			}
		}
	}, true)
	buf := []best{{V: 2.5, N: 1}, {V: float64(w.Rank()), N: 1}}
	if err := collectives.AllreduceType(context.Background(), w, nil, buf, len(buf), t, op); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(buf) // in place: every rank's buf holds the result
	// Output: [{2.5 1} {0 1}]
}

// In place, each rank's recv holds the blocks it sends, placed by recvCounts, and gets
// the blocks from the same ranks in their stead.
func ExampleAlltoallv_inPlace() {
	w, done := world()
	defer done()
	counts := make([]int, w.Size())
	for d := range counts {
		counts[d] = 2
	}
	buf := make([]int32, 2*w.Size())
	for i := range buf {
		buf[i] = int32(100*w.Rank() + i)
	}
	if err := collectives.Alltoallv(context.Background(), w, nil, nil, buf, counts); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(buf)
	// Output: [0 1]
}
