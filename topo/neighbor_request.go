package topo

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"unsafe"

	"github.com/gorma-hpc/gorma/internal/prof"
	"github.com/gorma-hpc/gorma/internal/trace"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/substrate"
)

// Request is a neighbourhood collective in flight: a nonblocking one (IneighborAllgather
// and the other I functions) or a persistent one (NeighborAllgatherInit and the other
// Init functions).
//
// A nonblocking Request is active from the call that made it until Wait returned or Test
// reported it finished. A persistent Request is inactive until Start, active until its
// call has finished, then inactive again and ready for the next Start; Free releases it.
// While a Request is active its buffers belong to the library: the caller must not write
// send nor read or write recv.
//
// Wait, Test, Start and Free may be called from any goroutine, one at a time per
// Request.
type Request struct {
	op         string // the call's name in errors: "neighbor_alltoall"
	h          *hood
	persistent bool
	kind       prof.CallKind                       // the profile's kind of the call
	base       uint64                              // the call's first tag (see hood.next), fixed at Init for a persistent one
	post       func(r *Request, base uint64) error // posts the call's receives, then its sends

	mu     sync.Mutex
	ob     substrate.ObsCall  // the active call's observation (observe), zero when off
	reqs   []*runtime.Request // the active call's receives, then its sends
	pool   []*runtime.Request // one runtime Request per slot, made at the first call and reused at every Start
	slots  []slot             // what each of reqs does
	active bool
	freed  bool
	err    error // the last finished call's error
}

// slot is one posted operation: the block it fills or sends, the neighbour, for a
// receive the elements expected (-1 for a send), and for a send its bytes.
type slot struct{ block, peer, want, n int }

// newRequest returns the inactive Request of the call op on t, or the error of a
// topology that cannot take one.
func newRequest(op string, t Topology, persistent bool) (*Request, error) {
	if t == nil {
		return nil, invalidf(op, "nil topology")
	}
	h := t.neighborhood()
	if h == nil {
		return nil, invalidf(op, "a nil topology (a rank beyond a grid or Graph gets a nil one and takes no part) or one not made by this package's constructors")
	}
	if h.bad != nil {
		return nil, wrap(op, h.bad)
	}
	if err := substrate.FreedErr(h.comm); err != nil {
		return nil, fmt.Errorf("topo: %s: %w (the topology's World was freed)", op, err)
	}
	// The call's number is taken before its arguments are checked, so that a rank whose
	// arguments fail stays in step with its neighbours for the calls after it.
	return &Request{op: op, h: h, persistent: persistent, base: h.next(), kind: neighborKind(op)}, nil
}

// neighborKind returns the profile's kind of the call op ("neighbor_alltoallv_init"):
// each of the five calls has its own, whether blocking, nonblocking or persistent.
func neighborKind(op string) prof.CallKind {
	switch strings.TrimSuffix(op, "_init") {
	case "neighbor_allgather":
		return prof.CallNeighborAllgather
	case "neighbor_allgatherv":
		return prof.CallNeighborAllgatherv
	case "neighbor_alltoallv":
		return prof.CallNeighborAlltoallv
	case "neighbor_alltoallw":
		return prof.CallNeighborAlltoallw
	}
	return prof.CallNeighborAlltoall
}

// start posts a nonblocking call, or returns the error (nothing posted).
func (r *Request) start() (*Request, error) {
	if err := r.begin(r.base); err != nil {
		return nil, err
	}
	return r, nil
}

// begin posts r's call with the tags from base and marks r active. If a post fails it
// withdraws what it posted and returns the error.
func (r *Request) begin(base uint64) error {
	if r.pool == nil {
		n := len(r.h.in) + len(r.h.out)
		all := make([]runtime.Request, n)
		r.pool, r.reqs, r.slots = make([]*runtime.Request, n), make([]*runtime.Request, 0, n), make([]slot, 0, n)
		for i := range all {
			r.pool[i] = &all[i]
		}
	}
	r.reqs, r.slots, r.err = r.reqs[:0], r.slots[:0], nil
	if err := r.post(r, base); err != nil {
		for _, q := range r.reqs {
			q.Cancel()
		}
		r.reqs, r.slots, r.pool = r.reqs[:0], r.slots[:0], nil // the cancelled ones may not complete
		return err
	}
	r.active = true
	r.observe()
	return nil
}

