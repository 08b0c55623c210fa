package main

import (
	"context"
	"fmt"
	"unsafe"

	"github.com/gorma-hpc/gorma/collectives"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/window"
)

func init() {
	register("rma-win_shared", "rma/win_shared.c", 4, rmaWinShared)
	register("rma-win_zero", "rma/win_zero.c", 4, rmaWinZero)
	register("rma-flush", "rma/flush.c", 4, rmaFlush)
	register("rma-reqops", "rma/reqops.c", 4, rmaReqops)
	register("rma-win_dynamic_acc", "rma/win_dynamic_acc.c", 4, rmaWinDynamicAcc)
	register("rma-lock_nested", "rma/lock_nested.c", 3, rmaLockNested)
	register("rma-locknull", "rma/locknull.c", 2, rmaLocknull)
	register("rma-manyget", "rma/manyget.c", 2, rmaManyget)
	register("rma-nullpscw", "rma/nullpscw.c", 7, rmaNullpscw(false))
	register("rma-nullpscw_shm", "rma/nullpscw.c", 7, rmaNullpscw(true))
}

// hostComm is MPI_Comm_split_type(MPI_COMM_TYPE_SHARED): the ranks of this host, in
// World order (the color is the lowest World rank on the host).
func hostComm(ctx context.Context, w *runtime.World) (*runtime.World, error) {
	color := w.Rank()
	for r := 0; r < w.Size(); r++ {
		if w.HostOf(r) == w.Host() {
			color = r
			break
		}
	}
	return split(ctx, w, color)
}

// rmaWinShared: AllocateShared of 10000 ints per rank of a host. Each rank's memory as
// SharedQuery returns it has that size, rank 0's is its Local. Within a LockAll(NoCheck)
// epoch every rank stores 0..9999 into its own memory, then Sync, Barrier, Sync, and
// reads every rank's memory by loads. MPICH reads it all from the lowest rank's base
// (MPI_PROC_NULL's query), as one contiguous segment: here each rank's memory must sit
// right after the previous rank's, and is read through its own query.
func rmaWinShared(ctx context.Context, w *runtime.World) error {
	const perProc = 10000
	shm, err := hostComm(ctx, w)
	if err != nil {
		return err
	}
	win, err := window.AllocateShared[int32](ctx, shm, perProc)
	if err != nil {
		return err
	}
	base, err := win.SharedQuery(0)
	if err != nil {
		return err
	}
	mine := win.Local()
	if len(base) != perProc {
		return fmt.Errorf("rank 0's shared memory has %d elements, want %d", len(base), perProc)
	}
	if (shm.Rank() == 0) != (&base[0] == &mine[0]) {
		return fmt.Errorf("host rank %d: rank 0's shared memory and this rank's Local() alias: %v", shm.Rank(), &base[0] == &mine[0])
	}
	if err := win.LockAll(ctx, window.NoCheck); err != nil {
		return err
	}
	for i := range mine {
		mine[i] = int32(i)
	}
	if err := first(win.Sync(ctx), runtime.Barrier(ctx, shm), win.Sync(ctx)); err != nil {
		return err
	}
	for r := 0; r < shm.Size(); r++ {
		mem, err := win.SharedQuery(r)
		if err != nil {
			return err
		}
		// MPICH reads rank r's memory at element r*10000 from the lowest rank's base: the
		// ranks' memory is contiguous, MPI's default for MPI_Win_allocate_shared.
		if at, want := uintptr(unsafe.Pointer(&mem[0])), uintptr(unsafe.Pointer(&base[0]))+uintptr(r*perProc*4); at != want {
			return fmt.Errorf("rank %d's shared memory is at %#x; contiguous with rank 0's, as MPI allocates it, it would be at %#x", r, at, want)
		}
		if err := same(fmt.Sprintf("rank %d's shared memory", r), mem, seq(perProc, func(j int) int32 { return int32(j) })); err != nil {
			return err
		}
	}
	return first(win.UnlockAll(ctx), win.Free(ctx), shm.Free())
}

