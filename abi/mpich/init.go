//go:build cgo

package mpich

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/gorma-hpc/gorma/runtime"
)

// bg is the context of every blocking call: MPI's calls have no deadline.
var bg = context.Background()

// A comm is a communicator: a World, its error handler and its attributes.
type comm struct {
	w     *runtime.World
	errh  Errhandler
	attrs attrs
}

var (
	// world is the job's World from MPI_Init until MPI_Finalize.
	world     *runtime.World
	worldComm *comm
	finalized bool
	// selfComm is MPI_COMM_SELF, made at its first use under selfOnce, and read
	// without it after that.
	selfOnce sync.Mutex
	selfComm atomic.Pointer[comm]
	comms    = newTable[*comm](kindComm)
)

// commOf returns the communicator of handle c.
func commOf(c Comm) (*comm, error) {
	switch c {
	case mpi_COMM_WORLD:
		if worldComm == nil {
			return nil, errNotInit
		}
		return worldComm, nil
	case mpi_COMM_SELF:
		return self()
	}
	if co, ok := comms.get(int32(c)); ok {
		return co, nil
	}
	if worldComm == nil {
		return nil, errNotInit
	}
	return nil, errHandle("communicator", int32(c))
}

// worldOf returns the World of handle c.
func worldOf(c Comm) (*runtime.World, error) {
	if c == mpi_COMM_WORLD && worldComm != nil {
		return world, nil
	}
	co, err := commOf(c)
	if err != nil {
		return nil, err
	}
	return co.w, nil
}

// self makes MPI_COMM_SELF: a World of this rank alone, which only it takes part in.
func self() (*comm, error) {
	if co := selfComm.Load(); co != nil {
		return co, nil
	}
	selfOnce.Lock()
	defer selfOnce.Unlock()
	if co := selfComm.Load(); co != nil {
		return co, nil
	}
	if world == nil {
		return nil, errNotInit
	}
	g, err := world.Group().Incl([]int{world.Rank()})
	if err != nil {
		return nil, err
	}
	w, err := world.CreateGroup(bg, g, 0)
	if err != nil {
		return nil, err
	}
	co := &comm{w: w, errh: mpi_ERRORS_ARE_FATAL}
	selfComm.Store(co)
	return co, nil
}

// doInit is MPI_Init: runtime.Init, unless an MPI_Session started it. argc and argv are left as they are.
func doInit(argc *int32, argv unsafe.Pointer) error {
	if world != nil || finalized {
		return mpiErr(mpi_ERR_OTHER, "MPI_Init was called already: call it once")
	}
	w, err := startRuntime()
	if err != nil {
		return err
	}
	world = w
	worldComm = &comm{w: w, errh: mpi_ERRORS_ARE_FATAL}
	return nil
}

// doInitThread is MPI_Init_thread: every level is provided.
func doInitThread(argc *int32, argv unsafe.Pointer, required int, provided *int32) error {
	if err := doInit(argc, argv); err != nil {
		return err
	}
	if required < mpi_THREAD_SINGLE || required > mpi_THREAD_MULTIPLE {
		required = mpi_THREAD_MULTIPLE
	}
	*provided = int32(required)
	return nil
}

// doQueryThread is MPI_Query_thread.
func doQueryThread(provided *int32) error {
	*provided = mpi_THREAD_MULTIPLE
	return nil
}

// doIsThreadMain is MPI_Is_thread_main: the library serves every thread alike.
func doIsThreadMain(flag *int32) error {
	*flag = 1
	return nil
}

// doInitialized is MPI_Initialized.
func doInitialized(flag *int32) error {
	*flag = b2i(world != nil || finalized)
	return nil
}

// doFinalized is MPI_Finalized.
func doFinalized(flag *int32) error {
	*flag = b2i(finalized)
	return nil
}

// doFinalize is MPI_Finalize: World.Finalize, or at the last MPI_Session_finalize
// while an MPI_Session is active. MPI_COMM_SELF's attributes are deleted
// first, as MPI asks, so that their delete callbacks may still call the library.
func doFinalize() error {
	if world == nil {
		return errNotInit
	}
	if co := selfComm.Load(); co != nil {
		if err := deleteAttrs(co, mpi_COMM_SELF); err != nil {
			return err
		}
	}
	finalized = true
	return stopRuntime() // session.go: the last finalize of MPI_Finalize and MPI_Session_finalize ends the runtime
}

// doAbort is MPI_Abort: World.Abort. It does not return.
func doAbort(c Comm, code int) error {
	w := procWorld()
	if w == nil {
		os.Exit(code)
	}
	w.Abort(code, fmt.Sprintf("MPI_Abort(%#x, %d) called by rank %d", uint32(c), code, w.Rank()))
	return nil
}

// doCommRank is MPI_Comm_rank.
func doCommRank(c Comm, rank *int32) error {
	w, err := worldOf(c)
	if err != nil {
		return err
	}
	*rank = int32(w.Rank())
	return nil
}

// doCommSize is MPI_Comm_size.
func doCommSize(c Comm, size *int32) error {
	w, err := worldOf(c)
	if err != nil {
		return err
	}
	*size = int32(w.Size())
	return nil
}

// doGetProcessorName is MPI_Get_processor_name: the host's name.
func doGetProcessorName(name *byte, n *int32) error {
	h, err := os.Hostname()
	if err != nil {
		return err
	}
	*n = int32(putString(name, mpi_MAX_PROCESSOR_NAME, h))
	return nil
}

// libraryVersion is what MPI_Get_library_version reports.
const libraryVersion = "gorma libmpich.so.12 (MPICH ABI, MPI 4.0)"

// doGetLibraryVersion is MPI_Get_library_version.
func doGetLibraryVersion(s *byte, n *int32) error {
	*n = int32(putString(s, mpi_MAX_LIBRARY_VERSION_STRING, libraryVersion))
	return nil
}

// doGetVersion is MPI_Get_version.
func doGetVersion(version, subversion *int32) error {
	*version, *subversion = mpi_VERSION, mpi_SUBVERSION
	return nil
}

// putString writes s into the C buffer dst of max bytes, cut to fit with its NUL, and
// returns the length written.
func putString(dst *byte, max int, s string) int {
	if len(s) > max-1 {
		s = s[:max-1]
	}
	b := unsafe.Slice(dst, len(s)+1)
	copy(b, s)
	b[len(s)] = 0
	return len(s)
}

func b2i(b bool) int32 {
	if b {
		return 1
	}
	return 0
}
