package topo

import (
	"context"

	"github.com/gorma-hpc/gorma/runtime"
)

// NeighborAllgather sends send to every out-neighbour and receives each in-neighbour's
// block into recv, slot k's at recv[k*n:(k+1)*n] with n = len(send)
// (MPI_Neighbor_allgather): len(recv) must be the in-degree times n. Topology describes
// the slots, how blocks are matched, and the rules every neighbourhood collective follows.
func NeighborAllgather[T runtime.Elem](ctx context.Context, t Topology, send, recv []T) error {
	return run(ctx, t, "NeighborAllgather", typeName[T](), func() (*Request, error) { return IneighborAllgather(t, send, recv) })
}

// IneighborAllgather starts NeighborAllgather and returns its Request
// (MPI_Ineighbor_allgather).
func IneighborAllgather[T runtime.Elem](t Topology, send, recv []T) (*Request, error) {
	return launch(allgather("neighbor_allgather", t, send, recv, false))
}

// NeighborAllgatherInit returns the persistent Request of NeighborAllgather
// (MPI_Neighbor_allgather_init), inactive until Start.
func NeighborAllgatherInit[T runtime.Elem](t Topology, send, recv []T) (*Request, error) {
	return launch(allgather("neighbor_allgather_init", t, send, recv, true))
}

func allgather[T runtime.Elem](op string, t Topology, send, recv []T, persistent bool) (*Request, error) {
	r, err := newRequest(op, t, persistent)
	if err != nil {
		return nil, err
	}
	h, me, n := r.h, r.h.comm.Rank(), len(send)
	if len(recv) != len(h.in)*n {
		return nil, invalidf(op, "rank %d: len(recv) is %d, for %d in-neighbour slots of len(send) %d elements", me, len(recv), len(h.in), n)
	}
	if overlap(send, recv) {
		return nil, invalidf(op, "rank %d: send and recv overlap", me)
	}
	rb := make([][]T, len(h.in))
	for k := range rb {
		rb[k] = recv[k*n : (k+1)*n : (k+1)*n]
	}
	sb := make([][]T, len(h.out))
	for k := range sb {
		sb[k] = send
	}
	r.post = func(r *Request, base uint64) error { return postBlocks(r, base, rb, sb) }
	return r, nil
}

// NeighborAllgatherv is NeighborAllgather with a count per in-neighbour slot
// (MPI_Neighbor_allgatherv): slot k's block, counts[k] elements, lands at recv[displs[k]:],
// or with displs nil the blocks lie one after another and fill recv. The blocks must lie
// inside recv and not overlap; each in-neighbour sends len(send) elements, which must be
// this rank's count for it.
func NeighborAllgatherv[T runtime.Elem](ctx context.Context, t Topology, send, recv []T, counts, displs []int) error {
	return run(ctx, t, "NeighborAllgatherv", typeName[T](), func() (*Request, error) { return IneighborAllgatherv(t, send, recv, counts, displs) })
}

// IneighborAllgatherv starts NeighborAllgatherv and returns its Request
// (MPI_Ineighbor_allgatherv).
func IneighborAllgatherv[T runtime.Elem](t Topology, send, recv []T, counts, displs []int) (*Request, error) {
	return launch(allgatherv("neighbor_allgatherv", t, send, recv, counts, displs, false))
}

// NeighborAllgathervInit returns the persistent Request of NeighborAllgatherv
// (MPI_Neighbor_allgatherv_init), inactive until Start.
func NeighborAllgathervInit[T runtime.Elem](t Topology, send, recv []T, counts, displs []int) (*Request, error) {
	return launch(allgatherv("neighbor_allgatherv_init", t, send, recv, counts, displs, true))
}

func allgatherv[T runtime.Elem](op string, t Topology, send, recv []T, counts, displs []int, persistent bool) (*Request, error) {
	r, err := newRequest(op, t, persistent)
	if err != nil {
		return nil, err
	}
	h, me := r.h, r.h.comm.Rank()
	rb, err := blocksOf(op, "recv", me, recv, counts, displs, len(h.in), true)
	if err != nil {
		return nil, err
	}
	if overlap(send, recv) {
		return nil, invalidf(op, "rank %d: send and recv overlap", me)
	}
	sb := make([][]T, len(h.out))
	for k := range sb {
		sb[k] = send
	}
	r.post = func(r *Request, base uint64) error { return postBlocks(r, base, rb, sb) }
	return r, nil
}

