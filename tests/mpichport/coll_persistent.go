package main

import (
	"context"
	"fmt"

	"github.com/gorma-hpc/gorma/collectives"
	"github.com/gorma-hpc/gorma/runtime"
)

func init() {
	register("coll-p_bcast", "coll/p_bcast.c", 4, collPBcast)
	register("coll-p_bcast2", "coll/p_bcast2.c", 8, collPBcast2)
	register("coll-p_allred", "coll/p_allred.c", 4, collPAllred)
	register("coll-p_red", "coll/p_red.c", 4, collPRed)
	register("coll-p_alltoall", "coll/p_alltoall.c", 8, collPAlltoall)
	register("coll-p_allgather", "coll/p_allgather.c", 10, func(ctx context.Context, w *runtime.World) error { return collPAllgather(ctx, w, false) })
	register("coll-p_allgatherv", "coll/p_allgatherv.c", 10, func(ctx context.Context, w *runtime.World) error { return collPAllgather(ctx, w, true) })
	register("coll-p_alltoallv", "coll/p_alltoallv.c", 10, collPAlltoallv)
	register("coll-p_red_scat_block", "coll/p_red_scat_block.c", 4, collPRedScatBlock)
	register("coll-p_redscat", "coll/p_redscat.c", 4, collPRedscat)
	register("coll-p_scan", "coll/p_scan.c", 4, collPScan)
	register("coll-p_exscan", "coll/p_exscan.c", 5, collPExscan)
	register("coll-p_gatherv", "coll/p_gatherv.c", 5, collPGatherv)
	register("coll-p_barrier", "coll/p_barrier.c", 2, collPBarrier)
}

// persist starts the persistent r iters times, waiting for it and running check after
// each, then frees it.
func persist(ctx context.Context, what string, r *collectives.Request, iters int, before func(i int), check func(i int) error) error {
	for i := 0; i < iters; i++ {
		if before != nil {
			before(i)
		}
		if err := first(r.Start(ctx), r.Wait(ctx)); err != nil {
			return fmt.Errorf("%s, start %d: %w", what, i, err)
		}
		if check != nil {
			if err := check(i); err != nil {
				return fmt.Errorf("%s, start %d: %w", what, i, err)
			}
		}
	}
	if err := r.Free(); err != nil {
		return fmt.Errorf("%s: free: %w", what, err)
	}
	return nil
}

// collPBcast: a persistent Bcast of 10 int32s (0..9 at root 0; -1 elsewhere before
// each start), started 1000 times.
func collPBcast(ctx context.Context, w *runtime.World) error {
	const n = 10
	buf := make([]int32, n)
	if w.Rank() == 0 {
		buf = seq(n, func(i int) int32 { return int32(i) })
	}
	return persist(ctx, "bcast init", collectives.BcastInit(w, buf, 0), 1000, func(int) {
		if w.Rank() != 0 {
			copy(buf, fill(n, int32(-1)))
		}
	}, func(int) error { return same("bcast", buf, seq(n, func(i int) int32 { return int32(i) })) })
}

// collPBcast2: a persistent Bcast of 10 int32s from rank 0, then one of the first 17
// bytes of a byte buffer (0..16 at root, 0xdb elsewhere), each started once.
func collPBcast2(ctx context.Context, w *runtime.World) error {
	const count, prime = 10, 17
	buf := fill(count, int32(-559038737)) // 0xdeadbeef
	if w.Rank() == 0 {
		buf = seq(count, func(i int) int32 { return int32(i) })
	}
	if err := persist(ctx, "bcast init of int32s", collectives.BcastInit(w, buf, 0), 1, nil,
		func(int) error { return same("int32s", buf, seq(count, func(i int) int32 { return int32(i) })) }); err != nil {
		return err
	}
	alias := fill(count*w.Size()*4, int8(-65)) // 0xbf
	for i := 0; i < prime; i++ {
		alias[i] = int8(-37) // 0xdb
		if w.Rank() == 0 {
			alias[i] = int8(i)
		}
	}
	return persist(ctx, "bcast init of bytes", collectives.BcastInit(w, alias[:prime], 0), 1, nil,
		func(int) error { return same("bytes", alias[:prime], seq(prime, func(i int) int8 { return int8(i) })) })
}

