package collectives

import (
	"context"
	"errors"
	"fmt"
	goruntime "runtime"
	"strings"
	"sync"

	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/substrate"
)

// Request is a nonblocking collective call (Iallreduce and the other I functions) or a
// persistent one (AllreduceInit and the other Init functions).
//
// A nonblocking Request is active from the call that made it until its call has
// finished; Wait or Test then report how it ended. A persistent Request is inactive until
// Start, active until the call it started has finished, then inactive again and ready for
// the next Start; Free releases it (and its buffers and World) for good.
//
// While a Request is active its buffers belong to the library: the caller must not write
// send (nor the counts slices) nor read or write recv until Wait returned or Test
// reported the call finished.
//
// Wait, Test and Start may be called from any goroutine, but one goroutine at a time per
// Request.
type Request struct {
	name       string // the blocking call's name in errors: "allreduce"
	call       string // its name in hang reports and call checks: "Iallreduce", "AllreduceInit"
	persistent bool
	q          *queue                          // the World's queue; nil if the call failed before it had one
	track      *substrate.Track                // the World's collective Track, which numbers each start
	comm       *runtime.World                  // the World; nil if the call failed before it had a queue
	run        func(ctx context.Context) error // the blocking call; nil once freed
	initErr    error                           // the call's error when it could not be queued
	own        *state                          // a persistent Request's state (persistent_match.go); nil for a nonblocking one
	id         uint32                          // a persistent Request's number among its World's Init calls
	starts     uint64                          // Starts so far; one goroutine at a time starts r
	cleanup    goruntime.Cleanup               // retires own when r is dropped unfreed

	mu    sync.Mutex
	done  chan struct{} // closed when the started call finished; nil while never started
	err   error         // the finished call's error; set before done is closed
	freed bool
	job   *jobCtx // the context the queued call runs with (queue.go); nil once it finished
}

// newRequest returns the inactive Request of the collective name on w that run makes. A
// call that cannot be queued (nil World, freed World) finishes with its error at start.
func newRequest(w *runtime.World, name string, persistent bool, run func(ctx context.Context) error) *Request {
	r := &Request{name: name, persistent: persistent, run: run}
	if t := trackName(name); persistent {
		r.call = strings.ToUpper(t[:1]) + t[1:] + "Init"
	} else {
		r.call = "I" + strings.ToLower(t[:1]) + t[1:]
	}
	switch {
	case w == nil:
		r.initErr = fmt.Errorf("collectives: %s: %w: nil World", name, runtime.ErrInvalid)
	case substrate.FreedErr(w) != nil:
		r.initErr = fmt.Errorf("collectives: %s: %w", name, substrate.FreedErr(w))
	default:
		s, err := stateOf(w)
		if err != nil {
			r.initErr = fmt.Errorf("collectives: %s: %w", name, err)
		} else {
			r.q, r.track, r.comm = &s.q, s.track, w
		}
	}
	return r
}

// started starts the nonblocking Request r and returns it.
func started(ctx context.Context, r *Request) *Request {
	r.start(ctx)
	return r
}

// start activates r: it numbers r's call among the World's collective calls and queues
// it, or finishes r at once with initErr or the error of a nil ctx (which the worker
// would panic on).
func (r *Request) start(ctx context.Context) {
	var err error
	var job *jobCtx
	switch {
	case r.initErr != nil:
		err = r.initErr
	case ctx == nil:
		err = fmt.Errorf("collectives: %s: %w: nil context", r.name, runtime.ErrInvalid)
	default:
		job = &jobCtx{Context: ctx, q: r.q, own: r.own, call: r.call, seq: r.number()}
	}
	r.mu.Lock()
	r.done, r.err, r.job = make(chan struct{}), nil, job
	r.mu.Unlock()
	if job == nil {
		r.finish(err)
		return
	}
	r.q.push(r)
}

// number returns the number of r's call being started: for a nonblocking call, the next
// among the World's collective calls. For a persistent one, its Request's id and the
// count of its Starts, which every rank gives the same call whatever the order of its
// Starts.
func (r *Request) number() uint64 {
	if r.own == nil {
		return r.track.Next()
	}
	r.starts++
	return uint64(r.id)<<persistentSeqShift | r.starts&(1<<persistentSeqShift-1)
}

// finish ends r's started call with err.
func (r *Request) finish(err error) {
	r.mu.Lock()
	r.err = err
	r.job = nil // r keeps no ctx past its call
	close(r.done)
	r.mu.Unlock()
}