// rmaWinZero: windows where every other rank contributes no memory (AllocateShared on
// the host's ranks, Allocate, Create), then windows where every rank contributes none;
// each made and freed.
func rmaWinZero(ctx context.Context, w *runtime.World) error {
	shm, err := hostComm(ctx, w)
	if err != nil {
		return err
	}
	for _, all := range []bool{false, true} {
		n := func(rank int) int {
			if all || rank%2 == 0 {
				return 0
			}
			return 1
		}
		sw, err := window.AllocateShared[int8](ctx, shm, n(shm.Rank()))
		if err != nil {
			return err
		}
		if err := sw.Free(ctx); err != nil {
			return err
		}
		aw, err := window.Allocate[int8](ctx, w, n(w.Rank()))
		if err != nil {
			return err
		}
		if err := aw.Free(ctx); err != nil {
			return err
		}
		var buf []int8
		if n(w.Rank()) > 0 {
			buf = make([]int8, 1)
		}
		cw, err := window.Create(ctx, w, buf)
		if err != nil {
			return err
		}
		if err := cw.Free(ctx); err != nil {
			return err
		}
	}
	return shm.Free()
}

// thirdParty runs 100 rounds of a token ring through rank 0's one-int window inside a
// shared lock on rank 0 (rank 0 first, each rank waiting for its predecessor's empty
// message). Each rank swaps its rank in with op and must read its predecessor's.
func thirdParty(ctx context.Context, w *runtime.World, what string, op func() (int32, error)) error {
	const iter = 100
	rank, n := w.Rank(), w.Size()
	for i := 0; i < iter; i++ {
		if rank > 0 {
			if _, err := runtime.Recv[byte](ctx, w, nil, rank-1, 0); err != nil {
				return err
			}
		}
		val, err := op()
		if err != nil {
			return err
		}
		if want := int32((rank + n - 1) % n); val != want {
			return fmt.Errorf("%s round %d: read %d, want %d", what, i, val, want)
		}
		if rank < n-1 {
			if err := runtime.Send[byte](ctx, w, nil, rank+1, 0); err != nil {
				return err
			}
		}
		if err := runtime.Barrier(ctx, w); err != nil {
			return err
		}
	}
	return nil
}

// tokenWin makes the window of flush.c and reqops.c: n ints at rank 0, holding size-1
// in the first, none elsewhere.
func tokenWin(ctx context.Context, w *runtime.World, n int) (*window.Win[int32], error) {
	var buf []int32
	if w.Rank() == 0 {
		buf = make([]int32, n)
		buf[0] = int32(w.Size() - 1)
	}
	return window.Create(ctx, w, buf)
}

// rmaFlush: FlushAll of an empty shared-lock epoch, then the token ring through rank 0
// with GetAccumulate(replace) + Flush.
func rmaFlush(ctx context.Context, w *runtime.World) error {
	win, err := tokenWin(ctx, w, 1)
	if err != nil {
		return err
	}
	if err := first(win.Lock(ctx, window.Shared, 0, 0), win.FlushAll(ctx), win.Unlock(ctx, 0), runtime.Barrier(ctx, w)); err != nil {
		return err
	}
	me := []int32{int32(w.Rank())}
	if err := win.Lock(ctx, window.Shared, 0, 0); err != nil {
		return err
	}
	err = thirdParty(ctx, w, "get-accumulate", func() (int32, error) {
		val := []int32{-1}
		err := first(win.GetAccumulate(me, val, 0, 0, collectives.Replace[int32]()), win.Flush(ctx, 0))
		return val[0], err
	})
	return first(err, win.Unlock(ctx, 0), win.Free(ctx))
}

