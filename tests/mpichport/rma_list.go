package main

import (
	"context"
	"fmt"

	"github.com/gorma-hpc/gorma/collectives"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/window"
)

func init() {
	register("rma-linked_list", "rma/linked_list.c", 4, rmaLinkedList(listLock))
	register("rma-linked_list_lockall", "rma/linked_list_lockall.c", 4, rmaLinkedList(listLockAll))
	register("rma-linked_list_fop", "rma/linked_list_fop.c", 4, rmaLinkedList(listFop))
	register("rma-linked_list_bench_lock_excl", "rma/linked_list_bench_lock_excl.c", 4, rmaLinkedListBenchLockExcl)
}

// A list element is three int64s attached on their own to a dynamic window: the value,
// then the next element's rank and displacement (-1, -1 at the tail; MPICH's nil
// displacement is MPI_BOTTOM, an address no element has).
const (
	elemValue    = 0
	elemNextRank = 1
	elemNextDisp = 2
	nilRank      = -1
	nilDisp      = -1
)

// listMode is how the linked_list tests synchronize and write the list.
type listMode int

const (
	listLock    listMode = iota // exclusive locks; Put and Get
	listLockAll                 // one LockAll epoch with Flushes; Accumulate(replace), NoOp GetAccumulate
	listFop                     // shared NoCheck locks; FetchAndOp(replace), NoOp FetchAndOp
)

// rmaLinkedList: every rank appends 32 elements of its own to a list whose head is at
// rank 0: it swaps its element into the tail's next rank (CompareAndSwap against nil),
// then writes the next displacement. When the swap fails it follows the tail, waiting
// for the displacement to appear. Rank 0 walks the list: every rank has 32 elements in
// it. linked_list: each access in an exclusive lock; linked_list_lockall: one LockAll
// epoch with Flushes, Accumulate(replace) for the displacement and NoOp GetAccumulate
// reads; linked_list_fop: shared NoCheck locks, FetchAndOp(replace) for the
// displacement and NoOp FetchAndOp reads.
func rmaLinkedList(mode listMode) func(ctx context.Context, w *runtime.World) error {
	return func(ctx context.Context, w *runtime.World) error {
		lockAll := mode == listLockAll
		const numElems, nprobe = 32, 100
		rank, n := w.Rank(), w.Size()
		win, err := window.CreateDynamic[int64](ctx, w)
		if err != nil {
			return err
		}
		alloc := func(value int64) (int64, error) {
			base, err := win.Attach(ctx, []int64{value, nilRank, nilDisp})
			return int64(base), err
		}
		// access runs f as one access of rank's memory: inside an exclusive lock, or
		// followed by a Flush inside the LockAll epoch.
		access := func(target int, f func() error) error {
			if lockAll {
				return first(f(), win.Flush(ctx, target))
			}
			lt, assert := window.Exclusive, window.Assert(0)
			if mode == listFop {
				lt, assert = window.Shared, window.NoCheck
			}
			if err := win.Lock(ctx, lt, target, assert); err != nil {
				return err
			}
			return first(f(), win.Unlock(ctx, target))
		}
		head := []int64{0}
		if rank == 0 {
			if head[0], err = alloc(-1); err != nil {
				return err
			}
		}
		if err := collectives.Bcast(ctx, w, head, 0); err != nil {
			return err
		}
		if lockAll {
			if err := win.LockAll(ctx, 0); err != nil {
				return err
			}
		}
		tailRank, tailDisp := 0, head[0]
		for i := 0; i < numElems; i++ {
			disp, err := alloc(int64(rank))
			if err != nil {
				return fmt.Errorf("element %d: %w", i, err)
			}
			for {
				var next int64
				if err := access(tailRank, func() error {
					return win.CompareAndSwap(int64(rank), nilRank, &next, tailRank, int(tailDisp)+elemNextRank)
				}); err != nil {
					return err
				}
				if next == nilRank {
					if err := access(tailRank, func() error {
						switch mode {
						case listLockAll:
							return win.Accumulate([]int64{disp}, tailRank, int(tailDisp)+elemNextDisp, collectives.Replace[int64]())
						case listFop:
							var old int64
							return win.FetchAndOp(disp, &old, tailRank, int(tailDisp)+elemNextDisp, collectives.Replace[int64]())
						}
						return win.Put([]int64{disp}, tailRank, int(tailDisp)+elemNextDisp)
					}); err != nil {
						return err
					}
					tailRank, tailDisp = rank, disp
					for j := 0; j < nprobe; j++ {
						if _, _, err := runtime.Iprobe(w, runtime.AnySource, runtime.AnyTag); err != nil {
							return err
						}
					}
					break
				}
				nd := []int64{nilDisp}
				for nd[0] == nilDisp {
					if err := access(tailRank, func() error {
						switch mode {
						case listLockAll:
							return win.GetAccumulate(nil, nd, tailRank, int(tailDisp)+elemNextDisp, collectives.NoOp[int64]())
						case listFop:
							return win.FetchAndOp(0, &nd[0], tailRank, int(tailDisp)+elemNextDisp, collectives.NoOp[int64]())
						}
						return win.Get(nd, tailRank, int(tailDisp)+elemNextDisp)
					}); err != nil {
						return err
					}
				}
				tailRank, tailDisp = int(next), nd[0]
			}
		}
		if lockAll {
			if err := win.UnlockAll(ctx); err != nil {
				return err
			}
		}
		if err := runtime.Barrier(ctx, w); err != nil {
			return err
		}
		if rank == 0 {
			if lockAll {
				if err := win.LockAll(ctx, 0); err != nil {
					return err
				}
			}
			counts := make([]int, n)
			r, d := 0, head[0]
			for steps := 0; d != nilDisp; steps++ {
				if steps > n*numElems {
					return fmt.Errorf("the list has more than %d elements", n*numElems+1)
				}
				elem := make([]int64, 3)
				if err := access(r, func() error { return win.Get(elem, r, int(d)) }); err != nil {
					return err
				}
				if steps == 0 {
					if elem[elemValue] != -1 {
						return fmt.Errorf("the head holds %d, want -1", elem[elemValue])
					}
				} else if v := elem[elemValue]; v < 0 || v >= int64(n) {
					return fmt.Errorf("element %d holds %d, not a rank", steps, v)
				} else {
					counts[v]++
				}
				r, d = int(elem[elemNextRank]), elem[elemNextDisp]
			}
			if lockAll {
				if err := win.UnlockAll(ctx); err != nil {
					return err
				}
			}
			if err := same("elements per rank", counts, fill(n, numElems)); err != nil {
				return err
			}
		}
		return win.Free(ctx)
	}
}