// NeighborAlltoall sends block k of send to out-neighbour slot k and receives in-neighbour
// slot k's block into block k of recv (MPI_Neighbor_alltoall); every block has n
// elements, so len(send) is the out-degree times n and len(recv) the in-degree times n.
func NeighborAlltoall[T runtime.Elem](ctx context.Context, t Topology, send, recv []T) error {
	return run(ctx, t, "NeighborAlltoall", typeName[T](), func() (*Request, error) { return IneighborAlltoall(t, send, recv) })
}

// IneighborAlltoall starts NeighborAlltoall and returns its Request
// (MPI_Ineighbor_alltoall).
func IneighborAlltoall[T runtime.Elem](t Topology, send, recv []T) (*Request, error) {
	return launch(alltoall("neighbor_alltoall", t, send, recv, false))
}

// NeighborAlltoallInit returns the persistent Request of NeighborAlltoall
// (MPI_Neighbor_alltoall_init), inactive until Start.
func NeighborAlltoallInit[T runtime.Elem](t Topology, send, recv []T) (*Request, error) {
	return launch(alltoall("neighbor_alltoall_init", t, send, recv, true))
}

func alltoall[T runtime.Elem](op string, t Topology, send, recv []T, persistent bool) (*Request, error) {
	r, err := newRequest(op, t, persistent)
	if err != nil {
		return nil, err
	}
	h, me := r.h, r.h.comm.Rank()
	in, out, n := len(h.in), len(h.out), 0
	switch {
	case out > 0:
		n = len(send) / out
	case in > 0:
		n = len(recv) / in
	}
	if len(send) != out*n || len(recv) != in*n {
		return nil, invalidf(op, "rank %d: len(send) %d and len(recv) %d are not %d and %d blocks of one length", me, len(send), len(recv), out, in)
	}
	if overlap(send, recv) {
		return nil, invalidf(op, "rank %d: send and recv overlap", me)
	}
	rb, sb := make([][]T, in), make([][]T, out)
	for k := range rb {
		rb[k] = recv[k*n : (k+1)*n : (k+1)*n]
	}
	for k := range sb {
		sb[k] = send[k*n : (k+1)*n : (k+1)*n]
	}
	r.post = func(r *Request, base uint64) error { return postBlocks(r, base, rb, sb) }
	return r, nil
}

// NeighborAlltoallv is NeighborAlltoall with a count and a displacement per slot
// (MPI_Neighbor_alltoallv): out-neighbour slot k gets send[sendDispls[k]:][:sendCounts[k]]
// and in-neighbour slot k's block lands at recv[recvDispls[k]:][:recvCounts[k]]. With
// displacements nil the blocks lie one after another and fill their buffer. Blocks must
// lie inside their buffers, and recv's must not overlap (send's may). sendCounts[k] at a
// rank must equal the count its neighbour gives that rank's block.
func NeighborAlltoallv[T runtime.Elem](ctx context.Context, t Topology, send []T, sendCounts, sendDispls []int, recv []T, recvCounts, recvDispls []int) error {
	return run(ctx, t, "NeighborAlltoallv", typeName[T](), func() (*Request, error) {
		return IneighborAlltoallv(t, send, sendCounts, sendDispls, recv, recvCounts, recvDispls)
	})
}

// IneighborAlltoallv starts NeighborAlltoallv and returns its Request
// (MPI_Ineighbor_alltoallv).
func IneighborAlltoallv[T runtime.Elem](t Topology, send []T, sendCounts, sendDispls []int, recv []T, recvCounts, recvDispls []int) (*Request, error) {
	return launch(alltoallv("neighbor_alltoallv", t, send, sendCounts, sendDispls, recv, recvCounts, recvDispls, false))
}

