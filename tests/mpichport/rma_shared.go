package main

import (
	"context"
	"fmt"

	"github.com/gorma-hpc/gorma/collectives"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/window"
)

func init() {
	register("rma-win_shared_zerobyte", "rma/win_shared_zerobyte.c", 4, rmaWinSharedZerobyte)
	for _, flavor := range []string{"create", "allocate", "allocate_shared"} {
		name := "rma-win_shared_query_" + flavor
		register(name, "rma/win_shared_query.c", 4, rmaWinSharedQuery(flavor))
	}
	register("rma-win_shared_noncontig", "rma/win_shared_noncontig.c", 4, rmaWinSharedNoncontig)
	register("rma-win_shared_noncontig_put", "rma/win_shared_noncontig_put.c", 4, rmaWinSharedNoncontigPut)
	register("rma-manyrma3", "rma/manyrma3.c", 2, rmaManyrma3)
	register("rma-contention_put", "rma/contention_put.c", 4, rmaContentionPut)
}

// rmaWinSharedZerobyte: a shared window where only the host's first and last ranks have
// memory (16 ints), the others none. Every rank queries every rank's memory, stores
// minus its World rank into its own, then (Sync, Barrier, Sync) the first rank stores 1
// into its first int. Every rank sees 1 there and minus the last rank's World rank in
// the last rank's first int. (MPICH also queries MPI_PROC_NULL, which gorma lacks.)
func rmaWinSharedZerobyte(ctx context.Context, w *runtime.World) error {
	shm, err := hostComm(ctx, w)
	if err != nil {
		return err
	}
	sr, sn := shm.Rank(), shm.Size()
	if sn < 2 {
		return shm.Free()
	}
	n := 0
	if sr == 0 || sr == sn-1 {
		n = 16
	}
	last := []int32{int32(w.Rank())}
	if err := collectives.Bcast(ctx, shm, last, sn-1); err != nil {
		return err
	}
	win, err := window.AllocateShared[int32](ctx, shm, n)
	if err != nil {
		return err
	}
	bases := make([][]int32, sn)
	for i := range bases {
		if bases[i], err = win.SharedQuery(i); err != nil {
			return err
		}
	}
	if err := win.LockAll(ctx, window.NoCheck); err != nil {
		return err
	}
	for i := range win.Local() {
		win.Local()[i] = int32(-w.Rank())
	}
	if err := first(win.Sync(ctx), runtime.Barrier(ctx, shm), win.Sync(ctx)); err != nil {
		return err
	}
	if sr == 0 {
		bases[0][0] = 1
	}
	if err := first(win.Sync(ctx), runtime.Barrier(ctx, shm), win.Sync(ctx)); err != nil {
		return err
	}
	if bases[0][0] != 1 {
		return fmt.Errorf("host rank 0's first int is %d, want 1", bases[0][0])
	}
	if got := bases[sn-1][0]; got != -last[0] {
		return fmt.Errorf("host rank %d's first int is %d, want %d", sn-1, got, -last[0])
	}
	return first(win.UnlockAll(ctx), win.Free(ctx), shm.Free())
}

// rmaWinSharedQuery: a window of 100 ints per rank made by Create or Allocate over the
// World, or by AllocateShared over a host's ranks; every rank queries every rank's
// memory with SharedQuery, which must succeed.
func rmaWinSharedQuery(flavor string) func(ctx context.Context, w *runtime.World) error {
	return func(ctx context.Context, w *runtime.World) error {
		const perProc = 100
		comm := w
		var win *window.Win[int32]
		var err error
		switch flavor {
		case "create":
			win, err = window.Create(ctx, w, make([]int32, perProc))
		case "allocate":
			win, err = window.Allocate[int32](ctx, w, perProc)
		case "allocate_shared":
			if comm, err = hostComm(ctx, w); err == nil {
				win, err = window.AllocateShared[int32](ctx, comm, perProc)
			}
		}
		if err != nil {
			return err
		}
		for i := 0; i < comm.Size(); i++ {
			if _, err := win.SharedQuery(i); err != nil {
				return fmt.Errorf("shared query of rank %d: %w", i, err)
			}
		}
		if err := win.Free(ctx); err != nil {
			return err
		}
		if comm != w {
			return comm.Free()
		}
		return nil
	}
}

// rmaManyrma3: 4096 one-int sum Accumulates into rank 0 in one Fence epoch, from every
// rank (completion is the check).
func rmaManyrma3(ctx context.Context, w *runtime.World) error {
	const maxCount = 4096
	win, err := window.Create(ctx, w, []int32{0})
	if err != nil {
		return err
	}
	if err := win.Fence(ctx, 0); err != nil {
		return err
	}
	one := []int32{1}
	for i := 0; i < maxCount; i++ {
		if err := win.Accumulate(one, 0, 0, collectives.Sum[int32]()); err != nil {
			return err
		}
	}
	return first(win.Fence(ctx, 0), win.Free(ctx))
}

