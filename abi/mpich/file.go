//go:build cgo

package mpich

// #include "zcalls.h"
import "C"

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
	"syscall"
	"unsafe"

	"github.com/gorma-hpc/gorma/collectives"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/window"
)

// The access modes and seek origins of MPICH's mpio.h, which mpigen does not read for
// constants.
const (
	modeCreate        = 1
	modeRdonly        = 2
	modeWronly        = 4
	modeRdwr          = 8
	modeDeleteOnClose = 16
	modeUniqueOpen    = 32
	modeExcl          = 64
	modeAppend        = 128
	modeSequential    = 256
	modeAll           = 511

	seekSet = 600
	seekCur = 602
	seekEnd = 604

	displacementCurrent = -54278278
	maxDatarep          = 128
)

// A file is an open MPI_File: the OS file that every rank of its group opened, this
// rank's view and individual file pointer, and the shared file pointer, which lives
// in a window on rank 0. mu guards the fields below it against threads of one rank;
// a collective call holds it while it waits for the other ranks. MPI_File_close takes
// files.mu under mu; no call takes mu under files.mu.
type file struct {
	w      *runtime.World     // a duplicate of the communicator's World: the file's collectives
	shared *window.Win[int64] // the shared file pointer, in etypes, at rank 0's displacement 0
	path   string
	amode  int

	mu     sync.Mutex
	f      *os.File
	errh   Errhandler
	hints  *info
	atomic bool
	view   view
	pos    int64    // the individual file pointer, in etypes of the view
	split  *pending // the split collective begun and not ended
}

// A pending split collective: what its _begin did, for its _end to report.
type pending struct {
	call string // the _begin's name less "_begin"
	buf  unsafe.Pointer
	st   runtime.Status
	err  error
}

// files holds the open files. An MPI_File handle is its slot plus one, cast to a
// pointer: MPI_FILE_NULL is 0, and the Fortran handle (MPI_File_c2f) is the same
// integer.
var files struct {
	mu    sync.Mutex
	slots []*file
	// nullErrh is MPI_FILE_NULL's error handler, which a file gets at its open and
	// which the failures of MPI_File_open and MPI_File_delete go to.
	nullErrh Errhandler
}

func init() { files.nullErrh = mpi_ERRORS_RETURN }

func addFile(f *file) uintptr {
	files.mu.Lock()
	defer files.mu.Unlock()
	for i, s := range files.slots {
		if s == nil {
			files.slots[i] = f
			return uintptr(i + 1)
		}
	}
	files.slots = append(files.slots, f)
	return uintptr(len(files.slots))
}

// lookupFile returns the file of handle fh, or nil.
func lookupFile(fh unsafe.Pointer) *file {
	files.mu.Lock()
	defer files.mu.Unlock()
	i := uintptr(fh)
	if i == 0 || i > uintptr(len(files.slots)) {
		return nil
	}
	return files.slots[i-1]
}

// fileOf returns the open file of handle fh.
func fileOf(fh unsafe.Pointer) (*file, error) {
	if fh == nil {
		return nil, mpiErr(mpi_ERR_FILE, "the file is MPI_FILE_NULL: open it with MPI_File_open")
	}
	if f := lookupFile(fh); f != nil {
		return f, nil
	}
	return nil, mpiErr(mpi_ERR_FILE, fmt.Sprintf("invalid file handle %#x", uintptr(fh)))
}

// agree is the end of a collective call of the file's group: each rank's outcome err
// and value are gathered, and every rank fails if one did, or with class if what
// names the values and they differ. MPICH's classes for differing values vary by
// call: MPI_ERR_NOT_SAME for the access mode, MPI_ERR_ARG for a size.
func agree(w *runtime.World, err error, value int64, what string, class int) error {
	mine := []int64{0, value}
	if err != nil {
		mine[0] = int64(classOf(err))
	}
	all := make([]int64, 2*w.Size())
	if cerr := collectives.Allgather(bg, w, mine, all); cerr != nil {
		return cerr
	}
	if err != nil {
		return err
	}
	for r := 0; r < w.Size(); r++ {
		if c := all[2*r]; c != 0 {
			return mpiErr(int(c), fmt.Sprintf("rank %d of the file's group failed this collective call: %s", r, className(int(c))))
		}
	}
	if what != "" {
		for r := 1; r < w.Size(); r++ {
			if all[2*r+1] != all[1] {
				return mpiErr(class, fmt.Sprintf("%s differs between ranks 0 (%d) and %d (%d): pass the same on every rank", what, all[1], r, all[2*r+1]))
			}
		}
	}
	return nil
}