// collPAllred: a persistent Allreduce (sum) of rank+i, i < 2, started 10 times: element
// j is j*size + size(size-1)/2.
func collPAllred(ctx context.Context, w *runtime.World) error {
	n := w.Size()
	send, recv := seq(2, func(i int) int32 { return int32(w.Rank() + i) }), make([]int32, 2)
	return persist(ctx, "allreduce init", collectives.AllreduceInit(w, send, recv, collectives.Sum[int32]()), 10, nil,
		func(int) error { return same("sum", recv, seq(2, func(j int) int32 { return int32(j*n + n*(n-1)/2) })) })
}

// collPRed: p_allred's sum as a persistent Reduce to rank 1.
func collPRed(ctx context.Context, w *runtime.World) error {
	const root = 1
	n := w.Size()
	send, recv := seq(2, func(i int) int32 { return int32(w.Rank() + i) }), make([]int32, 2)
	return persist(ctx, "reduce init", collectives.ReduceInit(w, send, recv, collectives.Sum[int32](), root), 10, nil,
		func(int) error {
			if w.Rank() != root {
				return nil
			}
			return same("sum", recv, seq(2, func(j int) int32 { return int32(j*n + n*(n-1)/2) }))
		})
}

// collPAlltoall: a persistent Alltoall of one int32 per rank (rank*size + i), started
// 10 times: element j is size*j + rank.
func collPAlltoall(ctx context.Context, w *runtime.World) error {
	r, n := w.Rank(), w.Size()
	send, recv := seq(n, func(i int) int32 { return int32(r*n + i) }), make([]int32, n)
	return persist(ctx, "alltoall init", collectives.AlltoallInit(w, send, recv), 10, nil,
		func(int) error { return same("alltoall", recv, seq(n, func(j int) int32 { return int32(n*j + r) })) })
}

// collPAllgather: a persistent Allgather (or Allgatherv, counts of 2 each) of
// rank*2 + i, i < 2, started 10 times: element j is j.
func collPAllgather(ctx context.Context, w *runtime.World, v bool) error {
	const k = 2
	n := w.Size()
	send, recv := seq(k, func(i int) int32 { return int32(w.Rank()*k + i) }), fill(n*k, int32(-1))
	r, what := collectives.AllgatherInit(w, send, recv), "allgather init"
	if v {
		r, what = collectives.AllgathervInit(w, send, recv, fill(n, k)), "allgatherv init"
	}
	return persist(ctx, what, r, 10, nil, func(int) error { return same("gathered", recv, seq(n*k, func(j int) int32 { return int32(j) })) })
}

// collPAlltoallv: on each communicator of at least 3 ranks, for lengths 1, 3, 7, ...
// below 66000, a persistent Alltoallv sending length int32s (i + 100000*rank) to each
// neighbour on the ring and nothing to the others, started 10 times. The left block
// holds the left rank's, the right block the right's.
func collPAlltoallv(ctx context.Context, w *runtime.World) error {
	return eachComm(ctx, w, 3, func(c *runtime.World, name string) error {
		r, n := c.Rank(), c.Size()
		left, right := (r-1+n)%n, (r+1)%n
		for length := 1; length < 66000; length = 2*length + 1 {
			counts := make([]int, n)
			counts[left], counts[right] = length, length
			if left == right {
				return fmt.Errorf("%s: ring of %d ranks", name, n)
			}
			// Blocks lie in rank order: the lower-ranked neighbour's first.
			send := seq(2*length, func(i int) int32 { return int32(i%length + 100000*r) })
			recv := seq(2*length, func(i int) int32 { return int32(-i) })
			lo, hi := left, right
			if lo > hi {
				lo, hi = hi, lo
			}
			err := persist(ctx, fmt.Sprintf("%s: alltoallv init, length %d", name, length),
				collectives.AlltoallvInit(c, send, counts, recv, counts), 10, nil, func(int) error {
					return first(same(fmt.Sprintf("block of rank %d", lo), recv[:length], seq(length, func(i int) int32 { return int32(i + 100000*lo) })),
						same(fmt.Sprintf("block of rank %d", hi), recv[length:], seq(length, func(i int) int32 { return int32(i + 100000*hi) })))
				})
			if err != nil {
				return err
			}
		}
		return nil
	})
}

