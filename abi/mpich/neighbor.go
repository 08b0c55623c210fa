//go:build cgo

package mpich

import (
	"context"
	"fmt"
	"unsafe"

	"github.com/gorma-hpc/gorma/topo"
)

// The neighbourhood collectives run topo's over a topology communicator's Cart, Graph
// or DistGraph, on bytes: each datatype must be contiguous (its size is its extent).

// An nbRequest is a neighbourhood collective's request: nonblocking (MPI_Ineighbor_*)
// or persistent (MPI_Neighbor_*_init), which MPI_Start starts with nb.Start. With nb
// nil it is the request of a call that finished when it was made (MPI_Comm_idup).
type nbRequest struct {
	nb         *topo.Request
	persistent bool
}

// wait waits for r's call to finish, or for ctx to end.
func (r *nbRequest) wait(ctx context.Context) error {
	if r.nb == nil {
		return nil
	}
	return r.nb.Wait(ctx)
}

// test reports whether r's call has finished.
func (r *nbRequest) test() (bool, error) {
	if r.nb == nil {
		return true, nil
	}
	return r.nb.Test()
}

// free is MPI_Request_free: a nonblocking call finishes on its own; a persistent one
// must not be active.
func (r *nbRequest) free() error {
	if r.nb == nil || !r.persistent {
		return nil
	}
	if err := r.nb.Free(); err != nil {
		return mpiErr(mpi_ERR_REQUEST, "a persistent neighbourhood request cannot be freed while active: wait for it first")
	}
	return nil
}

// How a neighbourhood collective is made: blocking, nonblocking or persistent.
type nbMode int

const (
	nbBlocking nbMode = iota
	nbNonblocking
	nbPersistent
)

// A neighborhood is a communicator's topology as a neighbourhood collective uses it.
type neighborhood struct {
	t       topo.Topology
	in, out int // the number of receive and send slots
}

// hoodOf returns c's neighbourhood.
func hoodOf(c Comm) (neighborhood, error) {
	t, err := topoOf(c, 0)
	if err != nil {
		return neighborhood{}, err
	}
	h := neighborhood{t: t.of()}
	switch {
	case t.cart != nil:
		h.in, h.out = 2*t.cart.NDims(), 2*t.cart.NDims()
	case t.graph != nil:
		h.in, _ = t.graph.NeighborsCount(t.graph.World().Rank())
		h.out = h.in
	default:
		h.in, h.out = t.dist.NeighborsCount()
	}
	return h, nil
}

// nbType returns datatype d, which must be contiguous.
func nbType(d Datatype) (*dtype, error) {
	t, err := typeOf(d)
	if err != nil {
		return nil, err
	}
	if !t.contig {
		return nil, mpiErr(mpi_ERR_TYPE, fmt.Sprintf("datatype %#x is not contiguous: gorma's neighbourhood collectives take contiguous datatypes (send a derived layout with MPI_Pack or point-to-point calls)", uint32(d)))
	}
	return t, nil
}

// nbBytes is the C buffer p of n bytes.
func nbBytes(p unsafe.Pointer, n int) ([]byte, error) {
	switch {
	case inPlace(p):
		return nil, mpiErr(mpi_ERR_BUFFER, "MPI_IN_PLACE is not allowed in a neighbourhood collective")
	case n < 0:
		return nil, errCount(n)
	case n == 0:
		return []byte{}, nil
	case p == nil:
		return nil, mpiErr(mpi_ERR_BUFFER, fmt.Sprintf("buffer is NULL for %d bytes", n))
	}
	return unsafe.Slice((*byte)(p), n), nil
}

// nbBlock is a buffer of count copies of datatype d at p.
func nbBlock(p unsafe.Pointer, count int, d Datatype) ([]byte, int, error) {
	t, err := nbType(d)
	if err != nil {
		return nil, 0, err
	}
	n, err := byteCount(count, t.size)
	if err != nil {
		return nil, 0, err
	}
	b, err := nbBytes(p, n)
	return b, t.size, err
}

// nbBlockN is a buffer of n blocks of count copies of datatype d at p.
func nbBlockN(p unsafe.Pointer, count, n int, d Datatype) ([]byte, int, error) {
	total, err := byteCount(count, n)
	if err != nil {
		return nil, 0, err
	}
	return nbBlock(p, total, d)
}

