package collectives

import (
	"context"

	"github.com/gorma-hpc/gorma/runtime"
)

// The persistent collectives (MPI-4). Each returns an inactive persistent Request for the
// blocking call of its name with these arguments; every Start (or Startall) runs that
// call once, as the nonblocking function would, with the context Start was given. Every
// rank must make its Init calls on a World in the same order, as collective calls. The
// first one Dups the World (persistent calls run on the Dup, freed with the World; a Dup
// that reuses a freed context waits for the other ranks' Free of it), and none
// communicates. Calls are matched by the order their Requests were made, not started:
// ranks may start them in different orders, and the started calls of different Requests
// progress concurrently, apart from the World's blocking and nonblocking calls. The
// buffers are the caller's while the Request is inactive and belong to the library while
// it is active; the Request holds them and the World until Free.

// BarrierInit returns a persistent Request for Barrier (MPI_Barrier_init).
func BarrierInit(w *runtime.World) *Request {
	return newPersistent(w, "barrier", func(ctx context.Context) error {
		return Barrier(ctx, w)
	})
}

// BcastInit returns a persistent Request for Bcast (MPI_Bcast_init).
func BcastInit[T runtime.Elem](w *runtime.World, buf []T, root int) *Request {
	return newPersistent(w, "bcast", func(ctx context.Context) error {
		return Bcast(ctx, w, buf, root)
	})
}

// ReduceInit returns a persistent Request for Reduce (MPI_Reduce_init).
func ReduceInit[T runtime.Elem](w *runtime.World, send, recv []T, op Op[T], root int) *Request {
	return newPersistent(w, "reduce", func(ctx context.Context) error {
		return Reduce(ctx, w, send, recv, op, root)
	})
}

// AllreduceInit returns a persistent Request for Allreduce (MPI_Allreduce_init).
func AllreduceInit[T runtime.Elem](w *runtime.World, send, recv []T, op Op[T]) *Request {
	return newPersistent(w, "allreduce", func(ctx context.Context) error {
		return Allreduce(ctx, w, send, recv, op)
	})
}

// AllgatherInit returns a persistent Request for Allgather (MPI_Allgather_init).
func AllgatherInit[T runtime.Elem](w *runtime.World, send, recv []T) *Request {
	return newPersistent(w, "allgather", func(ctx context.Context) error {
		return Allgather(ctx, w, send, recv)
	})
}

// AllgathervInit returns a persistent Request for Allgatherv (MPI_Allgatherv_init).
func AllgathervInit[T runtime.Elem](w *runtime.World, send, recv []T, counts []int) *Request {
	return newPersistent(w, "allgatherv", func(ctx context.Context) error {
		return Allgatherv(ctx, w, send, recv, counts)
	})
}

// AlltoallInit returns a persistent Request for Alltoall (MPI_Alltoall_init).
func AlltoallInit[T runtime.Elem](w *runtime.World, send, recv []T) *Request {
	return newPersistent(w, "alltoall", func(ctx context.Context) error {
		return Alltoall(ctx, w, send, recv)
	})
}

// AlltoallvInit returns a persistent Request for Alltoallv (MPI_Alltoallv_init).
func AlltoallvInit[T runtime.Elem](w *runtime.World, send []T, sendCounts []int, recv []T, recvCounts []int) *Request {
	return newPersistent(w, "alltoallv", func(ctx context.Context) error {
		return Alltoallv(ctx, w, send, sendCounts, recv, recvCounts)
	})
}

// GatherInit returns a persistent Request for Gather (MPI_Gather_init).
func GatherInit[T runtime.Elem](w *runtime.World, send, recv []T, root int) *Request {
	return newPersistent(w, "gather", func(ctx context.Context) error {
		return Gather(ctx, w, send, recv, root)
	})
}

// ScatterInit returns a persistent Request for Scatter (MPI_Scatter_init).
func ScatterInit[T runtime.Elem](w *runtime.World, send, recv []T, root int) *Request {
	return newPersistent(w, "scatter", func(ctx context.Context) error {
		return Scatter(ctx, w, send, recv, root)
	})
}

// ReduceScatterInit returns a persistent Request for ReduceScatter (MPI_Reduce_scatter_block_init).
func ReduceScatterInit[T runtime.Elem](w *runtime.World, send, recv []T, op Op[T]) *Request {
	return newPersistent(w, "reduce_scatter", func(ctx context.Context) error {
		return ReduceScatter(ctx, w, send, recv, op)
	})
}

// ScanInit returns a persistent Request for Scan (MPI_Scan_init).
func ScanInit[T runtime.Elem](w *runtime.World, send, recv []T, op Op[T]) *Request {
	return newPersistent(w, "scan", func(ctx context.Context) error {
		return Scan(ctx, w, send, recv, op)
	})
}

// ExscanInit returns a persistent Request for Exscan (MPI_Exscan_init).
func ExscanInit[T runtime.Elem](w *runtime.World, send, recv []T, op Op[T]) *Request {
	return newPersistent(w, "exscan", func(ctx context.Context) error {
		return Exscan(ctx, w, send, recv, op)
	})
}

// GathervInit returns a persistent Request for Gatherv (MPI_Gatherv_init).
func GathervInit[T runtime.Elem](w *runtime.World, send, recv []T, counts, displs []int, root int) *Request {
	return newPersistent(w, "gatherv", func(ctx context.Context) error {
		return Gatherv(ctx, w, send, recv, counts, displs, root)
	})
}

// ScattervInit returns a persistent Request for Scatterv (MPI_Scatterv_init).
func ScattervInit[T runtime.Elem](w *runtime.World, send []T, counts, displs []int, recv []T, root int) *Request {
	return newPersistent(w, "scatterv", func(ctx context.Context) error {
		return Scatterv(ctx, w, send, counts, displs, recv, root)
	})
}

// ReduceScatterVInit returns a persistent Request for ReduceScatterV
// (MPI_Reduce_scatter_init).
func ReduceScatterVInit[T runtime.Elem](w *runtime.World, send, recv []T, counts []int, op Op[T]) *Request {
	return newPersistent(w, "reduce_scatter_v", func(ctx context.Context) error {
		return ReduceScatterV(ctx, w, send, recv, counts, op)
	})
}
