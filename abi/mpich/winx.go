//go:build cgo

package mpich

// #include <stdlib.h>
import "C"

import (
	"errors"
	"fmt"
	"sync"
	"unsafe"

	"github.com/gorma-hpc/gorma/window"
)

// Windows: names, groups, hints, MPI_Win_test, shared-memory windows and
// MPI_Rget_accumulate. Dynamic windows are in windyn.go.

// winHints are the hints each window was given (MPI_Win_create's info and
// MPI_Win_set_info), which MPI_Win_get_info returns. The window package takes no hint.
// mu nests the lock of each info it holds.
var winHints struct {
	mu sync.Mutex
	m  map[Win]*info
}

// setWinHints adds the keys of info (MPI_INFO_NULL: none) to the hints of window h.
func setWinHints(h Win, i Info) error {
	if i == mpi_INFO_NULL {
		return nil
	}
	in, err := infoOf(i)
	if err != nil {
		return err
	}
	src := in.dup()
	winHints.mu.Lock()
	defer winHints.mu.Unlock()
	if winHints.m == nil {
		winHints.m = map[Win]*info{}
	}
	dst := winHints.m[h]
	if dst == nil {
		dst = newInfo()
		winHints.m[h] = dst
	}
	for _, k := range src.keys {
		dst.set(k, src.vals[k])
	}
	return nil
}

// freeWinState calls the delete callbacks of window h's attributes and drops what this
// file and windyn.go keep of it, as MPI_Win_free does before the window goes.
func freeWinState(h Win) error {
	if err := deleteWinAttrs(h); err != nil {
		return err
	}
	winHints.mu.Lock()
	delete(winHints.m, h)
	winHints.mu.Unlock()
	return freeDynDir(h)
}

// doWinSetName is MPI_Win_set_name: a name of more than MPI_MAX_OBJECT_NAME-1
// characters is cut, as MPICH does.
func doWinSetName(h Win, name *byte) error {
	wo, err := winOf(h)
	if err != nil {
		return err
	}
	if name == nil {
		return mpiErr(mpi_ERR_ARG, "the name is NULL")
	}
	s := C.GoString((*C.char)(unsafe.Pointer(name)))
	if len(s) > mpi_MAX_OBJECT_NAME-1 {
		s = s[:mpi_MAX_OBJECT_NAME-1]
	}
	return wo.w.SetName(s)
}

// doWinGetName is MPI_Win_get_name: "" until MPI_Win_set_name, as in MPICH.
func doWinGetName(h Win, name *byte, n *int32) error {
	wo, err := winOf(h)
	if err != nil {
		return err
	}
	if name == nil {
		return mpiErr(mpi_ERR_ARG, "the name buffer is NULL")
	}
	*n = int32(putString(name, mpi_MAX_OBJECT_NAME, wo.w.Name()))
	return nil
}

// doWinGetGroup is MPI_Win_get_group: the group of the window's communicator.
func doWinGetGroup(h Win, out *Group) error {
	wo, err := winOf(h)
	if err != nil {
		return err
	}
	*out = Group(groups.add(wo.comm.Group()))
	return nil
}

// doWinSetInfo is MPI_Win_set_info.
func doWinSetInfo(h Win, i Info) error {
	if _, err := winOf(h); err != nil {
		return err
	}
	return setWinHints(h, i)
}

// doWinGetInfo is MPI_Win_get_info: a new info holding the window's hints.
func doWinGetInfo(h Win, out *Info) error {
	if _, err := winOf(h); err != nil {
		return err
	}
	winHints.mu.Lock()
	in := winHints.m[h]
	winHints.mu.Unlock()
	if in == nil {
		in = newInfo()
	} else {
		in = in.dup()
	}
	*out = Info(infos.add(in))
	return nil
}

// doWinTest is MPI_Win_test: whether every origin of the exposure epoch has called
// MPI_Win_complete; the epoch is closed if so.
func doWinTest(h Win, flag *int32) error {
	wo, err := winOf(h)
	if err != nil {
		return err
	}
	done, err := wo.w.Test()
	if err != nil {
		return err
	}
	*flag = b2i(done)
	return nil
}

