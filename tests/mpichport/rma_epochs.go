package main

import (
	"context"
	"fmt"

	"github.com/gorma-hpc/gorma/collectives"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/window"
)

func init() {
	for _, op := range []string{"put", "acc", "gacc", "fop", "cas"} {
		register("rma-"+op+"_flush_get", "rma/wrma_flush_get.c", 3, rmaFlushGet(op))
	}
	register("rma-pscw_ordering", "rma/pscw_ordering.c", 4, rmaPscwOrdering(false))
	register("rma-pscw_ordering_shm", "rma/pscw_ordering.c", 4, rmaPscwOrdering(true))
	register("rma-get_flushlocal", "rma/get_flushlocal.c", 4, rmaGetFlushlocal(false))
	register("rma-get_flushlocal_shm", "rma/get_flushlocal.c", 4, rmaGetFlushlocal(true))
	register("rma-rget_testall", "rma/rget_testall.c", 2, rmaRgetTestall)
	register("rma-rget_unlock", "rma/rget_unlock.c", 2, rmaRgetUnlock)
	register("rma-at_complete", "rma/at_complete.c", 2, rmaAtComplete)
	register("rma-fence_shm", "rma/fence_shm.c", 2, rmaFenceShm)
}

// rmaFlushGet: 10000 rounds in one LockAll epoch on an Allocated one-int window: rank 0
// (the target) resets its int to 0 and Syncs. Rank 1 writes a new value with the
// operation (Put; Accumulate, GetAccumulate or FetchAndOp with replace; CompareAndSwap
// whose compare always matches), Flushes, checks the fetched old value (0), and tells
// rank 2, which must Get (and Flush) the new value.
func rmaFlushGet(op string) func(ctx context.Context, w *runtime.World) error {
	return func(ctx context.Context, w *runtime.World) error {
		const iter = 10000
		const target, origin, checker = 0, 1, 2
		win, err := window.Allocate[int32](ctx, w, 1)
		if err != nil {
			return err
		}
		rank := w.Rank()
		repl := collectives.Replace[int32]()
		if err := win.LockAll(ctx, 0); err != nil {
			return err
		}
		for x := 0; x < iter; x++ {
			if rank == target {
				win.Local()[0] = 0
				if err := win.Sync(ctx); err != nil {
					return err
				}
			}
			if err := runtime.Barrier(ctx, w); err != nil {
				return err
			}
			local := []int32{int32(1 + x)}
			switch rank {
			case origin:
				result := []int32{-1}
				switch op {
				case "put":
					err = win.Put(local, target, 0)
				case "acc":
					err = win.Accumulate(local, target, 0, repl)
				case "gacc":
					err = win.GetAccumulate(local, result, target, 0, repl)
				case "fop":
					err = win.FetchAndOp(local[0], &result[0], target, 0, repl)
				case "cas":
					err = win.CompareAndSwap(local[0], 0, &result[0], target, 0)
				}
				if err = first(err, win.Flush(ctx, target), runtime.Send(ctx, w, []int32{0}, checker, 999)); err != nil {
					return err
				}
				if op != "put" && op != "acc" && result[0] != 0 {
					return fmt.Errorf("round %d: %s fetched %d, want 0", x, op, result[0])
				}
			case checker:
				got := []int32{-1}
				if _, err := runtime.Recv(ctx, w, make([]int32, 1), origin, 999); err != nil {
					return err
				}
				if err := first(win.Get(got, target, 0), win.Flush(ctx, target)); err != nil {
					return err
				}
				if got[0] != local[0] {
					return fmt.Errorf("round %d: after %s and flush, the target holds %d, want %d", x, op, got[0], local[0])
				}
			}
			if err := runtime.Barrier(ctx, w); err != nil {
				return err
			}
		}
		return first(win.UnlockAll(ctx), win.Free(ctx))
	}
}