// collPRedScatBlock: a persistent ReduceScatter (sum) of rank+i, one element per rank,
// started 6 times, then in place (the input rank+j rewritten before each of 10
// starts): rank r gets size*r + size(size-1)/2.
func collPRedScatBlock(ctx context.Context, w *runtime.World) error {
	r, n := w.Rank(), w.Size()
	want := int32(n*r + n*(n-1)/2)
	send, recv := seq(n, func(i int) int32 { return int32(r + i) }), make([]int32, n)
	check := func(int) error {
		if recv[0] != want {
			return fmt.Errorf("got %d, want %d", recv[0], want)
		}
		return nil
	}
	if err := persist(ctx, "reduce scatter block init", collectives.ReduceScatterInit(w, send, recv[:1], collectives.Sum[int32]()), 6, nil, check); err != nil {
		return err
	}
	return persist(ctx, "reduce scatter block init in place", collectives.ReduceScatterInit(w, nil, recv, collectives.Sum[int32]()), 10,
		func(int) { copy(recv, seq(n, func(j int) int32 { return int32(r + j) })) }, check)
}

// collPRedscat: a persistent ReduceScatterV (sum, counts of 1) of rank+i, started 10
// times: rank r gets size*r + size(size-1)/2.
func collPRedscat(ctx context.Context, w *runtime.World) error {
	r, n := w.Rank(), w.Size()
	send, recv := seq(n, func(i int) int32 { return int32(r + i) }), make([]int32, 1)
	return persist(ctx, "reduce scatter init", collectives.ReduceScatterVInit(w, send, recv, fill(n, 1), collectives.Sum[int32]()), 10, nil,
		func(int) error { return same("sum", recv, []int32{int32(n*r + n*(n-1)/2)}) })
}

// collPScan: persistent Scans of the rank, 10 starts each: with Sum (twice), with a
// commutative user sum (twice), all giving 0+...+rank, and with a non-commutative
// operator that fails (100000) unless its left operand, a lower rank's, is the smaller.
func collPScan(ctx context.Context, w *runtime.World) error {
	const bad = 100000
	r := w.Rank()
	want := int32(r * (r + 1) / 2)
	addem := collectives.NewOp[int32]("addem", func(inout, in []int32) {
		for i := range inout {
			inout[i] += in[i]
		}
	}, true)
	assoc := collectives.NewOp[int32]("assoc", func(inout, in []int32) {
		for i := range inout {
			if in[i] <= inout[i] {
				inout[i] = bad
			}
		}
	}, false)
	data, result := []int32{int32(r)}, []int32{-100}
	for i, op := range []collectives.Op[int32]{collectives.Sum[int32](), collectives.Sum[int32](), addem, addem} {
		if err := persist(ctx, fmt.Sprintf("scan init %d", i), collectives.ScanInit(w, data, result, op), 10, nil,
			func(int) error { return same("scan", result, []int32{want}) }); err != nil {
			return err
		}
	}
	return persist(ctx, "scan init, non-commutative", collectives.ScanInit(w, data, result, assoc), 10,
		func(int) { data[0], result[0] = int32(r), -100 },
		func(int) error {
			if result[0] == bad {
				return fmt.Errorf("the non-commutative operator saw its operands out of rank order")
			}
			return nil
		})
}