// NeighborAlltoallvInit returns the persistent Request of NeighborAlltoallv
// (MPI_Neighbor_alltoallv_init), inactive until Start.
func NeighborAlltoallvInit[T runtime.Elem](t Topology, send []T, sendCounts, sendDispls []int, recv []T, recvCounts, recvDispls []int) (*Request, error) {
	return launch(alltoallv("neighbor_alltoallv_init", t, send, sendCounts, sendDispls, recv, recvCounts, recvDispls, true))
}

func alltoallv[T runtime.Elem](op string, t Topology, send []T, sc, sd []int, recv []T, rc, rd []int, persistent bool) (*Request, error) {
	r, err := newRequest(op, t, persistent)
	if err != nil {
		return nil, err
	}
	h, me := r.h, r.h.comm.Rank()
	sb, err := blocksOf(op, "send", me, send, sc, sd, len(h.out), false)
	if err != nil {
		return nil, err
	}
	rb, err := blocksOf(op, "recv", me, recv, rc, rd, len(h.in), true)
	if err != nil {
		return nil, err
	}
	if overlap(send, recv) {
		return nil, invalidf(op, "rank %d: send and recv overlap", me)
	}
	r.post = func(r *Request, base uint64) error { return postBlocks(r, base, rb, sb) }
	return r, nil
}

// NeighborAlltoallw is NeighborAlltoallv over bytes with a displacement and an element
// size per slot (MPI_Neighbor_alltoallw): sendBlocks places the block for each
// out-neighbour slot in send, recvBlocks each in-neighbour slot's block in recv (see
// ByteBlocks). A block's length in bytes must equal, at the neighbour, the length of the
// block it is matched with; the element sizes and counts may differ, as MPI's datatypes
// may. recv's blocks must not overlap, and send must not overlap recv.
func NeighborAlltoallw(ctx context.Context, t Topology, send []byte, sendBlocks ByteBlocks, recv []byte, recvBlocks ByteBlocks) error {
	return run(ctx, t, "NeighborAlltoallw", "", func() (*Request, error) { return IneighborAlltoallw(t, send, sendBlocks, recv, recvBlocks) })
}

// IneighborAlltoallw starts NeighborAlltoallw and returns its Request
// (MPI_Ineighbor_alltoallw).
func IneighborAlltoallw(t Topology, send []byte, sendBlocks ByteBlocks, recv []byte, recvBlocks ByteBlocks) (*Request, error) {
	return launch(alltoallw("neighbor_alltoallw", t, send, sendBlocks, recv, recvBlocks, false))
}

// NeighborAlltoallwInit returns the persistent Request of NeighborAlltoallw
// (MPI_Neighbor_alltoallw_init), inactive until Start.
func NeighborAlltoallwInit(t Topology, send []byte, sendBlocks ByteBlocks, recv []byte, recvBlocks ByteBlocks) (*Request, error) {
	return launch(alltoallw("neighbor_alltoallw_init", t, send, sendBlocks, recv, recvBlocks, true))
}

func alltoallw(op string, t Topology, send []byte, sbl ByteBlocks, recv []byte, rbl ByteBlocks, persistent bool) (*Request, error) {
	r, err := newRequest(op, t, persistent)
	if err != nil {
		return nil, err
	}
	h, me := r.h, r.h.comm.Rank()
	slen, err := sbl.lens(op, "send", me, len(h.out))
	if err != nil {
		return nil, err
	}
	rlen, err := rbl.lens(op, "recv", me, len(h.in))
	if err != nil {
		return nil, err
	}
	sb, err := blocksOf(op, "send", me, send, slen, sbl.Displs, len(h.out), false)
	if err != nil {
		return nil, err
	}
	rb, err := blocksOf(op, "recv", me, recv, rlen, rbl.Displs, len(h.in), true)
	if err != nil {
		return nil, err
	}
	if overlap(send, recv) {
		return nil, invalidf(op, "rank %d: send and recv overlap", me)
	}
	r.post = func(r *Request, base uint64) error { return postBlocks(r, base, rb, sb) }
	return r, nil
}

// launch starts the nonblocking Request r, or returns the persistent one inactive.
func launch(r *Request, err error) (*Request, error) {
	switch {
	case err != nil:
		return nil, err
	case r.persistent:
		return r, nil
	}
	return r.start()
}
