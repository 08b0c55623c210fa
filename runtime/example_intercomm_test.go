package runtime_test

import (
	"context"
	"fmt"

	"github.com/gorma-hpc/gorma/collectives"
	"github.com/gorma-hpc/gorma/runtime"
)

// Two halves of the job joined by an intercommunicator (MPI_Intercomm_create): each rank
// sends to the rank of the same index in the other half, each half learns the sum of the
// other half's ranks, and Merge makes one World of both again (MPI_Intercomm_merge).
// It needs at least two ranks (golaunch -n 4), so it has no output to check here.
func ExampleWorld_CreateIntercomm() {
	ctx := context.Background()
	w, err := runtime.Init(ctx)
	if err != nil || w.Size() < 2 {
		fmt.Println("needs two ranks or more", err)
		return
	}
	defer w.Finalize(ctx)
	upper := w.Rank() >= w.Size()/2
	color, remoteLeader := 0, w.Size()/2 // the leaders are ranks 0 and Size/2 of w
	if upper {
		color, remoteLeader = 1, 0
	}
	half, err := w.Split(ctx, color, w.Rank())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer half.Free()
	ic, err := half.CreateIntercomm(ctx, 0, w, remoteLeader, 99)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ic.Free()
	// Point to point names the other half's ranks.
	if ic.Rank() < ic.RemoteSize() {
		if err := runtime.Send(ctx, ic, []int64{int64(w.Rank())}, ic.Rank(), 0); err != nil {
			fmt.Println(err)
			return
		}
	}
	if ic.Rank() < ic.RemoteSize() {
		got := []int64{0}
		if _, err := runtime.Recv(ctx, ic, got, ic.Rank(), 0); err != nil {
			fmt.Println(err)
			return
		}
	}
	// Each half gets the other half's sum.
	sum := []int64{0}
	if err := collectives.Allreduce(ctx, ic, []int64{int64(w.Rank())}, sum, collectives.Sum[int64]()); err != nil {
		fmt.Println(err)
		return
	}
	all, err := ic.Merge(ctx, upper)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer all.Free()
	fmt.Printf("rank %d: the other half's ranks sum to %d; rank %d of %d merged\n", w.Rank(), sum[0], all.Rank(), all.Size())
}
