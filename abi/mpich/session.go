//go:build cgo

package mpich

// #include <stdlib.h>
import "C"

import (
	"fmt"
	"hash/fnv"
	"strconv"
	"sync"
	"unsafe"

	"github.com/gorma-hpc/gorma/internal/gosched"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/substrate"
)

// MPI-4 sessions. The process joins the job once: runtime.Init runs at the first of
// MPI_Init and MPI_Session_init, and World.Finalize at the last of MPI_Finalize and the
// MPI_Session_finalize calls. Each of them holds one reference to the process's runtime.
// Communicators made from a session's groups live on a Dup of Init's World that only
// this file uses, so their creations never match a program's MPI_COMM_WORLD traffic.

// Session is MPI_Session: a C int in MPICH's encoding.
type Session int32

// kindSession is MPICH's handle kind of sessions (MPI_SESSION_NULL is 0x38000000).
const kindSession = 0xe

// A session holds its error handler and the hints it was made with.
type session struct {
	errh  Errhandler
	hints *info
}

var sessions = newTable[*session](kindSession)

// proc is the process's runtime: Init's World, the sessions' World and the number of
// MPI_Init and MPI_Session_init calls not yet finalized.
var proc struct {
	mu    sync.Mutex
	w     *runtime.World
	sw    *runtime.World
	refs  int
	ended bool
}

// startRuntime takes a reference to the process's runtime, joining the job at the first
// reference, and returns Init's World. MPI_Init and MPI_Session_init share it: either may
// come first.
func startRuntime() (*runtime.World, error) {
	proc.mu.Lock()
	defer proc.mu.Unlock()
	if proc.ended {
		return nil, mpiErr(mpi_ERR_OTHER, "the process's MPI runtime was finalized: it cannot be started again")
	}
	if proc.w == nil {
		gosched.SetLocked() // every call comes from a C thread, locked to its goroutine
		substrate.NameCalls(mpiName)
		w, err := runtime.Init(bg)
		if err != nil {
			return nil, err
		}
		sw, err := w.Dup()
		if err != nil {
			return nil, err
		}
		proc.w, proc.sw = w, sw
	}
	proc.refs++
	return proc.w, nil
}

// stopRuntime drops a reference of startRuntime; the last one finalizes the runtime.
func stopRuntime() error {
	proc.mu.Lock()
	defer proc.mu.Unlock()
	proc.refs--
	if proc.refs > 0 {
		return nil
	}
	proc.ended = true
	return proc.w.Finalize(bg)
}

// procWorld returns Init's World, or nil before the runtime starts.
func procWorld() *runtime.World {
	proc.mu.Lock()
	defer proc.mu.Unlock()
	return proc.w
}

// sessionWorld returns the World on which sessions' communicators are made.
func sessionWorld() (*runtime.World, error) {
	proc.mu.Lock()
	defer proc.mu.Unlock()
	if proc.sw == nil || proc.ended {
		return nil, mpiErr(mpi_ERR_OTHER, "no session and no MPI_Init is active: call MPI_Session_init or MPI_Init first")
	}
	return proc.sw, nil
}

// sessionOf returns the session of handle s.
func sessionOf(s Session) (*session, error) {
	if se, ok := sessions.get(int32(s)); ok {
		return se, nil
	}
	return nil, mpiErr(mpi_ERR_SESSION, fmt.Sprintf("invalid session handle %#x", uint32(s)))
}

// failSession is failComm for a session's handler. An invalid session's error goes to
// MPI_COMM_WORLD's handler while MPI_Init is in force, else it ends the job.
func failSession(fn fnID, s Session, err error) int {
	h := Errhandler(mpi_ERRORS_ARE_FATAL)
	if se, e := sessionOf(s); e == nil {
		h = se.errh
	} else if worldComm != nil {
		return failComm(fn, mpi_COMM_WORLD, err)
	}
	return fail(fnNames[fn], h, int32(s), err)
}

// failErrh hands err to h, the handler passed for the object that the call makes
// (MPI_Session_init, MPI_Comm_create_from_group). The handler gets a null object.
func failErrh(fn fnID, h Errhandler, err error) int {
	if h == mpi_ERRHANDLER_NULL || checkErrhAny(h) != nil {
		h = mpi_ERRORS_ARE_FATAL
	}
	return fail(fnNames[fn], h, 0, err)
}

// checkErrhAny checks that h is a predefined handler or one of errhs.
func checkErrhAny(h Errhandler) error {
	switch h {
	case mpi_ERRORS_ARE_FATAL, mpi_ERRORS_RETURN, mpi_ERRORS_ABORT:
		return nil
	}
	if _, ok := errhs.get(int32(h)); !ok {
		return errHandle("error handler", int32(h))
	}
	return nil
}

