//go:build cgo

package mpich

// #include <stdlib.h>
import "C"

import (
	"fmt"
	"os"
	"sync"
	"unsafe"
)

// The MPI tool interface (MPI_T). Its control variables are gorma's environment knobs:
// each is a read-only string (MPI_CHAR) whose value is the variable's value in the
// process's environment, or its default when unset. Each package that reads knobs is a
// category. gorma exports no performance variables, events or event sources: their
// counts are 0 and every index is invalid. MPI_T calls need neither MPI_Init nor a
// session, and return their error class without calling an error handler.

// The scope of every control variable: mpi.h's MPI_T_SCOPE_READONLY, the enumerator
// after MPI_T_SCOPE_CONSTANT.
const tScopeReadonly = mpi_T_SCOPE_CONSTANT + 1

// A cvar is one control variable: a GORMA_* knob.
type cvar struct {
	name, def, desc, category string
}

// cvars are the knobs, grouped by category in tCategories' order (docs/api.md lists
// them with their full effect).
var cvars = []cvar{
	{"GORMA_PROGRESS", "hybrid", "how a waiting rank waits: spin, hybrid or block", "runtime"},
	{"GORMA_PROCS", "auto", "the rank's GOMAXPROCS: auto, go or a count", "runtime"},
	{"GORMA_DEBUG", "", "1: every rank prints its host fit at Init", "runtime"},
	{"GORMA_SPIN", "", "hybrid mode's spin budget, a Go duration; unset: the waiting rule", "runtime"},
	{"GORMA_FOLD", "on", "on: a rank leaves a processor that other work takes", "runtime"},
	{"GORMA_EAGER_LIMIT", "", "largest message sent by copy, in bytes; unset: 16K on shm, 64K on tcp", "runtime"},
	{"GORMA_TCP_CONGESTION", "cubic", "TCP congestion control of the tcp transport", "runtime"},
	{"GORMA_QUIET_SINGLETON", "", "1 silences Init's note on a job size it cannot join", "runtime"},
	{"GORMA_PROFILE", "", "a folder for each rank's profile of what it sends", "runtime"},
	{"GORMA_SUMMARY", "", "1: rank 0 prints the profile's summary at Finalize", "runtime"},
	{"GORMA_TRACE", "", "a file for the job's timeline (Chrome trace-event JSON)", "runtime"},
	{"GORMA_TRACE_EVENTS", "131072", "the events each rank's flight recorder keeps", "runtime"},
	{"GORMA_VERBOSE", "0", "1 prints what the transport saw after a failure's text", "runtime"},
	{"GORMA_PMI", "auto", "the wire spoken to a foreign PMI server: auto, 1 or 2", "pmi"},
	{"GORMA_FT", "", "1 makes the job fault tolerant", "pmi"},
	{"GORMA_ALLREDUCE", "auto", "forces one Allreduce algorithm", "collectives"},
	{"GORMA_SCRATCH", "arena", "how collectives get scratch memory: arena or fresh", "collectives"},
	{"GORMA_SHM_TEAM", "", "the most ranks of a host in one shared-memory team; unset: 32, then 16", "collectives"},
	{"GORMA_SHM_TUNE", "", "overrides the size classes of the one-host collectives", "collectives"},
	{"GORMA_WINDOW_EAGER", "16", "the largest window (in ranks) mapped in full at creation", "window"},
	{"GORMA_CHECK", "", "1 guards freed window memory and compares collective calls across ranks", "arena"},
}

// A tCategory is a package that reads knobs.
type tCategory struct {
	name, desc string
}

var tCategories = []tCategory{
	{"runtime", "knobs of package runtime, read by runtime.Init"},
	{"pmi", "knobs of package pmi, read by runtime.Init"},
	{"collectives", "knobs of package collectives, read at the first collective that needs them"},
	{"window", "knobs of package window, read at each window's creation"},
	{"arena", "knobs of package transport/verbs/arena, read once per process"},
}

