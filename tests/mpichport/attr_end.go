package main

import (
	"context"
	"fmt"
	"slices"

	"github.com/gorma-hpc/gorma/collectives"
	"github.com/gorma-hpc/gorma/runtime"
)

func init() {
	register("attr-attrend2", "attr/attrend2.c", 1, attrAttrend2)
	register("attr-attrend2_np5", "attr/attrend2.c", 5, attrAttrend2)
	finalizing["attr-attrend2"], finalizing["attr-attrend2_np5"] = true, true
}

// attrAttrend2: 32 attributes set on the builtin communicator, their keyvals freed at
// once, and Finalize: each delete function runs exactly once, in the reverse order of
// setting, before Finalize has begun (Finalized false). MPICH sets them on
// MPI_COMM_SELF; gorma has no COMM_SELF, and Init's World is the builtin whose
// attributes Finalize deletes. An attribute set before the 32 has its delete function
// run last, still inside Finalize and able to communicate: it checks the others' calls
// and Allreduces the ranks' error counts, so that every rank learns the outcome.
func attrAttrend2(ctx context.Context, w *runtime.World) error {
	const n = 32
	var calls []int
	errs := 0
	var verdict error
	check := runtime.NewKeyval(nil, func(w *runtime.World, _ int) {
		want := make([]int, n)
		for i := range want {
			want[i] = n - 1 - i
		}
		if !slices.Equal(calls, want) {
			errs++
		}
		sum := []int32{0}
		if err := collectives.Allreduce(ctx, w, []int32{int32(errs)}, sum, collectives.Sum[int32]()); err != nil {
			verdict = err
			return
		}
		if sum[0] != 0 {
			verdict = fmt.Errorf("%d errors in the ranks' delete functions at Finalize (this rank's calls, in order: %v; want %v)", sum[0], calls, want)
		}
	})
	if err := runtime.SetAttr(w, check, 0); err != nil {
		return err
	}
	for i := range n {
		k := runtime.NewKeyval(nil, func(w *runtime.World, v int) {
			if w.Finalized() {
				errs++
			}
			calls = append(calls, v)
		})
		if err := runtime.SetAttr(w, k, i); err != nil {
			return err
		}
		if err := k.Free(); err != nil {
			return err
		}
	}
	if err := check.Free(); err != nil {
		return err
	}
	if err := w.Finalize(ctx); err != nil {
		return err
	}
	if verdict == nil && len(calls) != n {
		verdict = fmt.Errorf("%d delete functions ran at Finalize, want %d", len(calls), n)
	}
	return verdict
}