// checkSessionErrh checks that h may be set on a session: a predefined handler or one
// of MPI_Session_create_errhandler.
func checkSessionErrh(h Errhandler) error {
	if err := checkErrhAny(h); err != nil {
		return err
	}
	if u, ok := errhs.get(int32(h)); ok && !u.forSess {
		return mpiErr(mpi_ERR_ARG, fmt.Sprintf("error handler %#x was made for another kind of object: use MPI_Session_create_errhandler", uint32(h)))
	}
	return nil
}

// doSessionInit is MPI_Session_init. The runtime provides every thread level; info's
// hints are kept for MPI_Session_get_info.
func doSessionInit(in Info, h Errhandler, out *Session) error {
	if err := checkSessionErrh(h); err != nil {
		return err
	}
	hints, err := infoCopy(in)
	if err != nil {
		return err
	}
	if _, ok := hints.get("thread_level"); !ok {
		hints.set("thread_level", "MPI_THREAD_MULTIPLE")
	}
	if _, err := startRuntime(); err != nil {
		return err
	}
	*out = Session(sessions.add(&session{errh: h, hints: hints}))
	return nil
}

// doSessionFinalize is MPI_Session_finalize. The session's communicators must be freed
// first, as MPI asks.
func doSessionFinalize(s *Session) error {
	if _, ok := sessions.del(int32(*s)); !ok {
		return mpiErr(mpi_ERR_SESSION, fmt.Sprintf("invalid session handle %#x", uint32(*s)))
	}
	*s = mpi_SESSION_NULL
	return stopRuntime()
}

// psets are the process sets a session knows, in MPI_Session_get_nth_pset's order.
var psets = []string{"mpi://WORLD", "mpi://SELF"}

// psetGroup returns the group of the process set named name.
func psetGroup(name string) (runtime.Group, error) {
	w := procWorld()
	switch name {
	case "mpi://WORLD":
		return w.Group(), nil
	case "mpi://SELF":
		return w.Group().Incl([]int{w.Rank()})
	}
	return runtime.Group{}, mpiErr(mpi_ERR_ARG, fmt.Sprintf("no process set is named %q: the names are %q and %q", name, psets[0], psets[1]))
}

// doSessionGetNumPsets is MPI_Session_get_num_psets.
func doSessionGetNumPsets(s Session, in Info, n *int32) error {
	if _, err := sessionOf(s); err != nil {
		return err
	}
	*n = int32(len(psets))
	return nil
}

// doSessionGetNthPset is MPI_Session_get_nth_pset: a length of 0 asks for the name's
// length (with its NUL); otherwise the name is written, cut to fit the length.
func doSessionGetNthPset(s Session, in Info, n int, length *int32, name *byte) error {
	if _, err := sessionOf(s); err != nil {
		return err
	}
	if n < 0 || n >= len(psets) {
		return mpiErr(mpi_ERR_ARG, fmt.Sprintf("process set %d is not in [0, %d): MPI_Session_get_num_psets gives the count", n, len(psets)))
	}
	if length == nil {
		return mpiErr(mpi_ERR_ARG, "pset_len is NULL")
	}
	if *length < 0 {
		return mpiErr(mpi_ERR_ARG, fmt.Sprintf("pset_len %d is negative", *length))
	}
	if *length > 0 {
		putString(name, int(*length), psets[n])
	}
	*length = int32(len(psets[n]) + 1)
	return nil
}

// doSessionGetPsetInfo is MPI_Session_get_pset_info: an info with key "mpi_size".
func doSessionGetPsetInfo(s Session, name *byte, out *Info) error {
	if _, err := sessionOf(s); err != nil {
		return err
	}
	g, err := psetGroup(C.GoString((*C.char)(unsafe.Pointer(name))))
	if err != nil {
		return err
	}
	in := newInfo()
	in.set("mpi_size", strconv.Itoa(g.Size()))
	*out = Info(infos.add(in))
	return nil
}

// doSessionGetInfo is MPI_Session_get_info: a copy of the session's hints.
func doSessionGetInfo(s Session, out *Info) error {
	se, err := sessionOf(s)
	if err != nil {
		return err
	}
	*out = Info(infos.add(se.hints.dup()))
	return nil
}

// doSessionCreateErrhandler is MPI_Session_create_errhandler.
func doSessionCreateErrhandler(fn unsafe.Pointer, h *Errhandler) error {
	if fn == nil {
		return mpiErr(mpi_ERR_ARG, "the handler function is NULL")
	}
	*h = Errhandler(errhs.add(&userErrh{fn: fn, forSess: true}))
	return nil
}

// doSessionSetErrhandler is MPI_Session_set_errhandler.
func doSessionSetErrhandler(s Session, h Errhandler) error {
	se, err := sessionOf(s)
	if err != nil {
		return err
	}
	if err := checkSessionErrh(h); err != nil {
		return err
	}
	se.errh = h
	return nil
}

// doSessionGetErrhandler is MPI_Session_get_errhandler.
func doSessionGetErrhandler(s Session, h *Errhandler) error {
	se, err := sessionOf(s)
	if err != nil {
		return err
	}
	*h = se.errh
	return nil
}

