package main

import (
	"context"
	"fmt"

	"github.com/gorma-hpc/gorma/collectives"
	"github.com/gorma-hpc/gorma/datatype"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/window"
)

func init() {
	register("rma-strided_acc_indexed", "rma/strided_acc_indexed.c", 2, rmaStrided("acc indexed", 16, 16, 8, 8, 1))
	register("rma-strided_acc_subarray", "rma/strided_acc_subarray.c", 2, rmaStrided("acc subarray", 1024, 1024, 512, 512, 10))
	register("rma-strided_get_indexed", "rma/strided_get_indexed.c", 2, rmaStrided("get indexed", 8, 1024, 8, 256, 1))
	register("rma-strided_putget_indexed", "rma/strided_putget_indexed.c", 4, rmaStrided("putget indexed", 8, 1024, 8, 255, 10))
	register("rma-strided_acc_onelock", "rma/strided_acc_onelock.c", 2, rmaStridedAccOnelock)
}

// rmaStrided: every rank's window holds an xdim x ydim float64 array. Each iteration,
// under an exclusive lock on the next rank, a rank moves the suby x subx corner of its
// source (1+rank) to the same corner of the next rank's window. Origin and target are
// described by an indexed type (suby blocks of subx, xdim apart) or a subarray. The
// moves are Accumulate with Sum into -1 ("acc ..."), Put then Get back ("putget"), or
// the rank Gets the next rank's corner into its -1 local array ("get"). After a Barrier
// each rank checks its window (its local array for "get") under a lock on itself: the
// corner holds -1 + (1+prev)*iters (acc), 1+prev (putget) or 1+next (get); the rest -1.
func rmaStrided(kind string, xdim, ydim, subx, suby, iters int) func(ctx context.Context, w *runtime.World) error {
	return func(ctx context.Context, w *runtime.World) error {
		rank, n := w.Rank(), w.Size()
		peer, prev := (rank+1)%n, (rank+n-1)%n
		isGet := kind == "get indexed"
		winInit, srcInit := -1.0, 1.0+float64(rank)
		if isGet {
			winInit, srcInit = 1.0+float64(rank), -1.0
		}
		local := fill(xdim*ydim, winInit)
		src := fill(xdim*ydim, srcInit)
		dst := make([]float64, xdim*ydim)
		win, err := window.Create(ctx, w, local)
		if err != nil {
			return err
		}
		var t datatype.Type
		if kind == "acc subarray" {
			t, err = datatype.Subarray[float64]([]int{xdim, ydim}, []int{subx, suby}, []int{0, 0}, datatype.OrderC)
		} else {
			t, err = datatype.Indexed[float64](fill(suby, subx), seq(suby, func(j int) int { return j * xdim }))
		}
		if err != nil {
			return err
		}
		for it := 0; it < iters; it++ {
			if err := win.Lock(ctx, window.Exclusive, peer, 0); err != nil {
				return err
			}
			switch kind {
			case "get indexed":
				err = win.GetType(src, 1, t, peer, 0, 1, t)
			case "putget indexed":
				err = win.PutType(src, 1, t, peer, 0, 1, t)
				if err == nil {
					err = first(win.Unlock(ctx, peer), win.Lock(ctx, window.Exclusive, peer, 0), win.GetType(dst, 1, t, peer, 0, 1, t))
				}
			default:
				err = win.AccumulateType(src, 1, t, peer, 0, 1, t, collectives.Sum[float64]())
			}
			if err := first(err, win.Unlock(ctx, peer)); err != nil {
				return fmt.Errorf("%s, iteration %d: %w", kind, it, err)
			}
		}
		if err := runtime.Barrier(ctx, w); err != nil {
			return err
		}
		inside := 1.0 + float64(prev)
		switch kind {
		case "get indexed":
			inside = 1.0 + float64(peer)
		case "acc indexed", "acc subarray":
			inside = -1.0 + (1.0+float64(prev))*float64(iters)
		}
		check := local
		if isGet {
			check = src
		}
		if err := win.Lock(ctx, window.Exclusive, rank, 0); err != nil {
			return err
		}
		got := append([]float64(nil), check...)
		if err := first(win.Unlock(ctx, rank), win.Free(ctx)); err != nil {
			return err
		}
		return same(kind, got, seq(xdim*ydim, func(k int) float64 {
			if k%xdim < subx && k/xdim < suby {
				return inside
			}
			return -1
		}))
	}
}

// rmaStridedAccOnelock: 10 times, under one exclusive lock on the next rank, a rank
// Accumulates (Sum) each of the 1024 rows of its 1024x1024 float64 array (1+rank) into
// the same row of the next rank's window (1+rank). Every element ends as (1+rank) +
// (1+prev)*10.
func rmaStridedAccOnelock(ctx context.Context, w *runtime.World) error {
	const xdim, ydim, iters = 1024, 1024, 10
	rank, n := w.Rank(), w.Size()
	peer, prev := (rank+1)%n, (rank+n-1)%n
	local, src := fill(xdim*ydim, 1.0+float64(rank)), fill(xdim*ydim, 1.0+float64(rank))
	win, err := window.Create(ctx, w, local)
	if err != nil {
		return err
	}
	for it := 0; it < iters; it++ {
		if err := win.Lock(ctx, window.Exclusive, peer, 0); err != nil {
			return err
		}
		for j := 0; j < ydim; j++ {
			if err := win.Accumulate(src[j*xdim:(j+1)*xdim], peer, j*xdim, collectives.Sum[float64]()); err != nil {
				return err
			}
		}
		if err := win.Unlock(ctx, peer); err != nil {
			return err
		}
	}
	if err := first(runtime.Barrier(ctx, w), win.Lock(ctx, window.Exclusive, rank, 0)); err != nil {
		return err
	}
	got := append([]float64(nil), local...)
	if err := first(win.Unlock(ctx, rank), win.Free(ctx)); err != nil {
		return err
	}
	return same("accumulated rows", got, fill(xdim*ydim, 1.0+float64(rank)+(1.0+float64(prev))*iters))
}
