//go:build cgo

package mpich

// #include "zcalls.h"
import "C"

import (
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"sync"
	"unsafe"

	"github.com/gorma-hpc/gorma/datatype"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/window"
)

// An mpiError is a failure with its MPI error class.
type mpiError struct {
	class int
	msg   string
}

func (e *mpiError) Error() string { return e.msg }

func mpiErr(class int, msg string) error { return &mpiError{class, msg} }

// classOf maps an error of the layers below onto MPI's error classes.
func classOf(err error) int {
	var me *mpiError
	switch {
	case errors.As(err, &me):
		return me.class
	case errors.Is(err, runtime.ErrTruncated):
		return mpi_ERR_TRUNCATE
	case errors.Is(err, runtime.ErrProcFailed):
		return mpix_ERR_PROC_FAILED
	case errors.Is(err, runtime.ErrRevoked):
		return mpix_ERR_REVOKED
	case errors.Is(err, datatype.ErrInvalid), errors.Is(err, datatype.ErrRange):
		return mpi_ERR_TYPE
	case errors.Is(err, runtime.ErrInvalid):
		return mpi_ERR_ARG
	case errors.Is(err, window.ErrEpoch):
		return mpi_ERR_RMA_SYNC
	case errors.Is(err, window.ErrRange):
		return mpi_ERR_RMA_RANGE
	case errors.Is(err, window.ErrFlavor):
		return mpi_ERR_RMA_FLAVOR
	case errors.Is(err, window.ErrNotShared):
		return mpi_ERR_RMA_SHARED
	case errors.Is(err, window.ErrFreed):
		return mpi_ERR_WIN
	case errors.Is(err, window.ErrInvalid):
		return mpi_ERR_ARG
	}
	return mpi_ERR_OTHER
}

// Error codes carry their class in the low 7 bits, as MPICH's do (MPI_Error_class
// masks them), and a slot of codeMsgs above them: MPI_Error_string gives the failure's
// own message while the slot is not reused.
const (
	classMask = 0x7f
	codeSlots = 1024
)

var codes struct {
	sync.Mutex
	next int
	msgs [codeSlots]string
}

// newCode returns a code of class that carries msg.
func newCode(class int, msg string) int {
	codes.Lock()
	defer codes.Unlock()
	s := codes.next
	codes.next = (codes.next + 1) % codeSlots
	codes.msgs[s] = msg
	return class | (s+1)<<7
}

// codeMsg returns the message of code, or "" for a bare class.
func codeMsg(code int) string {
	s := (code&^dynMask)>>7 - 1 // a user class's codes carry the dynamic bit
	if s < 0 || s >= codeSlots {
		return ""
	}
	codes.Lock()
	defer codes.Unlock()
	return codes.msgs[s]
}

// failComm hands err, the failure of fn, to comm's error handler and returns the code
// the call returns. The default handler, MPI_ERRORS_ARE_FATAL, ends the job.
func failComm(fn fnID, c Comm, err error) int {
	return failCommNamed(fnNames[fn], c, err)
}

// failCommNamed is failComm for the function named fn.
func failCommNamed(fn string, c Comm, err error) int {
	h := Errhandler(mpi_ERRORS_ARE_FATAL)
	if co, e := commOf(c); e == nil {
		h = co.errh
	} else if worldComm != nil {
		h, c = worldComm.errh, mpi_COMM_WORLD // an invalid communicator's error goes to MPI_COMM_WORLD's handler
	}
	return fail(fn, h, int32(c), err)
}

// gorma_absent is the body of each function that mpi.h names and gorma does not
// cover: it fails with MPI_ERR_UNSUPPORTED_OPERATION through the handler of the
// call's communicator (kind 1) or window (kind 2), else MPI_COMM_WORLD's.
//
//export gorma_absent
func gorma_absent(name *C.char, kind, obj C.int) C.int {
	fn := C.GoString(name)
	err := errUnsupported(fn)
	switch kind {
	case 1:
		return C.int(failCommNamed(fn, Comm(obj), err))
	case 2:
		return C.int(failWinNamed(fn, Win(obj), err))
	}
	return C.int(failCommNamed(fn, mpi_COMM_WORLD, err))
}

// failWin is failComm for a window's handler.
func failWin(fn fnID, w Win, err error) int {
	return failWinNamed(fnNames[fn], w, err)
}

// failWinNamed is failWin for the function named fn.
func failWinNamed(fn string, w Win, err error) int {
	h := Errhandler(mpi_ERRORS_ARE_FATAL)
	if wo, e := winOf(w); e == nil {
		h = wo.errh
	} else if worldComm != nil {
		h, w = worldComm.errh, Win(mpi_COMM_WORLD) // as failComm: an invalid window's error goes to MPI_COMM_WORLD's handler
	}
	return fail(fn, h, int32(w), err)
}