// rmaReqops: the token ring through rank 0 with RgetAccumulate + Wait, with Rget + Wait
// then Put + Flush, and with Rget + Wait then Accumulate(replace) + Flush. Then the four
// request-based operations to rank 0 in a LockAll epoch, their requests waited for
// inside it, after it, in a later LockAll epoch, and in a Fence epoch. (reqops.c also
// aims them at MPI_PROC_NULL, which gorma lacks.)
func rmaReqops(ctx context.Context, w *runtime.World) error {
	win, err := tokenWin(ctx, w, 4)
	if err != nil {
		return err
	}
	rank := w.Rank()
	me := []int32{int32(rank)}
	repl := collectives.Replace[int32]()
	resetToken := func() error {
		if err := runtime.Barrier(ctx, w); err != nil {
			return err
		}
		if rank == 0 {
			win.Local()[0] = int32(w.Size() - 1)
		}
		return win.Sync(ctx)
	}
	if err := win.Lock(ctx, window.Shared, 0, 0); err != nil {
		return err
	}
	err = thirdParty(ctx, w, "rget-accumulate", func() (int32, error) {
		val := []int32{-1}
		req, err := win.RgetAccumulate(me, val, 0, 0, repl)
		if err == nil {
			err = req.Wait(ctx)
		}
		return val[0], err
	})
	for _, then := range []struct {
		name string
		op   func() error
	}{
		{"rget+put", func() error { return win.Put(me, 0, 0) }},
		{"rget+accumulate", func() error { return win.Accumulate(me, 0, 0, repl) }},
	} {
		if err != nil {
			break
		}
		if err = resetToken(); err != nil {
			break
		}
		err = thirdParty(ctx, w, then.name, func() (int32, error) {
			val := []int32{-1}
			req, err := win.Rget(val, 0, 0)
			if err == nil {
				err = first(req.Wait(ctx), then.op(), win.Flush(ctx, 0))
			}
			return val[0], err
		})
	}
	if err := first(err, win.Unlock(ctx, 0), runtime.Barrier(ctx, w)); err != nil {
		return err
	}
	val, res := make([]int32, 4), make([]int32, 1)
	issue := func() ([]*window.Request, error) {
		var reqs []*window.Request
		for _, op := range []func() (*window.Request, error){
			func() (*window.Request, error) { return win.RgetAccumulate(val[0:1], res, 0, 0, repl) },
			func() (*window.Request, error) { return win.Rget(val[1:2], 0, 1) },
			func() (*window.Request, error) { return win.Rput(val[2:3], 0, 2) },
			func() (*window.Request, error) { return win.Raccumulate(val[3:4], 0, 3, repl) },
		} {
			r, err := op()
			if err != nil {
				return nil, err
			}
			reqs = append(reqs, r)
		}
		return reqs, nil
	}
	waitAll := func(reqs []*window.Request) error {
		for _, r := range reqs {
			if err := r.Wait(ctx); err != nil {
				return err
			}
		}
		return nil
	}
	for _, where := range []string{"inside", "after", "later epoch", "fence"} {
		if err := win.LockAll(ctx, 0); err != nil {
			return err
		}
		reqs, err := issue()
		if err != nil {
			return fmt.Errorf("requests waited for %s: %w", where, err)
		}
		switch where {
		case "inside":
			err = first(waitAll(reqs), win.UnlockAll(ctx))
		case "after":
			err = first(win.UnlockAll(ctx), waitAll(reqs))
		case "later epoch":
			err = first(win.UnlockAll(ctx), win.LockAll(ctx, 0), waitAll(reqs), win.UnlockAll(ctx))
		case "fence":
			err = first(win.UnlockAll(ctx), win.Fence(ctx, 0), waitAll(reqs), win.Fence(ctx, 0))
		}
		if err != nil {
			return fmt.Errorf("requests waited for %s: %w", where, err)
		}
		if where == "inside" {
			if err := runtime.Barrier(ctx, w); err != nil {
				return err
			}
		}
	}
	return win.Free(ctx)
}

