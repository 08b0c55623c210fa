package collectives_test

import (
	"context"
	"fmt"

	"github.com/gorma-hpc/gorma/collectives"
	"github.com/gorma-hpc/gorma/runtime"
)

func ExampleOp() {
	sum := collectives.Sum[float64]()
	a, b := []float64{1, 2}, []float64{10, 20}
	sum.Apply(a, b)
	fmt.Println(a, sum.Name(), sum.Commutative())
	// Output: [11 22] sum true
}

// world returns a World: started on its own (not by golaunch) a world of one rank.
func world() (*runtime.World, func()) {
	ctx := context.Background()
	w, err := runtime.Init(ctx)
	if err != nil {
		panic(err)
	}
	return w, func() { w.Finalize(ctx) }
}

// Every rank contributes its vector; every rank gets the element-wise sum.
func ExampleAllreduce() {
	w, done := world()
	defer done()
	ctx := context.Background()
	send := []float64{float64(w.Rank()), 1}
	recv := make([]float64, 2)
	if err := collectives.Allreduce(ctx, w, send, recv, collectives.Sum[float64]()); err != nil {
		fmt.Println(err)
		return
	}
	// In place: recv holds the input.
	if err := collectives.Allreduce(ctx, w, nil, recv, collectives.Max[float64]()); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(recv)
	// Output: [0 1]
}

// A user operator that is not commutative is applied in rank order.
func ExampleReduce() {
	w, done := world()
	defer done()
	ctx := context.Background()
	first := collectives.NewOp("first", func(inout, in []int64) {}, false)
	recv := make([]int64, 1)
	if err := collectives.Reduce(ctx, w, []int64{int64(100 + w.Rank())}, recv, first, 0); err != nil {
		fmt.Println(err)
		return
	}
	if w.Rank() == 0 {
		fmt.Println(recv) // rank 0's value
	}
	// Output: [100]
}

func ExampleBcast() {
	w, done := world()
	defer done()
	buf := make([]int32, 3)
	if w.Rank() == 0 {
		copy(buf, []int32{7, 8, 9})
	}
	if err := collectives.Bcast(context.Background(), w, buf, 0); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(buf)
	// Output: [7 8 9]
}

func ExampleAllgather() {
	w, done := world()
	defer done()
	recv := make([]uint16, 2*w.Size())
	if err := collectives.Allgather(context.Background(), w, []uint16{uint16(w.Rank()), 5}, recv); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(recv) // rank r's pair at recv[2r:2r+2]
	// Output: [0 5]
}

func ExampleReduceScatter() {
	w, done := world()
	defer done()
	send := make([]int64, 2*w.Size()) // two elements for each rank
	for i := range send {
		send[i] = int64(i)
	}
	recv := make([]int64, 2)
	if err := collectives.ReduceScatter(context.Background(), w, send, recv, collectives.Sum[int64]()); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(recv) // this rank's block of the sum
	// Output: [0 1]
}

func ExampleAlltoall() {
	w, done := world()
	defer done()
	send := make([]float32, w.Size()) // one element for each rank
	for d := range send {
		send[d] = float32(10*w.Rank() + d)
	}
	recv := make([]float32, w.Size())
	if err := collectives.Alltoall(context.Background(), w, send, recv); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(recv) // recv[s] came from rank s
	// Output: [0]
}

func ExampleBarrier() {
	w, done := world()
	defer done()
	fmt.Println(collectives.Barrier(context.Background(), w))
	// Output: <nil>
}