// rmaContentionPut: every rank Puts 1000 doubles (its rank + 1), one per exclusive lock,
// into its own slots of every rank's window, the targets in rank order; each window ends
// with rank i's slots holding i + 1. (MPICH puts each double as 8 bytes of a byte window.)
func rmaContentionPut(ctx context.Context, w *runtime.World) error {
	const maxElems, count = 6400, 1000
	me, n := w.Rank(), w.Size()
	win, err := window.Create(ctx, w, make([]float64, n*maxElems))
	if err != nil {
		return err
	}
	src := fill(maxElems, float64(me)+1)
	if err := first(selfStore(ctx, win, window.Exclusive, func(l []float64) { clear(l) }), runtime.Barrier(ctx, w)); err != nil {
		return err
	}
	for t := 0; t < n; t++ {
		for j := 0; j < count; j++ {
			if err := first(win.Lock(ctx, window.Exclusive, t, 0), win.Put(src[j:j+1], t, me*maxElems+j), win.Unlock(ctx, t)); err != nil {
				return err
			}
		}
	}
	if err := runtime.Barrier(ctx, w); err != nil {
		return err
	}
	for i := 0; i < n; i++ {
		if err := same(fmt.Sprintf("rank %d's slots", i), win.Local()[i*maxElems:i*maxElems+count], fill(count, float64(i)+1)); err != nil {
			return err
		}
	}
	return win.Free(ctx)
}

// rmaWinSharedNoncontig: win_shared's check with the info key alloc_shared_noncontig
// (window.NonContiguous): every rank
// of a host stores 0..9999 into its own shared memory in a LockAll(NoCheck) epoch, then
// (Sync, Barrier, Sync) loads every rank's memory through SharedQuery.
func rmaWinSharedNoncontig(ctx context.Context, w *runtime.World) error {
	const perProc = 10000
	shm, err := hostComm(ctx, w)
	if err != nil {
		return err
	}
	win, err := window.AllocateShared[int32](ctx, shm, perProc, window.NonContiguous())
	if err != nil {
		return err
	}
	if err := win.LockAll(ctx, window.NoCheck); err != nil {
		return err
	}
	for i := range win.Local() {
		win.Local()[i] = int32(i)
	}
	if err := first(win.Sync(ctx), runtime.Barrier(ctx, shm), win.Sync(ctx)); err != nil {
		return err
	}
	for r := 0; r < shm.Size(); r++ {
		mem, err := win.SharedQuery(r)
		if err != nil {
			return err
		}
		if len(mem) < perProc {
			return fmt.Errorf("rank %d's shared memory has %d elements, want at least %d", r, len(mem), perProc)
		}
		if err := same(fmt.Sprintf("rank %d's shared memory", r), mem[:perProc], seq(perProc, func(j int) int32 { return int32(j) })); err != nil {
			return err
		}
	}
	return first(win.UnlockAll(ctx), win.Free(ctx), shm.Free())
}

// rmaWinSharedNoncontigPut: a host's even ranks have 10000 ints of shared memory (info
// alloc_shared_noncontig), the odd ranks none. In 10000 Fence(NoPrecede)/
// Fence(NoSucceed) epochs each even rank Puts i at element i of the even rank two
// further on (rank 0 past the end). Then every rank loads each even rank's memory,
// which holds 0..9999, and finds the odd ranks' memory empty.
func rmaWinSharedNoncontigPut(ctx context.Context, w *runtime.World) error {
	const perProc = 10000
	shm, err := hostComm(ctx, w)
	if err != nil {
		return err
	}
	sr, sn := shm.Rank(), shm.Size()
	n := 0
	if sr%2 == 0 {
		n = perProc
	}
	win, err := window.AllocateShared[int32](ctx, shm, n, window.NonContiguous())
	if err != nil {
		return err
	}
	target := (sr + 2) % sn
	if sr+2 > sn {
		target = 0
	}
	for i := 0; i < perProc; i++ {
		if err := win.Fence(ctx, window.NoPrecede); err != nil {
			return err
		}
		if sr%2 == 0 {
			if err := win.Put([]int32{int32(i)}, target, i); err != nil {
				return err
			}
		}
		if err := win.Fence(ctx, window.NoSucceed); err != nil {
			return err
		}
	}
	if err := runtime.Barrier(ctx, shm); err != nil {
		return err
	}
	for r := 0; r < sn; r++ {
		mem, err := win.SharedQuery(r)
		if err != nil {
			return err
		}
		if r%2 == 1 {
			if len(mem) != 0 {
				return fmt.Errorf("rank %d's shared memory has %d elements, want none", r, len(mem))
			}
			continue
		}
		if len(mem) < perProc {
			return fmt.Errorf("rank %d's shared memory has %d elements, want at least %d", r, len(mem), perProc)
		}
		if err := same(fmt.Sprintf("rank %d's shared memory", r), mem[:perProc], seq(perProc, func(j int) int32 { return int32(j) })); err != nil {
			return err
		}
	}
	return first(win.Free(ctx), shm.Free())
}
