package main

import (
	"context"
	"fmt"

	"github.com/gorma-hpc/gorma/collectives"
	"github.com/gorma-hpc/gorma/runtime"
)

func init() {
	register("coll-reduce", "coll/reduce.c", 5, collReduce)
	register("coll-alltoallv", "coll/alltoallv.c", 10, collAlltoallv)
	register("coll-allred6", "coll/allred6.c", 4, collAllred6)
	register("coll-coll6", "coll/coll6.c", 5, collColl6)
	register("coll-coll7", "coll/coll7.c", 5, collColl7)
	register("coll-redscat", "coll/redscat.c", 4, collRedscat)
}

// collReduce: Reduce (sum) of 1 to 65536 ints, element i being i, to every root over
// each communicator, then the same with the root in place.
func collReduce(ctx context.Context, w *runtime.World) error {
	return eachComm(ctx, w, 2, func(c *runtime.World, name string) error {
		rank, size := c.Rank(), c.Size()
		for count := 1; count < 130000; count *= 2 {
			want := seq(count, func(i int) int32 { return int32(i * size) })
			for root := 0; root < size; root++ {
				send, recv := seq(count, func(i int) int32 { return int32(i) }), fill(count, int32(-1))
				if err := collectives.Reduce(ctx, c, send, recv, collectives.Sum[int32](), root); err != nil {
					return err
				}
				if rank == root {
					if err := same(fmt.Sprintf("%s count %d root %d", name, count, root), recv, want); err != nil {
						return err
					}
					copy(recv, send)
					send = nil
				} else {
					recv = nil
				}
				if err := collectives.Reduce(ctx, c, send, recv, collectives.Sum[int32](), root); err != nil {
					return err
				}
				if rank == root {
					if err := same(fmt.Sprintf("%s count %d root %d (in place)", name, count, root), recv, want); err != nil {
						return err
					}
				}
			}
		}
		return nil
	})
}

// collAlltoallv: over each communicator, rank r sends i ints to rank i and receives r
// from each. MPICH sends block i from displacement i(i+1)/2 of a buffer whose element k
// is k+100r, and receives at the prefix sums of the counts. gorma's Alltoallv takes no
// displacements (blocks sit at the prefix sums of the counts), so the send blocks are
// packed from MPICH's layout first. alltoallv.c's in-place Alltoallv (every rank sending
// rank i i ints and receiving i from each) is coll-alltoallv0's.
func collAlltoallv(ctx context.Context, w *runtime.World) error {
	return eachComm(ctx, w, 2, func(c *runtime.World, name string) error {
		rank, size := c.Rank(), c.Size()
		sbuf := seq(size*size, func(k int) int32 { return int32(k + 100*rank) })
		var send []int32
		for i := 0; i < size; i++ {
			send = append(send, sbuf[i*(i+1)/2:i*(i+1)/2+i]...)
		}
		recv := fill(size*rank, int32(-1))
		if err := collectives.Alltoallv(ctx, c, send, seq(size, func(i int) int { return i }), recv, fill(size, rank)); err != nil {
			return err
		}
		want := make([]int32, 0, size*rank)
		for i := 0; i < size; i++ {
			for j := 0; j < rank; j++ {
				want = append(want, int32(i*100+rank*(rank+1)/2+j))
			}
		}
		return same(name, recv, want)
	})
}

// collAllred6: Allreduce in place of 1 to 32768 ints with a sum declared
// non-commutative, over each communicator.
func collAllred6(ctx context.Context, w *runtime.World) error {
	mysum := collectives.NewOp("mysum", func(inout, in []int32) {
		for i := range inout {
			inout[i] += in[i]
		}
	}, false)
	return eachComm(ctx, w, 2, func(c *runtime.World, name string) error {
		rank, size := c.Rank(), c.Size()
		for count := 1; count < 65000; count *= 2 {
			buf := seq(count, func(i int) int32 { return int32(rank + i) })
			if err := collectives.Allreduce(ctx, c, nil, buf, mysum); err != nil {
				return err
			}
			if err := same(fmt.Sprintf("%s count %d", name, count), buf, seq(count, func(i int) int32 { return int32(i*size + size*(size-1)/2) })); err != nil {
				return err
			}
		}
		return nil
	})
}

// paintedTable is the 10x10 table of coll6 and coll7 after the exchange: block of rows
// r painted r+10.
func paintedTable(size int) []int32 {
	const maxp = 10
	block := maxp / size
	return seq(maxp*maxp, func(k int) int32 { return int32(k/maxp/block + 10) })
}

// collColl6: each rank paints its block of rows of a 10x10 table and Allgatherv's it in
// place (equal counts at the blocks' places) on the World of the first 10 ranks.
func collColl6(ctx context.Context, w *runtime.World) error {
	const maxp = 10
	return inFirst(ctx, w, maxp, func(c *runtime.World) error {
		rank, size := c.Rank(), c.Size()
		if maxp%size != 0 {
			return fmt.Errorf("coll6 needs a rank count dividing %d, not %d", maxp, size)
		}
		block := maxp / size
		table := make([]int32, maxp*maxp)
		for i := rank * block * maxp; i < (rank+1)*block*maxp; i++ {
			table[i] = int32(rank + 10)
		}
		if err := collectives.Allgatherv(ctx, c, nil, table, fill(size, block*maxp)); err != nil {
			return err
		}
		return same("table", table, paintedTable(size))
	})
}

// collColl7: coll6 with Allgather in place on the World.
func collColl7(ctx context.Context, w *runtime.World) error {
	const maxp = 10
	rank, size := w.Rank(), w.Size()
	if maxp%size != 0 {
		return fmt.Errorf("coll7 needs a rank count dividing %d, not %d", maxp, size)
	}
	block := maxp / size
	table := make([]int32, maxp*maxp)
	for i := rank * block * maxp; i < (rank+1)*block*maxp; i++ {
		table[i] = int32(rank + 10)
	}
	if err := collectives.Allgather(ctx, w, nil, table); err != nil {
		return err
	}
	return same("table", table, paintedTable(size))
}

// collRedscat: MPI_Reduce_scatter (sum) with every count 1, which is the block form
// gorma has: rank r gets size*r + size(size-1)/2.
func collRedscat(ctx context.Context, w *runtime.World) error {
	rank, size := w.Rank(), w.Size()
	recv := make([]int32, 1)
	if err := collectives.ReduceScatter(ctx, w, seq(size, func(i int) int32 { return int32(rank + i) }), recv, collectives.Sum[int32]()); err != nil {
		return err
	}
	if want := int32(size*rank + (size-1)*size/2); recv[0] != want {
		return fmt.Errorf("reduce-scatter: %d, want %d", recv[0], want)
	}
	return nil
}
