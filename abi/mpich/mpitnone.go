//go:build cgo

package mpich

// #include <stdlib.h>
import "C"

import "unsafe"

// Performance variables: gorma exports none. A pvar session is real, so that a tool
// can make and free one; no handle can be bound to it.

// doTPvarGetNum is MPI_T_pvar_get_num.
func doTPvarGetNum(n *int32) error {
	if err := tLive(); err != nil {
		return err
	}
	*n = 0
	return nil
}

// doTPvarGetInfo is MPI_T_pvar_get_info: there is no index to ask about.
func doTPvarGetInfo(i int, name *byte, nameLen, verbosity, class *int32, dt *Datatype, enum unsafe.Pointer, desc *byte, descLen, bind, readonly, continuous, atomic *int32) error {
	return checkIndex(i, 0, "performance variable")
}

// doTPvarGetIndex is MPI_T_pvar_get_index.
func doTPvarGetIndex(name *byte, class int, i *int32) error {
	if err := tLive(); err != nil {
		return err
	}
	return tErr(mpi_T_ERR_INVALID_NAME, "no performance variable is named %q: gorma exports none", C.GoString((*C.char)(unsafe.Pointer(name))))
}

// doTPvarSessionCreate is MPI_T_pvar_session_create.
func doTPvarSessionCreate(s unsafe.Pointer) error {
	if err := tLive(); err != nil {
		return err
	}
	if s == nil {
		return errNilArg("the session pointer")
	}
	p := newTHandle()
	tState.mu.Lock()
	tState.sessions[p] = true
	tState.mu.Unlock()
	*(*unsafe.Pointer)(s) = p
	return nil
}

// doTPvarSessionFree is MPI_T_pvar_session_free.
func doTPvarSessionFree(s unsafe.Pointer) error {
	if s == nil {
		return errNilArg("the session pointer")
	}
	p := *(*unsafe.Pointer)(s)
	if err := checkPvarSession(p); err != nil {
		return err
	}
	tState.mu.Lock()
	delete(tState.sessions, p)
	tState.mu.Unlock()
	C.free(p)
	*(*unsafe.Pointer)(s) = nil // MPI_T_PVAR_SESSION_NULL
	return nil
}

// checkPvarSession checks that s is a pvar session.
func checkPvarSession(s unsafe.Pointer) error {
	if err := tLive(); err != nil {
		return err
	}
	tState.mu.Lock()
	defer tState.mu.Unlock()
	if !tState.sessions[s] {
		return tErr(mpi_T_ERR_INVALID_SESSION, "invalid performance variable session %p", s)
	}
	return nil
}

// pvarAllHandles is MPI_T_PVAR_ALL_HANDLES (support.c): (void *)-1.
const pvarAllHandles = ^uintptr(0)

// checkPvarHandle checks session s and handle h. No handle exists, so h is valid only
// as MPI_T_PVAR_ALL_HANDLES where all allows it: the call then acts on no variable.
func checkPvarHandle(s, h unsafe.Pointer, all bool) error {
	if err := checkPvarSession(s); err != nil {
		return err
	}
	if all && uintptr(h) == pvarAllHandles {
		return nil
	}
	return tErr(mpi_T_ERR_INVALID_HANDLE, "invalid performance variable handle %p: gorma exports no performance variables", h)
}

// doTPvarHandleAlloc is MPI_T_pvar_handle_alloc: there is no index to bind.
func doTPvarHandleAlloc(s unsafe.Pointer, i int, obj, h unsafe.Pointer, count *int32) error {
	if err := checkPvarSession(s); err != nil {
		return err
	}
	return checkIndex(i, 0, "performance variable")
}

// doTPvarHandleFree is MPI_T_pvar_handle_free.
func doTPvarHandleFree(s, h unsafe.Pointer) error {
	if h == nil {
		return errNilArg("the handle pointer")
	}
	return checkPvarHandle(s, *(*unsafe.Pointer)(h), false)
}

// doTPvarStart is MPI_T_pvar_start.
func doTPvarStart(s, h unsafe.Pointer) error { return checkPvarHandle(s, h, true) }

// doTPvarStop is MPI_T_pvar_stop.
func doTPvarStop(s, h unsafe.Pointer) error { return checkPvarHandle(s, h, true) }

// doTPvarReset is MPI_T_pvar_reset.
func doTPvarReset(s, h unsafe.Pointer) error { return checkPvarHandle(s, h, true) }

// doTPvarRead is MPI_T_pvar_read.
func doTPvarRead(s, h, buf unsafe.Pointer) error { return checkPvarHandle(s, h, false) }

// doTPvarReadreset is MPI_T_pvar_readreset.
func doTPvarReadreset(s, h, buf unsafe.Pointer) error { return checkPvarHandle(s, h, false) }

