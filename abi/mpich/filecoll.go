//go:build cgo

package mpich

// #include <stdlib.h>
import "C"

import (
	"fmt"
	"unsafe"

	"github.com/gorma-hpc/gorma/collectives"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/window"
)

// The collective data calls move each rank's data with the independent calls' code:
// MPI requires every rank of the group to call them, not that ranks wait for each
// other, and the POSIX file gives every rank's data to every rank at once.

// doFileReadAtAll is MPI_File_read_at_all.
func doFileReadAtAll(fh unsafe.Pointer, off int, buf unsafe.Pointer, count int, d Datatype, st *Status) error {
	return doFileReadAt(fh, off, buf, count, d, st)
}

// doFileWriteAtAll is MPI_File_write_at_all.
func doFileWriteAtAll(fh unsafe.Pointer, off int, buf unsafe.Pointer, count int, d Datatype, st *Status) error {
	return doFileWriteAt(fh, off, buf, count, d, st)
}

// doFileReadAll is MPI_File_read_all.
func doFileReadAll(fh unsafe.Pointer, buf unsafe.Pointer, count int, d Datatype, st *Status) error {
	return doFileRead(fh, buf, count, d, st)
}

// doFileWriteAll is MPI_File_write_all.
func doFileWriteAll(fh unsafe.Pointer, buf unsafe.Pointer, count int, d Datatype, st *Status) error {
	return doFileWrite(fh, buf, count, d, st)
}

// doFileIreadAtAll is MPI_File_iread_at_all.
func doFileIreadAtAll(fh unsafe.Pointer, off int, buf unsafe.Pointer, count int, d Datatype, req *Request) error {
	return doFileIreadAt(fh, off, buf, count, d, unsafe.Pointer(req))
}

// doFileIwriteAtAll is MPI_File_iwrite_at_all.
func doFileIwriteAtAll(fh unsafe.Pointer, off int, buf unsafe.Pointer, count int, d Datatype, req *Request) error {
	return doFileIwriteAt(fh, off, buf, count, d, unsafe.Pointer(req))
}

// doFileIreadAll is MPI_File_iread_all.
func doFileIreadAll(fh unsafe.Pointer, buf unsafe.Pointer, count int, d Datatype, req *Request) error {
	return doFileIread(fh, buf, count, d, unsafe.Pointer(req))
}

// doFileIwriteAll is MPI_File_iwrite_all.
func doFileIwriteAll(fh unsafe.Pointer, buf unsafe.Pointer, count int, d Datatype, req *Request) error {
	return doFileIwrite(fh, buf, count, d, unsafe.Pointer(req))
}

// putShared sets the shared file pointer to v etypes.
func (f *file) putShared(v int64) error {
	if err := f.shared.Lock(bg, window.Exclusive, 0, 0); err != nil {
		return err
	}
	err := f.shared.Put([]int64{v}, 0, 0)
	if uerr := f.shared.Unlock(bg, 0); err == nil {
		err = uerr
	}
	return err
}

// getShared reads the shared file pointer.
func (f *file) getShared() (int64, error) {
	if err := f.shared.Lock(bg, window.Shared, 0, 0); err != nil {
		return 0, err
	}
	v := []int64{0}
	err := f.shared.Get(v, 0, 0)
	if uerr := f.shared.Unlock(bg, 0); err == nil {
		err = uerr
	}
	return v[0], err
}

// addShared moves the shared file pointer on by n etypes, atomically, and returns
// where it was.
func (f *file) addShared(n int64) (int64, error) {
	if err := f.shared.Lock(bg, window.Exclusive, 0, 0); err != nil {
		return 0, err
	}
	var old int64
	err := f.shared.FetchAndOp(n, &old, 0, 0, collectives.Sum[int64]())
	if uerr := f.shared.Unlock(bg, 0); err == nil {
		err = uerr
	}
	return old, err
}

// etypes is the count of etypes in count copies of d, checked.
func (f *file) etypes(count int, d Datatype) (int64, error) {
	t, err := typeOf(d)
	if err != nil {
		return 0, err
	}
	if count < 0 {
		return 0, errCount(count)
	}
	if int64(t.size)%f.view.esize != 0 {
		return 0, mpiErr(mpi_ERR_IO, fmt.Sprintf("the datatype's size %d is not a multiple of the etype's %d: only whole etypes can be accessed", t.size, f.view.esize))
	}
	return int64(count) * int64(t.size) / f.view.esize, nil
}

