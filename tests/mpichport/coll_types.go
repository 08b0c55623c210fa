package main

import (
	"context"
	"fmt"

	"github.com/gorma-hpc/gorma/collectives"
	"github.com/gorma-hpc/gorma/datatype"
	"github.com/gorma-hpc/gorma/runtime"
)

func init() {
	register("coll-scattern", "coll/scattern.c", 4, func(ctx context.Context, w *runtime.World) error { return collScatterVec(ctx, w, false) })
	register("coll-scatter2", "coll/scatter2.c", 4, func(ctx context.Context, w *runtime.World) error { return collScatterVec(ctx, w, true) })
	register("coll-gather2", "coll/gather2.c", 4, collGather2)
	register("coll-bcastzerotype", "coll/bcastzerotype.c", 4, collBcastzerotype)
}

// collScatterVec: from each root in turn, a Scatter of one vector (12 float64s, stride
// 10) per rank from root's 0, 1, 2, ... into 12 contiguous float64s: rank r gets
// r*111, r*111 + 10, ... (the vector's extent is 111 float64s). inPlace (scatter2): root
// passes no receive buffer (MPI_IN_PLACE) and only the others check.
func collScatterVec(ctx context.Context, w *runtime.World, inPlace bool) error {
	const n, stride = 12, 10
	rank, size := w.Rank(), w.Size()
	vec, err := datatype.Vector[float64](n, 1, stride)
	if err != nil {
		return err
	}
	if vec.Extent() != ((n-1)*stride+1)*8 {
		return fmt.Errorf("vector extent %d, want %d", vec.Extent(), ((n-1)*stride+1)*8)
	}
	vecin := seq(n*stride*size, func(i int) float64 { return float64(i) })
	for root := 0; root < size; root++ {
		vecout := fill(n, -1.0)
		recv := vecout
		if inPlace && rank == root {
			recv = nil
		}
		if err := collectives.ScatterType(ctx, w, vecin, 1, vec, recv, n, datatype.Of[float64](), root); err != nil {
			return fmt.Errorf("root %d: %w", root, err)
		}
		if recv == nil {
			continue
		}
		if err := same(fmt.Sprintf("root %d", root), vecout, seq(n, func(i int) float64 { return float64(rank*((n-1)*stride+1) + i*stride) })); err != nil {
			return err
		}
	}
	return nil
}

// collGather2: on each communicator, to each root in turn, 16 times: every rank but root
// Gathers one vector (12 float64s, stride 10, holding rank*12 + i) into root's 12 per
// rank, root contributing in place (its block already in place): root's buffer holds 0,
// 1, 2, .... Then an empty Gather with root 0 in place.
func collGather2(ctx context.Context, w *runtime.World) error {
	const n, stride = 12, 10
	vec, err := datatype.Vector[float64](n, 1, stride)
	if err != nil {
		return err
	}
	err = eachComm(ctx, w, 2, func(c *runtime.World, name string) error {
		rank, size := c.Rank(), c.Size()
		for root := 0; root < size; root++ {
			for count := 1; count < 65000; count *= 2 {
				vecin := fill(n*stride, -2.0)
				for i := 0; i < n; i++ {
					vecin[i*stride] = float64(rank*n + i)
				}
				vecout := make([]float64, size*n)
				send := vecin
				if rank == root {
					for i := 0; i < n; i++ {
						vecout[rank*n+i] = float64(rank*n + i)
					}
					send = nil
				}
				if err := collectives.GatherType(ctx, c, send, 1, vec, vecout, n, datatype.Of[float64](), root); err != nil {
					return fmt.Errorf("%s, root %d: %w", name, root, err)
				}
				if rank == root {
					if err := same(fmt.Sprintf("%s, root %d", name, root), vecout, seq(size*n, func(i int) float64 { return float64(i) })); err != nil {
						return err
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	var send []byte
	if w.Rank() != 0 {
		send = []byte{}
	}
	return collectives.GatherType(ctx, w, send, 0, datatype.Of[uint8](), []byte(nil), 0, datatype.Of[uint8](), 0)
}

// collBcastzerotype: a Bcast of 10 copies of a type of no data (0 int32s) from rank 0
// leaves every rank's buffer as it was.
func collBcastzerotype(ctx context.Context, w *runtime.World) error {
	const nelem = 10
	buf := seq(nelem, func(i int) int8 { return int8(w.Rank()*nelem + i) })
	t, err := datatype.Contiguous[int32](0)
	if err != nil {
		return err
	}
	if t.Size() != 0 {
		return fmt.Errorf("contiguous of 0 int32s has size %d", t.Size())
	}
	if err := collectives.BcastType(ctx, w, buf, nelem, t, 0); err != nil {
		return err
	}
	return same("buffer", buf, seq(nelem, func(i int) int8 { return int8(w.Rank()*nelem + i) }))
}
