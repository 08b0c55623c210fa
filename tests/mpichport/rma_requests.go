package main

import (
	"context"
	"fmt"

	"github.com/gorma-hpc/gorma/collectives"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/window"
)

func init() {
	register("rma-rput_local_comp", "rma/rput_local_comp.c", 2, rmaLocalComp(false))
	register("rma-racc_local_comp", "rma/racc_local_comp.c", 2, rmaLocalComp(true))
	register("rma-req_example", "rma/req_example.c", 4, rmaReqExample)
	register("rma-req_example_shm", "rma/req_example.c", 4, rmaReqExample)
}

// rmaLocalComp: in a LockAll epoch rank 1, 100 times, sends one int to rank 0 with Rput
// (Raccumulate with replace: its rank times the round), waits for the request, zeroes
// its buffer, Flushes and Gets the int back. It is the value sent (the request's
// completion meant the buffer had been read). Then the same with 65536 ints, zeroing
// three of them after the Wait.
func rmaLocalComp(acc bool) func(ctx context.Context, w *runtime.World) error {
	return func(ctx context.Context, w *runtime.World) error {
		const iter, maxSize = 100, 65536
		rank := w.Rank()
		win, err := window.Create(ctx, w, make([]int32, maxSize))
		if err != nil {
			return err
		}
		buf := make([]int32, maxSize)
		send := func(b []int32) error {
			var req *window.Request
			var err error
			if acc {
				req, err = win.Raccumulate(b, 0, 0, collectives.Replace[int32]())
			} else {
				req, err = win.Rput(b, 0, 0)
			}
			if err != nil {
				return err
			}
			return req.Wait(ctx)
		}
		if err := win.LockAll(ctx, 0); err != nil {
			return err
		}
		if rank == 1 {
			for i := 0; i < iter; i++ {
				want := int32(rank)
				if acc {
					want = int32(rank * i)
				}
				buf[0] = want
				val := []int32{-1}
				if err := send(buf[:1]); err != nil {
					return err
				}
				buf[0] = 0
				if err := first(win.Flush(ctx, 0), win.Get(val, 0, 0), win.Flush(ctx, 0)); err != nil {
					return err
				}
				if val[0] != want {
					return fmt.Errorf("one int, round %d: rank 0 holds %d, want %d", i, val[0], want)
				}
			}
		}
		if err := runtime.Barrier(ctx, w); err != nil {
			return err
		}
		if rank == 1 {
			for i := 0; i < iter; i++ {
				for j := range buf {
					buf[j] = int32(rank + j + i)
				}
				if err := send(buf); err != nil {
					return err
				}
				buf[0], buf[maxSize-1], buf[maxSize/2] = 0, 0, 0
				vals := []int32{-1, -1, -1}
				if err := first(win.Flush(ctx, 0), win.Get(vals[0:1], 0, 0), win.Get(vals[1:2], 0, maxSize-1),
					win.Get(vals[2:3], 0, maxSize/2), win.Flush(ctx, 0)); err != nil {
					return err
				}
				if err := same(fmt.Sprintf("%d ints, round %d: first, last and middle", maxSize, i), vals,
					[]int32{int32(rank + i), int32(rank + maxSize - 1 + i), int32(rank + maxSize/2 + i)}); err != nil {
					return err
				}
			}
		}
		return first(win.UnlockAll(ctx), runtime.Barrier(ctx, w), win.Free(ctx))
	}
}

// rmaReqExample: the request-based pipeline of the MPI standard's example. In a LockAll epoch,
// 100 steps each Rget 1000 doubles of the next rank's window (waiting for it), compute on
// them, and Rput them back from one of 10 buffers. A buffer is reused once its Rput has
// completed. MPI uses MPI_Waitany over the Rputs; here a Test of each, then a Wait for the
// first, as window.Request has no WaitAny. Then all Rputs are waited for. Completion is the
// check. req_example_shm differs only in an info hint (alloc_shm) gorma has no use for.
func rmaReqExample(ctx context.Context, w *runtime.World) error {
	const nsteps, n, m = 100, 1000, 10
	win, err := window.Allocate[float64](ctx, w, nsteps*n)
	if err != nil {
		return err
	}
	data := make([][]float64, m)
	for i := range data {
		data[i] = make([]float64, n)
	}
	puts := make([]*window.Request, m)
	// waitAny returns a buffer whose Rput has completed: one that Test finds done, else
	// the first one, once Wait returns.
	waitAny := func() (int, error) {
		for j, r := range puts {
			done, err := r.Test()
			if err != nil {
				return -1, err
			}
			if done {
				puts[j] = nil
				return j, nil
			}
		}
		err := puts[0].Wait(ctx)
		puts[0] = nil
		return 0, err
	}
	if err := win.LockAll(ctx, 0); err != nil {
		return err
	}
	target := (w.Rank() + 1) % w.Size()
	var junk float64
	for i := 0; i < nsteps; i++ {
		j := i
		if i >= m {
			if j, err = waitAny(); err != nil {
				return err
			}
		}
		get, err := win.Rget(data[j], target, i*n)
		if err != nil {
			return err
		}
		if err := get.Wait(ctx); err != nil {
			return err
		}
		for _, v := range data[j] {
			junk += v * float64(i)
		}
		if puts[j], err = win.Rput(data[j], target, i*n); err != nil {
			return err
		}
	}
	for _, r := range puts {
		if r != nil {
			if err := r.Wait(ctx); err != nil {
				return err
			}
		}
	}
	_ = junk
	return first(win.UnlockAll(ctx), win.Free(ctx))
}