// rmaLinkedListBenchLockExcl: 1000 elements in all (rank 0's head among them) are
// appended in rank order round the ring. A rank appends only when the tail is at its
// left neighbour, writing the element's rank and displacement with one Put under an
// exclusive lock, and otherwise chases the tail (Get under an exclusive lock, Iprobes
// between tries). Rank 0 walks the list in a LockAll epoch: each rank has its share.
func rmaLinkedListBenchLockExcl(ctx context.Context, w *runtime.World) error {
	const numElems = 1000
	rank, n := w.Rank(), w.Size()
	win, err := window.CreateDynamic[int64](ctx, w)
	if err != nil {
		return err
	}
	alloc := func() (int64, error) {
		base, err := win.Attach(ctx, []int64{int64(rank), nilRank, nilDisp})
		return int64(base), err
	}
	locked := func(target int, f func() error) error {
		if err := win.Lock(ctx, window.Exclusive, target, 0); err != nil {
			return err
		}
		return first(f(), win.Unlock(ctx, target))
	}
	head := []int64{0}
	if rank == 0 {
		if head[0], err = alloc(); err != nil {
			return err
		}
	}
	if err := collectives.Bcast(ctx, w, head, 0); err != nil {
		return err
	}
	mine := numElems / n
	if rank < numElems%n {
		mine++
	}
	i := 0
	if rank == 0 {
		i = 1
	}
	if err := runtime.Barrier(ctx, w); err != nil {
		return err
	}
	tailRank, tailDisp, pollint := int64(0), head[0], 0
	for ; i < mine; i++ {
		disp, err := alloc()
		if err != nil {
			return fmt.Errorf("element %d: %w", i, err)
		}
		for {
			if tailRank == int64((rank+n-1)%n) {
				if err := locked(int(tailRank), func() error {
					return win.Put([]int64{int64(rank), disp}, int(tailRank), int(tailDisp)+elemNextRank)
				}); err != nil {
					return err
				}
				tailRank, tailDisp = int64(rank), disp
				break
			}
			next := make([]int64, 2)
			if err := locked(int(tailRank), func() error { return win.Get(next, int(tailRank), int(tailDisp)+elemNextRank) }); err != nil {
				return err
			}
			if next[0] != nilRank {
				tailRank, tailDisp = next[0], next[1]
				pollint = max(1, pollint/2)
				continue
			}
			for j := 0; j < pollint; j++ {
				if _, _, err := runtime.Iprobe(w, runtime.AnySource, runtime.AnyTag); err != nil {
					return err
				}
			}
			pollint = min(n, pollint*2)
		}
	}
	if err := runtime.Barrier(ctx, w); err != nil {
		return err
	}
	if rank == 0 {
		counts := make([]int, n)
		if err := win.LockAll(ctx, 0); err != nil {
			return err
		}
		for r, d, steps := 0, head[0], 0; d != nilDisp; steps++ {
			if steps > numElems {
				return fmt.Errorf("the list has more than %d elements", numElems)
			}
			elem := make([]int64, 3)
			if err := first(win.Get(elem, r, int(d)), win.Flush(ctx, r)); err != nil {
				return err
			}
			if v := elem[elemValue]; v < 0 || v >= int64(n) {
				return fmt.Errorf("element %d holds %d, not a rank", steps, v)
			}
			counts[elem[elemValue]]++
			r, d = int(elem[elemNextRank]), elem[elemNextDisp]
		}
		if err := win.UnlockAll(ctx); err != nil {
			return err
		}
		if err := same("elements per rank", counts, seq(n, func(i int) int { return numElems/n + b2i(i < numElems%n) })); err != nil {
			return err
		}
	}
	return win.Free(ctx)
}
