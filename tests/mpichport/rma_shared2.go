package main

import (
	"context"
	"fmt"

	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/window"
)

func init() {
	// testlist.in builds win_shared_create.c twice, with and without the info key
	// alloc_shm on MPI_Win_create, which gorma has no use for: both run the same program.
	register("rma-win_shared_create_allocshm", "rma/win_shared_create.c", 4, rmaWinSharedCreate)
	register("rma-win_shared_create_no_allocshm", "rma/win_shared_create.c", 4, rmaWinSharedCreate)
	register("rma-win_shared_put_flush_get", "rma/win_shared_put_flush_get.c", 4, rmaWinSharedPutFlushGet)
}

// rmaWinSharedCreate: the ranks of a host share a window of 4 ints each
// (AllocateShared); every rank makes a World window over its shared memory (Create over
// Local()). In LockAll epochs of both, the host's first rank Puts 1 and 4 into the first
// and last int of the host's last rank through the World window and Flushes. After Sync,
// Barrier, Sync of the shared window every rank of the host loads them from the last
// rank's shared memory.
func rmaWinSharedCreate(ctx context.Context, w *runtime.World) error {
	const perProc = 4
	shm, err := hostComm(ctx, w)
	if err != nil {
		return err
	}
	sn := shm.Size()
	if sn < 2 {
		return shm.Free()
	}
	dst := hostRanksOf(w, w.Rank())[sn-1]
	sw, err := window.AllocateShared[int32](ctx, shm, perProc)
	if err != nil {
		return err
	}
	bases := make([][]int32, sn)
	for i := range bases {
		if bases[i], err = sw.SharedQuery(i); err != nil {
			return err
		}
	}
	clear(sw.Local())
	local := seq(perProc, func(i int) int32 { return int32(i + 1) })
	win, err := window.Create(ctx, w, sw.Local())
	if err != nil {
		return err
	}
	if err := first(win.LockAll(ctx, 0), sw.LockAll(ctx, 0)); err != nil {
		return err
	}
	if shm.Rank() == 0 {
		if err := first(win.Put(local[:1], dst, 0), win.Put(local[perProc-1:], dst, perProc-1), win.Flush(ctx, dst)); err != nil {
			return err
		}
	}
	if err := first(sw.Sync(ctx), runtime.Barrier(ctx, shm), sw.Sync(ctx)); err != nil {
		return err
	}
	if got := bases[sn-1]; got[0] != local[0] || got[perProc-1] != local[perProc-1] {
		return fmt.Errorf("host rank %d's shared memory holds %v, want %d first and %d last", sn-1, got, local[0], local[perProc-1])
	}
	return first(sw.UnlockAll(ctx), win.UnlockAll(ctx), win.Free(ctx), sw.Free(ctx), shm.Free())
}

// rmaWinSharedPutFlushGet: the host of World rank 0 has a shared window of 4 doubles per
// rank (AllocateShared). Every rank makes a World window over its shared memory, where
// the host's first rank (the get target) spans the whole host's memory: its own and,
// right after it, every other host rank's, as MPI_Win_allocate_shared lays them out. In
// 100 rounds an origin locks the host's last rank (the put target) and the get target
// exclusively. It Puts 4 values into the put target and Flushes it, then Gets them back
// from the get target at the put target's place in the host's memory and Flushes. Flush
// must have completed the Puts at the target. MPICH wants two hosts of two ranks and
// takes the origin from the second host; on one host (golaunch -n 4 here) the origin is
// the last rank that is neither target.
func rmaWinSharedPutFlushGet(ctx context.Context, w *runtime.World) error {
	const iter, bufCnt = 100, 4
	shm, err := hostComm(ctx, w)
	if err != nil {
		return err
	}
	sn := shm.Size()
	host0 := hostRanksOf(w, 0)
	if len(host0) < 2 || w.Size() < 3 {
		return shm.Free()
	}
	getTarget, putTarget := host0[0], host0[len(host0)-1]
	origin := -1 // the lowest rank off rank 0's host (MPICH's), else the last besides the targets
	for r := w.Size() - 1; r >= 0; r-- {
		if w.HostOf(r) != w.HostOf(0) || origin < 0 && r != getTarget && r != putTarget {
			origin = r
		}
	}
	sw, err := window.AllocateShared[float64](ctx, shm, bufCnt)
	if err != nil {
		return err
	}
	mine := sw.Local()
	if w.Rank() == getTarget {
		all, err := sw.SharedQuery(0)
		if err != nil {
			return err
		}
		mine = all[:sn*bufCnt]
	}
	clear(sw.Local())
	if err := runtime.Barrier(ctx, w); err != nil {
		return err
	}
	win, err := window.Create(ctx, w, mine)
	if err != nil {
		return err
	}
	if err := runtime.Barrier(ctx, w); err != nil {
		return err
	}
	local, check := seq(bufCnt, func(i int) float64 { return float64(i + 1) }), make([]float64, bufCnt)
	getOff := (len(host0) - 1) * bufCnt // the put target's first element in the get target's window
	for x := 0; x < iter; x++ {
		for i := range local {
			local[i] += float64(x)
			check[i] = 0
		}
		if w.Rank() != origin {
			continue
		}
		if err := first(win.Lock(ctx, window.Exclusive, putTarget, 0), win.Lock(ctx, window.Exclusive, getTarget, 0)); err != nil {
			return err
		}
		for i := range local {
			if err := win.Put(local[i:i+1], putTarget, i); err != nil {
				return err
			}
		}
		if err := first(win.Flush(ctx, putTarget), win.Get(check, getTarget, getOff), win.Flush(ctx, getTarget)); err != nil {
			return err
		}
		if err := same(fmt.Sprintf("round %d: rank %d's memory read at rank %d", x, putTarget, getTarget), check, local); err != nil {
			return err
		}
		if err := first(win.Unlock(ctx, putTarget), win.Unlock(ctx, getTarget)); err != nil {
			return err
		}
	}
	return first(runtime.Barrier(ctx, w), win.Free(ctx), sw.Free(ctx), shm.Free())
}

// hostRanksOf returns the World ranks of rank r's host, in order.
func hostRanksOf(w *runtime.World, r int) []int {
	var rs []int
	for s := 0; s < w.Size(); s++ {
		if w.HostOf(s) == w.HostOf(r) {
			rs = append(rs, s)
		}
	}
	return rs
}
