//go:build cgo

package mpich

import (
	"errors"
	"fmt"
	"io"
	"unsafe"

	"github.com/gorma-hpc/gorma/datatype"
	"github.com/gorma-hpc/gorma/runtime"
)

// fileStatus is the status of a data call that moved n bytes: MPI_Get_count counts
// them in the call's datatype.
func fileStatus(n int64) runtime.Status {
	return runtime.Status{Source: runtime.AnySource, Tag: runtime.AnyTag, Bytes: int(n)}
}

// readable fails for a file opened MPI_MODE_WRONLY.
func (f *file) readable() error {
	if f.amode&modeWronly != 0 {
		return mpiErr(mpi_ERR_ACCESS, fmt.Sprintf("file %q was opened with MPI_MODE_WRONLY: it cannot be read", f.path))
	}
	return nil
}

// individual fails for a file opened MPI_MODE_SEQUENTIAL, which has no individual
// file pointer and no explicit offsets.
func (f *file) individual() error {
	if f.amode&modeSequential != 0 {
		return mpiErr(mpi_ERR_UNSUPPORTED_OPERATION, fmt.Sprintf("file %q was opened with MPI_MODE_SEQUENTIAL: use the shared file pointer calls", f.path))
	}
	return nil
}

// access reads (write false) or writes count copies of d at buf, from etype pos of
// the view on, and returns the bytes moved. A read stops at the end of the file. The
// caller holds f.mu.
func (f *file) access(write bool, pos int64, buf unsafe.Pointer, count int, d Datatype) (int64, error) {
	if write {
		if err := f.writable(); err != nil {
			return 0, err
		}
	} else if err := f.readable(); err != nil {
		return 0, err
	}
	if pos < 0 {
		return 0, mpiErr(mpi_ERR_ARG, fmt.Sprintf("offset %d is negative", pos))
	}
	t, err := typeOf(d)
	if err != nil {
		return 0, err
	}
	if int64(t.size)%f.view.esize != 0 {
		return 0, mpiErr(mpi_ERR_IO, fmt.Sprintf("the datatype's size %d is not a multiple of the etype's %d: only whole etypes can be accessed", t.size, f.view.esize))
	}
	user, err := spanOf(buf, count, t)
	if err != nil {
		return 0, err
	}
	data := user
	if !t.contig {
		data = make([]byte, count*t.size)
		if write {
			if _, err := datatype.Pack(data, user, count, t.layout); err != nil {
				return 0, err
			}
		}
	}
	if len(data) == 0 {
		return 0, nil
	}
	var n int64
	if write {
		n, err = f.writeRuns(data, pos)
	} else {
		n, err = f.readRuns(data, pos)
		if err == nil && !t.contig {
			_, err = datatype.UnpackPrefix(user, data[:n], count, t.layout)
		}
	}
	return n, err
}

// writeRuns writes data to the view from etype pos on.
func (f *file) writeRuns(data []byte, pos int64) (int64, error) {
	var n int64
	for _, r := range f.view.runs(pos*f.view.esize, int64(len(data))) {
		if _, err := f.f.WriteAt(data[n:n+r.n], r.off); err != nil {
			return n, ioErr("write", f.path, err)
		}
		n += r.n
	}
	return n, nil
}

// readRuns fills data from the view from etype pos on, up to the end of the file.
func (f *file) readRuns(data []byte, pos int64) (int64, error) {
	var n int64
	for _, r := range f.view.runs(pos*f.view.esize, int64(len(data))) {
		k, err := f.f.ReadAt(data[n:n+r.n], r.off)
		n += int64(k)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return n, ioErr("read", f.path, err)
		}
	}
	return n, nil
}

