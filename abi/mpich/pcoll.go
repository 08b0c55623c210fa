//go:build cgo

package mpich

import (
	"unsafe"

	"github.com/gorma-hpc/gorma/collectives"
	"github.com/gorma-hpc/gorma/runtime"
)

// The persistent collectives of MPI-4 (MPI_Barrier_init and the other _init calls).
// Each checks its arguments as its blocking form does and returns an inactive request:
// MPI_Start starts it, MPI_Wait and MPI_Test complete each start, and MPI_Request_free
// releases it. Arguments are read once, here: the buffers' contents at each start.

// checkInfo checks a call's MPI_Info; its hints are not read.
func checkInfo(info Info) error {
	if info == mpi_INFO_NULL {
		return nil
	}
	if _, ok := infos.get(int32(info)); !ok {
		return errHandle("info", int32(info))
	}
	return nil
}

// initReduce makes a persistent reduction of elements of type T.
func initReduce[T runtime.Elem](a reduction, s, r []T, op collectives.Op[T]) (*collectives.Request, error) {
	switch a.mode {
	case modeAllreduce:
		return collectives.AllreduceInit(a.w, s, r, op), nil
	case modeReduce:
		return collectives.ReduceInit(a.w, s, r, op, a.root), nil
	case modeScan:
		return collectives.ScanInit(a.w, s, r, op), nil
	case modeExscan:
		return collectives.ExscanInit(a.w, s, r, op), nil
	case modeReduceScatter:
		return collectives.ReduceScatterVInit(a.w, s, r, a.counts, op), nil
	case modeReduceScatterBlock:
		return collectives.ReduceScatterInit(a.w, s, r, op), nil
	}
	return nil, a.errMode()
}

// doBarrierInit is MPI_Barrier_init.
func doBarrierInit(c Comm, info Info, req *Request) error {
	if err := checkInfo(info); err != nil {
		return err
	}
	return newReq(req, persistent)(barrierReq(persistent, c))
}

// doBcastInit is MPI_Bcast_init.
func doBcastInit(buf unsafe.Pointer, count int, d Datatype, root int, c Comm, info Info, req *Request) error {
	if err := checkInfo(info); err != nil {
		return err
	}
	return newReq(req, persistent)(bcastReq(persistent, buf, count, d, root, c))
}

// doBcastInitC is MPI_Bcast_init_c.
func doBcastInitC(buf unsafe.Pointer, count int, d Datatype, root int, c Comm, info Info, req *Request) error {
	return doBcastInit(buf, count, d, root, c, info, req)
}

// doGatherInit is MPI_Gather_init.
func doGatherInit(sbuf unsafe.Pointer, scount int, sd Datatype, rbuf unsafe.Pointer, rcount int, rd Datatype, root int, c Comm, info Info, req *Request) error {
	if err := checkInfo(info); err != nil {
		return err
	}
	return newReq(req, persistent)(gatherReq(persistent, sbuf, scount, sd, rbuf, rcount, rd, root, c))
}

// doGatherInitC is MPI_Gather_init_c.
func doGatherInitC(sbuf unsafe.Pointer, scount int, sd Datatype, rbuf unsafe.Pointer, rcount int, rd Datatype, root int, c Comm, info Info, req *Request) error {
	return doGatherInit(sbuf, scount, sd, rbuf, rcount, rd, root, c, info, req)
}

// doGathervInit is MPI_Gatherv_init.
func doGathervInit(sbuf unsafe.Pointer, scount int, sd Datatype, rbuf unsafe.Pointer, rcounts, displs *int32, rd Datatype, root int, c Comm, info Info, req *Request) error {
	if err := checkInfo(info); err != nil {
		return err
	}
	return newReq(req, persistent)(gatherv(persistent, sbuf, scount, sd, rbuf, rcounts, displs, rd, root, c))
}

// doGathervInitC is MPI_Gatherv_init_c.
func doGathervInitC(sbuf unsafe.Pointer, scount int, sd Datatype, rbuf unsafe.Pointer, rcounts, displs *int64, rd Datatype, root int, c Comm, info Info, req *Request) error {
	if err := checkInfo(info); err != nil {
		return err
	}
	return newReq(req, persistent)(gatherv(persistent, sbuf, scount, sd, rbuf, rcounts, displs, rd, root, c))
}

// doScatterInit is MPI_Scatter_init.
func doScatterInit(sbuf unsafe.Pointer, scount int, sd Datatype, rbuf unsafe.Pointer, rcount int, rd Datatype, root int, c Comm, info Info, req *Request) error {
	if err := checkInfo(info); err != nil {
		return err
	}
	return newReq(req, persistent)(scatterReq(persistent, sbuf, scount, sd, rbuf, rcount, rd, root, c))
}

// doScatterInitC is MPI_Scatter_init_c.
func doScatterInitC(sbuf unsafe.Pointer, scount int, sd Datatype, rbuf unsafe.Pointer, rcount int, rd Datatype, root int, c Comm, info Info, req *Request) error {
	return doScatterInit(sbuf, scount, sd, rbuf, rcount, rd, root, c, info, req)
}

