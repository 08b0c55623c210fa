package main

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/gorma-hpc/gorma/collectives"
	"github.com/gorma-hpc/gorma/runtime"
)

func init() {
	register("coll-nonblocking", "coll/nonblocking.c", 4, collNonblocking)
	register("coll-ibarrier", "coll/ibarrier.c", 2, collIbarrier)
	register("coll-iallred", "coll/iallred.c", 2, collIallred)
	register("coll-redscat3", "coll/redscat3.c", 8, func(ctx context.Context, w *runtime.World) error { return collRedscat3(ctx, w, false) })
	register("coll-redscat3_nb", "coll/redscat3.c", 8, func(ctx context.Context, w *runtime.World) error { return collRedscat3(ctx, w, true) })
	register("coll-alltoallw_zeros", "coll/alltoallw_zeros.c", 5, collAlltoallwZeros)
}

// collNonblocking: every nonblocking collective, each waited for at once, with two
// int32s per rank and its in-place form (at the root where MPI has one there): Ibarrier,
// Ibcast, Igather, Igatherv, Iscatter, Iscatterv, Iallgather, Iallgatherv, Ialltoall,
// Ialltoallv, Ialltoallw (two int32s per block), Ireduce, Iallreduce, IreduceScatterV,
// IreduceScatter, Iscan, Iexscan. Like the MPICH test it checks only that the calls
// complete.
func collNonblocking(ctx context.Context, w *runtime.World) error {
	const k = 2
	r, n := w.Rank(), w.Size()
	sbuf := seq(k*n, func(i int) int32 { return int32(i / k) })
	rbuf := seq(k*n, func(i int) int32 { return int32(i / k) })
	counts, displs := fill(n, k), seq(n, func(i int) int { return i * k })
	root := r == 0
	inplace := func(s []int32, at bool) []int32 {
		if at {
			return nil
		}
		return s
	}
	sum := collectives.Sum[int32]()
	// Ialltoallw: two int32s (8 bytes) per block, at byte displacements 8*i.
	wsend, wrecv := make([]byte, 8*n), make([]byte, 8*n)
	blocks := collectives.ByteBlocks{Counts: fill(n, k), Displs: seq(n, func(i int) int { return 8 * i }), Sizes: fill(n, 4)}
	calls := []struct {
		name string
		f    func() *collectives.Request
	}{
		{"ibarrier", func() *collectives.Request { return collectives.Ibarrier(ctx, w) }},
		{"ibcast", func() *collectives.Request { return collectives.Ibcast(ctx, w, sbuf[:k], 0) }},
		{"igather", func() *collectives.Request { return collectives.Igather(ctx, w, sbuf[:k], rbuf, 0) }},
		{"igather in place", func() *collectives.Request { return collectives.Igather(ctx, w, inplace(sbuf[:k], root), rbuf, 0) }},
		{"igatherv", func() *collectives.Request {
			return collectives.Igatherv(ctx, w, sbuf[:k], rbuf, counts, displs, 0)
		}},
		{"igatherv in place", func() *collectives.Request {
			return collectives.Igatherv(ctx, w, inplace(sbuf[:k], root), rbuf, counts, displs, 0)
		}},
		{"iscatter", func() *collectives.Request { return collectives.Iscatter(ctx, w, sbuf, rbuf[:k], 0) }},
		{"iscatter in place", func() *collectives.Request { return collectives.Iscatter(ctx, w, sbuf, inplace(rbuf[:k], root), 0) }},
		{"iscatterv", func() *collectives.Request {
			return collectives.Iscatterv(ctx, w, sbuf, counts, displs, rbuf[:k], 0)
		}},
		{"iscatterv in place", func() *collectives.Request {
			return collectives.Iscatterv(ctx, w, sbuf, counts, displs, inplace(rbuf[:k], root), 0)
		}},
		{"iallgather", func() *collectives.Request { return collectives.Iallgather(ctx, w, sbuf[:k], rbuf) }},
		{"iallgather in place", func() *collectives.Request { return collectives.Iallgather(ctx, w, nil, rbuf) }},
		{"iallgatherv", func() *collectives.Request { return collectives.Iallgatherv(ctx, w, sbuf[:k], rbuf, counts) }},
		{"iallgatherv in place", func() *collectives.Request { return collectives.Iallgatherv(ctx, w, nil, rbuf, counts) }},
		{"ialltoall", func() *collectives.Request { return collectives.Ialltoall(ctx, w, sbuf, rbuf) }},
		{"ialltoall in place", func() *collectives.Request { return collectives.Ialltoall(ctx, w, nil, rbuf) }},
		{"ialltoallv", func() *collectives.Request { return collectives.Ialltoallv(ctx, w, sbuf, counts, rbuf, counts) }},
		{"ialltoallv in place", func() *collectives.Request { return collectives.Ialltoallv(ctx, w, nil, nil, rbuf, counts) }},
		{"ialltoallw", func() *collectives.Request {
			return collectives.Ialltoallw(ctx, w, wsend, blocks, wrecv, blocks)
		}},
		{"ireduce", func() *collectives.Request { return collectives.Ireduce(ctx, w, sbuf[:k], rbuf[:k], sum, 0) }},
		{"ireduce in place", func() *collectives.Request {
			return collectives.Ireduce(ctx, w, inplace(sbuf[:k], root), rbuf[:k], sum, 0)
		}},
		{"iallreduce", func() *collectives.Request { return collectives.Iallreduce(ctx, w, sbuf[:k], rbuf[:k], sum) }},
		{"iallreduce in place", func() *collectives.Request { return collectives.Iallreduce(ctx, w, nil, rbuf[:k], sum) }},
		{"ireduce_scatter", func() *collectives.Request {
			return collectives.IreduceScatterV(ctx, w, sbuf, rbuf[:k], counts, sum)
		}},
		{"ireduce_scatter in place", func() *collectives.Request {
			return collectives.IreduceScatterV(ctx, w, nil, rbuf, counts, sum)
		}},
		{"ireduce_scatter_block", func() *collectives.Request { return collectives.IreduceScatter(ctx, w, sbuf, rbuf[:k], sum) }},
		{"ireduce_scatter_block in place", func() *collectives.Request { return collectives.IreduceScatter(ctx, w, nil, rbuf, sum) }},
		{"iscan", func() *collectives.Request { return collectives.Iscan(ctx, w, sbuf[:k], rbuf[:k], sum) }},
		{"iscan in place", func() *collectives.Request { return collectives.Iscan(ctx, w, nil, rbuf[:k], sum) }},
		{"iexscan", func() *collectives.Request { return collectives.Iexscan(ctx, w, sbuf[:k], rbuf[:k], sum) }},
		{"iexscan in place", func() *collectives.Request { return collectives.Iexscan(ctx, w, nil, rbuf[:k], sum) }},
	}
	for _, c := range calls {
		if err := c.f().Wait(ctx); err != nil {
			return fmt.Errorf("%s: %w", c.name, err)
		}
	}
	return nil
}