// fail applies handler h to err, raised by the function fn on the communicator or
// window obj: it returns the call's code, calls a user's handler with it, or ends the
// job.
func fail(fn string, h Errhandler, obj int32, err error) int {
	class := classOf(err)
	msg := fmt.Sprintf("%s: %s: %v", fn, className(class), err)
	switch h {
	case mpi_ERRORS_RETURN:
		return newCode(class, msg)
	case mpi_ERRORS_ARE_FATAL, mpi_ERRORS_ABORT:
		fatal(msg)
		return class
	}
	u, ok := errhs.get(int32(h))
	if !ok {
		fatal(msg)
		return class
	}
	code := newCode(class, msg)
	o, c := C.int(obj), C.int(code)
	if u.win {
		C.gorma_call_MPI_Win_errhandler_function(u.fn, unsafe.Pointer(&o), unsafe.Pointer(&c))
	} else {
		C.gorma_call_MPI_Comm_errhandler_function(u.fn, unsafe.Pointer(&o), unsafe.Pointer(&c))
	}
	return code
}

// A userErrh is an error handler of MPI_Comm_create_errhandler,
// MPI_Win_create_errhandler, MPI_Session_create_errhandler or
// MPI_File_create_errhandler (file.go): a C function, called with the object and the
// code.
type userErrh struct {
	fn      unsafe.Pointer
	win     bool
	forSess bool // made by MPI_Session_create_errhandler
	file    bool
}

var errhs = newTable[*userErrh](kindErrh)

// doCommCreateErrhandler is MPI_Comm_create_errhandler.
func doCommCreateErrhandler(fn unsafe.Pointer, h *Errhandler) error {
	return createErrh(fn, false, h)
}

// doWinCreateErrhandler is MPI_Win_create_errhandler.
func doWinCreateErrhandler(fn unsafe.Pointer, h *Errhandler) error {
	return createErrh(fn, true, h)
}

func createErrh(fn unsafe.Pointer, win bool, h *Errhandler) error {
	if fn == nil {
		return mpiErr(mpi_ERR_ARG, "the handler function is NULL")
	}
	*h = Errhandler(errhs.add(&userErrh{fn: fn, win: win}))
	return nil
}

// checkErrh checks that h may be set on a communicator (win false) or a window.
func checkErrh(h Errhandler, win bool) error {
	switch h {
	case mpi_ERRORS_ARE_FATAL, mpi_ERRORS_RETURN, mpi_ERRORS_ABORT:
		return nil
	}
	u, ok := errhs.get(int32(h))
	if !ok {
		return errHandle("error handler", int32(h))
	}
	if u.win != win || u.forSess || u.file {
		return mpiErr(mpi_ERR_ARG, fmt.Sprintf("error handler %#x was made for another kind of object", uint32(h)))
	}
	return nil
}

// fatal ends the job with msg: the launcher prints it, and every rank stops.
func fatal(msg string) {
	w := procWorld()
	if w == nil {
		fmt.Fprintf(os.Stderr, "gorma: %s\n", msg)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "gorma: rank %d: %s\n", w.Rank(), msg)
	w.Abort(1, fmt.Sprintf("rank %d: %s", w.Rank(), msg))
}

// catch turns a panic in fn into MPI_ERR_INTERN through the world's handler: the
// library never crashes the process with a Go panic.
func catch(fn fnID, rc *C.int) {
	if r := recover(); r != nil {
		*rc = C.int(failComm(fn, mpi_COMM_WORLD, mpiErr(mpi_ERR_INTERN, fmt.Sprintf("internal error: %v\n%s", r, debug.Stack()))))
	}
}

// className is the text of an error class, as MPI_Error_string gives it.
func className(class int) string {
	if s, ok := classNames[class]; ok {
		return s
	}
	return fmt.Sprintf("error class %d", class)
}

