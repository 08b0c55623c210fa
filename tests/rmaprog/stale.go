package main

import (
	"context"
	"fmt"

	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/tests/stalecheck"
)

// staleRun runs the stale-read checker (tests/stalecheck) with --rounds
// operations per rank and the page cache on, and prints the counts summed over the ranks
// at rank 0:
//
//	stale: R ranks, N ops, G gets, S stale reads; cache hits H, misses M, installs I, invalidations V
//
// A stale read or a lost increment fails the scenario (the checker names the first).
func staleRun(ctx context.Context, w *runtime.World, o opts) error {
	res, err := stalecheck.Run(ctx, w, stalecheck.Options{Rounds: o.rounds})
	if err != nil {
		return err
	}
	c := res.Cache
	all, err := gatherInt64(ctx, w, []int64{int64(res.Ops), int64(res.Gets), int64(res.StaleReads),
		c.Hits, c.Misses, c.Installs, c.Invalidations})
	if err != nil {
		return err
	}
	var sum [7]int64
	for i, v := range all {
		sum[i%len(sum)] += v
	}
	if w.Rank() == 0 {
		fmt.Printf("stale: %d ranks, %d ops, %d gets, %d stale reads; cache hits %d, misses %d, installs %d, invalidations %d\n",
			w.Size(), sum[0], sum[1], sum[2], sum[3], sum[4], sum[5], sum[6])
	}
	return nil
}