// value is the cvar's current value.
func (v cvar) value() string {
	if s, ok := os.LookupEnv(v.name); ok {
		return s
	}
	return v.def
}

// tState is the tool interface's state: its MPI_T_init_thread count and its handles,
// each a byte of C memory whose address the program holds.
var tState struct {
	mu       sync.Mutex
	refs     int
	cvarHs   map[unsafe.Pointer]int // handle -> cvar index
	sessions map[unsafe.Pointer]bool
}

func tErr(class int, format string, args ...any) error {
	return mpiErr(class, fmt.Sprintf(format, args...))
}

// errNilArg is the error of a NULL pointer where the call writes or reads.
func errNilArg(what string) error {
	return tErr(mpi_ERR_ARG, "%s is NULL", what)
}

// failT returns err's class: MPI_T calls call no error handler.
func failT(err error) int { return classOf(err) }

// tLive checks that MPI_T_init_thread is in force.
func tLive() error {
	tState.mu.Lock()
	defer tState.mu.Unlock()
	if tState.refs == 0 {
		return tErr(mpi_T_ERR_NOT_INITIALIZED, "the tool interface is not initialized: call MPI_T_init_thread first")
	}
	return nil
}

// tString writes s into the buffer buf of *n bytes, as MPICH does: a NULL buf or a 0
// length asks for the length; *n becomes the length written or needed, with the NUL.
func tString(buf *byte, n *int32, s string) {
	if n == nil {
		return
	}
	if buf != nil && *n > 0 {
		*n = int32(putString(buf, int(*n), s) + 1)
		return
	}
	*n = int32(len(s) + 1)
}

func setInt(p *int32, v int) {
	if p != nil {
		*p = int32(v)
	}
}

// newTHandle returns a fresh C address to serve as an MPI_T handle.
func newTHandle() unsafe.Pointer { return C.malloc(1) }

// doTInitThread is MPI_T_init_thread: every thread level is provided.
func doTInitThread(required int, provided *int32) error {
	tState.mu.Lock()
	defer tState.mu.Unlock()
	if tState.refs == 0 {
		tState.cvarHs = map[unsafe.Pointer]int{}
		tState.sessions = map[unsafe.Pointer]bool{}
	}
	tState.refs++
	if required < mpi_THREAD_SINGLE || required > mpi_THREAD_MULTIPLE {
		required = mpi_THREAD_MULTIPLE
	}
	*provided = int32(required)
	return nil
}

// doTFinalize is MPI_T_finalize: the last call frees the handles left.
func doTFinalize() error {
	tState.mu.Lock()
	defer tState.mu.Unlock()
	if tState.refs == 0 {
		return tErr(mpi_T_ERR_NOT_INITIALIZED, "MPI_T_finalize without a matching MPI_T_init_thread")
	}
	tState.refs--
	if tState.refs == 0 {
		for h := range tState.cvarHs {
			C.free(h)
		}
		for h := range tState.sessions {
			C.free(h)
		}
		tState.cvarHs, tState.sessions = nil, nil
	}
	return nil
}

// checkIndex checks the index i of one of n items of kind what.
func checkIndex(i, n int, what string) error {
	if err := tLive(); err != nil {
		return err
	}
	if i < 0 || i >= n {
		return tErr(mpi_T_ERR_INVALID_INDEX, "%s index %d is not in [0, %d)", what, i, n)
	}
	return nil
}

// doTCvarGetNum is MPI_T_cvar_get_num.
func doTCvarGetNum(n *int32) error {
	if err := tLive(); err != nil {
		return err
	}
	*n = int32(len(cvars))
	return nil
}