// observe starts observing the call just posted, when the rank observes its calls: one
// call of its kind, and each block sent as collective data for its neighbour, as Open
// MPI's coll monitoring counts a neighbourhood collective. finish records it.
func (r *Request) observe() {
	o := r.h.obs
	if o == nil {
		return
	}
	r.ob = o.Begin(r.kind)
	for _, s := range r.slots {
		if s.want < 0 {
			o.Coll(nil, r.h.members, s.peer, s.n)
		}
	}
}

// postBlocks posts r's receives of the blocks recv[k] from the neighbours h.in[k], then
// its sends of send[k] to h.out[k], skipping NoNeighbor slots.
func postBlocks[T runtime.Elem](r *Request, base uint64, recv, send [][]T) error {
	h := r.h
	me := h.comm.Rank()
	for k, b := range recv {
		p := h.in[k]
		if p == NoNeighbor {
			continue
		}
		q := r.pooled()
		if err := runtime.IrecvWith(q, h.comm, b, p, h.recvTag(base, k)); err != nil {
			return fmt.Errorf("topo: %s: rank %d posting the receive of block %d from rank %d: %w", r.op, me, k, p, err)
		}
		r.reqs = append(r.reqs, q)
		r.slots = append(r.slots, slot{k, p, len(b), 0})
	}
	for k, b := range send {
		p := h.out[k]
		if p == NoNeighbor {
			continue
		}
		q := r.pooled()
		if err := runtime.IsendWith(q, h.comm, b, p, h.sendTag(base, k)); err != nil {
			return fmt.Errorf("topo: %s: rank %d sending block %d to rank %d: %w", r.op, me, k, p, err)
		}
		r.reqs = append(r.reqs, q)
		r.slots = append(r.slots, slot{k, p, -1, len(b) * int(unsafe.Sizeof(*new(T)))})
	}
	return nil
}

// pooled returns the runtime Request for the call's next operation: new, or one that
// completed in r's last call.
func (r *Request) pooled() *runtime.Request { return r.pool[len(r.reqs)] }

// Wait returns when r's call has finished, with its error (nil if every block arrived
// whole), or when ctx ends, with ctx's error: r then stays active and may be waited for
// again. A persistent Request that is not active returns its last call's error (nil if
// it was never started).
//
// A neighbour that sent a block of another length than this rank's count for it fails
// the call at this rank with runtime.ErrMismatch (shorter) or runtime.ErrTruncated
// (longer), the error naming the block and the neighbour.
func (r *Request) Wait(ctx context.Context) error {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.freed {
		return r.errFreed("Wait")
	}
	if !r.active {
		return r.err
	}
	if ctx == nil {
		return invalidf(r.op, "Wait: nil context")
	}
	for _, q := range r.reqs {
		if _, err := q.Wait(ctx); err != nil && ctx.Err() != nil {
			return fmt.Errorf("topo: %s: waiting: %w", r.op, context.Cause(ctx))
		}
	}
	r.finish()
	return r.err
}

