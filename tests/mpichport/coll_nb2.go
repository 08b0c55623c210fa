package main

import (
	"context"
	"fmt"

	"github.com/gorma-hpc/gorma/collectives"
	"github.com/gorma-hpc/gorma/runtime"
)

func init() {
	register("coll-nonblocking2", "coll/nonblocking2.c", 4, collNonblocking2)
}

// collNonblocking2: with root 0 and then root size-1, each nonblocking collective on 10
// int32s per rank, waited for at once. Each is checked element by element, with buffers
// preset to 0xdeadbeef, which the calls must leave where they write nothing. The calls:
// Ibcast of 0..9 and of 17 bytes, Ibarrier, Ireduce with Sum and with a commutative
// user sum, Iallreduce, Ialltoallv, Igather (twice), Iscatter, Iscatterv,
// IreduceScatterV, IreduceScatter, Igatherv, Ialltoall, Iallgather, Iallgatherv, Iscan,
// Iexscan. It leaves out the MPICH test's second pass over a non-contiguous datatype
// (gorma's nonblocking collectives take no datatype) and MPI_Ialltoallw (gorma has
// none).
func collNonblocking2(ctx context.Context, w *runtime.World) error {
	for _, root := range []int{0, w.Size() - 1} {
		if err := nb2Root(ctx, w, root); err != nil {
			return fmt.Errorf("root %d: %w", root, err)
		}
	}
	return nil
}