// nbBlocks returns the buffer p that holds n blocks, with counts and displacements in
// elements of size bytes, and the counts and displacements in bytes.
func nbBlocks[T int32 | int64](p unsafe.Pointer, n int, counts, displs *T, size int) ([]byte, []int, []int, error) {
	cs, err := argInts(counts, n, "counts")
	if err != nil {
		return nil, nil, nil, err
	}
	ds, err := argInts(displs, n, "displacements")
	if err != nil {
		return nil, nil, nil, err
	}
	end := 0
	for k := range cs {
		if cs[k] < 0 || ds[k] < 0 {
			return nil, nil, nil, mpiErr(mpi_ERR_ARG, fmt.Sprintf("block %d has count %d and displacement %d: neither may be negative", k, cs[k], ds[k]))
		}
		if cs[k], err = byteCount(cs[k], size); err != nil {
			return nil, nil, nil, err
		}
		if ds[k], err = byteCount(ds[k], size); err != nil {
			return nil, nil, nil, err
		}
		end = max(end, ds[k]+cs[k])
	}
	b, err := nbBytes(p, end)
	return b, cs, ds, err
}

// nbWBlocks returns the buffer p of MPI_Neighbor_alltoallw's n blocks, and the blocks.
func nbWBlocks[T int32 | int64](p unsafe.Pointer, n int, counts *T, displs *int64, types *Datatype) ([]byte, topo.ByteBlocks, error) {
	var bl topo.ByteBlocks
	cs, err := argInts(counts, n, "counts")
	if err != nil {
		return nil, bl, err
	}
	if n > 0 && (displs == nil || types == nil) {
		return nil, bl, mpiErr(mpi_ERR_ARG, fmt.Sprintf("the displacements or datatypes are NULL for %d blocks", n))
	}
	bl = topo.ByteBlocks{Counts: cs, Displs: ints(displs, n), Sizes: make([]int, n)}
	end := 0
	for k := range n {
		t, err := nbType(unsafe.Slice(types, n)[k])
		if err != nil {
			return nil, bl, err
		}
		if cs[k] < 0 || bl.Displs[k] < 0 {
			return nil, bl, mpiErr(mpi_ERR_ARG, fmt.Sprintf("block %d has count %d and displacement %d: neither may be negative", k, cs[k], bl.Displs[k]))
		}
		bl.Sizes[k] = t.size
		if t.size == 0 {
			bl.Counts[k], bl.Sizes[k] = 0, 1
		}
		n, err := byteCount(bl.Counts[k], bl.Sizes[k])
		if err != nil {
			return nil, bl, err
		}
		end = max(end, bl.Displs[k]+n)
	}
	b, err := nbBytes(p, end)
	return b, bl, err
}

// nbLaunch runs a neighbourhood collective: blocking (run), or by its nonblocking or
// persistent request (start), which *req gets.
func nbLaunch(mode nbMode, req *Request, run func() error, start func(persistent bool) (*topo.Request, error)) error {
	if mode == nbBlocking {
		return run()
	}
	r, err := start(mode == nbPersistent)
	if err != nil {
		return err
	}
	if mode == nbPersistent {
		addPersistent(&request{topo: &nbRequest{nb: r, persistent: true}}, req)
		return nil
	}
	*req = Request(reqs.add(&request{topo: &nbRequest{nb: r}}))
	return nil
}

func neighborAllgather(mode nbMode, sbuf unsafe.Pointer, scount int, sd Datatype, rbuf unsafe.Pointer, rcount int, rd Datatype, c Comm, req *Request) error {
	h, err := hoodOf(c)
	if err != nil {
		return err
	}
	s, _, err := nbBlock(sbuf, scount, sd)
	if err != nil {
		return err
	}
	r, _, err := nbBlockN(rbuf, rcount, h.in, rd)
	if err != nil {
		return err
	}
	return nbLaunch(mode, req, func() error { return topo.NeighborAllgather(bg, h.t, s, r) },
		func(p bool) (*topo.Request, error) {
			if p {
				return topo.NeighborAllgatherInit(h.t, s, r)
			}
			return topo.IneighborAllgather(h.t, s, r)
		})
}

func neighborAllgatherv[T int32 | int64](mode nbMode, sbuf unsafe.Pointer, scount int, sd Datatype, rbuf unsafe.Pointer, rcounts, displs *T, rd Datatype, c Comm, req *Request) error {
	h, err := hoodOf(c)
	if err != nil {
		return err
	}
	s, _, err := nbBlock(sbuf, scount, sd)
	if err != nil {
		return err
	}
	rt, err := nbType(rd)
	if err != nil {
		return err
	}
	r, cs, ds, err := nbBlocks(rbuf, h.in, rcounts, displs, rt.size)
	if err != nil {
		return err
	}
	return nbLaunch(mode, req, func() error { return topo.NeighborAllgatherv(bg, h.t, s, r, cs, ds) },
		func(p bool) (*topo.Request, error) {
			if p {
				return topo.NeighborAllgathervInit(h.t, s, r, cs, ds)
			}
			return topo.IneighborAllgatherv(h.t, s, r, cs, ds)
		})
}