// Test reports, without blocking, whether r's call has finished and, if it has, its
// error, as Wait would return it. A persistent Request that is not active counts as
// finished.
func (r *Request) Test() (bool, error) {
	if r == nil {
		return true, nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.freed {
		return true, r.errFreed("Test")
	}
	if !r.active {
		return true, r.err
	}
	if done, _ := runtime.TestAll(r.reqs, nil); !done {
		return false, nil
	}
	r.finish()
	return true, r.err
}

// finish ends r's active call, all of whose operations have completed, and sets r.err.
func (r *Request) finish() {
	me := r.h.comm.Rank()
	var errs []error
	for i, q := range r.reqs {
		st, err := q.Wait(context.Background()) // completed: returns at once
		s := r.slots[i]
		switch {
		case s.want < 0:
			if err != nil {
				errs = append(errs, fmt.Errorf("topo: %s: rank %d sending block %d to rank %d: %w", r.op, me, s.block, s.peer, err))
			}
		case err != nil:
			errs = append(errs, fmt.Errorf("topo: %s: rank %d receiving block %d (%d elements) from rank %d: %w", r.op, me, s.block, s.want, s.peer, err))
		case st.Count != s.want:
			errs = append(errs, fmt.Errorf("topo: %s: %w: rank %d received %d elements from rank %d into block %d, expected %d (the count a rank sends to a neighbour must equal the neighbour's count for it)",
				r.op, runtime.ErrMismatch, me, st.Count, s.peer, s.block, s.want))
		}
	}
	r.err = errors.Join(errs...)
	r.active = false
	if r.ob.On() {
		sent := 0
		for _, s := range r.slots {
			sent += s.n
		}
		r.ob.End(trace.Collective, sent, trace.NoPeer, -1, 0) // labelled with its kind
		r.ob = substrate.ObsCall{}
	}
	if !r.persistent {
		r.reqs, r.slots, r.pool = nil, nil, nil
	}
}

// Start starts the call of a persistent Request (MPI_Start): it posts the receives and
// sends of the call and returns. Every rank of the topology starts it, the k-th Start of
// a Request matching the k-th Start of the same Request at its neighbours. Start fails
// with runtime.ErrInvalid, and starts nothing, on a Request that is not persistent, is
// active (Wait for it first) or was freed.
func (r *Request) Start() error {
	if r == nil {
		return fmt.Errorf("topo: Start: %w: nil Request", runtime.ErrInvalid)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case !r.persistent:
		return invalidf(r.op, "Start: not a persistent Request (made by an Init function)")
	case r.freed:
		return r.errFreed("Start")
	case r.active:
		return invalidf(r.op, "Start: the Request is active (its last call has not finished: Wait for it first)")
	}
	return r.begin(r.base)
}

// Free releases a persistent Request (MPI_Request_free); it cannot be started again.
// Free fails with runtime.ErrInvalid on an active Request (Wait for it first) or a freed
// one; a nonblocking Request needs no Free.
func (r *Request) Free() error {
	if r == nil {
		return fmt.Errorf("topo: Free: %w: nil Request", runtime.ErrInvalid)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.freed:
		return r.errFreed("Free")
	case r.active:
		return invalidf(r.op, "Free: the Request is active (Wait for it first)")
	}
	r.freed, r.reqs, r.slots, r.pool, r.post = true, nil, nil, nil, nil
	return nil
}

func (r *Request) errFreed(call string) error {
	return invalidf(r.op, "%s: the Request was freed", call)
}

// run runs the call that start posts to the end under ctx, as the blocking calls do. When
// ctx ends first it withdraws the receives no message has matched yet, so that recv is
// not written after it returns, and returns ctx's error. It numbers the call among the
// collective calls of t's World with a Track that names it (call, of elements typ) in
// hang reports, and that compares it across the ranks under GORMA_CHECK=1 before anything
// is posted.
func run(ctx context.Context, t Topology, call, typ string, start func() (*Request, error)) error {
	op := opName(call)
	if ctx == nil {
		return invalidf(op, "nil context")
	}
	if t != nil && t.neighborhood() != nil && substrate.FreedErr(t.World()) == nil {
		tr := substrate.NewTrack(t.World())
		defer tr.Close()
		seq := tr.Next()
		sig := &substrate.CallSig{Call: "topo." + call, Count: -1, Type: typ, Root: -1}
		tr.BeginSig(sig, seq)
		defer tr.End()
		if err := tr.Check(ctx, seq, sig); err != nil {
			return wrap(op, err)
		}
	}
	r, err := start()
	if err != nil {
		return err
	}
	if err = r.Wait(ctx); err != nil && r.active { // ctx ended first
		for _, q := range r.reqs {
			q.Cancel()
		}
	}
	return err
}

// opName returns the name in errors of the call named call in Go ("NeighborAlltoall"):
// MPI's, "neighbor_alltoall".
func opName(call string) string {
	return "neighbor_" + strings.ToLower(strings.TrimPrefix(call, "Neighbor"))
}

// typeName returns the name of T in hang reports and call checks.
func typeName[T runtime.Elem]() string { return reflect.TypeFor[T]().String() }