func nb2Root(ctx context.Context, w *runtime.World, root int) error {
	const count, prime = 10, 17
	const dead = int32(-559038737) // 0xdeadbeef
	rank, size := w.Rank(), w.Size()
	n := count * size
	sum := collectives.Sum[int32]()
	usum := collectives.NewOp[int32]("sum_fn", func(inout, in []int32) {
		for i := range inout {
			inout[i] += in[i]
		}
	}, true)
	wait := func(what string, r *collectives.Request) error {
		if err := r.Wait(ctx); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		return nil
	}
	ival := func(f func(i int) int32) []int32 { return seq(n, f) }
	deadAll := func() []int32 { return fill(n, dead) }
	// each checks got[k] for k < len(want) against want(k).
	check := func(what string, got []int32, want func(k int) int32) error {
		return same(what, got, seq(len(got), want))
	}

	buf := fill(n, dead)
	if rank == root {
		copy(buf, ival(func(i int) int32 { return int32(i) }))
	}
	if err := wait("ibcast", collectives.Ibcast(ctx, w, buf[:count], root)); err != nil {
		return err
	}
	if err := check("ibcast", buf[:count], func(i int) int32 { return int32(i) }); err != nil {
		return err
	}
	alias := fill(n*4, int8(-65)) // 0xbf
	for i := 0; i < prime; i++ {
		alias[i] = int8(-37) // 0xdb
		if rank == root {
			alias[i] = int8(i)
		}
	}
	if err := wait("ibcast of bytes", collectives.Ibcast(ctx, w, alias[:prime], root)); err != nil {
		return err
	}
	if err := same("ibcast of bytes", alias[:prime], seq(prime, func(i int) int8 { return int8(i) })); err != nil {
		return err
	}
	if err := wait("ibarrier", collectives.Ibarrier(ctx, w)); err != nil {
		return err
	}
	redWant := func(i int) int32 { return int32(size*(size-1)/2 + i*size) }
	for _, op := range []collectives.Op[int32]{sum, usum} {
		buf, recv := seq(count, func(i int) int32 { return int32(rank + i) }), fill(count, dead)
		if err := wait("ireduce", collectives.Ireduce(ctx, w, buf, recv, op, root)); err != nil {
			return err
		}
		if rank == root {
			if err := check("ireduce", recv, redWant); err != nil {
				return err
			}
		}
	}
	{
		buf, recv := seq(count, func(i int) int32 { return int32(rank + i) }), fill(count, dead)
		if err := wait("iallreduce", collectives.Iallreduce(ctx, w, buf, recv, sum)); err != nil {
			return err
		}
		if err := check("iallreduce", recv, redWant); err != nil {
			return err
		}
	}
	counts := fill(size, count)
	displs := seq(size, func(i int) int { return i * count })
	{
		buf, recv := ival(func(k int) int32 { return int32(rank + k/count*(k%count)) }), deadAll()
		if err := wait("ialltoallv", collectives.Ialltoallv(ctx, w, buf, counts, recv, counts)); err != nil {
			return err
		}
		if err := check("ialltoallv", recv, func(k int) int32 { return int32(k/count + rank*(k%count)) }); err != nil {
			return err
		}
	}
	for _, what := range []string{"igather", "igather (dup type)"} {
		buf, recv := ival(func(i int) int32 { return int32(rank + i) }), deadAll()
		if err := wait(what, collectives.Igather(ctx, w, buf[:count], recv, root)); err != nil {
			return err
		}
		want := func(k int) int32 { return int32(k/count + k%count) }
		if rank != root {
			want = func(int) int32 { return dead }
		}
		if err := check(what, recv, want); err != nil {
			return err
		}
	}
	scatterIn := func() []int32 {
		if rank == root {
			return ival(func(k int) int32 { return int32(k/count + k%count) })
		}
		return deadAll()
	}
	for _, what := range []string{"iscatter", "iscatterv"} {
		buf, recv := scatterIn(), deadAll()
		var r *collectives.Request
		if what == "iscatter" {
			r = collectives.Iscatter(ctx, w, buf, recv[:count], root)
		} else {
			r = collectives.Iscatterv(ctx, w, buf, counts, displs, recv[:count], root)
		}
		if err := wait(what, r); err != nil {
			return err
		}
		if err := check(what, recv, func(k int) int32 {
			if k < count {
				return int32(rank + k)
			}
			return dead
		}); err != nil {
			return err
		}
		if rank != root {
			if err := check(what+": send buffer", buf, func(int) int32 { return dead }); err != nil {
				return err
			}
		}
	}
	for _, what := range []string{"ireduce_scatter", "ireduce_scatter_block"} {
		buf, recv := ival(func(k int) int32 { return int32(rank + k/count) }), deadAll()
		var r *collectives.Request
		if what == "ireduce_scatter" {
			r = collectives.IreduceScatterV(ctx, w, buf, recv[:count], counts, sum)
		} else {
			r = collectives.IreduceScatter(ctx, w, buf, recv[:count], sum)
		}
		if err := wait(what, r); err != nil {
			return err
		}
		if err := check(what, recv, func(k int) int32 {
			if k < count {
				return int32(size*rank + (size-1)*size/2)
			}
			return dead
		}); err != nil {
			return err
		}
	}
	{
		buf, recv := deadAll(), deadAll()
		copy(buf, seq(count, func(i int) int32 { return int32(rank + i) }))
		if err := wait("igatherv", collectives.Igatherv(ctx, w, buf[:count], recv, counts, displs, root)); err != nil {
			return err
		}
		want := func(k int) int32 { return int32(k/count + k%count) }
		if rank != root {
			want = func(int) int32 { return dead }
		}
		if err := check("igatherv", recv, want); err != nil {
			return err
		}
	}
	{
		buf, recv := ival(func(k int) int32 { return int32(rank + k/count*(k%count)) }), deadAll()
		if err := wait("ialltoall", collectives.Ialltoall(ctx, w, buf, recv)); err != nil {
			return err
		}
		if err := check("ialltoall", recv, func(k int) int32 { return int32(k/count + rank*(k%count)) }); err != nil {
			return err
		}
	}
	for _, what := range []string{"iallgather", "iallgatherv"} {
		buf, recv := ival(func(i int) int32 { return int32(rank + i) }), deadAll()
		var r *collectives.Request
		if what == "iallgather" {
			r = collectives.Iallgather(ctx, w, buf[:count], recv)
		} else {
			r = collectives.Iallgatherv(ctx, w, buf[:count], recv, counts)
		}
		if err := wait(what, r); err != nil {
			return err
		}
		if err := check(what, recv, func(k int) int32 { return int32(k/count + k%count) }); err != nil {
			return err
		}
	}
	{
		buf, recv := seq(count, func(i int) int32 { return int32(rank + i) }), fill(count, dead)
		if err := wait("iscan", collectives.Iscan(ctx, w, buf, recv, sum)); err != nil {
			return err
		}
		if err := check("iscan", recv, func(i int) int32 { return int32(rank*(rank+1)/2 + i*(rank+1)) }); err != nil {
			return err
		}
		recv = fill(count, dead)
		if err := wait("iexscan", collectives.Iexscan(ctx, w, buf, recv, sum)); err != nil {
			return err
		}
		if rank != 0 {
			if err := check("iexscan", recv, func(i int) int32 { return int32(rank*(rank+1)/2 + i*(rank+1) - (rank + i)) }); err != nil {
				return err
			}
		}
	}
	return nil
}
