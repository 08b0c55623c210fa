package runtime_test

import (
	"context"
	"fmt"

	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/window"
)

// A World of the even ranks, made from a Group (MPI_Comm_group, MPI_Group_range_incl,
// MPI_Comm_create). Run on its own it is a world of one rank, whose only rank is even.
func ExampleWorld_Create() {
	ctx := context.Background()
	w, err := runtime.Init(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer w.Finalize(ctx)
	evens, err := w.Group().RangeIncl([][3]int{{0, w.Size() - 1, 2}})
	if err != nil {
		fmt.Println(err)
		return
	}
	e, err := w.Create(ctx, evens)
	if err != nil {
		fmt.Println(err)
		return
	}
	if e == nil {
		return // an odd rank
	}
	defer e.Free()
	odds := w.Group().Difference(evens)
	fmt.Printf("rank %d of %d even ranks; %d odd ranks\n", e.Rank(), e.Size(), odds.Size())
	// Output: rank 0 of 1 even ranks; 0 odd ranks
}

// A World per host, and a window whose memory every rank of the host loads and stores
// directly (MPI_Comm_split_type(MPI_COMM_TYPE_SHARED), MPI_Win_allocate_shared).
func ExampleWorld_SplitShared() {
	ctx := context.Background()
	w, err := runtime.Init(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer w.Finalize(ctx)
	host, err := w.SplitShared(ctx, 0)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer host.Free()
	win, err := window.AllocateShared[float64](ctx, host, 4)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer win.Free(ctx)
	first, err := win.SharedQuery(0) // the memory of the host's rank 0, mapped here
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := win.Fence(ctx, 0); err != nil {
		fmt.Println(err)
		return
	}
	if host.Rank() == 0 {
		first[0] = 42
	}
	if err := win.Fence(ctx, 0); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("rank %d of %d on this host reads %v\n", host.Rank(), host.Size(), first[0])
	// Output: rank 0 of 1 on this host reads 42
}