// collIbarrier: an Ibarrier tested every millisecond until done.
func collIbarrier(ctx context.Context, w *runtime.World) error {
	req := collectives.Ibarrier(ctx, w)
	for {
		time.Sleep(time.Millisecond)
		done, err := req.Test()
		if err != nil {
			return err
		}
		if done {
			return nil
		}
	}
}

// collIallred: an Iallreduce of 1 outstanding across an Allreduce of 2 (sum, 2 ranks):
// 2 and 4.
func collIallred(ctx context.Context, w *runtime.World) error {
	isum, sum := []int32{0}, []int32{0}
	req := collectives.Iallreduce(ctx, w, []int32{1}, isum, collectives.Sum[int32]())
	if err := collectives.Allreduce(ctx, w, []int32{2}, sum, collectives.Sum[int32]()); err != nil {
		return err
	}
	if err := req.Wait(ctx); err != nil {
		return err
	}
	n := int32(w.Size())
	return first(same("iallreduce", isum, []int32{n}), same("allreduce", sum, []int32{2 * n}))
}

// collRedscat3: ReduceScatterV (sum) of 1 Mi int32s split evenly, block i of rank r
// holding r+i: rank r's block is size*r + size(size-1)/2; then the same in place. The
// _nb form (testlist.in's -nonblocking) uses IreduceScatterV, waited for.
func collRedscat3(ctx context.Context, w *runtime.World, nb bool) error {
	r, n := w.Rank(), w.Size()
	mycount := (1 << 20) / n
	counts := fill(n, mycount)
	send := seq(n*mycount, func(k int) int32 { return int32(r + k/mycount) })
	recv := fill(mycount, int32(-1))
	rs := func(s, d []int32) error {
		if nb {
			return collectives.IreduceScatterV(ctx, w, s, d, counts, collectives.Sum[int32]()).Wait(ctx)
		}
		return collectives.ReduceScatterV(ctx, w, s, d, counts, collectives.Sum[int32]())
	}
	want := fill(mycount, int32(n*r+n*(n-1)/2))
	if err := rs(send, recv); err != nil {
		return err
	}
	if err := same("reduce scatter", recv, want); err != nil {
		return err
	}
	if err := rs(nil, send); err != nil {
		return err
	}
	return same("reduce scatter in place", send[:mycount], want)
}