func neighborAlltoall(mode nbMode, sbuf unsafe.Pointer, scount int, sd Datatype, rbuf unsafe.Pointer, rcount int, rd Datatype, c Comm, req *Request) error {
	h, err := hoodOf(c)
	if err != nil {
		return err
	}
	s, _, err := nbBlockN(sbuf, scount, h.out, sd)
	if err != nil {
		return err
	}
	r, _, err := nbBlockN(rbuf, rcount, h.in, rd)
	if err != nil {
		return err
	}
	return nbLaunch(mode, req, func() error { return topo.NeighborAlltoall(bg, h.t, s, r) },
		func(p bool) (*topo.Request, error) {
			if p {
				return topo.NeighborAlltoallInit(h.t, s, r)
			}
			return topo.IneighborAlltoall(h.t, s, r)
		})
}

func neighborAlltoallv[T int32 | int64](mode nbMode, sbuf unsafe.Pointer, scounts, sdispls *T, sd Datatype, rbuf unsafe.Pointer, rcounts, rdispls *T, rd Datatype, c Comm, req *Request) error {
	h, err := hoodOf(c)
	if err != nil {
		return err
	}
	st, err := nbType(sd)
	if err != nil {
		return err
	}
	rt, err := nbType(rd)
	if err != nil {
		return err
	}
	s, sc, sds, err := nbBlocks(sbuf, h.out, scounts, sdispls, st.size)
	if err != nil {
		return err
	}
	r, rc, rds, err := nbBlocks(rbuf, h.in, rcounts, rdispls, rt.size)
	if err != nil {
		return err
	}
	return nbLaunch(mode, req, func() error { return topo.NeighborAlltoallv(bg, h.t, s, sc, sds, r, rc, rds) },
		func(p bool) (*topo.Request, error) {
			if p {
				return topo.NeighborAlltoallvInit(h.t, s, sc, sds, r, rc, rds)
			}
			return topo.IneighborAlltoallv(h.t, s, sc, sds, r, rc, rds)
		})
}

func neighborAlltoallw[T int32 | int64](mode nbMode, sbuf unsafe.Pointer, scounts *T, sdispls *int64, sts *Datatype, rbuf unsafe.Pointer, rcounts *T, rdispls *int64, rts *Datatype, c Comm, req *Request) error {
	h, err := hoodOf(c)
	if err != nil {
		return err
	}
	s, sb, err := nbWBlocks(sbuf, h.out, scounts, sdispls, sts)
	if err != nil {
		return err
	}
	r, rb, err := nbWBlocks(rbuf, h.in, rcounts, rdispls, rts)
	if err != nil {
		return err
	}
	return nbLaunch(mode, req, func() error { return topo.NeighborAlltoallw(bg, h.t, s, sb, r, rb) },
		func(p bool) (*topo.Request, error) {
			if p {
				return topo.NeighborAlltoallwInit(h.t, s, sb, r, rb)
			}
			return topo.IneighborAlltoallw(h.t, s, sb, r, rb)
		})
}

// doNeighborAllgather is MPI_Neighbor_allgather.
func doNeighborAllgather(sbuf unsafe.Pointer, scount int, sd Datatype, rbuf unsafe.Pointer, rcount int, rd Datatype, c Comm) error {
	return neighborAllgather(nbBlocking, sbuf, scount, sd, rbuf, rcount, rd, c, nil)
}

// doIneighborAllgather is MPI_Ineighbor_allgather.
func doIneighborAllgather(sbuf unsafe.Pointer, scount int, sd Datatype, rbuf unsafe.Pointer, rcount int, rd Datatype, c Comm, req *Request) error {
	return neighborAllgather(nbNonblocking, sbuf, scount, sd, rbuf, rcount, rd, c, req)
}

// doNeighborAllgatherInit is MPI_Neighbor_allgather_init; info's hints are not used.
func doNeighborAllgatherInit(sbuf unsafe.Pointer, scount int, sd Datatype, rbuf unsafe.Pointer, rcount int, rd Datatype, c Comm, info Info, req *Request) error {
	return neighborAllgather(nbPersistent, sbuf, scount, sd, rbuf, rcount, rd, c, req)
}

// doNeighborAllgatherv is MPI_Neighbor_allgatherv.
func doNeighborAllgatherv(sbuf unsafe.Pointer, scount int, sd Datatype, rbuf unsafe.Pointer, rcounts, displs *int32, rd Datatype, c Comm) error {
	return neighborAllgatherv(nbBlocking, sbuf, scount, sd, rbuf, rcounts, displs, rd, c, nil)
}

// doIneighborAllgatherv is MPI_Ineighbor_allgatherv.
func doIneighborAllgatherv(sbuf unsafe.Pointer, scount int, sd Datatype, rbuf unsafe.Pointer, rcounts, displs *int32, rd Datatype, c Comm, req *Request) error {
	return neighborAllgatherv(nbNonblocking, sbuf, scount, sd, rbuf, rcounts, displs, rd, c, req)
}

