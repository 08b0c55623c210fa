package collectives_test

import (
	"context"
	"fmt"

	"github.com/gorma-hpc/gorma/collectives"
)

// A library that keeps its traffic on a Dup of the user's World sets the Dup's scratch
// up through the World's, within a collective call of its own on the World, so that the
// Dup's first collective call needs no setup.
func ExampleSetupDup() {
	w, done := world()
	defer done()
	ctx := context.Background()
	lib, err := w.Dup()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer lib.Free()
	if err := collectives.SetupDup(ctx, w, lib, ""); err != nil {
		fmt.Println(err)
		return
	}
	sum := make([]int64, 1)
	if err := collectives.Allreduce(ctx, lib, []int64{1}, sum, collectives.Sum[int64]()); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(sum[0] == int64(lib.Size()))
	// Output: true
}