// doScattervInit is MPI_Scatterv_init.
func doScattervInit(sbuf unsafe.Pointer, scounts, displs *int32, sd Datatype, rbuf unsafe.Pointer, rcount int, rd Datatype, root int, c Comm, info Info, req *Request) error {
	if err := checkInfo(info); err != nil {
		return err
	}
	return newReq(req, persistent)(scatterv(persistent, sbuf, scounts, displs, sd, rbuf, rcount, rd, root, c))
}

// doScattervInitC is MPI_Scatterv_init_c.
func doScattervInitC(sbuf unsafe.Pointer, scounts, displs *int64, sd Datatype, rbuf unsafe.Pointer, rcount int, rd Datatype, root int, c Comm, info Info, req *Request) error {
	if err := checkInfo(info); err != nil {
		return err
	}
	return newReq(req, persistent)(scatterv(persistent, sbuf, scounts, displs, sd, rbuf, rcount, rd, root, c))
}

// doAllgatherInit is MPI_Allgather_init.
func doAllgatherInit(sbuf unsafe.Pointer, scount int, sd Datatype, rbuf unsafe.Pointer, rcount int, rd Datatype, c Comm, info Info, req *Request) error {
	if err := checkInfo(info); err != nil {
		return err
	}
	return newReq(req, persistent)(allgatherReq(persistent, sbuf, scount, sd, rbuf, rcount, rd, c))
}

// doAllgatherInitC is MPI_Allgather_init_c.
func doAllgatherInitC(sbuf unsafe.Pointer, scount int, sd Datatype, rbuf unsafe.Pointer, rcount int, rd Datatype, c Comm, info Info, req *Request) error {
	return doAllgatherInit(sbuf, scount, sd, rbuf, rcount, rd, c, info, req)
}

// doAllgathervInit is MPI_Allgatherv_init.
func doAllgathervInit(sbuf unsafe.Pointer, scount int, sd Datatype, rbuf unsafe.Pointer, rcounts, displs *int32, rd Datatype, c Comm, info Info, req *Request) error {
	if err := checkInfo(info); err != nil {
		return err
	}
	return newReq(req, persistent)(allgatherv(persistent, sbuf, scount, sd, rbuf, rcounts, displs, rd, c))
}

// doAllgathervInitC is MPI_Allgatherv_init_c.
func doAllgathervInitC(sbuf unsafe.Pointer, scount int, sd Datatype, rbuf unsafe.Pointer, rcounts, displs *int64, rd Datatype, c Comm, info Info, req *Request) error {
	if err := checkInfo(info); err != nil {
		return err
	}
	return newReq(req, persistent)(allgatherv(persistent, sbuf, scount, sd, rbuf, rcounts, displs, rd, c))
}

// doAlltoallInit is MPI_Alltoall_init.
func doAlltoallInit(sbuf unsafe.Pointer, scount int, sd Datatype, rbuf unsafe.Pointer, rcount int, rd Datatype, c Comm, info Info, req *Request) error {
	if err := checkInfo(info); err != nil {
		return err
	}
	return newReq(req, persistent)(alltoallReq(persistent, sbuf, scount, sd, rbuf, rcount, rd, c))
}

// doAlltoallInitC is MPI_Alltoall_init_c.
func doAlltoallInitC(sbuf unsafe.Pointer, scount int, sd Datatype, rbuf unsafe.Pointer, rcount int, rd Datatype, c Comm, info Info, req *Request) error {
	return doAlltoallInit(sbuf, scount, sd, rbuf, rcount, rd, c, info, req)
}

// doAlltoallvInit is MPI_Alltoallv_init.
func doAlltoallvInit(sbuf unsafe.Pointer, scounts, sdispls *int32, sd Datatype, rbuf unsafe.Pointer, rcounts, rdispls *int32, rd Datatype, c Comm, info Info, req *Request) error {
	if err := checkInfo(info); err != nil {
		return err
	}
	return newReq(req, persistent)(alltoallv(persistent, sbuf, scounts, sdispls, sd, rbuf, rcounts, rdispls, rd, c))
}

// doAlltoallvInitC is MPI_Alltoallv_init_c.
func doAlltoallvInitC(sbuf unsafe.Pointer, scounts, sdispls *int64, sd Datatype, rbuf unsafe.Pointer, rcounts, rdispls *int64, rd Datatype, c Comm, info Info, req *Request) error {
	if err := checkInfo(info); err != nil {
		return err
	}
	return newReq(req, persistent)(alltoallv(persistent, sbuf, scounts, sdispls, sd, rbuf, rcounts, rdispls, rd, c))
}

// doAlltoallwInit is MPI_Alltoallw_init.
func doAlltoallwInit(sbuf unsafe.Pointer, scounts, sdispls *int32, sts *Datatype, rbuf unsafe.Pointer, rcounts, rdispls *int32, rts *Datatype, c Comm, info Info, req *Request) error {
	if err := checkInfo(info); err != nil {
		return err
	}
	return newReq(req, persistent)(alltoallwCall(persistent, sbuf, scounts, sdispls, sts, rbuf, rcounts, rdispls, rts, c))
}