// rmaPscwOrdering: even ranks Start then Post, odd ranks Post then Start, each Putting
// its rank into its own slot at every rank of the other parity; then each parity with
// itself, Post before Start. Every slot ends holding its rank. alloc: the window is
// Allocated (pscw_ordering_shm).
func rmaPscwOrdering(alloc bool) func(ctx context.Context, w *runtime.World) error {
	return func(ctx context.Context, w *runtime.World) error {
		rank, n := w.Rank(), w.Size()
		var odd, even []int
		for r := 0; r < n; r++ {
			if r%2 == 0 {
				even = append(even, r)
			} else {
				odd = append(odd, r)
			}
		}
		win, err := newWin[int32](ctx, w, n, alloc)
		if err != nil {
			return err
		}
		if err := selfStore(ctx, win, window.Shared, func(l []int32) {
			for i := range l {
				l[i] = -1
			}
		}); err != nil {
			return err
		}
		mine, other := even, odd
		if rank%2 == 1 {
			mine, other = odd, even
		}
		me := []int32{int32(rank)}
		putAll := func(group []int) error {
			for _, t := range group {
				if err := win.Put(me, t, rank); err != nil {
					return err
				}
			}
			return nil
		}
		if rank%2 == 0 {
			err = first(win.Start(ctx, other, 0), win.Post(ctx, other, 0))
		} else {
			err = first(win.Post(ctx, other, 0), win.Start(ctx, other, 0))
		}
		if err = first(err, putAll(other), win.Complete(ctx), win.Wait(ctx)); err != nil {
			return fmt.Errorf("odd/even: %w", err)
		}
		if err := first(win.Post(ctx, mine, 0), win.Start(ctx, mine, 0), putAll(mine), win.Complete(ctx), win.Wait(ctx)); err != nil {
			return fmt.Errorf("same parity: %w", err)
		}
		return first(same("slots", win.Local(), seq(n, func(i int) int32 { return int32(i) })), win.Free(ctx))
	}
}

// rmaGetFlushlocal: in one LockAll epoch, 1000 times, each rank Gets 1024 ints from
// every rank and FlushLocals: the values must be there. alloc: Allocate
// (get_flushlocal_shm).
func rmaGetFlushlocal(alloc bool) func(ctx context.Context, w *runtime.World) error {
	return func(ctx context.Context, w *runtime.World) error {
		const bufcnt, niter = 1024, 1000
		rank, n := w.Rank(), w.Size()
		win, err := newWin[int32](ctx, w, bufcnt, alloc)
		if err != nil {
			return err
		}
		if err := selfStore(ctx, win, window.Shared, func(l []int32) {
			for i := range l {
				l[i] = int32(rank*bufcnt + i)
			}
		}); err != nil {
			return err
		}
		if err := first(runtime.Barrier(ctx, w), win.LockAll(ctx, 0)); err != nil {
			return err
		}
		loc := make([]int32, bufcnt)
		for x := 0; x < niter; x++ {
			for t := 0; t < n; t++ {
				clear(loc)
				if err := first(win.Get(loc, t, 0), win.FlushLocal(ctx, t)); err != nil {
					return err
				}
				if err := same(fmt.Sprintf("round %d, from rank %d", x, t), loc, seq(bufcnt, func(i int) int32 { return int32(t*bufcnt + i) })); err != nil {
					return err
				}
			}
		}
		return first(win.UnlockAll(ctx), win.Free(ctx))
	}
}

// rmaRgetTestall: two Rgets from rank 0 in a LockAll epoch, completed by polling Test on
// both (MPI_Testall) until both report done; the values and errors must be right.
func rmaRgetTestall(ctx context.Context, w *runtime.World) error {
	win, err := window.Allocate[int32](ctx, w, 2)
	if err != nil {
		return err
	}
	if err := first(selfStore(ctx, win, window.Exclusive, func(l []int32) { l[0], l[1] = 1, 2 }), runtime.Barrier(ctx, w), win.LockAll(ctx, 0)); err != nil {
		return err
	}
	v1, v2 := []int32{0}, []int32{0}
	r1, err := win.Rget(v1, 0, 0)
	if err != nil {
		return err
	}
	r2, err := win.Rget(v2, 0, 1)
	if err != nil {
		return err
	}
	for done1, done2 := false, false; !done1 || !done2; {
		if !done1 {
			if done1, err = r1.Test(); err != nil {
				return err
			}
		}
		if !done2 {
			if done2, err = r2.Test(); err != nil {
				return err
			}
		}
	}
	if v1[0] != 1 || v2[0] != 2 {
		return fmt.Errorf("rget values %d and %d, want 1 and 2", v1[0], v2[0])
	}
	return first(win.UnlockAll(ctx), runtime.Barrier(ctx, w), win.Free(ctx))
}

// rmaRgetUnlock: 128 one-int Rgets from the next rank in a LockAll(NoCheck) epoch; after
// UnlockAll the origin overwrites its buffer, then waits for the requests: they must
// not write it again (UnlockAll completed them).
func rmaRgetUnlock(ctx context.Context, w *runtime.World) error {
	const nelms = 128
	rank, n := w.Rank(), w.Size()
	trg := (rank + 1) % n
	win, err := window.Create(ctx, w, fill(nelms, int32(rank)))
	if err != nil {
		return err
	}
	lbuf := fill(nelms, int32(-1))
	if err := win.LockAll(ctx, window.NoCheck); err != nil {
		return err
	}
	reqs := make([]*window.Request, nelms)
	for i := range reqs {
		if reqs[i], err = win.Rget(lbuf[i:i+1], trg, i); err != nil {
			return err
		}
	}
	if err := win.UnlockAll(ctx); err != nil {
		return err
	}
	for i := range lbuf {
		lbuf[i] = -2
	}
	for _, r := range reqs {
		if err := r.Wait(ctx); err != nil {
			return err
		}
	}
	return first(same("buffer after Wait", lbuf, fill(nelms, int32(-2))), runtime.Barrier(ctx, w), win.Free(ctx))
}