// doWinAllocateShared is MPI_Win_allocate_shared: the memory of the ranks of a host is
// one segment, rank after rank, which each of them may load and store.
func doWinAllocateShared(size, unit int, i Info, c Comm, baseptr unsafe.Pointer, out *Win) error {
	co, err := commOf(c)
	if err != nil {
		return err
	}
	if size < 0 {
		return mpiErr(mpi_ERR_SIZE, fmt.Sprintf("size %d is negative", size))
	}
	if baseptr == nil {
		return mpiErr(mpi_ERR_ARG, "baseptr is NULL")
	}
	if _, err := hintsOf(i); err != nil {
		return err
	}
	w, err := window.AllocateShared[byte](bg, co.w, size)
	if err != nil {
		return err
	}
	v, err := w.SharedQuery(w.Rank())
	if err != nil {
		w.Free(bg)
		return err
	}
	var base unsafe.Pointer
	if cap(v) > 0 {
		base = unsafe.Pointer(unsafe.SliceData(v))
	}
	*(*unsafe.Pointer)(baseptr) = base
	if err := newWin(w, co, base, size, unit, out); err != nil {
		return err
	}
	return setWinHints(*out, i)
}

// hintsOf checks an info argument of a constructor.
func hintsOf(i Info) (*info, error) {
	if i == mpi_INFO_NULL {
		return nil, nil
	}
	return infoOf(i)
}

// doWinSharedQuery is MPI_Win_shared_query: rank's memory as this process addresses
// it. For MPI_PROC_NULL, that of the lowest rank with memory. A rank of another host
// fails with MPI_ERR_RMA_SHARED. A window of another flavor answers as MPI 4.0 says: the
// memory of the ranks that this process maps, size 0 and NULL for the others.
func doWinSharedQuery(h Win, rank int, size *int64, unit *int32, baseptr unsafe.Pointer) error {
	wo, err := winOf(h)
	if err != nil {
		return err
	}
	if baseptr == nil {
		return mpiErr(mpi_ERR_ARG, "baseptr is NULL")
	}
	n := wo.w.Size()
	if rank == mpi_PROC_NULL {
		rank = 0
		for r := range n {
			if wo.w.Len(r) > 0 {
				rank = r
				break
			}
		}
	}
	if rank < 0 || rank >= n {
		return errRank(rank, n)
	}
	v, err := wo.w.SharedQuery(rank)
	switch {
	case errors.Is(err, window.ErrNotShared):
		return mpiErr(mpi_ERR_RMA_SHARED, fmt.Sprintf("rank %d's memory cannot be mapped by this rank (another host): reach it with MPI_Put and MPI_Get", rank))
	case err != nil:
		return err
	}
	var base unsafe.Pointer
	if cap(v) > 0 {
		base = unsafe.Pointer(unsafe.SliceData(v))
	}
	*size = int64(len(v))
	*unit = int32(wo.units[rank])
	*(*unsafe.Pointer)(baseptr) = base
	return nil
}

// doRgetAccumulate is MPI_Rget_accumulate: MPI_Get_accumulate returning a request, in a
// passive-target epoch, for contiguous datatypes. With MPI_NO_OP the origin is not read.
func doRgetAccumulate(org unsafe.Pointer, ocount int, od Datatype, res unsafe.Pointer, rcount int, rd Datatype,
	rank, disp, tcount int, td Datatype, op Op, h Win, req *Request) error {
	wo, err := winOf(h)
	if err != nil {
		return err
	}
	if rank < 0 || rank >= len(wo.units) {
		return errRank(rank, len(wo.units))
	}
	tt, err := typeOf(td)
	if err != nil {
		return err
	}
	rt, err := typeOf(rd)
	if err != nil {
		return err
	}
	if tcount < 0 {
		return errCount(tcount)
	}
	r, err := bytesOf(res, rcount, rt)
	if err != nil {
		return err
	}
	n := tt.size * tcount
	if len(r) != n {
		return mpiErr(mpi_ERR_SIZE, fmt.Sprintf("the result holds %d bytes and the target %d", len(r), n))
	}
	var b []byte
	if op != mpi_NO_OP {
		ot, err := typeOf(od)
		if err != nil {
			return err
		}
		if !ot.contig {
			return errUnsupported("MPI_Rget_accumulate with a derived datatype")
		}
		if b, err = bytesOf(org, ocount, ot); err != nil {
			return err
		}
		if len(b) != n {
			return mpiErr(mpi_ERR_SIZE, fmt.Sprintf("the origin holds %d bytes and the target %d", len(b), n))
		}
	}
	if !tt.contig || !rt.contig {
		return errUnsupported("MPI_Rget_accumulate with a derived datatype")
	}
	o, err := accOp(op, tt)
	if err != nil {
		return err
	}
	off, err := wo.targetOff(h, rank, disp)
	if err != nil {
		return err
	}
	rq, err := wo.w.RgetAccumulate(b, r, rank, off, o)
	return addRMA(rq, err, req)
}