// doTPvarWrite is MPI_T_pvar_write.
func doTPvarWrite(s, h, buf unsafe.Pointer) error { return checkPvarHandle(s, h, false) }

// Events and event sources: gorma exports none.

// doTEventGetNum is MPI_T_event_get_num.
func doTEventGetNum(n *int32) error {
	if err := tLive(); err != nil {
		return err
	}
	*n = 0
	return nil
}

// doTEventGetInfo is MPI_T_event_get_info: there is no index to ask about.
func doTEventGetInfo(i int, name *byte, nameLen, verbosity *int32, types *Datatype, displs *int64, num *int32, enum unsafe.Pointer, in *Info, desc *byte, descLen, bind *int32) error {
	return checkIndex(i, 0, "event type")
}

// doTEventGetIndex is MPI_T_event_get_index.
func doTEventGetIndex(name *byte, i *int32) error {
	if err := tLive(); err != nil {
		return err
	}
	return tErr(mpi_T_ERR_INVALID_NAME, "no event type is named %q: gorma exports none", C.GoString((*C.char)(unsafe.Pointer(name))))
}

// doTEventHandleAlloc is MPI_T_event_handle_alloc: there is no index to bind.
func doTEventHandleAlloc(i int, obj unsafe.Pointer, in Info, reg unsafe.Pointer) error {
	return checkIndex(i, 0, "event type")
}

// errNoEvent is the error of a call on an event registration or instance: none exists.
func errNoEvent(what string, h unsafe.Pointer) error {
	if err := tLive(); err != nil {
		return err
	}
	return tErr(mpi_T_ERR_INVALID_HANDLE, "invalid event %s %p: gorma exports no events", what, h)
}

// doTEventHandleFree is MPI_T_event_handle_free.
func doTEventHandleFree(reg, user, fn unsafe.Pointer) error { return errNoEvent("registration", reg) }

// doTEventHandleGetInfo is MPI_T_event_handle_get_info.
func doTEventHandleGetInfo(reg unsafe.Pointer, in *Info) error {
	return errNoEvent("registration", reg)
}

// doTEventHandleSetInfo is MPI_T_event_handle_set_info.
func doTEventHandleSetInfo(reg unsafe.Pointer, in Info) error {
	return errNoEvent("registration", reg)
}

// doTEventRegisterCallback is MPI_T_event_register_callback.
func doTEventRegisterCallback(reg unsafe.Pointer, safety int, in Info, user, fn unsafe.Pointer) error {
	return errNoEvent("registration", reg)
}

// doTEventCallbackGetInfo is MPI_T_event_callback_get_info.
func doTEventCallbackGetInfo(reg unsafe.Pointer, safety int, in *Info) error {
	return errNoEvent("registration", reg)
}

// doTEventCallbackSetInfo is MPI_T_event_callback_set_info.
func doTEventCallbackSetInfo(reg unsafe.Pointer, safety int, in Info) error {
	return errNoEvent("registration", reg)
}

// doTEventSetDroppedHandler is MPI_T_event_set_dropped_handler.
func doTEventSetDroppedHandler(reg, fn unsafe.Pointer) error {
	return errNoEvent("registration", reg)
}

// doTEventCopy is MPI_T_event_copy.
func doTEventCopy(ev, buf unsafe.Pointer) error { return errNoEvent("instance", ev) }

// doTEventRead is MPI_T_event_read.
func doTEventRead(ev unsafe.Pointer, i int, buf unsafe.Pointer) error {
	return errNoEvent("instance", ev)
}

// doTEventGetSource is MPI_T_event_get_source.
func doTEventGetSource(ev unsafe.Pointer, source *int32) error {
	return errNoEvent("instance", ev)
}

// doTEventGetTimestamp is MPI_T_event_get_timestamp.
func doTEventGetTimestamp(ev unsafe.Pointer, ts *int64) error {
	return errNoEvent("instance", ev)
}

// doTSourceGetNum is MPI_T_source_get_num.
func doTSourceGetNum(n *int32) error {
	if err := tLive(); err != nil {
		return err
	}
	*n = 0
	return nil
}

// doTSourceGetInfo is MPI_T_source_get_info: there is no index to ask about.
func doTSourceGetInfo(i int, name *byte, nameLen *int32, desc *byte, descLen *int32, order unsafe.Pointer, ticks, maxTS *int64, in *Info) error {
	return checkIndex(i, 0, "event source")
}

// doTSourceGetTimestamp is MPI_T_source_get_timestamp.
func doTSourceGetTimestamp(i int, ts *int64) error {
	return checkIndex(i, 0, "event source")
}
