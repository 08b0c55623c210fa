package runtime_test

import (
	"context"
	"fmt"

	"github.com/gorma-hpc/gorma/runtime"
)

// A synchronous send returns once the receiver has matched it. Here the receiver is this
// rank itself (a world of one), so the receive is posted first.
func ExampleSsend() {
	ctx := context.Background()
	w, err := runtime.Init(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer w.Finalize(ctx)
	peer := (w.Rank() + 1) % w.Size()
	from := (w.Rank() + w.Size() - 1) % w.Size()
	got := make([]int32, 2)
	rr, err := runtime.Irecv(w, got, from, 1)
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := runtime.Ssend(ctx, w, []int32{4, 2}, peer, 1); err != nil {
		fmt.Println(err)
		return
	}
	st, err := rr.Wait(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(got, "from rank", st.Source)
	// Output: [4 2] from rank 0
}

// Persistent requests: describe a ring exchange once, then start it every iteration.
// Each Start sends what the send buffer holds at that moment.
func ExampleSendInit() {
	ctx := context.Background()
	w, err := runtime.Init(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer w.Finalize(ctx)
	next, prev := (w.Rank()+1)%w.Size(), (w.Rank()+w.Size()-1)%w.Size()
	out, in := make([]float64, 1), make([]float64, 1)
	sr, err := runtime.SendInit(w, out, next, 0)
	if err != nil {
		fmt.Println(err)
		return
	}
	rr, err := runtime.RecvInit(w, in, prev, 0)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer sr.Free()
	defer rr.Free()
	reqs := []*runtime.Request{rr, sr}
	for step := 0; step < 3; step++ {
		out[0] = float64(step) / 2
		if err := runtime.StartAll(reqs); err != nil {
			fmt.Println(err)
			return
		}
		if err := runtime.WaitAll(ctx, reqs, nil); err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println("step", step, "got", in[0])
	}
	// Output:
	// step 0 got 0
	// step 1 got 0.5
	// step 2 got 1
}