// rmaAtComplete: 100 rounds: rank 0 Gets 100000 ints from rank 1 and Puts one int
// before them, in a Fence(NoPrecede)/Fence(NoSucceed) epoch, then in a PSCW epoch.
// After each epoch rank 1 changes the last element of its window (under a lock on
// itself), which rank 0's Get must not see: it completed at the epoch's end.
func rmaAtComplete(ctx context.Context, w *runtime.World) error {
	const putSize, getSize, loop = 1, 100000, 100
	const orig, dest = 0, 1
	rank := w.Rank()
	win, err := window.Create(ctx, w, fill(putSize+getSize, int32(1)))
	if err != nil {
		return err
	}
	getBuf, putBuf := make([]int32, getSize), fill(putSize, int32(1))
	reset := func() error {
		clear(getBuf)
		return first(runtime.Barrier(ctx, w), selfStore(ctx, win, window.Shared, func(l []int32) {
			for i := range l {
				l[i] = 1
			}
		}), runtime.Barrier(ctx, w))
	}
	lastToTwo := func() error {
		return selfStore(ctx, win, window.Shared, func(l []int32) { l[len(l)-1] = 2 })
	}
	for k := 0; k < loop; k++ {
		for _, sync := range []string{"fence", "pscw"} {
			switch {
			case rank == orig && sync == "fence":
				err = first(win.Fence(ctx, window.NoPrecede), win.Get(getBuf, dest, putSize), win.Put(putBuf, dest, 0), win.Fence(ctx, window.NoSucceed))
			case rank == orig:
				err = first(win.Start(ctx, []int{dest}, 0), win.Get(getBuf, dest, putSize), win.Put(putBuf, dest, 0), win.Complete(ctx))
			case rank == dest && sync == "fence":
				err = first(win.Fence(ctx, window.NoPrecede), win.Fence(ctx, window.NoSucceed), lastToTwo())
			case rank == dest:
				err = first(win.Post(ctx, []int{orig}, 0), win.Wait(ctx), lastToTwo())
			default:
				if sync == "fence" {
					err = first(win.Fence(ctx, window.NoPrecede), win.Fence(ctx, window.NoSucceed))
				}
			}
			if err != nil {
				return fmt.Errorf("round %d, %s: %w", k, sync, err)
			}
			if rank == orig {
				if err := same(fmt.Sprintf("round %d, %s: got", k, sync), getBuf, fill(getSize, int32(1))); err != nil {
					return err
				}
			}
			if err := reset(); err != nil {
				return err
			}
		}
	}
	return win.Free(ctx)
}

// rmaFenceShm: on a host's shared window of one int per rank: rank 0 Puts 1 into rank
// 1's int in a Fence epoch (Fence(0) on both sides). Then rank 1 Puts 1 into its own int
// under a lock on itself, and after Fence(NoPrecede) rank 0 Gets it.
func rmaFenceShm(ctx context.Context, w *runtime.World) error {
	shm, err := hostComm(ctx, w)
	if err != nil {
		return err
	}
	if shm.Size() < 2 {
		return shm.Free()
	}
	win, err := window.AllocateShared[int32](ctx, shm, 1)
	if err != nil {
		return err
	}
	one := []int32{1}
	r := shm.Rank()
	if r == 0 {
		err = first(win.Fence(ctx, 0), win.Put(one, 1, 0), win.Fence(ctx, 0))
	} else {
		err = first(win.Fence(ctx, 0), win.Fence(ctx, 0))
	}
	if err != nil {
		return fmt.Errorf("fence without asserts: %w", err)
	}
	if r == 1 && win.Local()[0] != 1 {
		return fmt.Errorf("fence without asserts: rank 1 holds %d, want 1", win.Local()[0])
	}
	res := []int32{0}
	switch r {
	case 1:
		err = first(win.Lock(ctx, window.Exclusive, 1, 0), win.Put(one, 1, 0), win.Unlock(ctx, 1),
			win.Fence(ctx, window.NoPrecede), win.Fence(ctx, 0))
	case 0:
		err = first(win.Fence(ctx, window.NoPrecede), win.Get(res, 1, 0), win.Fence(ctx, 0))
		if err == nil && res[0] != 1 {
			err = fmt.Errorf("got %d from rank 1, want 1", res[0])
		}
	default:
		err = first(win.Fence(ctx, window.NoPrecede), win.Fence(ctx, 0))
	}
	if err != nil {
		return fmt.Errorf("fence with NoPrecede: %w", err)
	}
	return first(win.Free(ctx), shm.Free())
}
