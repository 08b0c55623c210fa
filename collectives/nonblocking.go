package collectives

import (
	"context"

	"github.com/gorma-hpc/gorma/runtime"
)

// The nonblocking collectives. Each starts the blocking call of its name on the World's
// queue (queue.go) and returns at once; the call runs, in the order this rank started its
// calls, while the caller goes on. Its arguments mean what the blocking call's do, ctx
// bounds the call as it bounds the blocking one, and the call's errors, those of its
// arguments included, are returned by the Request's Wait and Test. The buffers belong to
// the library until then.

// Ibarrier starts Barrier (MPI_Ibarrier).
func Ibarrier(ctx context.Context, w *runtime.World) *Request {
	return started(ctx, newRequest(w, "barrier", false, func(ctx context.Context) error {
		return Barrier(ctx, w)
	}))
}

// Ibcast starts Bcast (MPI_Ibcast).
func Ibcast[T runtime.Elem](ctx context.Context, w *runtime.World, buf []T, root int) *Request {
	return started(ctx, newRequest(w, "bcast", false, func(ctx context.Context) error {
		return Bcast(ctx, w, buf, root)
	}))
}

// Ireduce starts Reduce (MPI_Ireduce).
func Ireduce[T runtime.Elem](ctx context.Context, w *runtime.World, send, recv []T, op Op[T], root int) *Request {
	return started(ctx, newRequest(w, "reduce", false, func(ctx context.Context) error {
		return Reduce(ctx, w, send, recv, op, root)
	}))
}

// Iallreduce starts Allreduce (MPI_Iallreduce).
func Iallreduce[T runtime.Elem](ctx context.Context, w *runtime.World, send, recv []T, op Op[T]) *Request {
	return started(ctx, newRequest(w, "allreduce", false, func(ctx context.Context) error {
		return Allreduce(ctx, w, send, recv, op)
	}))
}

// Iallgather starts Allgather (MPI_Iallgather).
func Iallgather[T runtime.Elem](ctx context.Context, w *runtime.World, send, recv []T) *Request {
	return started(ctx, newRequest(w, "allgather", false, func(ctx context.Context) error {
		return Allgather(ctx, w, send, recv)
	}))
}

// Iallgatherv starts Allgatherv (MPI_Iallgatherv).
func Iallgatherv[T runtime.Elem](ctx context.Context, w *runtime.World, send, recv []T, counts []int) *Request {
	return started(ctx, newRequest(w, "allgatherv", false, func(ctx context.Context) error {
		return Allgatherv(ctx, w, send, recv, counts)
	}))
}

// Ialltoall starts Alltoall (MPI_Ialltoall).
func Ialltoall[T runtime.Elem](ctx context.Context, w *runtime.World, send, recv []T) *Request {
	return started(ctx, newRequest(w, "alltoall", false, func(ctx context.Context) error {
		return Alltoall(ctx, w, send, recv)
	}))
}

// Ialltoallv starts Alltoallv (MPI_Ialltoallv).
func Ialltoallv[T runtime.Elem](ctx context.Context, w *runtime.World, send []T, sendCounts []int, recv []T, recvCounts []int) *Request {
	return started(ctx, newRequest(w, "alltoallv", false, func(ctx context.Context) error {
		return Alltoallv(ctx, w, send, sendCounts, recv, recvCounts)
	}))
}

// Igather starts Gather (MPI_Igather).
func Igather[T runtime.Elem](ctx context.Context, w *runtime.World, send, recv []T, root int) *Request {
	return started(ctx, newRequest(w, "gather", false, func(ctx context.Context) error {
		return Gather(ctx, w, send, recv, root)
	}))
}

// Iscatter starts Scatter (MPI_Iscatter).
func Iscatter[T runtime.Elem](ctx context.Context, w *runtime.World, send, recv []T, root int) *Request {
	return started(ctx, newRequest(w, "scatter", false, func(ctx context.Context) error {
		return Scatter(ctx, w, send, recv, root)
	}))
}

// IreduceScatter starts ReduceScatter (MPI_Ireduce_scatter_block).
func IreduceScatter[T runtime.Elem](ctx context.Context, w *runtime.World, send, recv []T, op Op[T]) *Request {
	return started(ctx, newRequest(w, "reduce_scatter", false, func(ctx context.Context) error {
		return ReduceScatter(ctx, w, send, recv, op)
	}))
}

// Iscan starts Scan (MPI_Iscan).
func Iscan[T runtime.Elem](ctx context.Context, w *runtime.World, send, recv []T, op Op[T]) *Request {
	return started(ctx, newRequest(w, "scan", false, func(ctx context.Context) error {
		return Scan(ctx, w, send, recv, op)
	}))
}

// Iexscan starts Exscan (MPI_Iexscan).
func Iexscan[T runtime.Elem](ctx context.Context, w *runtime.World, send, recv []T, op Op[T]) *Request {
	return started(ctx, newRequest(w, "exscan", false, func(ctx context.Context) error {
		return Exscan(ctx, w, send, recv, op)
	}))
}

// Igatherv starts Gatherv (MPI_Igatherv).
func Igatherv[T runtime.Elem](ctx context.Context, w *runtime.World, send, recv []T, counts, displs []int, root int) *Request {
	return started(ctx, newRequest(w, "gatherv", false, func(ctx context.Context) error {
		return Gatherv(ctx, w, send, recv, counts, displs, root)
	}))
}

// Iscatterv starts Scatterv (MPI_Iscatterv).
func Iscatterv[T runtime.Elem](ctx context.Context, w *runtime.World, send []T, counts, displs []int, recv []T, root int) *Request {
	return started(ctx, newRequest(w, "scatterv", false, func(ctx context.Context) error {
		return Scatterv(ctx, w, send, counts, displs, recv, root)
	}))
}

// IreduceScatterV starts ReduceScatterV (MPI_Ireduce_scatter).
func IreduceScatterV[T runtime.Elem](ctx context.Context, w *runtime.World, send, recv []T, counts []int, op Op[T]) *Request {
	return started(ctx, newRequest(w, "reduce_scatter_v", false, func(ctx context.Context) error {
		return ReduceScatterV(ctx, w, send, recv, counts, op)
	}))
}