// checkAmode checks an access mode: exactly one of RDONLY, WRONLY and RDWR, and
// neither CREATE nor EXCL with RDONLY, nor RDWR with SEQUENTIAL.
func checkAmode(amode int) error {
	n := 0
	for _, m := range []int{modeRdonly, modeWronly, modeRdwr} {
		if amode&m != 0 {
			n++
		}
	}
	switch {
	case amode&^modeAll != 0:
		return mpiErr(mpi_ERR_AMODE, fmt.Sprintf("access mode %#x has bits that are no MPI_MODE_* flag", amode))
	case n != 1:
		return mpiErr(mpi_ERR_AMODE, fmt.Sprintf("access mode %#x must hold exactly one of MPI_MODE_RDONLY, MPI_MODE_WRONLY and MPI_MODE_RDWR", amode))
	case amode&modeRdonly != 0 && amode&(modeCreate|modeExcl) != 0:
		return mpiErr(mpi_ERR_AMODE, "MPI_MODE_CREATE and MPI_MODE_EXCL need write access, not MPI_MODE_RDONLY")
	case amode&modeRdwr != 0 && amode&modeSequential != 0:
		return mpiErr(mpi_ERR_AMODE, "MPI_MODE_SEQUENTIAL cannot be used with MPI_MODE_RDWR")
	}
	return nil
}

// osFlags are the open(2) flags of amode; create says whether this rank creates the
// file. MPI_MODE_APPEND is not O_APPEND: it only places the file pointers at the end.
func osFlags(amode int, create bool) int {
	fl := os.O_RDWR
	switch {
	case amode&modeRdonly != 0:
		fl = os.O_RDONLY
	case amode&modeWronly != 0:
		fl = os.O_WRONLY
	}
	if create && amode&modeCreate != 0 {
		fl |= os.O_CREATE
		if amode&modeExcl != 0 {
			fl |= os.O_EXCL
		}
	}
	return fl
}

// ioErr maps an error of the OS onto MPI's I/O error classes.
func ioErr(op, path string, err error) error {
	class := mpi_ERR_IO
	switch {
	case errors.Is(err, fs.ErrNotExist):
		class = mpi_ERR_NO_SUCH_FILE
	case errors.Is(err, fs.ErrExist):
		class = mpi_ERR_FILE_EXISTS
	case errors.Is(err, fs.ErrPermission):
		class = mpi_ERR_ACCESS
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		class = mpi_ERR_NO_SPACE
	case errors.Is(err, syscall.EROFS):
		class = mpi_ERR_READ_ONLY
	case errors.Is(err, syscall.ENAMETOOLONG), errors.Is(err, syscall.EISDIR):
		class = mpi_ERR_BAD_FILE
	}
	return mpiErr(class, fmt.Sprintf("%s %q: %v", op, path, err))
}

// fileName is the C file name s. ROMIO's file-system prefixes ("ufs:", "nfs:") are
// taken off: the file is a POSIX file either way.
func fileName(s *byte) (string, error) {
	if s == nil {
		return "", mpiErr(mpi_ERR_BAD_FILE, "the file name is NULL")
	}
	name := C.GoString((*C.char)(unsafe.Pointer(s)))
	for _, p := range []string{"ufs:", "nfs:", "file:"} {
		if len(name) > len(p) && name[:len(p)] == p {
			name = name[len(p):]
			break
		}
	}
	if name == "" {
		return "", mpiErr(mpi_ERR_BAD_FILE, "the file name is empty")
	}
	return name, nil
}

// hintsOfInfo copies the hints of i, an info or MPI_INFO_NULL.
func hintsOfInfo(i Info) (*info, error) {
	if i == mpi_INFO_NULL {
		return newInfo(), nil
	}
	in, err := infoOf(i)
	if err != nil {
		return nil, err
	}
	return in.dup(), nil
}

