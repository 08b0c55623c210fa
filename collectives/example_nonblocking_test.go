package collectives_test

import (
	"context"
	"fmt"

	"github.com/gorma-hpc/gorma/collectives"
)

// Start an Allreduce, compute on other data while it runs, then take its result.
func ExampleIallreduce() {
	w, done := world()
	defer done()
	ctx := context.Background()
	send := []float64{float64(w.Rank() + 1), 2}
	recv := make([]float64, 2)
	req := collectives.Iallreduce(ctx, w, send, recv, collectives.Sum[float64]())
	// send and recv belong to the library until Wait returns.
	interior := 0.0
	for i := range 1000 {
		interior += float64(i)
	}
	if err := req.Wait(ctx); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(recv, interior)
	// Output: [1 2] 499500
}

// A persistent Allreduce is made once and started at every iteration; its buffers are
// the caller's between a Wait and the next Start.
func ExampleAllreduceInit() {
	w, done := world()
	defer done()
	ctx := context.Background()
	send, recv := make([]float64, 1), make([]float64, 1)
	req := collectives.AllreduceInit(w, send, recv, collectives.Sum[float64]())
	defer req.Free()
	for step := range 3 {
		send[0] = float64(step * 10)
		if err := req.Start(ctx); err != nil {
			fmt.Println(err)
			return
		}
		if err := req.Wait(ctx); err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(recv[0])
	}
	// Output:
	// 0
	// 10
	// 20
}

// Several nonblocking calls may be outstanding at once; they run in the order they were
// started, and a blocking call waits for those started before it.
func ExampleWaitAll() {
	w, done := world()
	defer done()
	ctx := context.Background()
	a, b := []int64{1}, []int64{5}
	reqs := []*collectives.Request{
		collectives.Iallreduce(ctx, w, nil, a, collectives.Sum[int64]()),
		collectives.Ibcast(ctx, w, b, 0),
		collectives.Ibarrier(ctx, w),
	}
	if err := collectives.WaitAll(ctx, reqs); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(a[0], b[0])
	// Output: 1 5
}
