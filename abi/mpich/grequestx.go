//go:build cgo

package mpich

// #include "zcalls.h"
import "C"

import (
	"context"
	"fmt"
	"time"
	"unsafe"
)

// MPICH's extended generalized requests (MPIX_Grequest_start) add a poll function,
// which a test calls to make progress, and a wait function, which a wait calls until
// the request completes. A class (MPIX_Grequest_class_create) holds the five functions
// for many requests.

// kindGreqClass is MPICH's handle kind of a generalized request class.
const kindGreqClass = 15

// A grqClass is the functions of MPIX_Grequest_class_create.
type grqClass struct {
	query, free, cancel, poll, wait unsafe.Pointer
}

var grqClasses = newTable[*grqClass](kindGreqClass)

// checkFns fails with MPI_ERR_ARG for a NULL function, as MPICH's MPIX calls do.
func checkFns(query, free, cancel, poll, wait unsafe.Pointer) error {
	for i, f := range []unsafe.Pointer{query, free, cancel, poll, wait} {
		if f == nil {
			return mpiErr(mpi_ERR_ARG, fmt.Sprintf("the %s function is NULL: an extended generalized request needs all five", []string{"query", "free", "cancel", "poll", "wait"}[i]))
		}
	}
	return nil
}

// doXGrequestStart is MPIX_Grequest_start.
func doXGrequestStart(query, free, cancel, poll, wait, extra unsafe.Pointer, req *Request) error {
	if err := checkFns(query, free, cancel, poll, wait); err != nil {
		return err
	}
	g := &grequest{queryFn: query, freeFn: free, cancelFn: cancel, pollFn: poll, waitFn: wait, extra: extra, done: make(chan struct{})}
	*req = Request(reqs.add(&request{grq: g}))
	return nil
}

// doXGrequestClassCreate is MPIX_Grequest_class_create. A class lives as long as the
// process: MPICH has no call that frees one.
func doXGrequestClassCreate(query, free, cancel, poll, wait, out unsafe.Pointer) error {
	if err := checkFns(query, free, cancel, poll, wait); err != nil {
		return err
	}
	if out == nil {
		return mpiErr(mpi_ERR_ARG, "greq_class is NULL")
	}
	*(*int32)(out) = grqClasses.add(&grqClass{query: query, free: free, cancel: cancel, poll: poll, wait: wait})
	return nil
}

// doXGrequestClassAllocate is MPIX_Grequest_class_allocate: a request of the class's
// functions with extra_state extra.
func doXGrequestClassAllocate(class int, extra unsafe.Pointer, req *Request) error {
	c, ok := grqClasses.get(int32(class))
	if !ok {
		return mpiErr(mpi_ERR_ARG, fmt.Sprintf("%#x is not a generalized request class (MPIX_Grequest_class_create makes one)", uint32(class)))
	}
	return doXGrequestStart(c.query, c.free, c.cancel, c.poll, c.wait, extra, req)
}

// isDone reports whether MPI_Grequest_complete was called.
func (g *grequest) isDone() bool {
	select {
	case <-g.done:
		return true
	default:
		return false
	}
}

// poke calls the wait function (wait) or the poll function once.
func (g *grequest) poke(wait bool) error {
	var st Status
	if wait {
		extra := g.extra
		return callbackErr("wait", C.gorma_call_MPIX_Grequest_wait_function(g.waitFn, 1, unsafe.Pointer(&extra), 0, unsafe.Pointer(&st)))
	}
	return callbackErr("poll", C.gorma_call_MPIX_Grequest_poll_function(g.pollFn, g.extra, unsafe.Pointer(&st)))
}

// progress is complete for an extended request, as MPICH's MPI_Test and MPI_Wait
// do: a test polls once, then looks; a wait looks, then polls, until
// MPI_Grequest_complete is called.
func (g *grequest) progress(block bool) (bool, error) {
	if !block {
		if err := g.poke(false); err != nil {
			return true, err
		}
		return g.isDone(), nil
	}
	var p pacer
	for !g.isDone() {
		if err := g.poke(false); err != nil {
			return true, err
		}
		p.pause(context.Background(), g.done)
	}
	return true, nil
}

// waitExtended is MPICH's first step of MPI_Waitall: the wait function of each
// extended request of hs runs until the request completes. A failure leaves the
// request to the wait that follows, which polls and reports it.
func waitExtended(hs []Request) {
	for _, h := range hs {
		r, ok := reqs.get(int32(h))
		if !ok || r.grq == nil || r.grq.waitFn == nil {
			continue
		}
		g := r.grq
		var p pacer
		for !g.isDone() {
			if g.poke(true) != nil {
				break
			}
			p.pause(context.Background(), g.done)
		}
	}
}

// drive is block for an extended request, for the calls on sets of requests: it polls
// until MPI_Grequest_complete is called or ctx ends. A poll's failure ends it; the next
// test polls again and reports the error.
func (g *grequest) drive(ctx context.Context) {
	var p pacer
	for !g.isDone() && ctx.Err() == nil {
		if err := g.poke(false); err != nil {
			return
		}
		p.pause(ctx, g.done)
	}
}

// A pacer spaces the calls of a poll loop: a few immediate retries, then waits on the
// request's completion that double up to a millisecond.
type pacer struct {
	n int
	d time.Duration
}

const (
	pacerSpins = 16
	pacerMax   = time.Millisecond
)

// pause returns at once for the first calls, then when done closes, ctx ends or the
// wait has passed.
func (p *pacer) pause(ctx context.Context, done <-chan struct{}) {
	if p.n < pacerSpins {
		p.n++
		return
	}
	p.d = min(max(2*p.d, time.Microsecond), pacerMax)
	t := time.NewTimer(p.d)
	defer t.Stop()
	select {
	case <-done:
	case <-ctx.Done():
	case <-t.C:
	}
}