// collAlltoallwZeros: Alltoallw of empty blocks (a zero-size type to int32 blocks of
// count 0) both ways and in place, then Alltoallv of empty blocks both ways and in place.
func collAlltoallwZeros(ctx context.Context, w *runtime.World) error {
	n := w.Size()
	zeroType := collectives.ByteBlocks{Counts: make([]int, n), Displs: make([]int, n)}
	ints := collectives.ByteBlocks{Counts: make([]int, n), Displs: make([]int, n), Sizes: fill(n, 4)}
	sbuf, rbuf := make([]byte, 4), make([]byte, 4)
	mine := zeroType
	if w.Rank()%2 == 1 {
		mine = ints
	}
	for _, c := range []struct {
		name   string
		s      []byte
		sb, rb collectives.ByteBlocks
	}{{"zero-size to int", sbuf, zeroType, ints}, {"int to zero-size", sbuf, ints, zeroType}, {"in place", nil, collectives.ByteBlocks{}, mine}} {
		if err := collectives.Alltoallw(ctx, w, c.s, c.sb, rbuf, c.rb); err != nil {
			return fmt.Errorf("alltoallw %s: %w", c.name, err)
		}
	}
	s, rv := make([]int32, 1), make([]int32, 1)
	for i := 0; i < 2; i++ {
		if err := collectives.Alltoallv(ctx, w, s[:0], make([]int, n), rv[:0], make([]int, n)); err != nil {
			return fmt.Errorf("alltoallv %d: %w", i, err)
		}
	}
	if err := collectives.Alltoallv(ctx, w, nil, nil, rv[:0], make([]int, n)); err != nil {
		return fmt.Errorf("alltoallv in place: %w", err)
	}
	return nil
}

func init() {
	register("coll-redscat2", "coll/redscat2.c", 4, collRedscat2)
}

// collRedscat2: for block sizes 1, 2, 4, ... 128, ReduceScatterV of rank+i with three
// non-commutative operators. Each must see a lower rank's operand on the left (never
// larger than the right one). "left" keeps the left operand (rank r gets rank 0's block,
// r*block + i). "right" keeps the right one (rank size-1's, size-1 + r*block + i). The
// third is a sum (size*x + size(size-1)/2 for x = r*block + i).
func collRedscat2(ctx context.Context, w *runtime.World) error {
	rank, size := w.Rank(), w.Size()
	var misordered atomic.Int64
	mk := func(name string, f func(l, r int32) int32) collectives.Op[int32] {
		return collectives.NewOp[int32](name, func(inout, in []int32) {
			for i := range inout {
				if name != "nc_sum" && inout[i] > in[i] {
					misordered.Add(1)
				}
				inout[i] = f(inout[i], in[i])
			}
		}, false)
	}
	ops := []struct {
		name string
		op   collectives.Op[int32]
		want func(x int) int32
	}{
		{"left", mk("left", func(l, r int32) int32 { return l }), func(x int) int32 { return int32(x) }},
		{"right", mk("right", func(l, r int32) int32 { return r }), func(x int) int32 { return int32(size - 1 + x) }},
		{"nc_sum", mk("nc_sum", func(l, r int32) int32 { return l + r }), func(x int) int32 { return int32(size*x + (size-1)*size/2) }},
	}
	for bs := 1; bs < 256; bs *= 2 {
		send := seq(size*bs, func(i int) int32 { return int32(rank + i) })
		for _, o := range ops {
			recv := fill(bs, int32(-559038737))
			if err := collectives.ReduceScatterV(ctx, w, send, recv, fill(size, bs), o.op); err != nil {
				return err
			}
			if err := same(fmt.Sprintf("block size %d, %s", bs, o.name), recv, seq(bs, func(i int) int32 { return o.want(rank*bs + i) })); err != nil {
				return err
			}
		}
	}
	if n := misordered.Load(); n > 0 {
		return fmt.Errorf("a non-commutative operator saw a higher rank's operand on the left %d times", n)
	}
	return nil
}
