package runtime_test

import (
	"context"
	"fmt"

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
