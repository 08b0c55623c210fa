//go:build cgo

package mpich

import (
	"fmt"
	"math"
	"unsafe"
)

// The large-count neighbourhood collectives take MPI_Count counts and arrays of
// MPI_Count and MPI_Aint, one entry per neighbour; they share the int forms' code.

// byteCount is count elements of size bytes each, in bytes. A negative count, or one
// whose bytes overflow an int, fails with MPI_ERR_COUNT.
func byteCount(count, size int) (int, error) {
	if count < 0 {
		return 0, errCount(count)
	}
	if size > 0 && count > math.MaxInt/size {
		return 0, mpiErr(mpi_ERR_COUNT, fmt.Sprintf("count %d of %d-byte elements overflows the address space", count, size))
	}
	return count * size, nil
}

// doNeighborAllgatherC is MPI_Neighbor_allgather_c.
func doNeighborAllgatherC(sbuf unsafe.Pointer, scount int, sd Datatype, rbuf unsafe.Pointer, rcount int, rd Datatype, c Comm) error {
	return neighborAllgather(nbBlocking, sbuf, scount, sd, rbuf, rcount, rd, c, nil)
}

// doIneighborAllgatherC is MPI_Ineighbor_allgather_c.
func doIneighborAllgatherC(sbuf unsafe.Pointer, scount int, sd Datatype, rbuf unsafe.Pointer, rcount int, rd Datatype, c Comm, req *Request) error {
	return neighborAllgather(nbNonblocking, sbuf, scount, sd, rbuf, rcount, rd, c, req)
}

// doNeighborAllgatherInitC is MPI_Neighbor_allgather_init_c; info's hints are not used.
func doNeighborAllgatherInitC(sbuf unsafe.Pointer, scount int, sd Datatype, rbuf unsafe.Pointer, rcount int, rd Datatype, c Comm, info Info, req *Request) error {
	return neighborAllgather(nbPersistent, sbuf, scount, sd, rbuf, rcount, rd, c, req)
}

// doNeighborAllgathervC is MPI_Neighbor_allgatherv_c.
func doNeighborAllgathervC(sbuf unsafe.Pointer, scount int, sd Datatype, rbuf unsafe.Pointer, rcounts, displs *int64, rd Datatype, c Comm) error {
	return neighborAllgatherv(nbBlocking, sbuf, scount, sd, rbuf, rcounts, displs, rd, c, nil)
}

// doIneighborAllgathervC is MPI_Ineighbor_allgatherv_c.
func doIneighborAllgathervC(sbuf unsafe.Pointer, scount int, sd Datatype, rbuf unsafe.Pointer, rcounts, displs *int64, rd Datatype, c Comm, req *Request) error {
	return neighborAllgatherv(nbNonblocking, sbuf, scount, sd, rbuf, rcounts, displs, rd, c, req)
}

// doNeighborAllgathervInitC is MPI_Neighbor_allgatherv_init_c; info's hints are not used.
func doNeighborAllgathervInitC(sbuf unsafe.Pointer, scount int, sd Datatype, rbuf unsafe.Pointer, rcounts, displs *int64, rd Datatype, c Comm, info Info, req *Request) error {
	return neighborAllgatherv(nbPersistent, sbuf, scount, sd, rbuf, rcounts, displs, rd, c, req)
}

// doNeighborAlltoallC is MPI_Neighbor_alltoall_c.
func doNeighborAlltoallC(sbuf unsafe.Pointer, scount int, sd Datatype, rbuf unsafe.Pointer, rcount int, rd Datatype, c Comm) error {
	return neighborAlltoall(nbBlocking, sbuf, scount, sd, rbuf, rcount, rd, c, nil)
}

// doIneighborAlltoallC is MPI_Ineighbor_alltoall_c.
func doIneighborAlltoallC(sbuf unsafe.Pointer, scount int, sd Datatype, rbuf unsafe.Pointer, rcount int, rd Datatype, c Comm, req *Request) error {
	return neighborAlltoall(nbNonblocking, sbuf, scount, sd, rbuf, rcount, rd, c, req)
}

// doNeighborAlltoallInitC is MPI_Neighbor_alltoall_init_c; info's hints are not used.
func doNeighborAlltoallInitC(sbuf unsafe.Pointer, scount int, sd Datatype, rbuf unsafe.Pointer, rcount int, rd Datatype, c Comm, info Info, req *Request) error {
	return neighborAlltoall(nbPersistent, sbuf, scount, sd, rbuf, rcount, rd, c, req)
}

// doNeighborAlltoallvC is MPI_Neighbor_alltoallv_c.
func doNeighborAlltoallvC(sbuf unsafe.Pointer, scounts, sdispls *int64, sd Datatype, rbuf unsafe.Pointer, rcounts, rdispls *int64, rd Datatype, c Comm) error {
	return neighborAlltoallv(nbBlocking, sbuf, scounts, sdispls, sd, rbuf, rcounts, rdispls, rd, c, nil)
}

// doIneighborAlltoallvC is MPI_Ineighbor_alltoallv_c.
func doIneighborAlltoallvC(sbuf unsafe.Pointer, scounts, sdispls *int64, sd Datatype, rbuf unsafe.Pointer, rcounts, rdispls *int64, rd Datatype, c Comm, req *Request) error {
	return neighborAlltoallv(nbNonblocking, sbuf, scounts, sdispls, sd, rbuf, rcounts, rdispls, rd, c, req)
}

// doNeighborAlltoallvInitC is MPI_Neighbor_alltoallv_init_c; info's hints are not used.
func doNeighborAlltoallvInitC(sbuf unsafe.Pointer, scounts, sdispls *int64, sd Datatype, rbuf unsafe.Pointer, rcounts, rdispls *int64, rd Datatype, c Comm, info Info, req *Request) error {
	return neighborAlltoallv(nbPersistent, sbuf, scounts, sdispls, sd, rbuf, rcounts, rdispls, rd, c, req)
}

// doNeighborAlltoallwC is MPI_Neighbor_alltoallw_c.
func doNeighborAlltoallwC(sbuf unsafe.Pointer, scounts, sdispls *int64, sts *Datatype, rbuf unsafe.Pointer, rcounts, rdispls *int64, rts *Datatype, c Comm) error {
	return neighborAlltoallw(nbBlocking, sbuf, scounts, sdispls, sts, rbuf, rcounts, rdispls, rts, c, nil)
}

// doIneighborAlltoallwC is MPI_Ineighbor_alltoallw_c.
func doIneighborAlltoallwC(sbuf unsafe.Pointer, scounts, sdispls *int64, sts *Datatype, rbuf unsafe.Pointer, rcounts, rdispls *int64, rts *Datatype, c Comm, req *Request) error {
	return neighborAlltoallw(nbNonblocking, sbuf, scounts, sdispls, sts, rbuf, rcounts, rdispls, rts, c, req)
}

// doNeighborAlltoallwInitC is MPI_Neighbor_alltoallw_init_c; info's hints are not used.
func doNeighborAlltoallwInitC(sbuf unsafe.Pointer, scounts, sdispls *int64, sts *Datatype, rbuf unsafe.Pointer, rcounts, rdispls *int64, rts *Datatype, c Comm, info Info, req *Request) error {
	return neighborAlltoallw(nbPersistent, sbuf, scounts, sdispls, sts, rbuf, rcounts, rdispls, rts, c, req)
}