// rmaWinDynamicAcc: every rank attaches one int to a dynamic window and Allgathers its
// displacement; 25 rounds per rank, each a Fence(NoPrecede) epoch in which every rank
// adds 1 to rank i%n's int, closed by Fence(NoSucceed): each int ends at 25*n.
func rmaWinDynamicAcc(ctx context.Context, w *runtime.World) error {
	const perRank = 25
	rank, n := w.Rank(), w.Size()
	iter := perRank * n
	win, err := window.CreateDynamic[int32](ctx, w)
	if err != nil {
		return err
	}
	val := []int32{0}
	base, err := win.Attach(ctx, val)
	if err != nil {
		return err
	}
	bases := make([]int64, n)
	if err := collectives.Allgather(ctx, w, []int64{int64(base)}, bases); err != nil {
		return err
	}
	for i := 0; i < iter; i++ {
		t := i % n
		if err := first(win.Fence(ctx, window.NoPrecede),
			win.Accumulate([]int32{1}, t, int(bases[t]), collectives.Sum[int32]()),
			win.Fence(ctx, window.NoSucceed)); err != nil {
			return err
		}
	}
	if err := runtime.Barrier(ctx, w); err != nil {
		return err
	}
	if val[0] != int32(iter) {
		return fmt.Errorf("rank %d's attached int is %d, want %d", rank, val[0], iter)
	}
	return first(win.Detach(ctx, base), win.Free(ctx))
}

// rmaLockNested: rank 0 holds shared locks on every rank at once, taken in rank order
// and released in reverse.
func rmaLockNested(ctx context.Context, w *runtime.World) error {
	win, err := window.Create(ctx, w, make([]int32, 4))
	if err != nil {
		return err
	}
	if w.Rank() == 0 {
		for dst := 0; dst < w.Size(); dst++ {
			if err := win.Lock(ctx, window.Shared, dst, 0); err != nil {
				return err
			}
		}
		for dst := w.Size() - 1; dst >= 0; dst-- {
			if err := win.Unlock(ctx, dst); err != nil {
				return err
			}
		}
	}
	return first(runtime.Barrier(ctx, w), win.Free(ctx))
}

// rmaLocknull: every rank takes and releases an exclusive, then a shared lock on every
// rank in turn, itself included, with no RMA call inside.
func rmaLocknull(ctx context.Context, w *runtime.World) error {
	win, err := window.Create(ctx, w, make([]int32, 1000))
	if err != nil {
		return err
	}
	for _, lt := range []window.LockType{window.Exclusive, window.Shared} {
		for i := 0; i < w.Size(); i++ {
			if err := first(win.Lock(ctx, lt, i, 0), win.Unlock(ctx, i)); err != nil {
				return err
			}
		}
	}
	return win.Free(ctx)
}

// rmaManyget: in one Fence epoch rank 1 Gets rank 0's 128 KiB 1000 times into the same
// buffer (rank 1's window is empty).
func rmaManyget(ctx context.Context, w *runtime.World) error {
	const ints = 128 * 1024 / 4
	buf := make([]int32, ints)
	var mem []int32
	if w.Rank() == 0 {
		mem = seq(ints, func(i int) int32 { return int32(i) })
	}
	win, err := window.Create(ctx, w, mem)
	if err != nil {
		return err
	}
	if err := win.Fence(ctx, 0); err != nil {
		return err
	}
	if w.Rank() == 1 {
		for i := 0; i < 1000; i++ {
			if err := win.Get(buf, 0, 0); err != nil {
				return err
			}
		}
	}
	if err := win.Fence(ctx, 0); err != nil {
		return err
	}
	if w.Rank() == 1 {
		if err := same("got", buf, seq(ints, func(i int) int32 { return int32(i) })); err != nil {
			return err
		}
	}
	return win.Free(ctx)
}

// rmaNullpscw: an empty window (Allocate of 0 for nullpscw_shm); every rank Posts to
// and Starts on the window's whole group, itself included, then Completes and Waits
// with no RMA call between.
func rmaNullpscw(alloc bool) func(ctx context.Context, w *runtime.World) error {
	return func(ctx context.Context, w *runtime.World) error {
		win, err := newWin[int8](ctx, w, 0, alloc)
		if err != nil {
			return err
		}
		group := seq(w.Size(), func(i int) int { return i })
		return first(win.Post(ctx, group, 0), win.Start(ctx, group, 0), win.Complete(ctx), win.Wait(ctx), win.Free(ctx))
	}
}