// Wait returns when r's call has finished, with its error (nil if it succeeded), or
// when ctx ends, with ctx's error: r then stays active and may be waited for again. A
// persistent Request that was never started returns nil at once; one that finished
// returns its last call's error until it is started again.
func (r *Request) Wait(ctx context.Context) error {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	done, freed := r.done, r.freed
	r.mu.Unlock()
	switch {
	case freed:
		return r.errFreed("Wait")
	case done == nil:
		return nil
	}
	if !closed(done) {
		select {
		case <-done:
		case <-ctx.Done():
			return fmt.Errorf("collectives: %s: waiting: %w", r.name, context.Cause(ctx))
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.result()
}

// result is the finished call's error as Wait and Test report it. A call that failed
// while its World was being finalized (a peer finalized first and closed its
// connections) also matches runtime.ErrFinalized once this rank's Finalize has run.
// r.mu is held.
func (r *Request) result() error {
	if r.err == nil || r.comm == nil || !r.comm.Finalized() || errors.Is(r.err, runtime.ErrFinalized) {
		return r.err
	}
	return fmt.Errorf("%w (%w)", runtime.ErrFinalized, r.err)
}

// Test reports, without blocking, whether r's call has finished and, if it has, its
// error. A persistent Request that was never started counts as finished.
func (r *Request) Test() (bool, error) {
	if r == nil {
		return true, nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.freed:
		return true, r.errFreed("Test")
	case r.done == nil:
		return true, nil
	}
	select {
	case <-r.done:
		return true, r.result()
	default:
		return false, nil
	}
}

// Start starts the call of a persistent Request (MPI_Start): it runs on a worker of the
// Request's own, and ctx bounds it as it bounds a blocking call. It matches the other
// ranks' Start of the Request made at the same point of their Init calls, with as many
// Starts before it, whatever the order in which the ranks start their Requests. Start fails with an error wrapping
// runtime.ErrInvalid, and starts nothing, on a Request that is not persistent, is active
// (its last call has not finished) or was freed.
func (r *Request) Start(ctx context.Context) error {
	if err := r.startable(); err != nil {
		return err
	}
	r.start(ctx)
	return nil
}

// startable returns the error of a Start on r, nil if r may be started.
func (r *Request) startable() error {
	if r == nil {
		return fmt.Errorf("collectives: Start: %w: nil Request", runtime.ErrInvalid)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case !r.persistent:
		return fmt.Errorf("collectives: %s: Start: %w: not a persistent Request (made by an Init function)", r.name, runtime.ErrInvalid)
	case r.freed:
		return r.errFreed("Start")
	case r.done != nil && !closed(r.done):
		return fmt.Errorf("collectives: %s: Start: %w: the Request is active (its last call has not finished: Wait for it first)", r.name, runtime.ErrInvalid)
	}
	return nil
}

// Startall starts the persistent Requests rs in order (MPI_Startall). If one cannot be
// started (see Start) it returns that error and starts none of them.
func Startall(ctx context.Context, rs []*Request) error {
	for i, r := range rs {
		if err := r.startable(); err != nil {
			return fmt.Errorf("request %d: %w", i, err)
		}
		for _, o := range rs[:i] {
			if o == r {
				return fmt.Errorf("request %d: collectives: %s: Start: %w: the Request is in the list twice", i, r.name, runtime.ErrInvalid)
			}
		}
	}
	for _, r := range rs {
		r.start(ctx)
	}
	return nil
}

// Free releases an inactive persistent Request, with its buffers, the World it holds and
// the scratch of its calls (MPI_Request_free). Its shared-memory scratch is let go of
// before Free returns, and freed once the peers' Requests have let go of theirs. Start,
// Wait and Test fail on it afterwards. It fails with an error wrapping
// runtime.ErrInvalid on an active Request (as MPI forbids freeing an active collective
// request) and on a nonblocking one, which needs no Free: it goes with its last
// reference.
func (r *Request) Free() error {
	if r == nil {
		return fmt.Errorf("collectives: Free: %w: nil Request", runtime.ErrInvalid)
	}
	r.mu.Lock()
	switch {
	case !r.persistent:
		r.mu.Unlock()
		return fmt.Errorf("collectives: %s: Free: %w: not a persistent Request (a nonblocking one needs no Free)", r.name, runtime.ErrInvalid)
	case r.freed:
		r.mu.Unlock()
		return r.errFreed("Free")
	case r.done != nil && !closed(r.done):
		r.mu.Unlock()
		return fmt.Errorf("collectives: %s: Free: %w: the Request is active (its last call has not finished: Wait for it first)", r.name, runtime.ErrInvalid)
	}
	r.freed, r.run, r.q = true, nil, nil
	own := r.own
	r.own = nil
	r.mu.Unlock()
	if own != nil {
		r.cleanup.Stop()
		retire(own)
	}
	return nil
}

// errFreed is the error of op on a freed Request.
func (r *Request) errFreed(op string) error {
	return fmt.Errorf("collectives: %s: %s: %w: the Request was freed", r.name, op, runtime.ErrInvalid)
}

// closed reports whether the channel c is closed (it is never sent on).
func closed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// WaitAll waits for every Request of rs (nil entries are skipped) and returns their
// errors joined, each naming its index, or, when ctx ends first, ctx's error: the
// Requests not finished then stay active.
func WaitAll(ctx context.Context, rs []*Request) error {
	var errs []error
	for i, r := range rs {
		if r == nil {
			continue
		}
		r.mu.Lock()
		done := r.done
		r.mu.Unlock()
		if done != nil && !closed(done) {
			select {
			case <-done:
			case <-ctx.Done():
				return fmt.Errorf("collectives: WaitAll: waiting for request %d (%s): %w", i, r.name, context.Cause(ctx))
			}
		}
		if err := r.Wait(ctx); err != nil {
			errs = append(errs, fmt.Errorf("request %d: %w", i, err))
		}
	}
	return errors.Join(errs...)
}

// TestAll reports, without blocking, whether every Request of rs has finished (nil
// entries count as finished) and, if so, their errors joined, each naming its index.
func TestAll(rs []*Request) (bool, error) {
	var errs []error
	for i, r := range rs {
		ok, err := r.Test()
		if !ok {
			return false, nil
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("request %d: %w", i, err))
		}
	}
	return true, errors.Join(errs...)
}
