package main

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/gorma-hpc/gorma/collectives"
	"github.com/gorma-hpc/gorma/runtime"
)

func init() {
	register("coll-redscatinter", "coll/redscatinter.c", 8, collRedscatinter(false))
	register("coll-redscatbkinter", "coll/redscatbkinter.c", 8, collRedscatinter(true))
	register("coll-redscatbkinter_np10", "coll/redscatbkinter.c", 10, collRedscatinter(true))
	register("coll-icalltoallw", "coll/icalltoallw.c", 5, collIcalltoallw)
	register("coll-icalltoallw_np7", "coll/icalltoallw.c", 7, collIcalltoallw)
}

// collRedscatinter: on every intercommunicator of at least 2 ranks, each rank sends
// 1024*rsize*size int64s, element i being rank*sendcount + i, and receives 1024*rsize:
// element i is the sum over the remote ranks q of q*sendcount + rank*recvcount + i.
// redscatinter.c calls MPI_Reduce_scatter with every count equal (ReduceScatterV),
// redscatbkinter.c MPI_Reduce_scatter_block (ReduceScatter).
func collRedscatinter(block bool) func(ctx context.Context, w *runtime.World) error {
	return func(ctx context.Context, w *runtime.World) error {
		const base = 1024
		return eachIntercomm(ctx, w, 2, func(ic *runtime.World, isLeft bool) error {
			rank, size, rsize := ic.Rank(), ic.Size(), ic.RemoteSize()
			recvcount, sendcount := base*rsize, base*rsize*size
			send := seq(sendcount, func(i int) int64 { return int64(rank*sendcount + i) })
			recv := seq(recvcount, func(i int) int64 { return int64(-i) })
			var err error
			if block {
				err = mtReduceScatter(ctx, ic, send, recv, collectives.Sum[int64]())
			} else {
				err = mtReduceScatterV(ctx, ic, send, recv, fill(size, recvcount), collectives.Sum[int64]())
			}
			if err != nil {
				return err
			}
			return same("reduce_scatter", recv, seq(recvcount, func(i int) int64 {
				return int64(sendcount)*int64(rsize*(rsize-1)/2) + int64(i+rank*rsize*base)*int64(rsize)
			}))
		})
	}
}

// collIcalltoallw: on every intercommunicator of at least 4 ranks, Alltoallw of int32
// blocks: to remote rank i, i ints from byte displacement 4*i*(i+1)/2 of a buffer whose
// element k is k + 100*rank. From each remote rank i, rank ints at byte 4*i*rank, which
// must hold i*100 + rank*(rank+1)/2 + j.
func collIcalltoallw(ctx context.Context, w *runtime.World) error {
	return eachIntercomm(ctx, w, 4, func(ic *runtime.World, isLeft bool) error {
		rank, size := ic.Rank(), ic.RemoteSize()
		sbuf := make([]byte, 4*size*size)
		for k := range size * size {
			binary.LittleEndian.PutUint32(sbuf[4*k:], uint32(int32(k+100*rank)))
		}
		rbuf := make([]byte, 4*size*max(rank, 1))
		sb := collectives.ByteBlocks{Counts: make([]int, size), Displs: make([]int, size), Sizes: fill(size, 4)}
		rb := collectives.ByteBlocks{Counts: make([]int, size), Displs: make([]int, size), Sizes: fill(size, 4)}
		for i := range size {
			sb.Counts[i], sb.Displs[i] = i, 4*(i*(i+1)/2)
			rb.Counts[i], rb.Displs[i] = rank, 4*i*rank
		}
		if err := mtAlltoallw(ctx, ic, sbuf, sb, rbuf, rb); err != nil {
			return err
		}
		for i := range size {
			for j := range rank {
				got := int32(binary.LittleEndian.Uint32(rbuf[rb.Displs[i]+4*j:]))
				if want := int32(i*100 + rank*(rank+1)/2 + j); got != want {
					return fmt.Errorf("alltoallw: element %d of the block from remote rank %d is %d, want %d", j, i, got, want)
				}
			}
		}
		return nil
	})
}
