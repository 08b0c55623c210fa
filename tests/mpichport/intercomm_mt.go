package main

import (
	"context"
	"fmt"

	"github.com/gorma-hpc/gorma/collectives"
	"github.com/gorma-hpc/gorma/runtime"
)

// MPICH's MTest_<Coll> wrappers: the blocking call, or under testlist.in's -nonblocking
// argument the I form and a Wait. The intercommunicator ports call these; their _nb
// scenarios run them nonblocking.
type nonblockingKey struct{}

// withNonblocking returns run with the MTest wrappers switched to the I forms.
func withNonblocking(run func(ctx context.Context, w *runtime.World) error) func(ctx context.Context, w *runtime.World) error {
	return func(ctx context.Context, w *runtime.World) error {
		return run(context.WithValue(ctx, nonblockingKey{}, true), w)
	}
}

func nonblocking(ctx context.Context) bool { v, _ := ctx.Value(nonblockingKey{}).(bool); return v }

// mt runs the blocking call, or the nonblocking one and its Wait.
func mt(ctx context.Context, blocking func() error, start func() *collectives.Request) error {
	if nonblocking(ctx) {
		return start().Wait(ctx)
	}
	return blocking()
}

func mtBcast[T runtime.Elem](ctx context.Context, w *runtime.World, buf []T, root int) error {
	return mt(ctx, func() error { return collectives.Bcast(ctx, w, buf, root) },
		func() *collectives.Request { return collectives.Ibcast(ctx, w, buf, root) })
}

func mtReduce[T runtime.Elem](ctx context.Context, w *runtime.World, send, recv []T, op collectives.Op[T], root int) error {
	return mt(ctx, func() error { return collectives.Reduce(ctx, w, send, recv, op, root) },
		func() *collectives.Request { return collectives.Ireduce(ctx, w, send, recv, op, root) })
}

func mtAllreduce[T runtime.Elem](ctx context.Context, w *runtime.World, send, recv []T, op collectives.Op[T]) error {
	return mt(ctx, func() error { return collectives.Allreduce(ctx, w, send, recv, op) },
		func() *collectives.Request { return collectives.Iallreduce(ctx, w, send, recv, op) })
}

func mtGather[T runtime.Elem](ctx context.Context, w *runtime.World, send, recv []T, root int) error {
	return mt(ctx, func() error { return collectives.Gather(ctx, w, send, recv, root) },
		func() *collectives.Request { return collectives.Igather(ctx, w, send, recv, root) })
}

func mtScatter[T runtime.Elem](ctx context.Context, w *runtime.World, send, recv []T, root int) error {
	return mt(ctx, func() error { return collectives.Scatter(ctx, w, send, recv, root) },
		func() *collectives.Request { return collectives.Iscatter(ctx, w, send, recv, root) })
}

func mtGatherv[T runtime.Elem](ctx context.Context, w *runtime.World, send, recv []T, counts, displs []int, root int) error {
	return mt(ctx, func() error { return collectives.Gatherv(ctx, w, send, recv, counts, displs, root) },
		func() *collectives.Request { return collectives.Igatherv(ctx, w, send, recv, counts, displs, root) })
}

func mtScatterv[T runtime.Elem](ctx context.Context, w *runtime.World, send []T, counts, displs []int, recv []T, root int) error {
	return mt(ctx, func() error { return collectives.Scatterv(ctx, w, send, counts, displs, recv, root) },
		func() *collectives.Request { return collectives.Iscatterv(ctx, w, send, counts, displs, recv, root) })
}

func mtAllgather[T runtime.Elem](ctx context.Context, w *runtime.World, send, recv []T) error {
	return mt(ctx, func() error { return collectives.Allgather(ctx, w, send, recv) },
		func() *collectives.Request { return collectives.Iallgather(ctx, w, send, recv) })
}

func mtAllgatherv[T runtime.Elem](ctx context.Context, w *runtime.World, send, recv []T, counts []int) error {
	return mt(ctx, func() error { return collectives.Allgatherv(ctx, w, send, recv, counts) },
		func() *collectives.Request { return collectives.Iallgatherv(ctx, w, send, recv, counts) })
}

func mtAlltoall[T runtime.Elem](ctx context.Context, w *runtime.World, send, recv []T) error {
	return mt(ctx, func() error { return collectives.Alltoall(ctx, w, send, recv) },
		func() *collectives.Request { return collectives.Ialltoall(ctx, w, send, recv) })
}

func mtAlltoallv[T runtime.Elem](ctx context.Context, w *runtime.World, send []T, sendCounts []int, recv []T, recvCounts []int) error {
	return mt(ctx, func() error { return collectives.Alltoallv(ctx, w, send, sendCounts, recv, recvCounts) },
		func() *collectives.Request { return collectives.Ialltoallv(ctx, w, send, sendCounts, recv, recvCounts) })
}

func mtAlltoallw(ctx context.Context, w *runtime.World, send []byte, sb collectives.ByteBlocks, recv []byte, rb collectives.ByteBlocks) error {
	return mt(ctx, func() error { return collectives.Alltoallw(ctx, w, send, sb, recv, rb) },
		func() *collectives.Request { return collectives.Ialltoallw(ctx, w, send, sb, recv, rb) })
}

func mtReduceScatter[T runtime.Elem](ctx context.Context, w *runtime.World, send, recv []T, op collectives.Op[T]) error {
	return mt(ctx, func() error { return collectives.ReduceScatter(ctx, w, send, recv, op) },
		func() *collectives.Request { return collectives.IreduceScatter(ctx, w, send, recv, op) })
}

func mtReduceScatterV[T runtime.Elem](ctx context.Context, w *runtime.World, send, recv []T, counts []int, op collectives.Op[T]) error {
	return mt(ctx, func() error { return collectives.ReduceScatterV(ctx, w, send, recv, counts, op) },
		func() *collectives.Request { return collectives.IreduceScatterV(ctx, w, send, recv, counts, op) })
}

func mtBarrier(ctx context.Context, w *runtime.World) error {
	return mt(ctx, func() error { return collectives.Barrier(ctx, w) },
		func() *collectives.Request { return collectives.Ibarrier(ctx, w) })
}

// The -nonblocking runs of testlist.in, at its 8 ranks.
func init() {
	for _, p := range []struct {
		name string
		run  func(ctx context.Context, w *runtime.World) error
	}{
		{"icbcast", collIcbcast}, {"icallreduce", collIcallreduce}, {"icreduce", collIcreduce},
		{"icscatter", collIcscatter}, {"icgather", collIcgather}, {"icallgather", collIcallgather},
		{"icbarrier", collIcbarrier}, {"icallgatherv", collIcallgatherv}, {"icgatherv", collIcgatherv},
		{"icscatterv", collIcscatterv}, {"icalltoall", collIcalltoall}, {"icalltoallv", collIcalltoallv},
		{"icalltoallw", collIcalltoallw}, {"redscatinter", collRedscatinter(false)},
	} {
		register(fmt.Sprintf("coll-%s_nb", p.name), "coll/"+p.name+".c", 8, withNonblocking(p.run))
	}
}
