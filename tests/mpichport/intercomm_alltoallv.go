package main

import (
	"context"

	"github.com/gorma-hpc/gorma/runtime"
)

func init() {
	register("coll-icalltoallv", "coll/icalltoallv.c", 5, collIcalltoallv)
	register("coll-icalltoallv_np7", "coll/icalltoallv.c", 7, collIcalltoallv)
}

// collIcalltoallv: on every intercommunicator of at least 4 ranks, Alltoallv where a rank
// sends remote rank r a block of r int32s, r*(r+1)/2 + j + 100*rank, and receives rank
// int32s from each remote rank. The block from remote rank i holds i*100 +
// rank*(rank+1)/2 + j. gorma's Alltoallv blocks are packed, so the send buffer holds the
// elements MPICH's displacements (r*(r+1)/2, with gaps) pick.
func collIcalltoallv(ctx context.Context, w *runtime.World) error {
	return eachIntercomm(ctx, w, 4, func(ic *runtime.World, isLeft bool) error {
		rank, size := ic.Rank(), ic.RemoteSize()
		sendCounts, recvCounts := make([]int, size), make([]int, size)
		for i := range size {
			sendCounts[i], recvCounts[i] = i, rank
		}
		// MPICH's send buffer holds k + 100*rank at k and block r at displacement
		// r*(r+1)/2; gorma's blocks are packed, so block r carries those elements.
		var send []int32
		for r := range size {
			for j := range r {
				send = append(send, int32(r*(r+1)/2+j+100*rank))
			}
		}
		recv := fill(size*rank, int32(-1))
		if err := mtAlltoallv(ctx, ic, send, sendCounts, recv, recvCounts); err != nil {
			return err
		}
		return same("alltoallv", recv, seq(size*rank, func(k int) int32 {
			i, j := k/max(rank, 1), k%max(rank, 1)
			return int32(i*100 + rank*(rank+1)/2 + j)
		}))
	})
}
