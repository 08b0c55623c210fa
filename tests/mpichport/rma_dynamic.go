package main

import (
	"context"
	"fmt"

	"github.com/gorma-hpc/gorma/collectives"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/window"
)

func init() {
	// testlist.in runs win_dynamic_rma_flush_get with these -op and -count arguments.
	for _, c := range []struct {
		op    string
		count int
	}{{"put", 4096}, {"acc", 4096}, {"gacc", 4096}, {"fop", 1}, {"cas", 1}, {"put", 9216}, {"acc", 9216}, {"gacc", 9216}} {
		name := fmt.Sprintf("rma-win_dynamic_rma_flush_get_%s%d", c.op, c.count)
		register(name, "rma/win_dynamic_rma_flush_get.c", 2, rmaDynamicFlushGet(c.op, c.count))
	}
}

// rmaDynamicFlushGet: every rank attaches the two halves (8192 ints each) of one array
// to a dynamic window and Allgathers their displacements. In one LockAll epoch, 10
// rounds, it writes count ints (rank+i+x) to the next rank's first half with the
// operation (Put; Accumulate or GetAccumulate with replace; FetchAndOp with replace or
// CompareAndSwap for one int), Flushes, Gets them back and Flushes: they must be there.
// A count of 9216 runs over the end of the first half into the second, attached right
// after it in memory, where gorma continues the access (MPICH: the displacement is the
// address).
func rmaDynamicFlushGet(op string, count int) func(ctx context.Context, w *runtime.World) error {
	return func(ctx context.Context, w *runtime.World) error {
		const iter, memCnt = 10, 8192
		rank, n := w.Rank(), w.Size()
		mem := make([]int32, 2*memCnt)
		win, err := window.CreateDynamic[int32](ctx, w)
		if err != nil {
			return err
		}
		b0, err := win.Attach(ctx, mem[:memCnt])
		if err != nil {
			return err
		}
		b1, err := win.Attach(ctx, mem[memCnt:])
		if err != nil {
			return err
		}
		bases := make([]int64, 2*n)
		if err := collectives.Allgather(ctx, w, []int64{int64(b0), int64(b1)}, bases); err != nil {
			return err
		}
		dst := (rank + 1) % n
		if err := first(selfStore(ctx, win, window.Shared, func([]int32) { clear(mem) }), win.LockAll(ctx, 0), runtime.Barrier(ctx, w)); err != nil {
			return err
		}
		disp := int(bases[2*dst])
		repl := collectives.Replace[int32]()
		result, check := make([]int32, count), make([]int32, count)
		for x := 0; x < iter; x++ {
			local := seq(count, func(i int) int32 { return int32(rank + i + x) })
			compare := int32(0)
			if x > 0 {
				compare = int32(rank + x - 1)
			}
			clear(check)
			switch op {
			case "put":
				err = win.Put(local, dst, disp)
			case "acc":
				err = win.Accumulate(local, dst, disp, repl)
			case "gacc":
				err = win.GetAccumulate(local, result, dst, disp, repl)
			case "fop":
				err = win.FetchAndOp(local[0], &result[0], dst, disp, repl)
			case "cas":
				err = win.CompareAndSwap(local[0], compare, &result[0], dst, disp)
			}
			if err = first(err, win.Flush(ctx, dst), win.Get(check, dst, disp), win.Flush(ctx, dst)); err != nil {
				return fmt.Errorf("round %d: %w", x, err)
			}
			if err := same(fmt.Sprintf("round %d, %s of %d", x, op, count), check, local); err != nil {
				return err
			}
		}
		return first(win.UnlockAll(ctx), runtime.Barrier(ctx, w), win.Detach(ctx, b0), win.Detach(ctx, b1), win.Free(ctx))
	}
}