// collPExscan: a persistent Exscan (sum) of the rank, started 10 times: rank r > 0 gets
// r(r-1)/2, rank 0's output stays -2.
func collPExscan(ctx context.Context, w *runtime.World) error {
	r := w.Rank()
	recv := []int32{-2}
	want := int32(r * (r - 1) / 2)
	if r == 0 {
		want = -2
	}
	return persist(ctx, "exscan init", collectives.ExscanInit(w, []int32{int32(r)}, recv, collectives.Sum[int32]()), 10, nil,
		func(int) error { return same("exscan", recv, []int32{want}) })
}

// collPGatherv: gatherv.c's table with one persistent Gatherv per root (in place at the
// root), the rank's rows repainted before each of 10 rounds, each round starting and
// waiting for every root's in turn.
func collPGatherv(ctx context.Context, w *runtime.World) error {
	const maxp = 10
	rank, size := w.Rank(), w.Size()
	if maxp%size != 0 {
		return fmt.Errorf("p_gatherv needs a rank count dividing %d, not %d", maxp, size)
	}
	block := maxp / size
	table := make([]int32, maxp*maxp)
	mine := table[rank*block*maxp : (rank+1)*block*maxp]
	counts := fill(size, block*maxp)
	displs := seq(size, func(i int) int { return i * block * maxp })
	reqs := make([]*collectives.Request, size)
	for root := range reqs {
		send := mine
		if root == rank {
			send = nil
		}
		reqs[root] = collectives.GathervInit(w, send, table, counts, displs, root)
	}
	for iter := 0; iter < 10; iter++ {
		for i := range mine {
			mine[i] = int32(rank + 10)
		}
		for root, r := range reqs {
			if err := first(r.Start(ctx), r.Wait(ctx)); err != nil {
				return fmt.Errorf("round %d, root %d: %w", iter, root, err)
			}
		}
		if err := same(fmt.Sprintf("round %d: table", iter), table, seq(maxp*maxp, func(k int) int32 { return int32(k/maxp/block + 10) })); err != nil {
			return err
		}
	}
	for _, r := range reqs {
		if err := r.Free(); err != nil {
			return err
		}
	}
	return nil
}

// collPBarrier: a persistent Barrier started 10 times.
func collPBarrier(ctx context.Context, w *runtime.World) error {
	return persist(ctx, "barrier init", collectives.BarrierInit(w), 10, nil, nil)
}

func init() {
	register("coll-p_inactive", "coll/p_inactive.c", 1, collPInactive)
	register("coll-p_order", "coll/p_order.c", 2, collPOrder)
}

// collPInactive: Test on a persistent Bcast never started reports it done, Wait returns
// at once, and Free succeeds. MPI's empty-status checks have no counterpart: a
// collectives.Request reports no Status.
func collPInactive(ctx context.Context, w *runtime.World) error {
	r := collectives.BcastInit(w, []int32{0}, 0)
	done, err := r.Test()
	if err != nil {
		return err
	}
	if !done {
		return fmt.Errorf("test of an inactive persistent bcast: not done")
	}
	return first(r.Wait(ctx), r.Free())
}

// collPOrder: a persistent Bcast (42 from rank 0) and a persistent Barrier, made in that
// order at every rank, started Bcast first at rank 0 and Barrier first elsewhere (MPI
// matches persistent collectives by the order they were made, not started). WaitAll.
// Every rank holds 42.
func collPOrder(ctx context.Context, w *runtime.World) error {
	a := []int32{-1}
	reqs := []*collectives.Request{collectives.BcastInit(w, a, 0), collectives.BarrierInit(w)}
	order := []int{1, 0}
	if w.Rank() == 0 {
		a[0] = 42
		order = []int{0, 1}
	}
	for _, i := range order {
		if err := reqs[i].Start(ctx); err != nil {
			return err
		}
	}
	if err := collectives.WaitAll(ctx, reqs); err != nil {
		return err
	}
	return first(same("bcast", a, []int32{42}), reqs[0].Free(), reqs[1].Free())
}
