package runtime_test

import (
	"context"
	"fmt"
	"net/rpc"

	"github.com/gorma-hpc/gorma/runtime"
)

// A rank program: pass a token around the ring of ranks. Run on its own it is a world of
// one rank, whose ring is itself; golaunch -n 4 runs it on four.
func Example() {
	ctx := context.Background()
	w, err := runtime.Init(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	next, prev := (w.Rank()+1)%w.Size(), (w.Rank()+w.Size()-1)%w.Size()
	token := []int64{int64(w.Rank())}
	if err := runtime.Send(ctx, w, token, next, 0); err != nil {
		fmt.Println(err)
		return
	}
	st, err := runtime.Recv(ctx, w, token, prev, 0)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("rank %d of %d got %d from rank %d\n", w.Rank(), w.Size(), token[0], st.Source)
	if err := runtime.Barrier(ctx, w); err != nil {
		fmt.Println(err)
		return
	}
	if err := w.Finalize(ctx); err != nil {
		fmt.Println(err)
	}
	// Output: rank 0 of 1 got 0 from rank 0
}

// Nonblocking messages: post the receive and the send, then wait for both. The buffers
// belong to the runtime until WaitAll returns.
func ExampleIsend() {
	ctx := context.Background()
	w, err := runtime.Init(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer w.Finalize(ctx)
	next, prev := (w.Rank()+1)%w.Size(), (w.Rank()+w.Size()-1)%w.Size()
	in := make([]float32, 3)
	rr, err := runtime.Irecv(w, in, prev, 5)
	if err != nil {
		fmt.Println(err)
		return
	}
	sr, err := runtime.Isend(w, []float32{1, 2, 3}, next, 5)
	if err != nil {
		fmt.Println(err)
		return
	}
	st := make([]runtime.Status, 2)
	if err := runtime.WaitAll(ctx, []*runtime.Request{rr, sr}, st); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(in, st[0].Source, st[0].Tag)
	// Output: [1 2 3] 0 5
}

// Split makes a World over the ranks that pass the same color, numbered by key.
func ExampleWorld_Split() {
	ctx := context.Background()
	w, err := runtime.Init(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer w.Finalize(ctx)
	half, err := w.Split(ctx, w.Rank()%2, w.Rank())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer half.Free()
	fmt.Printf("rank %d of %d in the World of color %d\n", half.Rank(), half.Size(), w.Rank()%2)
	// Output: rank 0 of 1 in the World of color 0
}

// Rank 0 serves net/rpc to the other ranks over World.Listen (register the services on
// srv); they reach it with World.Dial and call it as any net/rpc client. Run with
// golaunch -n 4.
func ExampleWorld_Listen() {
	ctx := context.Background()
	w, err := runtime.Init(ctx)
	if err != nil || w.Size() == 1 {
		return // a world of one has nobody to serve
	}
	defer w.Finalize(ctx)
	if w.Rank() == 0 {
		ln, err := w.Listen("rpc")
		if err != nil {
			fmt.Println(err)
			return
		}
		defer ln.Close()
		srv := rpc.NewServer()
		for range w.Size() - 1 {
			c, err := ln.Accept()
			if err != nil {
				fmt.Println(err)
				return
			}
			go srv.ServeConn(c)
		}
		return
	}
	c, err := w.Dial(ctx, 0, "rpc")
	if err != nil {
		fmt.Println(err)
		return
	}
	client := rpc.NewClient(c)
	defer client.Close()
}

// Exchange with both neighbours at once: Sendrecv posts the receive before it sends, so
// a ring of Sendrecvs never deadlocks.
func ExampleSendrecv() {
	ctx := context.Background()
	w, err := runtime.Init(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer w.Finalize(ctx)
	next, prev := (w.Rank()+1)%w.Size(), (w.Rank()+w.Size()-1)%w.Size()
	got := make([]int32, 1)
	st, err := runtime.Sendrecv(ctx, w, []int32{int32(w.Rank() * 10)}, next, 3, got, prev, 3)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("rank %d got %d from rank %d\n", w.Rank(), got[0], st.Source)
	// Output: rank 0 got 0 from rank 0
}

// Receive a message of unknown length: Probe for it, size the buffer, receive it.
func ExampleProbe() {
	ctx := context.Background()
	w, err := runtime.Init(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer w.Finalize(ctx)
	if err := runtime.Send(ctx, w, []float64{1, 2, 3}, w.Rank(), 9); err != nil {
		fmt.Println(err)
		return
	}
	st, err := runtime.Probe(ctx, w, runtime.AnySource, 9)
	if err != nil {
		fmt.Println(err)
		return
	}
	buf := make([]float64, runtime.CountOf[float64](st))
	if _, err := runtime.Recv(ctx, w, buf, st.Source, st.Tag); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(len(buf), buf)
	// Output: 3 [1 2 3]
}

// A named phase of a rank's work. Under golaunch --trace FILE the region shows in the
// job's timeline as a slice of its own, around the calls it holds; go tool trace shows it
// too when Go's execution trace runs.
func ExampleTraceRegion() {
	ctx := context.Background()
	w, err := runtime.Init(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	end := runtime.TraceRegion(ctx, w, "exchange")
	buf := []float64{float64(w.Rank())}
	_, err = runtime.Sendrecv(ctx, w, buf, (w.Rank()+1)%w.Size(), 0, buf, (w.Rank()+w.Size()-1)%w.Size(), 0)
	end()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("neighbour's rank:", buf[0] >= 0)
	w.Finalize(ctx)
	// Output: neighbour's rank: true
}
