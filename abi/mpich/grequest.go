//go:build cgo

package mpich

// #include "zcalls.h"
import "C"

import (
	"context"
	"fmt"
	"sync"
	"unsafe"

	"github.com/gorma-hpc/gorma/runtime"
)

// A grequest is a generalized request (MPI_Grequest_start): an operation the program
// runs itself and ends with MPI_Grequest_complete, from any thread. The library calls
// its query function for the status each time a completion is reported or
// MPI_Request_get_status reads it, its free function when its handle is freed after
// completion, and its cancel function at MPI_Cancel. A NULL function does nothing.
type grequest struct {
	queryFn, freeFn, cancelFn unsafe.Pointer // C functions
	pollFn, waitFn            unsafe.Pointer // MPIX_Grequest_start's C functions, or both nil
	extra                     unsafe.Pointer // the program's extra_state, passed to each
	done                      chan struct{}  // closed by MPI_Grequest_complete

	mu        sync.Mutex
	completed bool // MPI_Grequest_complete was called
	orphan    bool // MPI_Request_free came first: MPI_Grequest_complete frees the handle
}

// doGrequestStart is MPI_Grequest_start.
func doGrequestStart(query, free, cancel, extra unsafe.Pointer, req *Request) error {
	g := &grequest{queryFn: query, freeFn: free, cancelFn: cancel, extra: extra, done: make(chan struct{})}
	*req = Request(reqs.add(&request{grq: g}))
	return nil
}

// doGrequestComplete is MPI_Grequest_complete: waits and tests on the request see it
// complete. The handle may have been freed by MPI_Request_free; its free function then
// runs here.
func doGrequestComplete(h Request) error {
	r, ok := reqs.get(int32(h))
	if !ok || r.grq == nil {
		return mpiErr(mpi_ERR_REQUEST, fmt.Sprintf("request %#x is not a generalized request (MPI_Grequest_start makes one)", uint32(h)))
	}
	g := r.grq
	g.mu.Lock()
	if g.completed {
		g.mu.Unlock()
		return mpiErr(mpi_ERR_REQUEST, fmt.Sprintf("generalized request %#x was completed already: call MPI_Grequest_complete once", uint32(h)))
	}
	g.completed = true
	orphan := g.orphan
	close(g.done)
	g.mu.Unlock()
	if orphan {
		reqs.del(int32(h))
		return g.callFree()
	}
	return nil
}

// complete waits for (block) or tests MPI_Grequest_complete, and reports whether it
// was called. An extended request's poll function drives it as MPICH's does: a test
// polls once, a wait polls until the request completes. A poll function's error
// completes the request with it.
func (g *grequest) complete(block bool) (bool, error) {
	if g.pollFn != nil {
		return g.progress(block)
	}
	if block {
		<-g.done
		return true, nil
	}
	select {
	case <-g.done:
		return true, nil
	default:
		return false, nil
	}
}

// query asks the query function for the outcome of the completed request.
func (g *grequest) query() outcome {
	s := Status{Source: mpi_ANY_SOURCE, Tag: mpi_ANY_TAG}
	var err error
	if g.queryFn != nil {
		err = callbackErr("query", C.gorma_call_MPI_Grequest_query_function(g.queryFn, g.extra, unsafe.Pointer(&s)))
	}
	return outcome{st: s.toRuntime(), err: err}
}

// block returns once MPI_Grequest_complete was called or ctx has ended. An extended
// request is driven by its poll function between short waits.
func (g *grequest) block(ctx context.Context) {
	if g.pollFn != nil {
		g.drive(ctx)
		return
	}
	select {
	case <-g.done:
	case <-ctx.Done():
	}
}

// release runs the free function once a wait or test has reported the completion.
func (g *grequest) release() error { return g.callFree() }

// freeReq is MPI_Request_free of handle h: the free function runs now if the request
// has completed, else at MPI_Grequest_complete, which finds h until then.
func (g *grequest) freeReq(h int32) error {
	g.mu.Lock()
	if !g.completed {
		g.orphan = true
		g.mu.Unlock()
		return nil
	}
	g.mu.Unlock()
	reqs.del(h)
	return g.callFree()
}

// cancel is MPI_Cancel: the cancel function learns whether the request has completed.
func (g *grequest) cancel() error {
	g.mu.Lock()
	completed := g.completed
	g.mu.Unlock()
	if g.cancelFn == nil {
		return nil
	}
	return callbackErr("cancel", C.gorma_call_MPI_Grequest_cancel_function(g.cancelFn, g.extra, C.int(b2i(completed))))
}

func (g *grequest) callFree() error {
	if g.freeFn == nil {
		return nil
	}
	return callbackErr("free", C.gorma_call_MPI_Grequest_free_function(g.freeFn, g.extra))
}

// callbackErr is the error of a generalized request's function that returned rc:
// nil for MPI_SUCCESS, else an error of rc's class.
func callbackErr(fn string, rc C.int) error {
	if rc == 0 {
		return nil
	}
	return mpiErr(int(rc)&classMask, fmt.Sprintf("the generalized request's %s function returned error code %d", fn, int(rc)))
}

// toRuntime is s as a runtime Status: the inverse of set.
func (s *Status) toRuntime() runtime.Status {
	st := runtime.Status{Source: int(s.Source), Tag: int(s.Tag), Bytes: int(s.bytes()), Cancelled: s.countHiCancelled&1 != 0}
	switch s.Source {
	case mpi_PROC_NULL:
		st.Source = runtime.ProcNull
	case mpi_ANY_SOURCE:
		st.Source = runtime.AnySource
	}
	if s.Tag == mpi_ANY_TAG {
		st.Tag = runtime.AnyTag
	}
	return st
}
