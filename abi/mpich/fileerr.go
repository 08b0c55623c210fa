//go:build cgo

package mpich

// #include "zcalls.h"
import "C"

import (
	"fmt"
	"unsafe"
)

// The error handlers of files. A file's failures go to its handler, which it takes
// from MPI_FILE_NULL's at its open (MPI_ERRORS_RETURN unless set), as MPI specifies.

// failFile hands err, the failure of fn, to the error handler of file fh, or of
// MPI_FILE_NULL when fh is nil or not open, and returns the call's code.
func failFile(fn fnID, fh unsafe.Pointer, err error) int {
	files.mu.Lock()
	h := files.nullErrh
	files.mu.Unlock()
	if f := lookupFile(fh); f != nil {
		f.mu.Lock()
		h = f.errh
		f.mu.Unlock()
	} else {
		fh = nil
	}
	if u, ok := errhs.get(int32(h)); ok && u.file {
		class := classOf(err)
		code := newCode(class, fmt.Sprintf("%s: %s: %v", fnNames[fn], className(class), err))
		callFileErrh(u, uintptr(fh), code)
		return code
	}
	return fail(fnNames[fn], h, 0, err)
}

// callFileErrh calls a user's file error handler with the handle and the code.
func callFileErrh(u *userErrh, fh uintptr, code int) {
	c := C.int(code)
	C.gorma_call_MPI_File_errhandler_function(u.fn, unsafe.Pointer(&fh), unsafe.Pointer(&c))
}

// doFileCreateErrhandler is MPI_File_create_errhandler.
func doFileCreateErrhandler(fn unsafe.Pointer, h *Errhandler) error {
	if fn == nil {
		return mpiErr(mpi_ERR_ARG, "the handler function is NULL")
	}
	*h = Errhandler(errhs.add(&userErrh{fn: fn, file: true}))
	return nil
}

// checkFileErrh checks that h may be set on a file.
func checkFileErrh(h Errhandler) error {
	switch h {
	case mpi_ERRORS_ARE_FATAL, mpi_ERRORS_RETURN, mpi_ERRORS_ABORT:
		return nil
	}
	u, ok := errhs.get(int32(h))
	if !ok {
		return errHandle("error handler", int32(h))
	}
	if !u.file {
		return mpiErr(mpi_ERR_ARG, fmt.Sprintf("error handler %#x was made for another kind of object: use MPI_File_create_errhandler", uint32(h)))
	}
	return nil
}

// doFileSetErrhandler is MPI_File_set_errhandler; on MPI_FILE_NULL it sets the
// handler that files get at their open.
func doFileSetErrhandler(fh unsafe.Pointer, h Errhandler) error {
	if err := checkFileErrh(h); err != nil {
		return err
	}
	if fh == nil {
		files.mu.Lock()
		files.nullErrh = h
		files.mu.Unlock()
		return nil
	}
	f, err := fileOf(fh)
	if err != nil {
		return err
	}
	f.mu.Lock()
	f.errh = h
	f.mu.Unlock()
	return nil
}

// doFileGetErrhandler is MPI_File_get_errhandler.
func doFileGetErrhandler(fh unsafe.Pointer, h *Errhandler) error {
	if fh == nil {
		files.mu.Lock()
		*h = files.nullErrh
		files.mu.Unlock()
		return nil
	}
	f, err := fileOf(fh)
	if err != nil {
		return err
	}
	f.mu.Lock()
	*h = f.errh
	f.mu.Unlock()
	return nil
}

// doFileCallErrhandler is MPI_File_call_errhandler: the file's handler is called
// with code, as a failure of a call on the file would call it.
func doFileCallErrhandler(fh unsafe.Pointer, code int) error {
	var h Errhandler
	if err := doFileGetErrhandler(fh, &h); err != nil {
		return err
	}
	if u, ok := errhs.get(int32(h)); ok && u.file {
		callFileErrh(u, uintptr(fh), code)
		return nil
	}
	return callErrh("MPI_File_call_errhandler", h, 0, code, false)
}