// doAlltoallwInitC is MPI_Alltoallw_init_c.
func doAlltoallwInitC(sbuf unsafe.Pointer, scounts, sdispls *int64, sts *Datatype, rbuf unsafe.Pointer, rcounts, rdispls *int64, rts *Datatype, c Comm, info Info, req *Request) error {
	if err := checkInfo(info); err != nil {
		return err
	}
	return newReq(req, persistent)(alltoallwCall(persistent, sbuf, scounts, sdispls, sts, rbuf, rcounts, rdispls, rts, c))
}

// doAllreduceInit is MPI_Allreduce_init.
func doAllreduceInit(sbuf, rbuf unsafe.Pointer, count int, d Datatype, op Op, c Comm, info Info, req *Request) error {
	if err := checkInfo(info); err != nil {
		return err
	}
	return newReq(req, persistent)(reduceReq(persistent, modeAllreduce, sbuf, rbuf, count, d, op, 0, c))
}

// doAllreduceInitC is MPI_Allreduce_init_c.
func doAllreduceInitC(sbuf, rbuf unsafe.Pointer, count int, d Datatype, op Op, c Comm, info Info, req *Request) error {
	return doAllreduceInit(sbuf, rbuf, count, d, op, c, info, req)
}

// doReduceInit is MPI_Reduce_init.
func doReduceInit(sbuf, rbuf unsafe.Pointer, count int, d Datatype, op Op, root int, c Comm, info Info, req *Request) error {
	if err := checkInfo(info); err != nil {
		return err
	}
	return newReq(req, persistent)(reduceReq(persistent, modeReduce, sbuf, rbuf, count, d, op, root, c))
}

// doReduceInitC is MPI_Reduce_init_c.
func doReduceInitC(sbuf, rbuf unsafe.Pointer, count int, d Datatype, op Op, root int, c Comm, info Info, req *Request) error {
	return doReduceInit(sbuf, rbuf, count, d, op, root, c, info, req)
}

// doReduceScatterInit is MPI_Reduce_scatter_init.
func doReduceScatterInit(sbuf, rbuf unsafe.Pointer, rcounts *int32, d Datatype, op Op, c Comm, info Info, req *Request) error {
	if err := checkInfo(info); err != nil {
		return err
	}
	return newReq(req, persistent)(reduceScatter(persistent, sbuf, rbuf, rcounts, d, op, c))
}

// doReduceScatterInitC is MPI_Reduce_scatter_init_c.
func doReduceScatterInitC(sbuf, rbuf unsafe.Pointer, rcounts *int64, d Datatype, op Op, c Comm, info Info, req *Request) error {
	if err := checkInfo(info); err != nil {
		return err
	}
	return newReq(req, persistent)(reduceScatter(persistent, sbuf, rbuf, rcounts, d, op, c))
}

// doReduceScatterBlockInit is MPI_Reduce_scatter_block_init.
func doReduceScatterBlockInit(sbuf, rbuf unsafe.Pointer, rcount int, d Datatype, op Op, c Comm, info Info, req *Request) error {
	if err := checkInfo(info); err != nil {
		return err
	}
	return newReq(req, persistent)(reduceScatterBlock(persistent, sbuf, rbuf, rcount, d, op, c))
}

// doReduceScatterBlockInitC is MPI_Reduce_scatter_block_init_c.
func doReduceScatterBlockInitC(sbuf, rbuf unsafe.Pointer, rcount int, d Datatype, op Op, c Comm, info Info, req *Request) error {
	return doReduceScatterBlockInit(sbuf, rbuf, rcount, d, op, c, info, req)
}

// doScanInit is MPI_Scan_init.
func doScanInit(sbuf, rbuf unsafe.Pointer, count int, d Datatype, op Op, c Comm, info Info, req *Request) error {
	if err := checkInfo(info); err != nil {
		return err
	}
	return newReq(req, persistent)(reduceReq(persistent, modeScan, sbuf, rbuf, count, d, op, 0, c))
}

// doScanInitC is MPI_Scan_init_c.
func doScanInitC(sbuf, rbuf unsafe.Pointer, count int, d Datatype, op Op, c Comm, info Info, req *Request) error {
	return doScanInit(sbuf, rbuf, count, d, op, c, info, req)
}

// doExscanInit is MPI_Exscan_init.
func doExscanInit(sbuf, rbuf unsafe.Pointer, count int, d Datatype, op Op, c Comm, info Info, req *Request) error {
	if err := checkInfo(info); err != nil {
		return err
	}
	return newReq(req, persistent)(reduceReq(persistent, modeExscan, sbuf, rbuf, count, d, op, 0, c))
}

// doExscanInitC is MPI_Exscan_init_c.
func doExscanInitC(sbuf, rbuf unsafe.Pointer, count int, d Datatype, op Op, c Comm, info Info, req *Request) error {
	return doExscanInit(sbuf, rbuf, count, d, op, c, info, req)
}