// doFileOpen is MPI_File_open, collective over c: every rank passes the same amode;
// rank 0 creates the file, then the others open it. The shared file pointer's window
// is made here.
func doFileOpen(c Comm, name *byte, amode int, i Info, fh unsafe.Pointer) error {
	co, err := commOf(c)
	if err != nil {
		return err
	}
	d, err := co.w.Dup()
	if err != nil {
		return err
	}
	fail := func(err error) error {
		d.Free()
		return err
	}
	path, err := fileName(name)
	if err == nil {
		err = checkAmode(amode)
	}
	var hints *info
	if err == nil {
		hints, err = hintsOfInfo(i)
	}
	if err == nil && fh == nil {
		err = mpiErr(mpi_ERR_ARG, "the file handle's address is NULL")
	}
	if err := agree(d, err, int64(amode), "the access mode", mpi_ERR_NOT_SAME); err != nil {
		return fail(err)
	}
	var osf *os.File
	if d.Rank() == 0 {
		osf, err = os.OpenFile(path, osFlags(amode, true), 0o666)
		if err != nil {
			err = ioErr("open", path, err)
		}
	}
	if err := agree(d, err, 0, "", 0); err != nil {
		return fail(err)
	}
	if d.Rank() != 0 {
		if osf, err = os.OpenFile(path, osFlags(amode, false), 0); err != nil {
			err = ioErr("open", path, err)
		}
	}
	if err := agree(d, err, 0, "", 0); err != nil {
		if osf != nil {
			osf.Close()
		}
		return fail(err)
	}
	f, err := newFile(d, osf, path, amode, hints)
	if err != nil {
		osf.Close()
		return fail(err)
	}
	*(*uintptr)(fh) = addFile(f)
	return nil
}

// newFile makes the file's shared file pointer and places both pointers: at 0, or at
// the end of the file for MPI_MODE_APPEND.
func newFile(d *runtime.World, osf *os.File, path string, amode int, hints *info) (*file, error) {
	sh, err := window.Allocate[int64](bg, d, 1)
	if err != nil {
		return nil, err
	}
	files.mu.Lock()
	errh := files.nullErrh
	files.mu.Unlock()
	f := &file{w: d, shared: sh, path: path, amode: amode, f: osf, errh: errh, hints: hints, view: byteView()}
	var start int64
	if amode&modeAppend != 0 {
		fi, err := osf.Stat()
		if err == nil {
			start = fi.Size()
		} else {
			err = ioErr("stat", path, err)
		}
		if err := agree(d, err, 0, "", 0); err != nil {
			sh.Free(bg)
			return nil, err
		}
	}
	f.pos = start
	if d.Rank() == 0 {
		err = f.putShared(start)
	}
	if err := agree(d, err, 0, "", 0); err != nil {
		sh.Free(bg)
		return nil, err
	}
	return f, nil
}

// doFileClose is MPI_File_close, collective: the file is closed on every rank, then
// rank 0 deletes it if it was opened with MPI_MODE_DELETE_ON_CLOSE.
func doFileClose(fh unsafe.Pointer) error {
	if fh == nil {
		return mpiErr(mpi_ERR_ARG, "the file handle's address is NULL")
	}
	h := *(*unsafe.Pointer)(fh)
	f, err := fileOf(h)
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.split != nil {
		return mpiErr(mpi_ERR_IO, "a split collective is begun on the file and not ended: call its _end first")
	}
	err = f.f.Close()
	if err != nil {
		err = ioErr("close", f.path, err)
	}
	err = agree(f.w, err, 0, "", 0)
	if err == nil && f.amode&modeDeleteOnClose != 0 && f.w.Rank() == 0 {
		if rerr := os.Remove(f.path); rerr != nil {
			err = ioErr("delete", f.path, rerr)
		}
	}
	f.view.release()
	f.shared.Free(bg)
	f.w.Free()
	files.mu.Lock()
	files.slots[uintptr(h)-1] = nil
	files.mu.Unlock()
	*(*uintptr)(fh) = 0
	return err
}

// doFileDelete is MPI_File_delete: the file is removed; the hints are checked and
// ignored.
func doFileDelete(name *byte, i Info) error {
	path, err := fileName(name)
	if err != nil {
		return err
	}
	if _, err := hintsOfInfo(i); err != nil {
		return err
	}
	if err := os.Remove(path); err != nil {
		return ioErr("delete", path, err)
	}
	return nil
}

// writable fails for a file opened MPI_MODE_RDONLY.
func (f *file) writable() error {
	if f.amode&modeRdonly != 0 {
		return mpiErr(mpi_ERR_READ_ONLY, fmt.Sprintf("file %q was opened with MPI_MODE_RDONLY", f.path))
	}
	return nil
}

// resize is MPI_File_set_size (grow true: MPI_File_preallocate, which never shrinks
// and allocates the blocks), collective: rank 0 changes the file.
func resize(fh unsafe.Pointer, size int64, grow bool) error {
	f, err := fileOf(fh)
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	err = f.writable()
	if err == nil && size < 0 {
		err = mpiErr(mpi_ERR_ARG, fmt.Sprintf("size %d is negative", size))
	}
	if err == nil && f.amode&modeSequential != 0 {
		err = mpiErr(mpi_ERR_UNSUPPORTED_OPERATION, "a file opened with MPI_MODE_SEQUENTIAL cannot be resized")
	}
	if err := agree(f.w, err, size, "the size", mpi_ERR_ARG); err != nil {
		return err
	}
	if f.w.Rank() == 0 {
		err = f.resize(size, grow)
	}
	return agree(f.w, err, 0, "", 0)
}