// doTCvarGetInfo is MPI_T_cvar_get_info. Each cvar is a string (MPI_CHAR) bound to
// no object, of scope MPI_T_SCOPE_READONLY.
func doTCvarGetInfo(i int, name *byte, nameLen, verbosity *int32, dt *Datatype, enum unsafe.Pointer, desc *byte, descLen, bind, scope *int32) error {
	if err := checkIndex(i, len(cvars), "control variable"); err != nil {
		return err
	}
	v := cvars[i]
	tString(name, nameLen, v.name)
	tString(desc, descLen, v.desc)
	setInt(verbosity, mpi_T_VERBOSITY_USER_BASIC)
	if dt != nil {
		*dt = mpi_CHAR
	}
	if enum != nil {
		*(*unsafe.Pointer)(enum) = nil // MPI_T_ENUM_NULL
	}
	setInt(bind, mpi_T_BIND_NO_OBJECT)
	setInt(scope, tScopeReadonly)
	return nil
}

// doTCvarGetIndex is MPI_T_cvar_get_index.
func doTCvarGetIndex(name *byte, i *int32) error {
	if err := tLive(); err != nil {
		return err
	}
	s := C.GoString((*C.char)(unsafe.Pointer(name)))
	for k, v := range cvars {
		if v.name == s {
			*i = int32(k)
			return nil
		}
	}
	return tErr(mpi_T_ERR_INVALID_NAME, "no control variable is named %q", s)
}

// doTCvarHandleAlloc is MPI_T_cvar_handle_alloc: count is the value's length with its
// NUL, the MPI_CHAR elements that MPI_T_cvar_read writes.
func doTCvarHandleAlloc(i int, obj unsafe.Pointer, h unsafe.Pointer, count *int32) error {
	if err := checkIndex(i, len(cvars), "control variable"); err != nil {
		return err
	}
	if h == nil || count == nil {
		return errNilArg("the handle or count pointer")
	}
	p := newTHandle()
	tState.mu.Lock()
	tState.cvarHs[p] = i
	tState.mu.Unlock()
	*(*unsafe.Pointer)(h) = p
	*count = int32(len(cvars[i].value()) + 1)
	return nil
}

// cvarOf returns the cvar index of handle h.
func cvarOf(h unsafe.Pointer) (int, error) {
	if err := tLive(); err != nil {
		return 0, err
	}
	tState.mu.Lock()
	defer tState.mu.Unlock()
	i, ok := tState.cvarHs[h]
	if !ok {
		return 0, tErr(mpi_T_ERR_INVALID_HANDLE, "invalid control variable handle %p", h)
	}
	return i, nil
}

// doTCvarHandleFree is MPI_T_cvar_handle_free.
func doTCvarHandleFree(h unsafe.Pointer) error {
	if h == nil {
		return errNilArg("the handle pointer")
	}
	p := *(*unsafe.Pointer)(h)
	if _, err := cvarOf(p); err != nil {
		return err
	}
	tState.mu.Lock()
	delete(tState.cvarHs, p)
	tState.mu.Unlock()
	C.free(p)
	*(*unsafe.Pointer)(h) = nil // MPI_T_CVAR_HANDLE_NULL
	return nil
}

// doTCvarRead is MPI_T_cvar_read: the value with its NUL.
func doTCvarRead(h unsafe.Pointer, buf unsafe.Pointer) error {
	i, err := cvarOf(h)
	if err != nil {
		return err
	}
	if buf == nil {
		return tErr(mpi_ERR_BUFFER, "the buffer is NULL")
	}
	s := cvars[i].value()
	putString((*byte)(buf), len(s)+1, s)
	return nil
}

// doTCvarWrite is MPI_T_cvar_write: every cvar is read-only, since the runtime reads
// the knobs once.
func doTCvarWrite(h unsafe.Pointer, buf unsafe.Pointer) error {
	i, err := cvarOf(h)
	if err != nil {
		return err
	}
	return tErr(mpi_T_ERR_CVAR_SET_NEVER, "control variable %s is read-only: set it in the environment before the job starts", cvars[i].name)
}

// doTCategoryGetNum is MPI_T_category_get_num.
func doTCategoryGetNum(n *int32) error {
	if err := tLive(); err != nil {
		return err
	}
	*n = int32(len(tCategories))
	return nil
}

