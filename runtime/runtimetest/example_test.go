package runtimetest_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/runtimetest"
)

// Two ranks in one process, each used from its own goroutine as a separate process
// would: rank 0 sends, rank 1 receives.
func ExampleStart() {
	ctx := context.Background()
	job, err := runtimetest.Start(ctx, 2, runtimetest.Options{Transport: "shm"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer job.Close()
	got := make([]int64, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	wg.Go(func() { errs[0] = runtime.Send(ctx, job.Worlds[0], []int64{4, 2}, 1, 7) })
	wg.Go(func() { _, errs[1] = runtime.Recv(ctx, job.Worlds[1], got, 0, 7) })
	wg.Wait()
	fmt.Println(got, errors.Join(errs...))
	fmt.Println(job.Finalize(ctx))
	// Output:
	// [4 2] <nil>
	// <nil>
}

// Run wraps Start, a function per rank, and Finalize in a test; ranks on different
// pretend hosts talk over tcp.
func ExampleRun() {
	test := func(t testing.TB) {
		runtimetest.Run(t, 4, runtimetest.Options{Hosts: []string{"a", "a", "b", "b"}},
			func(w *runtime.World) error {
				return runtime.Barrier(context.Background(), w)
			})
	}
	_ = test
}