func (f *file) resize(size int64, grow bool) error {
	if !grow {
		if err := f.f.Truncate(size); err != nil {
			return ioErr("truncate", f.path, err)
		}
		return nil
	}
	fi, err := f.f.Stat()
	if err != nil {
		return ioErr("stat", f.path, err)
	}
	if fi.Size() >= size {
		return nil
	}
	err = syscall.Fallocate(int(f.f.Fd()), 0, 0, size)
	if errors.Is(err, syscall.EOPNOTSUPP) {
		err = f.f.Truncate(size) // a file system without fallocate: the size at least
	}
	if err != nil {
		return ioErr("preallocate", f.path, err)
	}
	return nil
}

// doFileSetSize is MPI_File_set_size.
func doFileSetSize(fh unsafe.Pointer, size int) error { return resize(fh, int64(size), false) }

// doFilePreallocate is MPI_File_preallocate.
func doFilePreallocate(fh unsafe.Pointer, size int) error { return resize(fh, int64(size), true) }

// doFileGetSize is MPI_File_get_size: the file's size in bytes.
func doFileGetSize(fh unsafe.Pointer, size *int64) error {
	f, err := fileOf(fh)
	if err != nil {
		return err
	}
	fi, err := f.f.Stat()
	if err != nil {
		return ioErr("stat", f.path, err)
	}
	*size = fi.Size()
	return nil
}

// doFileGetGroup is MPI_File_get_group: the group of the communicator the file was
// opened on.
func doFileGetGroup(fh unsafe.Pointer, g *Group) error {
	f, err := fileOf(fh)
	if err != nil {
		return err
	}
	*g = addGroup(f.w.Group())
	return nil
}

// doFileGetAmode is MPI_File_get_amode.
func doFileGetAmode(fh unsafe.Pointer, amode *int32) error {
	f, err := fileOf(fh)
	if err != nil {
		return err
	}
	*amode = int32(f.amode)
	return nil
}

// doFileSetInfo is MPI_File_set_info, collective: the hints are kept for
// MPI_File_get_info. gorma's POSIX I/O has no tuning that a hint changes, which MPI
// allows.
func doFileSetInfo(fh unsafe.Pointer, i Info) error {
	f, err := fileOf(fh)
	if err != nil {
		return err
	}
	in, err := hintsOfInfo(i)
	if err := agree(f.w, err, 0, "", 0); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, k := range in.keys {
		v, _ := in.get(k)
		f.hints.set(k, v)
	}
	return nil
}

// doFileGetInfo is MPI_File_get_info: a new info with the file's hints.
func doFileGetInfo(fh unsafe.Pointer, out *Info) error {
	f, err := fileOf(fh)
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	*out = Info(infos.add(f.hints.dup()))
	return nil
}

// doFileSync is MPI_File_sync, collective: this rank's writes reach the storage
// device, and every rank's are visible to every rank when it returns.
func doFileSync(fh unsafe.Pointer) error {
	f, err := fileOf(fh)
	if err != nil {
		return err
	}
	if f.amode&modeRdonly == 0 {
		if err = f.f.Sync(); err != nil {
			err = ioErr("sync", f.path, err)
		}
	}
	return agree(f.w, err, 0, "", 0)
}

// doFileSetAtomicity is MPI_File_set_atomicity, collective. Every access is one
// pread or pwrite per contiguous run on a file that all ranks share through the
// host's page cache, so writes are visible at once in either mode; the flag is kept
// for MPI_File_get_atomicity.
func doFileSetAtomicity(fh unsafe.Pointer, flag int) error {
	f, err := fileOf(fh)
	if err != nil {
		return err
	}
	on := int64(0)
	if flag != 0 {
		on = 1
	}
	if err := agree(f.w, nil, on, "the atomicity flag", mpi_ERR_NOT_SAME); err != nil {
		return err
	}
	f.mu.Lock()
	f.atomic = on == 1
	f.mu.Unlock()
	return nil
}

// doFileGetAtomicity is MPI_File_get_atomicity.
func doFileGetAtomicity(fh unsafe.Pointer, flag *int32) error {
	f, err := fileOf(fh)
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	*flag = 0
	if f.atomic {
		*flag = 1
	}
	return nil
}