// atIO is a data call at explicit etype offset off.
func atIO(fh unsafe.Pointer, write bool, off int, buf unsafe.Pointer, count int, d Datatype) (runtime.Status, error) {
	f, err := fileOf(fh)
	if err != nil {
		return runtime.Status{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.individual(); err != nil {
		return runtime.Status{}, err
	}
	n, err := f.access(write, int64(off), buf, count, d)
	return fileStatus(n), err
}

// ownIO is a data call at the individual file pointer, which moves past the data.
func ownIO(fh unsafe.Pointer, write bool, buf unsafe.Pointer, count int, d Datatype) (runtime.Status, error) {
	f, err := fileOf(fh)
	if err != nil {
		return runtime.Status{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.individual(); err != nil {
		return runtime.Status{}, err
	}
	n, err := f.access(write, f.pos, buf, count, d)
	f.pos += n / f.view.esize
	return fileStatus(n), err
}

// done sets st (nil: MPI_STATUS_IGNORE) from a blocking data call's outcome.
func done(st *Status, s runtime.Status, err error) error {
	if err == nil {
		st.set(s)
	}
	return err
}

// started registers a nonblocking data call's request. The call moved its data
// before it returned, which MPI allows: the request is complete from the start.
func started(req unsafe.Pointer, s runtime.Status, err error) error {
	if err != nil {
		return err
	}
	if req == nil {
		return mpiErr(mpi_ERR_REQUEST, "the request's address is NULL")
	}
	*(*Request)(req) = Request(reqs.add(&request{held: &outcome{st: s}}))
	return nil
}

// doFileReadAt is MPI_File_read_at.
func doFileReadAt(fh unsafe.Pointer, off int, buf unsafe.Pointer, count int, d Datatype, st *Status) error {
	s, err := atIO(fh, false, off, buf, count, d)
	return done(st, s, err)
}

// doFileWriteAt is MPI_File_write_at.
func doFileWriteAt(fh unsafe.Pointer, off int, buf unsafe.Pointer, count int, d Datatype, st *Status) error {
	s, err := atIO(fh, true, off, buf, count, d)
	return done(st, s, err)
}

// doFileRead is MPI_File_read.
func doFileRead(fh unsafe.Pointer, buf unsafe.Pointer, count int, d Datatype, st *Status) error {
	s, err := ownIO(fh, false, buf, count, d)
	return done(st, s, err)
}

// doFileWrite is MPI_File_write.
func doFileWrite(fh unsafe.Pointer, buf unsafe.Pointer, count int, d Datatype, st *Status) error {
	s, err := ownIO(fh, true, buf, count, d)
	return done(st, s, err)
}

// doFileIreadAt is MPI_File_iread_at.
func doFileIreadAt(fh unsafe.Pointer, off int, buf unsafe.Pointer, count int, d Datatype, req unsafe.Pointer) error {
	s, err := atIO(fh, false, off, buf, count, d)
	return started(req, s, err)
}

// doFileIwriteAt is MPI_File_iwrite_at.
func doFileIwriteAt(fh unsafe.Pointer, off int, buf unsafe.Pointer, count int, d Datatype, req unsafe.Pointer) error {
	s, err := atIO(fh, true, off, buf, count, d)
	return started(req, s, err)
}

// doFileIread is MPI_File_iread.
func doFileIread(fh unsafe.Pointer, buf unsafe.Pointer, count int, d Datatype, req unsafe.Pointer) error {
	s, err := ownIO(fh, false, buf, count, d)
	return started(req, s, err)
}

// doFileIwrite is MPI_File_iwrite.
func doFileIwrite(fh unsafe.Pointer, buf unsafe.Pointer, count int, d Datatype, req unsafe.Pointer) error {
	s, err := ownIO(fh, true, buf, count, d)
	return started(req, s, err)
}

// The large-count forms: MPI_Count crosses as a C long, so each is its int form.

// doFileReadAtC is MPI_File_read_at_c.
func doFileReadAtC(fh unsafe.Pointer, off int, buf unsafe.Pointer, count int, d Datatype, st *Status) error {
	return doFileReadAt(fh, off, buf, count, d, st)
}

// doFileWriteAtC is MPI_File_write_at_c.
func doFileWriteAtC(fh unsafe.Pointer, off int, buf unsafe.Pointer, count int, d Datatype, st *Status) error {
	return doFileWriteAt(fh, off, buf, count, d, st)
}

// doFileReadC is MPI_File_read_c.
func doFileReadC(fh unsafe.Pointer, buf unsafe.Pointer, count int, d Datatype, st *Status) error {
	return doFileRead(fh, buf, count, d, st)
}

// doFileWriteC is MPI_File_write_c.
func doFileWriteC(fh unsafe.Pointer, buf unsafe.Pointer, count int, d Datatype, st *Status) error {
	return doFileWrite(fh, buf, count, d, st)
}

// doFileIreadAtC is MPI_File_iread_at_c.
func doFileIreadAtC(fh unsafe.Pointer, off int, buf unsafe.Pointer, count int, d Datatype, req unsafe.Pointer) error {
	return doFileIreadAt(fh, off, buf, count, d, req)
}

// doFileIwriteAtC is MPI_File_iwrite_at_c.
func doFileIwriteAtC(fh unsafe.Pointer, off int, buf unsafe.Pointer, count int, d Datatype, req unsafe.Pointer) error {
	return doFileIwriteAt(fh, off, buf, count, d, req)
}

// doFileIreadC is MPI_File_iread_c.
func doFileIreadC(fh unsafe.Pointer, buf unsafe.Pointer, count int, d Datatype, req unsafe.Pointer) error {
	return doFileIread(fh, buf, count, d, req)
}

// doFileIwriteC is MPI_File_iwrite_c.
func doFileIwriteC(fh unsafe.Pointer, buf unsafe.Pointer, count int, d Datatype, req unsafe.Pointer) error {
	return doFileIwrite(fh, buf, count, d, req)
}
