//go:build cgo

package mpich

import (
	"fmt"
	"math"
	"unsafe"
)

// The large-count one-sided calls (MPI_Put_c and the others) take MPI_Count counts and
// an MPI_Aint disp_unit. Counts reach the int forms unchanged: both are Go ints. A
// disp_unit must fit a C int, which MPI_WIN_DISP_UNIT and MPI_Win_shared_query report.

// checkUnit fails with MPI_ERR_COUNT for a disp_unit that no C int holds.
func checkUnit(unit int) error {
	if unit > math.MaxInt32 {
		return mpiErr(mpi_ERR_COUNT, fmt.Sprintf("disp_unit %d does not fit a C int: gorma's windows take a disp_unit up to %d", unit, math.MaxInt32))
	}
	return nil
}

// doPutC is MPI_Put_c.
func doPutC(org unsafe.Pointer, ocount int, od Datatype, rank, disp, tcount int, td Datatype, h Win) error {
	return doPut(org, ocount, od, rank, disp, tcount, td, h)
}

// doGetC is MPI_Get_c.
func doGetC(org unsafe.Pointer, ocount int, od Datatype, rank, disp, tcount int, td Datatype, h Win) error {
	return doGet(org, ocount, od, rank, disp, tcount, td, h)
}

// doAccumulateC is MPI_Accumulate_c.
func doAccumulateC(org unsafe.Pointer, ocount int, od Datatype, rank, disp, tcount int, td Datatype, op Op, h Win) error {
	return doAccumulate(org, ocount, od, rank, disp, tcount, td, op, h)
}

// doGetAccumulateC is MPI_Get_accumulate_c.
func doGetAccumulateC(org unsafe.Pointer, ocount int, od Datatype, res unsafe.Pointer, rcount int, rd Datatype,
	rank, disp, tcount int, td Datatype, op Op, h Win) error {
	return doGetAccumulate(org, ocount, od, res, rcount, rd, rank, disp, tcount, td, op, h)
}

// doRputC is MPI_Rput_c.
func doRputC(org unsafe.Pointer, ocount int, od Datatype, rank, disp, tcount int, td Datatype, h Win, req *Request) error {
	return doRput(org, ocount, od, rank, disp, tcount, td, h, req)
}

// doRgetC is MPI_Rget_c.
func doRgetC(org unsafe.Pointer, ocount int, od Datatype, rank, disp, tcount int, td Datatype, h Win, req *Request) error {
	return doRget(org, ocount, od, rank, disp, tcount, td, h, req)
}

// doRaccumulateC is MPI_Raccumulate_c.
func doRaccumulateC(org unsafe.Pointer, ocount int, od Datatype, rank, disp, tcount int, td Datatype, op Op, h Win, req *Request) error {
	return doRaccumulate(org, ocount, od, rank, disp, tcount, td, op, h, req)
}

// doRgetAccumulateC is MPI_Rget_accumulate_c.
func doRgetAccumulateC(org unsafe.Pointer, ocount int, od Datatype, res unsafe.Pointer, rcount int, rd Datatype,
	rank, disp, tcount int, td Datatype, op Op, h Win, req *Request) error {
	return doRgetAccumulate(org, ocount, od, res, rcount, rd, rank, disp, tcount, td, op, h, req)
}

// doWinAllocateC is MPI_Win_allocate_c.
func doWinAllocateC(size, unit int, info Info, c Comm, baseptr unsafe.Pointer, out *Win) error {
	if err := checkUnit(unit); err != nil {
		return err
	}
	return doWinAllocate(size, unit, info, c, baseptr, out)
}

// doWinAllocateSharedC is MPI_Win_allocate_shared_c.
func doWinAllocateSharedC(size, unit int, info Info, c Comm, baseptr unsafe.Pointer, out *Win) error {
	if err := checkUnit(unit); err != nil {
		return err
	}
	return doWinAllocateShared(size, unit, info, c, baseptr, out)
}

// doWinCreateC is MPI_Win_create_c.
func doWinCreateC(base unsafe.Pointer, size, unit int, info Info, c Comm, out *Win) error {
	if err := checkUnit(unit); err != nil {
		return err
	}
	return doWinCreate(base, size, unit, info, c, out)
}

// doWinSharedQueryC is MPI_Win_shared_query_c: disp_unit is an MPI_Aint.
func doWinSharedQueryC(h Win, rank int, size, unit *int64, baseptr unsafe.Pointer) error {
	var u int32
	if err := doWinSharedQuery(h, rank, size, &u, baseptr); err != nil {
		return err
	}
	*unit = int64(u)
	return nil
}