// doSessionCallErrhandler is MPI_Session_call_errhandler. A session's handler has the
// calling convention of a communicator's: pointers to the handle and the code.
func doSessionCallErrhandler(s Session, code int) error {
	se, err := sessionOf(s)
	if err != nil {
		return err
	}
	return callErrh("MPI_Session_call_errhandler", se.errh, int32(s), code, false)
}

// doGroupFromSessionPset is MPI_Group_from_session_pset.
func doGroupFromSessionPset(s Session, name *byte, out *Group) error {
	if _, err := sessionOf(s); err != nil {
		return err
	}
	g, err := psetGroup(C.GoString((*C.char)(unsafe.Pointer(name))))
	if err != nil {
		return err
	}
	*out = addGroup(g)
	return nil
}

// stringTag maps a string tag of MPI_Comm_create_from_group onto a tag of the sessions'
// World: equal strings give equal tags, so that the members' calls match, and distinct
// strings distinct tags but for hash collisions.
func stringTag(s *byte) (int, error) {
	if s == nil {
		return 0, mpiErr(mpi_ERR_ARG, "the string tag is NULL")
	}
	h := fnv.New32a()
	h.Write([]byte(C.GoString((*C.char)(unsafe.Pointer(s)))))
	return int(h.Sum32() & runtime.MaxTag), nil
}

// createArgs checks the arguments common to the *_from_group calls and returns the
// sessions' World, the tag and the new communicator's hints.
func createArgs(stringtag *byte, in Info, h Errhandler) (*runtime.World, int, *info, error) {
	sw, err := sessionWorld()
	if err != nil {
		return nil, 0, nil, err
	}
	tag, err := stringTag(stringtag)
	if err != nil {
		return nil, 0, nil, err
	}
	if h != mpi_ERRHANDLER_NULL {
		if err := checkErrh(h, false); err != nil {
			return nil, 0, nil, err
		}
	}
	hints, err := infoCopy(in)
	return sw, tag, hints, err
}

// memberGroup returns the group of handle g, which must hold the calling process.
func memberGroup(g Group, sw *runtime.World, what string) (runtime.Group, error) {
	grp, err := groupOf(g)
	if err != nil {
		return grp, err
	}
	if r, err := sw.Group().TranslateRanks([]int{sw.Rank()}, grp); err != nil || r[0] < 0 {
		return grp, mpiErr(mpi_ERR_GROUP, fmt.Sprintf("the calling process is not in %s: only its members call", what))
	}
	return grp, nil
}

// addSessionComm registers w with handler h (MPI_ERRHANDLER_NULL: MPI_ERRORS_ARE_FATAL)
// and hints.
func addSessionComm(w *runtime.World, h Errhandler, hints *info, out *Comm) error {
	if h == mpi_ERRHANDLER_NULL {
		h = mpi_ERRORS_ARE_FATAL
	}
	if err := runtime.SetAttr(w, hintsKey, hints); err != nil {
		return err
	}
	*out = Comm(comms.add(&comm{w: w, errh: h}))
	return nil
}

// doCommCreateFromGroup is MPI_Comm_create_from_group: World.CreateGroup on the
// sessions' World, collective over g's members, matched by the string tag.
func doCommCreateFromGroup(g Group, stringtag *byte, in Info, h Errhandler, out *Comm) error {
	sw, tag, hints, err := createArgs(stringtag, in, h)
	if err != nil {
		return err
	}
	grp, err := memberGroup(g, sw, "the group")
	if err != nil {
		return err
	}
	w, err := sw.CreateGroup(bg, grp, tag)
	if err != nil {
		return err
	}
	return addSessionComm(w, h, hints, out)
}

// doIntercommCreateFromGroups is MPI_Intercomm_create_from_groups: each side makes a
// World over its group, then the leaders join the two on the sessions' World.
func doIntercommCreateFromGroups(lg Group, localLeader int, rg Group, remoteLeader int, stringtag *byte, in Info, h Errhandler, out *Comm) error {
	sw, tag, hints, err := createArgs(stringtag, in, h)
	if err != nil {
		return err
	}
	local, err := memberGroup(lg, sw, "the local group")
	if err != nil {
		return err
	}
	remote, err := groupOf(rg)
	if err != nil {
		return err
	}
	if localLeader < 0 || localLeader >= local.Size() {
		return errRank(localLeader, local.Size())
	}
	if remoteLeader < 0 || remoteLeader >= remote.Size() {
		return errRank(remoteLeader, remote.Size())
	}
	peer, err := remote.TranslateRanks([]int{remoteLeader}, sw.Group())
	if err != nil {
		return err
	}
	lw, err := sw.CreateGroup(bg, local, tag)
	if err != nil {
		return err
	}
	w, err := lw.CreateIntercomm(bg, localLeader, sw, peer[0], tag)
	if err != nil {
		lw.Free()
		return err
	}
	if err := lw.Free(); err != nil {
		return err
	}
	return addSessionComm(w, h, hints, out)
}