// categoryCvars returns the cvar indices of category c.
func categoryCvars(c int) []int32 {
	var out []int32
	for i, v := range cvars {
		if v.category == tCategories[c].name {
			out = append(out, int32(i))
		}
	}
	return out
}

// doTCategoryGetInfo is MPI_T_category_get_info. No category has subcategories or
// performance variables.
func doTCategoryGetInfo(c int, name *byte, nameLen *int32, desc *byte, descLen, numCvars, numPvars, numCats *int32) error {
	if err := checkIndex(c, len(tCategories), "category"); err != nil {
		return err
	}
	tString(name, nameLen, tCategories[c].name)
	tString(desc, descLen, tCategories[c].desc)
	setInt(numCvars, len(categoryCvars(c)))
	setInt(numPvars, 0)
	setInt(numCats, 0)
	return nil
}

// doTCategoryGetIndex is MPI_T_category_get_index.
func doTCategoryGetIndex(name *byte, c *int32) error {
	if err := tLive(); err != nil {
		return err
	}
	s := C.GoString((*C.char)(unsafe.Pointer(name)))
	for k, cat := range tCategories {
		if cat.name == s {
			*c = int32(k)
			return nil
		}
	}
	return tErr(mpi_T_ERR_INVALID_NAME, "no category is named %q", s)
}

// doTCategoryGetCvars is MPI_T_category_get_cvars: the first n of c's cvar indices.
func doTCategoryGetCvars(c, n int, indices *int32) error {
	if err := checkIndex(c, len(tCategories), "category"); err != nil {
		return err
	}
	if n < 0 {
		return errCount(n)
	}
	idx := categoryCvars(c)
	if n > len(idx) {
		n = len(idx)
	}
	if n > 0 && indices == nil {
		return errNilArg("the indices array")
	}
	if n > 0 {
		copy(unsafe.Slice(indices, n), idx)
	}
	return nil
}

// doTCategoryGetPvars is MPI_T_category_get_pvars: no category has any.
func doTCategoryGetPvars(c, n int, indices *int32) error {
	return checkEmptyList(c, n)
}

// doTCategoryGetCategories is MPI_T_category_get_categories: no category has any.
func doTCategoryGetCategories(c, n int, indices *int32) error {
	return checkEmptyList(c, n)
}

// doTCategoryGetEvents is MPI_T_category_get_events: no category has any.
func doTCategoryGetEvents(c, n int, indices *int32) error {
	return checkEmptyList(c, n)
}

func checkEmptyList(c, n int) error {
	if err := checkIndex(c, len(tCategories), "category"); err != nil {
		return err
	}
	if n < 0 {
		return errCount(n)
	}
	return nil
}

// doTCategoryGetNumEvents is MPI_T_category_get_num_events.
func doTCategoryGetNumEvents(c int, n *int32) error {
	if err := checkIndex(c, len(tCategories), "category"); err != nil {
		return err
	}
	*n = 0
	return nil
}

// doTCategoryChanged is MPI_T_category_changed: the categories never change.
func doTCategoryChanged(update *int32) error {
	if err := tLive(); err != nil {
		return err
	}
	*update = 0
	return nil
}

// doTEnumGetInfo is MPI_T_enum_get_info: no variable has an enumeration, so every
// handle is invalid.
func doTEnumGetInfo(e unsafe.Pointer, num *int32, name *byte, nameLen *int32) error {
	return errNoEnum(e)
}

// doTEnumGetItem is MPI_T_enum_get_item.
func doTEnumGetItem(e unsafe.Pointer, i int, value *int32, name *byte, nameLen *int32) error {
	return errNoEnum(e)
}

func errNoEnum(e unsafe.Pointer) error {
	if err := tLive(); err != nil {
		return err
	}
	return tErr(mpi_T_ERR_INVALID_HANDLE, "invalid enumeration handle %p: no variable of gorma has an enumeration", e)
}
