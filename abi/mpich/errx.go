//go:build cgo

package mpich

// #include "zcalls.h"
import "C"

import (
	"fmt"
	"sync"
	"unsafe"
)

// User error classes and codes (MPI_Add_error_class, MPI_Add_error_code,
// MPI_Add_error_string and MPICH's MPIX_Delete_error_*), and the calls that invoke or
// swap error handlers.
//
// A user class is MPICH's: its index (1 to 127) with ERROR_DYN_MASK (bit 30), which
// MPI_Error_class keeps. A user code is its class, its index (1 to 8191) in bits 8-20,
// and bit 29, which keeps it apart from the codes the library's calls return (a class
// and a message slot in bits 7-17, errors.go). Both lie above MPI_ERR_LASTCODE's
// predefined classes, and MPI_LASTUSEDCODE is the largest made.
const (
	dynMask        = 0x40000000 // MPICH's ERROR_DYN_MASK
	userCodeMark   = 0x20000000
	userCodeShift  = 8
	userCodeMask   = 0x1fff << userCodeShift
	maxUserClasses = 128  // MPICH's ERROR_MAX_NCLASS
	maxUserCodes   = 8192 // MPICH's ERROR_MAX_NCODE
)

// userErrs holds the user classes and codes, each by index, with its message.
var userErrs struct {
	mu      sync.Mutex
	classes map[int]string
	codes   map[int]userCode
	// Indexes are handed out in order, and a deleted one is reused first-freed first,
	// as MPICH does.
	nextClass, nextCode int
	freeClasses         []int
	freeCodes           []int
	last                int // the largest class or code made
}

type userCode struct {
	class int
	msg   string
}

// callbackClass is the class of code, a user callback's error code.
func callbackClass(code int) int {
	if class := code & (classMask | dynMask); class != 0 {
		return class
	}
	return mpi_ERR_OTHER
}

// userIndex pops a free index of free, else takes *next; 0 when all max are taken.
func userIndex(free *[]int, next *int, max int) int {
	if len(*free) > 0 {
		i := (*free)[0]
		*free = (*free)[1:]
		return i
	}
	if *next+1 >= max {
		return 0
	}
	*next++
	return *next
}

// doAddErrorClass is MPI_Add_error_class.
func doAddErrorClass(class *int32) error {
	u := &userErrs
	u.mu.Lock()
	defer u.mu.Unlock()
	i := userIndex(&u.freeClasses, &u.nextClass, maxUserClasses)
	if i == 0 {
		return mpiErr(mpi_ERR_OTHER, fmt.Sprintf("all %d user error classes are in use: delete one with MPIX_Delete_error_class", maxUserClasses-1))
	}
	if u.classes == nil {
		u.classes = map[int]string{}
	}
	u.classes[i] = ""
	*class = int32(i | dynMask)
	u.last = max(u.last, int(*class))
	return nil
}

// userClass reports whether class is a class of MPI_Add_error_class in use. u.mu is held.
func userClass(class int) bool {
	if class&^(classMask|dynMask) != 0 || class&dynMask == 0 {
		return false
	}
	_, ok := userErrs.classes[class&classMask]
	return ok
}

// codeIndex returns the index of code if it is a code of MPI_Add_error_code in use, else 0.
// u.mu is held.
func codeIndex(code int) int {
	if code&userCodeMark == 0 || code&^(classMask|dynMask|userCodeMark|userCodeMask) != 0 {
		return 0
	}
	i := (code & userCodeMask) >> userCodeShift
	if c, ok := userErrs.codes[i]; ok && c.class == code&(classMask|dynMask) {
		return i
	}
	return 0
}

// doAddErrorCode is MPI_Add_error_code: a code of a predefined or a user class.
func doAddErrorCode(class int, code *int32) error {
	u := &userErrs
	u.mu.Lock()
	defer u.mu.Unlock()
	if !userClass(class) && (class <= mpi_SUCCESS || class > mpich_ERR_LAST_MPIX) {
		return mpiErr(mpi_ERR_ARG, fmt.Sprintf("error class %#x is neither predefined nor made by MPI_Add_error_class", class))
	}
	i := userIndex(&u.freeCodes, &u.nextCode, maxUserCodes)
	if i == 0 {
		return mpiErr(mpi_ERR_OTHER, fmt.Sprintf("all %d user error codes are in use: delete one with MPIX_Delete_error_code", maxUserCodes-1))
	}
	if u.codes == nil {
		u.codes = map[int]userCode{}
	}
	u.codes[i] = userCode{class: class}
	*code = int32(class | userCodeMark | i<<userCodeShift)
	u.last = max(u.last, int(*code))
	return nil
}

// doAddErrorString is MPI_Add_error_string: the message of a user class or code.
func doAddErrorString(code int, s *byte) error {
	if s == nil {
		return mpiErr(mpi_ERR_ARG, "the string is NULL")
	}
	msg := C.GoString((*C.char)(unsafe.Pointer(s)))
	if len(msg) >= mpi_MAX_ERROR_STRING {
		return mpiErr(mpi_ERR_ARG, fmt.Sprintf("the string has %d characters, more than MPI_MAX_ERROR_STRING-1 (%d)", len(msg), mpi_MAX_ERROR_STRING-1))
	}
	u := &userErrs
	u.mu.Lock()
	defer u.mu.Unlock()
	if i := codeIndex(code); i != 0 {
		u.codes[i] = userCode{class: u.codes[i].class, msg: msg}
		return nil
	}
	if userClass(code) {
		u.classes[code&classMask] = msg
		return nil
	}
	return mpiErr(mpi_ERR_ARG, fmt.Sprintf("error code %#x is not a class or code of MPI_Add_error_class or MPI_Add_error_code: the predefined messages cannot be changed", code))
}