// doNeighborAllgathervInit is MPI_Neighbor_allgatherv_init; info's hints are not used.
func doNeighborAllgathervInit(sbuf unsafe.Pointer, scount int, sd Datatype, rbuf unsafe.Pointer, rcounts, displs *int32, rd Datatype, c Comm, info Info, req *Request) error {
	return neighborAllgatherv(nbPersistent, sbuf, scount, sd, rbuf, rcounts, displs, rd, c, req)
}

// doNeighborAlltoall is MPI_Neighbor_alltoall.
func doNeighborAlltoall(sbuf unsafe.Pointer, scount int, sd Datatype, rbuf unsafe.Pointer, rcount int, rd Datatype, c Comm) error {
	return neighborAlltoall(nbBlocking, sbuf, scount, sd, rbuf, rcount, rd, c, nil)
}

// doIneighborAlltoall is MPI_Ineighbor_alltoall.
func doIneighborAlltoall(sbuf unsafe.Pointer, scount int, sd Datatype, rbuf unsafe.Pointer, rcount int, rd Datatype, c Comm, req *Request) error {
	return neighborAlltoall(nbNonblocking, sbuf, scount, sd, rbuf, rcount, rd, c, req)
}

// doNeighborAlltoallInit is MPI_Neighbor_alltoall_init; info's hints are not used.
func doNeighborAlltoallInit(sbuf unsafe.Pointer, scount int, sd Datatype, rbuf unsafe.Pointer, rcount int, rd Datatype, c Comm, info Info, req *Request) error {
	return neighborAlltoall(nbPersistent, sbuf, scount, sd, rbuf, rcount, rd, c, req)
}

// doNeighborAlltoallv is MPI_Neighbor_alltoallv.
func doNeighborAlltoallv(sbuf unsafe.Pointer, scounts, sdispls *int32, sd Datatype, rbuf unsafe.Pointer, rcounts, rdispls *int32, rd Datatype, c Comm) error {
	return neighborAlltoallv(nbBlocking, sbuf, scounts, sdispls, sd, rbuf, rcounts, rdispls, rd, c, nil)
}

// doIneighborAlltoallv is MPI_Ineighbor_alltoallv.
func doIneighborAlltoallv(sbuf unsafe.Pointer, scounts, sdispls *int32, sd Datatype, rbuf unsafe.Pointer, rcounts, rdispls *int32, rd Datatype, c Comm, req *Request) error {
	return neighborAlltoallv(nbNonblocking, sbuf, scounts, sdispls, sd, rbuf, rcounts, rdispls, rd, c, req)
}

// doNeighborAlltoallvInit is MPI_Neighbor_alltoallv_init; info's hints are not used.
func doNeighborAlltoallvInit(sbuf unsafe.Pointer, scounts, sdispls *int32, sd Datatype, rbuf unsafe.Pointer, rcounts, rdispls *int32, rd Datatype, c Comm, info Info, req *Request) error {
	return neighborAlltoallv(nbPersistent, sbuf, scounts, sdispls, sd, rbuf, rcounts, rdispls, rd, c, req)
}

// doNeighborAlltoallw is MPI_Neighbor_alltoallw.
func doNeighborAlltoallw(sbuf unsafe.Pointer, scounts *int32, sdispls *int64, sts *Datatype, rbuf unsafe.Pointer, rcounts *int32, rdispls *int64, rts *Datatype, c Comm) error {
	return neighborAlltoallw(nbBlocking, sbuf, scounts, sdispls, sts, rbuf, rcounts, rdispls, rts, c, nil)
}

// doIneighborAlltoallw is MPI_Ineighbor_alltoallw.
func doIneighborAlltoallw(sbuf unsafe.Pointer, scounts *int32, sdispls *int64, sts *Datatype, rbuf unsafe.Pointer, rcounts *int32, rdispls *int64, rts *Datatype, c Comm, req *Request) error {
	return neighborAlltoallw(nbNonblocking, sbuf, scounts, sdispls, sts, rbuf, rcounts, rdispls, rts, c, req)
}

// doNeighborAlltoallwInit is MPI_Neighbor_alltoallw_init; info's hints are not used.
func doNeighborAlltoallwInit(sbuf unsafe.Pointer, scounts *int32, sdispls *int64, sts *Datatype, rbuf unsafe.Pointer, rcounts *int32, rdispls *int64, rts *Datatype, c Comm, info Info, req *Request) error {
	return neighborAlltoallw(nbPersistent, sbuf, scounts, sdispls, sts, rbuf, rcounts, rdispls, rts, c, req)
}