// classNames are MPICH's texts of the error classes, but for
// MPI_ERR_UNSUPPORTED_OPERATION, which MPICH names a file operation's.
var classNames = map[int]string{
	mpi_SUCCESS:                   "No MPI error",
	mpi_ERR_BUFFER:                "Invalid buffer pointer",
	mpi_ERR_COUNT:                 "Invalid count",
	mpi_ERR_TYPE:                  "Invalid datatype",
	mpi_ERR_TAG:                   "Invalid tag",
	mpi_ERR_COMM:                  "Invalid communicator",
	mpi_ERR_RANK:                  "Invalid rank",
	mpi_ERR_ROOT:                  "Invalid root",
	mpi_ERR_GROUP:                 "Invalid group",
	mpi_ERR_OP:                    "Invalid MPI_Op",
	mpi_ERR_TOPOLOGY:              "Invalid topology",
	mpi_ERR_DIMS:                  "Invalid dimension argument",
	mpi_ERR_ARG:                   "Invalid argument",
	mpi_ERR_UNKNOWN:               "Unknown error.  Please file a bug report.",
	mpi_ERR_TRUNCATE:              "Message truncated",
	mpi_ERR_OTHER:                 "Other MPI error",
	mpi_ERR_INTERN:                "Internal MPI error!",
	mpi_ERR_IN_STATUS:             "See the MPI_ERROR field in MPI_Status for the error code",
	mpi_ERR_PENDING:               "Pending request (no error)",
	mpi_ERR_REQUEST:               "Request pending due to failure",
	mpi_ERR_ACCESS:                "Access denied to file",
	mpi_ERR_AMODE:                 "Invalid amode value in MPI_File_open",
	mpi_ERR_BAD_FILE:              "Invalid file name",
	mpi_ERR_CONVERSION:            "An error occurred in a user-defined data conversion function",
	mpi_ERR_DUP_DATAREP:           "The requested datarep name has already been specified to MPI_REGISTER_DATAREP",
	mpi_ERR_FILE_EXISTS:           "File exists",
	mpi_ERR_FILE_IN_USE:           "File in use by some process",
	mpi_ERR_FILE:                  "Invalid MPI_File",
	mpi_ERR_INFO:                  "Invalid MPI_Info",
	mpi_ERR_INFO_KEY:              "Invalid key for MPI_Info",
	mpi_ERR_INFO_VALUE:            "Invalid MPI_Info value",
	mpi_ERR_INFO_NOKEY:            "MPI_Info key is not defined",
	mpi_ERR_IO:                    "Other I/O error",
	mpi_ERR_NAME:                  "Invalid service name (see MPI_Publish_name)",
	mpi_ERR_NO_MEM:                "Unable to allocate memory for MPI_Alloc_mem",
	mpi_ERR_NOT_SAME:              "Inconsistent arguments to collective routine",
	mpi_ERR_NO_SPACE:              "Not enough space for file",
	mpi_ERR_NO_SUCH_FILE:          "File does not exist",
	mpi_ERR_PORT:                  "Invalid port",
	mpi_ERR_QUOTA:                 "Quota exceeded for files",
	mpi_ERR_READ_ONLY:             "Read-only file or filesystem name",
	mpi_ERR_SERVICE:               "Attempt to lookup an unknown service name",
	mpi_ERR_SPAWN:                 "Error in spawn call",
	mpi_ERR_UNSUPPORTED_DATAREP:   "Unsupported datarep passed to MPI_File_set_view",
	mpi_ERR_UNSUPPORTED_OPERATION: "Unsupported operation",
	mpi_ERR_WIN:                   "Invalid MPI_Win",
	mpi_ERR_BASE:                  "Invalid base address",
	mpi_ERR_LOCKTYPE:              "Invalid locktype argument",
	mpi_ERR_KEYVAL:                "Invalid keyval",
	mpi_ERR_RMA_CONFLICT:          "Conflicting accesses to window",
	mpi_ERR_RMA_SYNC:              "Wrong synchronization of RMA calls",
	mpi_ERR_SIZE:                  "Invalid size argument in RMA call",
	mpi_ERR_DISP:                  "Invalid displacement argument in RMA call",
	mpi_ERR_ASSERT:                "Invalid assert argument",
	mpi_ERR_RMA_RANGE:             "Target memory is not contained within the window",
	mpi_ERR_RMA_ATTACH:            "Memory cannot be attached",
	mpi_ERR_RMA_SHARED:            "Memory cannot be shared",
	mpi_ERR_RMA_FLAVOR:            "Incorrect window flavor",
	mpix_ERR_PROC_FAILED:          "Process failed",
	mpix_ERR_PROC_FAILED_PENDING:  "Request pending due to failure",
	mpix_ERR_REVOKED:              "Communication object revoked",
	mpix_ERR_EAGAIN:               "Operation could not be issued (EAGAIN)",
	mpix_ERR_NOREQ:                "failure occurred while allocating memory for a request object",
}

// Errors of the calls' arguments.
var (
	errNotInit = mpiErr(mpi_ERR_OTHER, "called before MPI_Init or after MPI_Finalize: call MPI_Init first")
)

func errCount(n int) error {
	return mpiErr(mpi_ERR_COUNT, fmt.Sprintf("count %d is negative or too large", n))
}

func errRank(r, size int) error {
	return mpiErr(mpi_ERR_RANK, fmt.Sprintf("rank %d is not in [0, %d), MPI_ANY_SOURCE or MPI_PROC_NULL", r, size))
}

func errUnsupported(what string) error {
	return mpiErr(mpi_ERR_UNSUPPORTED_OPERATION, what+" is not supported by gorma's libmpich (docs/abi.md lists what is)")
}

// doErrorString is MPI_Error_string.
func doErrorString(code int, s *byte, n *int32) error {
	*n = int32(putString(s, mpi_MAX_ERROR_STRING, errorText(code)))
	return nil
}

// doErrorClass is MPI_Error_class. A user class (errx.go) keeps its dynamic bit.
func doErrorClass(code int, class *int32) error {
	*class = int32(code & (classMask | dynMask))
	return nil
}