// doXDeleteErrorClass is MPIX_Delete_error_class (MPI 4.1's MPI_Remove_error_class).
func doXDeleteErrorClass(class int) error {
	u := &userErrs
	u.mu.Lock()
	defer u.mu.Unlock()
	if !userClass(class) {
		return mpiErr(mpi_ERR_OTHER, fmt.Sprintf("error class %#x was not made by MPI_Add_error_class or was deleted", class))
	}
	for _, c := range u.codes {
		if c.class == class {
			return mpiErr(mpi_ERR_OTHER, fmt.Sprintf("error class %#x still has codes: delete them first with MPIX_Delete_error_code", class))
		}
	}
	delete(u.classes, class&classMask)
	u.freeClasses = append(u.freeClasses, class&classMask)
	return nil
}

// doXDeleteErrorCode is MPIX_Delete_error_code (MPI 4.1's MPI_Remove_error_code).
func doXDeleteErrorCode(code int) error {
	u := &userErrs
	u.mu.Lock()
	defer u.mu.Unlock()
	i := codeIndex(code)
	if i == 0 {
		return mpiErr(mpi_ERR_OTHER, fmt.Sprintf("error code %#x was not made by MPI_Add_error_code or was deleted", code))
	}
	delete(u.codes, i)
	u.freeCodes = append(u.freeCodes, i)
	return nil
}

// doXDeleteErrorString is MPIX_Delete_error_string (MPI 4.1's MPI_Remove_error_string):
// the user class or code has the empty message again.
func doXDeleteErrorString(code int) error {
	u := &userErrs
	u.mu.Lock()
	defer u.mu.Unlock()
	if i := codeIndex(code); i != 0 {
		u.codes[i] = userCode{class: u.codes[i].class}
		return nil
	}
	if userClass(code) {
		u.classes[code&classMask] = ""
		return nil
	}
	return mpiErr(mpi_ERR_OTHER, fmt.Sprintf("error code %#x is not a class or code of MPI_Add_error_class or MPI_Add_error_code", code))
}

// userErrString returns the message of a user class or code (empty until
// MPI_Add_error_string), and whether code is one.
func userErrString(code int) (string, bool) {
	u := &userErrs
	u.mu.Lock()
	defer u.mu.Unlock()
	if i := codeIndex(code); i != 0 {
		return u.codes[i].msg, true
	}
	if userClass(code) {
		return u.classes[code&classMask], true
	}
	return "", false
}

// lastUsedCode is MPI_LASTUSEDCODE's value: the largest code the library returns, or
// the largest user class or code if larger.
func lastUsedCode() int {
	userErrs.mu.Lock()
	defer userErrs.mu.Unlock()
	return max(codeSlots<<7|classMask, userErrs.last)
}

// errorText is MPI_Error_string's text of code.
func errorText(code int) string {
	if msg, ok := userErrString(code); ok {
		return msg
	}
	if msg := codeMsg(code); msg != "" {
		return msg
	}
	return className(code & classMask)
}

// callErrh calls handler h, the handler of the communicator or window obj, with code,
// as MPI_Comm_call_errhandler does: MPI_ERRORS_RETURN does nothing, MPI_ERRORS_ARE_FATAL
// and MPI_ERRORS_ABORT end the job, a user's handler is called.
func callErrh(call string, h Errhandler, obj int32, code int, win bool) error {
	switch h {
	case mpi_ERRORS_RETURN:
		return nil
	case mpi_ERRORS_ARE_FATAL, mpi_ERRORS_ABORT:
		fatal(fmt.Sprintf("%s: error code %#x: %s", call, code, errorText(code)))
		return nil
	}
	u, ok := errhs.get(int32(h))
	if !ok {
		return errHandle("error handler", int32(h))
	}
	o, c := C.int(obj), C.int(code)
	if win {
		C.gorma_call_MPI_Win_errhandler_function(u.fn, unsafe.Pointer(&o), unsafe.Pointer(&c))
	} else {
		C.gorma_call_MPI_Comm_errhandler_function(u.fn, unsafe.Pointer(&o), unsafe.Pointer(&c))
	}
	return nil
}

// doCommCallErrhandler is MPI_Comm_call_errhandler.
func doCommCallErrhandler(c Comm, code int) error {
	co, err := commOf(c)
	if err != nil {
		return err
	}
	return callErrh("MPI_Comm_call_errhandler", co.errh, int32(c), code, false)
}

// doWinCallErrhandler is MPI_Win_call_errhandler.
func doWinCallErrhandler(h Win, code int) error {
	wo, err := winOf(h)
	if err != nil {
		return err
	}
	return callErrh("MPI_Win_call_errhandler", wo.errh, int32(h), code, true)
}

// doWinGetErrhandler is MPI_Win_get_errhandler.
func doWinGetErrhandler(h Win, e *Errhandler) error {
	wo, err := winOf(h)
	if err != nil {
		return err
	}
	*e = wo.errh
	return nil
}

// doErrhandlerCreate is MPI-1's MPI_Errhandler_create: MPI_Comm_create_errhandler.
func doErrhandlerCreate(fn unsafe.Pointer, h *Errhandler) error {
	return doCommCreateErrhandler(fn, h)
}

// doErrhandlerGet is MPI-1's MPI_Errhandler_get: MPI_Comm_get_errhandler.
func doErrhandlerGet(c Comm, h *Errhandler) error { return doCommGetErrhandler(c, h) }

// doErrhandlerSet is MPI-1's MPI_Errhandler_set: MPI_Comm_set_errhandler.
func doErrhandlerSet(c Comm, h Errhandler) error { return doCommSetErrhandler(c, h) }