// sharedIO is a data call at the shared file pointer, which moves past the data
// before the data moves: ranks calling at once get disjoint places in some order.
func sharedIO(fh unsafe.Pointer, write bool, buf unsafe.Pointer, count int, d Datatype) (runtime.Status, error) {
	f, err := fileOf(fh)
	if err != nil {
		return runtime.Status{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	k, err := f.etypes(count, d)
	if err != nil {
		return runtime.Status{}, err
	}
	if write {
		err = f.writable()
	} else {
		err = f.readable()
	}
	if err != nil {
		return runtime.Status{}, err
	}
	pos, err := f.addShared(k)
	if err != nil {
		return runtime.Status{}, err
	}
	n, err := f.access(write, pos, buf, count, d)
	return fileStatus(n), err
}

// orderedIO is a collective data call at the shared file pointer: the ranks' data
// lie in rank order from the pointer on, which moves past all of it.
func orderedIO(fh unsafe.Pointer, write bool, buf unsafe.Pointer, count int, d Datatype) (runtime.Status, error) {
	f, err := fileOf(fh)
	if err != nil {
		return runtime.Status{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	k, err := f.etypes(count, d)
	if err == nil && write {
		err = f.writable()
	} else if err == nil {
		err = f.readable()
	}
	mine := []int64{0, k}
	if err != nil {
		mine[0] = int64(classOf(err))
	}
	all := make([]int64, 2*f.w.Size())
	if cerr := collectives.Allgather(bg, f.w, mine, all); cerr != nil {
		return runtime.Status{}, cerr
	}
	if err != nil {
		return runtime.Status{}, err
	}
	var before, total int64
	for r := 0; r < f.w.Size(); r++ {
		if c := all[2*r]; c != 0 {
			return runtime.Status{}, mpiErr(int(c), fmt.Sprintf("rank %d of the file's group failed this collective call: %s", r, className(int(c))))
		}
		if r < f.w.Rank() {
			before += all[2*r+1]
		}
		total += all[2*r+1]
	}
	base := []int64{0, 0}
	if f.w.Rank() == 0 {
		old, err := f.addShared(total)
		base[0] = old
		if err != nil {
			base[1] = int64(classOf(err))
		}
	}
	if err := collectives.Bcast(bg, f.w, base, 0); err != nil {
		return runtime.Status{}, err
	}
	if base[1] != 0 {
		return runtime.Status{}, mpiErr(int(base[1]), "rank 0 could not move the shared file pointer")
	}
	n, err := f.access(write, base[0]+before, buf, count, d)
	return fileStatus(n), err
}

// doFileReadShared is MPI_File_read_shared.
func doFileReadShared(fh unsafe.Pointer, buf unsafe.Pointer, count int, d Datatype, st *Status) error {
	s, err := sharedIO(fh, false, buf, count, d)
	return done(st, s, err)
}

// doFileWriteShared is MPI_File_write_shared.
func doFileWriteShared(fh unsafe.Pointer, buf unsafe.Pointer, count int, d Datatype, st *Status) error {
	s, err := sharedIO(fh, true, buf, count, d)
	return done(st, s, err)
}

// doFileIreadShared is MPI_File_iread_shared.
func doFileIreadShared(fh unsafe.Pointer, buf unsafe.Pointer, count int, d Datatype, req unsafe.Pointer) error {
	s, err := sharedIO(fh, false, buf, count, d)
	return started(req, s, err)
}

// doFileIwriteShared is MPI_File_iwrite_shared.
func doFileIwriteShared(fh unsafe.Pointer, buf unsafe.Pointer, count int, d Datatype, req unsafe.Pointer) error {
	s, err := sharedIO(fh, true, buf, count, d)
	return started(req, s, err)
}

// doFileReadOrdered is MPI_File_read_ordered.
func doFileReadOrdered(fh unsafe.Pointer, buf unsafe.Pointer, count int, d Datatype, st *Status) error {
	s, err := orderedIO(fh, false, buf, count, d)
	return done(st, s, err)
}

// doFileWriteOrdered is MPI_File_write_ordered.
func doFileWriteOrdered(fh unsafe.Pointer, buf unsafe.Pointer, count int, d Datatype, st *Status) error {
	s, err := orderedIO(fh, true, buf, count, d)
	return done(st, s, err)
}

// doFileSeekShared is MPI_File_seek_shared, collective: every rank passes the same
// offset and whence; rank 0 moves the pointer.
func doFileSeekShared(fh unsafe.Pointer, off, whence int) error {
	f, err := fileOf(fh)
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := agree(f.w, nil, int64(off), "the offset", mpi_ERR_NOT_SAME); err != nil {
		return err
	}
	if err := agree(f.w, nil, int64(whence), "whence", mpi_ERR_NOT_SAME); err != nil {
		return err
	}
	if f.w.Rank() == 0 {
		var cur, p int64
		cur, err = f.getShared()
		if err == nil {
			p, err = f.seekTo(cur, int64(off), whence)
		}
		if err == nil {
			err = f.putShared(p)
		}
	}
	return agree(f.w, err, 0, "", 0)
}

// doFileGetPositionShared is MPI_File_get_position_shared: the shared file pointer,
// in etypes.
func doFileGetPositionShared(fh unsafe.Pointer, off *int64) error {
	f, err := fileOf(fh)
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	p, err := f.getShared()
	if err != nil {
		return err
	}
	*off = p
	return nil
}

// begin is the _begin of a split collective: the call runs, and its outcome waits for
// the _end. One split collective at a time is begun on a file.
func begin(fh unsafe.Pointer, call string, buf unsafe.Pointer, run func() (runtime.Status, error)) error {
	f, err := fileOf(fh)
	if err != nil {
		return err
	}
	f.mu.Lock()
	busy := f.split
	f.mu.Unlock()
	if busy != nil {
		return mpiErr(mpi_ERR_IO, fmt.Sprintf("%s_begin is begun on the file and not ended: call %s_end first", busy.call, busy.call))
	}
	s, err := run()
	if err != nil {
		return err
	}
	f.mu.Lock()
	f.split = &pending{call: call, buf: buf, st: s}
	f.mu.Unlock()
	return nil
}

// end is the _end of a split collective: it reports what its _begin did.
func end(fh unsafe.Pointer, call string, buf unsafe.Pointer, st *Status) error {
	f, err := fileOf(fh)
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	p := f.split
	switch {
	case p == nil:
		return mpiErr(mpi_ERR_IO, fmt.Sprintf("no split collective is begun on the file: call %s_begin first", call))
	case p.call != call:
		return mpiErr(mpi_ERR_IO, fmt.Sprintf("the split collective begun is %s_begin, not %s_begin", p.call, call))
	case p.buf != buf:
		return mpiErr(mpi_ERR_BUFFER, fmt.Sprintf("%s_end's buffer is not the one passed to %s_begin", call, call))
	}
	f.split = nil
	st.set(p.st)
	return p.err
}

// doFileReadAtAllBegin is MPI_File_read_at_all_begin.
func doFileReadAtAllBegin(fh unsafe.Pointer, off int, buf unsafe.Pointer, count int, d Datatype) error {
	return begin(fh, "MPI_File_read_at_all", buf, func() (runtime.Status, error) { return atIO(fh, false, off, buf, count, d) })
}

// doFileReadAtAllEnd is MPI_File_read_at_all_end.
func doFileReadAtAllEnd(fh unsafe.Pointer, buf unsafe.Pointer, st *Status) error {
	return end(fh, "MPI_File_read_at_all", buf, st)
}

// doFileWriteAtAllBegin is MPI_File_write_at_all_begin.
func doFileWriteAtAllBegin(fh unsafe.Pointer, off int, buf unsafe.Pointer, count int, d Datatype) error {
	return begin(fh, "MPI_File_write_at_all", buf, func() (runtime.Status, error) { return atIO(fh, true, off, buf, count, d) })
}

// doFileWriteAtAllEnd is MPI_File_write_at_all_end.
func doFileWriteAtAllEnd(fh unsafe.Pointer, buf unsafe.Pointer, st *Status) error {
	return end(fh, "MPI_File_write_at_all", buf, st)
}

// doFileReadAllBegin is MPI_File_read_all_begin.
func doFileReadAllBegin(fh unsafe.Pointer, buf unsafe.Pointer, count int, d Datatype) error {
	return begin(fh, "MPI_File_read_all", buf, func() (runtime.Status, error) { return ownIO(fh, false, buf, count, d) })
}

// doFileReadAllEnd is MPI_File_read_all_end.
func doFileReadAllEnd(fh unsafe.Pointer, buf unsafe.Pointer, st *Status) error {
	return end(fh, "MPI_File_read_all", buf, st)
}

// doFileWriteAllBegin is MPI_File_write_all_begin.
func doFileWriteAllBegin(fh unsafe.Pointer, buf unsafe.Pointer, count int, d Datatype) error {
	return begin(fh, "MPI_File_write_all", buf, func() (runtime.Status, error) { return ownIO(fh, true, buf, count, d) })
}

// doFileWriteAllEnd is MPI_File_write_all_end.
func doFileWriteAllEnd(fh unsafe.Pointer, buf unsafe.Pointer, st *Status) error {
	return end(fh, "MPI_File_write_all", buf, st)
}

// doFileReadOrderedBegin is MPI_File_read_ordered_begin.
func doFileReadOrderedBegin(fh unsafe.Pointer, buf unsafe.Pointer, count int, d Datatype) error {
	return begin(fh, "MPI_File_read_ordered", buf, func() (runtime.Status, error) { return orderedIO(fh, false, buf, count, d) })
}

// doFileReadOrderedEnd is MPI_File_read_ordered_end.
func doFileReadOrderedEnd(fh unsafe.Pointer, buf unsafe.Pointer, st *Status) error {
	return end(fh, "MPI_File_read_ordered", buf, st)
}

// doFileWriteOrderedBegin is MPI_File_write_ordered_begin.
func doFileWriteOrderedBegin(fh unsafe.Pointer, buf unsafe.Pointer, count int, d Datatype) error {
	return begin(fh, "MPI_File_write_ordered", buf, func() (runtime.Status, error) { return orderedIO(fh, true, buf, count, d) })
}

// doFileWriteOrderedEnd is MPI_File_write_ordered_end.
func doFileWriteOrderedEnd(fh unsafe.Pointer, buf unsafe.Pointer, st *Status) error {
	return end(fh, "MPI_File_write_ordered", buf, st)
}

// doRegisterDatarep is MPI_Register_datarep: the predefined representations' names
// are taken; user representations, whose conversion functions gorma's I/O would
// call, are not supported.
func doRegisterDatarep(datarep *byte, read, write, extent, extra unsafe.Pointer) error {
	return registerDatarep(datarep)
}

// doRegisterDatarepC is MPI_Register_datarep_c.
func doRegisterDatarepC(datarep *byte, read, write, extent, extra unsafe.Pointer) error {
	return registerDatarep(datarep)
}

func registerDatarep(datarep *byte) error {
	if datarep == nil {
		return mpiErr(mpi_ERR_ARG, "the data representation's name is NULL")
	}
	switch s := C.GoString((*C.char)(unsafe.Pointer(datarep))); s {
	case "native", "internal", "external32":
		return mpiErr(mpi_ERR_DUP_DATAREP, fmt.Sprintf("data representation %q is predefined", s))
	default:
		return mpiErr(mpi_ERR_UNSUPPORTED_OPERATION, fmt.Sprintf("MPI_Register_datarep(%q): user data representations are not supported by gorma's MPI-IO, which reads and writes \"native\" only", s))
	}
}

// The large-count forms of the collective and shared file pointer calls: MPI_Count
// crosses as a C long, so each is its int form.

// doFileReadAllC is MPI_File_read_all_c.
func doFileReadAllC(fh unsafe.Pointer, buf unsafe.Pointer, count int, d Datatype, st *Status) error {
	return doFileReadAll(fh, buf, count, d, st)
}

// doFileWriteAllC is MPI_File_write_all_c.
func doFileWriteAllC(fh unsafe.Pointer, buf unsafe.Pointer, count int, d Datatype, st *Status) error {
	return doFileWriteAll(fh, buf, count, d, st)
}

// doFileReadAtAllC is MPI_File_read_at_all_c.
func doFileReadAtAllC(fh unsafe.Pointer, off int, buf unsafe.Pointer, count int, d Datatype, st *Status) error {
	return doFileReadAtAll(fh, off, buf, count, d, st)
}

// doFileWriteAtAllC is MPI_File_write_at_all_c.
func doFileWriteAtAllC(fh unsafe.Pointer, off int, buf unsafe.Pointer, count int, d Datatype, st *Status) error {
	return doFileWriteAtAll(fh, off, buf, count, d, st)
}

// doFileReadAllBeginC is MPI_File_read_all_begin_c.
func doFileReadAllBeginC(fh unsafe.Pointer, buf unsafe.Pointer, count int, d Datatype) error {
	return doFileReadAllBegin(fh, buf, count, d)
}

// doFileWriteAllBeginC is MPI_File_write_all_begin_c.
func doFileWriteAllBeginC(fh unsafe.Pointer, buf unsafe.Pointer, count int, d Datatype) error {
	return doFileWriteAllBegin(fh, buf, count, d)
}

// doFileReadAtAllBeginC is MPI_File_read_at_all_begin_c.
func doFileReadAtAllBeginC(fh unsafe.Pointer, off int, buf unsafe.Pointer, count int, d Datatype) error {
	return doFileReadAtAllBegin(fh, off, buf, count, d)
}

// doFileWriteAtAllBeginC is MPI_File_write_at_all_begin_c.
func doFileWriteAtAllBeginC(fh unsafe.Pointer, off int, buf unsafe.Pointer, count int, d Datatype) error {
	return doFileWriteAtAllBegin(fh, off, buf, count, d)
}

// doFileReadOrderedC is MPI_File_read_ordered_c.
func doFileReadOrderedC(fh unsafe.Pointer, buf unsafe.Pointer, count int, d Datatype, st *Status) error {
	return doFileReadOrdered(fh, buf, count, d, st)
}

// doFileWriteOrderedC is MPI_File_write_ordered_c.
func doFileWriteOrderedC(fh unsafe.Pointer, buf unsafe.Pointer, count int, d Datatype, st *Status) error {
	return doFileWriteOrdered(fh, buf, count, d, st)
}

// doFileReadOrderedBeginC is MPI_File_read_ordered_begin_c.
func doFileReadOrderedBeginC(fh unsafe.Pointer, buf unsafe.Pointer, count int, d Datatype) error {
	return doFileReadOrderedBegin(fh, buf, count, d)
}

// doFileWriteOrderedBeginC is MPI_File_write_ordered_begin_c.
func doFileWriteOrderedBeginC(fh unsafe.Pointer, buf unsafe.Pointer, count int, d Datatype) error {
	return doFileWriteOrderedBegin(fh, buf, count, d)
}

// doFileReadSharedC is MPI_File_read_shared_c.
func doFileReadSharedC(fh unsafe.Pointer, buf unsafe.Pointer, count int, d Datatype, st *Status) error {
	return doFileReadShared(fh, buf, count, d, st)
}

// doFileWriteSharedC is MPI_File_write_shared_c.
func doFileWriteSharedC(fh unsafe.Pointer, buf unsafe.Pointer, count int, d Datatype, st *Status) error {
	return doFileWriteShared(fh, buf, count, d, st)
}

// doFileIreadSharedC is MPI_File_iread_shared_c.
func doFileIreadSharedC(fh unsafe.Pointer, buf unsafe.Pointer, count int, d Datatype, req unsafe.Pointer) error {
	return doFileIreadShared(fh, buf, count, d, req)
}

// doFileIwriteSharedC is MPI_File_iwrite_shared_c.
func doFileIwriteSharedC(fh unsafe.Pointer, buf unsafe.Pointer, count int, d Datatype, req unsafe.Pointer) error {
	return doFileIwriteShared(fh, buf, count, d, req)
}

// doFileIreadAllC is MPI_File_iread_all_c.
func doFileIreadAllC(fh unsafe.Pointer, buf unsafe.Pointer, count int, d Datatype, req *Request) error {
	return doFileIreadAll(fh, buf, count, d, req)
}

// doFileIwriteAllC is MPI_File_iwrite_all_c.
func doFileIwriteAllC(fh unsafe.Pointer, buf unsafe.Pointer, count int, d Datatype, req *Request) error {
	return doFileIwriteAll(fh, buf, count, d, req)
}

// doFileIreadAtAllC is MPI_File_iread_at_all_c.
func doFileIreadAtAllC(fh unsafe.Pointer, off int, buf unsafe.Pointer, count int, d Datatype, req *Request) error {
	return doFileIreadAtAll(fh, off, buf, count, d, req)
}

// doFileIwriteAtAllC is MPI_File_iwrite_at_all_c.
func doFileIwriteAtAllC(fh unsafe.Pointer, off int, buf unsafe.Pointer, count int, d Datatype, req *Request) error {
	return doFileIwriteAtAll(fh, off, buf, count, d, req)
}
