package window

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/gorma-hpc/gorma/collectives"
	"github.com/gorma-hpc/gorma/internal/prof"
	"github.com/gorma-hpc/gorma/runtime/substrate"
)

// Request is a request-based RMA operation (Rput, Rget, Raccumulate, RgetAccumulate): it
// completes locally and at the target, as MPI's do. When Wait returns nil, or Test
// reports true with a nil error, the operation is complete at the origin and at the
// target. An Rput's data is in the target's memory (other ranks' Gets are promised to see
// it after this rank's next Flush, Unlock or UnlockAll, which also completes the
// coherence work of cached copies), an Rget's result holds the data. The origin and
// result buffers are the caller's again. Until then they belong to the window.
//
// A Flush, Unlock or UnlockAll naming the target also completes the request; Wait and
// Test then report its outcome at once.
//
// Concurrency: Wait and Test may be called from any goroutine, any number of times;
// concurrent calls are serialized (a Test that finds a Wait in progress reports false).
type Request struct {
	st   *reqState // nil for a request complete when it was returned
	name string
	rank int
	disp int

	done atomic.Bool // set after err, once the request has completed
	err  error

	mu  sync.Mutex         // serializes waiting; guards ctr
	ctr *substrate.Counter // counts the request's work requests; nil once done
}

// completed is the Request of every operation complete when it returns (mapped targets,
// request-based accumulates): Wait and Test report success at once. It is never changed.
var completed = func() *Request {
	r := &Request{}
	r.done.Store(true)
	return r
}()

// pollOnce is an ended context: a Counter's Wait with it makes progress once and
// returns.
var pollOnce = func() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}()

// Wait blocks until the request completes or ctx ends. It returns the operation's error
// (nil on success) or, if ctx ended first, ctx's error wrapped in an *Error: the request
// stays outstanding then, and Wait or Test may be called again.
func (r *Request) Wait(ctx context.Context) error {
	if r == nil {
		return werrf("wait", -1, -1, ErrInvalid, "nil Request")
	}
	if r.done.Load() {
		return r.err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	_, err := r.waitLocked(ctx)
	return err
}

// Test reports whether the request has completed, and if so its error. It makes progress
// on the way but never blocks.
func (r *Request) Test() (bool, error) {
	if r == nil {
		return false, werrf("test", -1, -1, ErrInvalid, "nil Request")
	}
	if r.done.Load() {
		return true, r.err
	}
	if !r.mu.TryLock() {
		return false, nil // a Wait is in progress
	}
	defer r.mu.Unlock()
	done, err := r.waitLocked(pollOnce)
	if !done {
		return false, nil
	}
	return true, err
}

// waitLocked waits for the request's counter until ctx ends; it reports whether the
// request is done, and its error (or ctx's). r.mu is held.
func (r *Request) waitLocked(ctx context.Context) (bool, error) {
	if r.done.Load() {
		return true, r.err
	}
	err := r.ctr.Wait(ctx)
	if err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		if r.ctr.Pending() > 0 {
			if ctx == pollOnce {
				return false, nil
			}
			return false, werr(r.name, r.rank, r.disp, err)
		}
		err = r.ctr.Wait(context.Background()) // completed meanwhile: its own outcome
	}
	r.err = werr(r.name, r.rank, r.disp, err)
	r.done.Store(true)
	r.st.finish(r)
	r.ctr = nil
	return true, r.err
}

// newRequest returns an outstanding request with a counter of its own.
func (w *dataPath[T]) newRequest(name string, rank, disp int) *Request {
	st := &w.reqs
	r := &Request{st: st, name: name, rank: rank, disp: disp}
	st.mu.Lock()
	if n := len(st.free); n > 0 {
		r.ctr = st.free[n-1]
		st.free = st.free[:n-1]
	}
	st.mu.Unlock()
	if r.ctr == nil {
		r.ctr = substrate.NewCounter(w.comm)
	}
	return r
}

// track records r as outstanding to its target, once its work requests are posted.
func (st *reqState) track(r *Request, size int) {
	st.mu.Lock()
	if st.out == nil {
		st.out = make([][]*Request, size)
	}
	st.out[r.rank] = append(st.out[r.rank], r)
	st.n.Add(1)
	st.mu.Unlock()
}

// finish forgets the completed request r and takes its counter back.
func (st *reqState) finish(r *Request) {
	st.mu.Lock()
	if st.out != nil {
		out := st.out[r.rank]
		for i, q := range out {
			if q == r {
				st.n.Add(-1)
				out[i] = out[len(out)-1]
				out[len(out)-1] = nil
				st.out[r.rank] = out[:len(out)-1]
				break
			}
		}
	}
	closed := st.closed
	if !closed {
		st.free = append(st.free, r.ctr)
	}
	st.mu.Unlock()
	if closed {
		r.ctr.Close()
	}
}

// abandon completes a request whose posting failed with err: the work requests that were
// posted are waited for (bounded by failure detection) and the counter is taken back.
func (st *reqState) abandon(r *Request, err error) {
	r.mu.Lock()
	r.ctr.Wait(context.Background())
	r.err = err
	r.done.Store(true)
	st.finish(r)
	r.ctr = nil
	r.mu.Unlock()
}

// flushRequests completes the outstanding requests to t (called by flush); it returns
// the first of their errors, or ctx's.
func (w *dataPath[T]) flushRequests(ctx context.Context, t *target[T]) error {
	st := &w.reqs
	if st.n.Load() == 0 {
		return nil
	}
	var first error
	for {
		st.mu.Lock()
		var r *Request
		if st.out != nil && len(st.out[t.rank]) > 0 {
			r = st.out[t.rank][len(st.out[t.rank])-1]
		}
		st.mu.Unlock()
		if r == nil {
			return first
		}
		r.mu.Lock()
		done, err := r.waitLocked(ctx)
		r.mu.Unlock()
		if !done {
			return err
		}
		if err != nil && first == nil {
			first = err
		}
	}
}

// closeRequests closes the counters of the request pool and of the accumulates (Free).
func (w *dataPath[T]) closeRequests() {
	st := &w.reqs
	st.mu.Lock()
	st.closed = true
	free := st.free
	st.free = nil
	st.mu.Unlock()
	for _, c := range free {
		c.Close()
	}
	for r := range w.tg {
		a := &w.tg[r].acc
		a.mu.Lock()
		if a.ctr != nil {
			a.ctr.Close()
			a.ctr = nil
		}
		a.mu.Unlock()
	}
}

// reqAccess checks a request-based call: valid in a passive-target epoch only.
func (w *dataPath[T]) reqAccess(name string, rank, disp, n int) (span[T], error) {
	s, err := w.access(name, rank, disp, n)
	if err != nil {
		return s, err
	}
	if s.t.lock == 0 {
		return s, werrf(name, rank, disp, ErrEpoch, "request-based operations need a passive-target epoch (Lock or LockAll) on rank %d", rank)
	}
	return s, nil
}

func (w *dataPath[T]) Rput(origin []T, rank, disp int) (*Request, error) {
	if w.ob == nil {
		return w.rput(origin, rank, disp)
	}
	c := w.ob.begin(prof.CallPut)
	r, err := w.rput(origin, rank, disp)
	w.ob.rma(c, rank, len(origin)*w.esize, -1, lRput, err)
	return r, err
}

func (w *dataPath[T]) rput(origin []T, rank, disp int) (*Request, error) {
	const name = "rput"
	s, err := w.reqAccess(name, rank, disp, len(origin))
	if err != nil {
		return nil, err
	}
	if s.mem != nil {
		copy(s.mem[s.off:s.off+len(origin)], origin)
		if w.coh != nil {
			// As Put's: the next flush of rank invalidates the pages' cached copies at
			// other hosts (without it they would serve the old bytes forever).
			w.coh.wroteMapped(s, len(origin)) // cache.go
		}
		return completed, nil
	}
	if len(origin) == 0 {
		return completed, nil
	}
	r := w.newRequest(name, rank, disp)
	off := uint64(s.off * w.esize)
	if err := s.data.Write(r.ctr, off, asBytes(origin)); err != nil {
		err = werr(name, rank, disp, err)
		w.reqs.abandon(r, err)
		return nil, err
	}
	w.wroteRemote(s, off, len(origin)*w.esize)
	w.reqs.track(r, w.size)
	return r, nil
}

func (w *dataPath[T]) Rget(result []T, rank, disp int) (*Request, error) {
	if w.ob == nil {
		return w.rget(result, rank, disp)
	}
	c := w.ob.begin(prof.CallGet)
	r, err := w.rget(result, rank, disp)
	w.ob.rma(c, rank, 0, len(result)*w.esize, lRget, err)
	return r, err
}

func (w *dataPath[T]) rget(result []T, rank, disp int) (*Request, error) {
	const name = "rget"
	s, err := w.reqAccess(name, rank, disp, len(result))
	if err != nil {
		return nil, err
	}
	if s.mem != nil {
		copy(result, s.mem[s.off:s.off+len(result)])
		return completed, nil
	}
	off := uint64(s.off * w.esize)
	if len(result) == 0 || w.coh.cacheGet(s, result, off) {
		return completed, nil
	}
	r := w.newRequest(name, rank, disp)
	if err := s.data.Read(r.ctr, off, asBytes(result)); err != nil {
		err = werr(name, rank, disp, err)
		w.reqs.abandon(r, err)
		return nil, err
	}
	w.reqs.track(r, w.size)
	return r, nil
}

func (w *dataPath[T]) Raccumulate(origin []T, rank, disp int, op collectives.Op[T]) (*Request, error) {
	if w.ob == nil {
		return w.raccumulate(origin, rank, disp, op)
	}
	c := w.ob.begin(prof.CallAccumulate)
	r, err := w.raccumulate(origin, rank, disp, op)
	w.ob.rma(c, rank, len(origin)*w.esize, -1, lRaccumulate, err)
	return r, err
}

func (w *dataPath[T]) raccumulate(origin []T, rank, disp int, op collectives.Op[T]) (*Request, error) {
	const name = "raccumulate"
	if _, err := w.reqAccess(name, rank, disp, len(origin)); err != nil {
		return nil, err
	}
	a := rmw[T]{name: name, op: op, origin: origin}
	if err := w.accumulate(&a, rank, disp, len(origin)); err != nil {
		return nil, err
	}
	return completed, nil
}

func (w *dataPath[T]) RgetAccumulate(origin, result []T, rank, disp int, op collectives.Op[T]) (*Request, error) {
	if w.ob == nil {
		return w.rgetAccumulate(origin, result, rank, disp, op)
	}
	c := w.ob.begin(prof.CallGetAccumulate)
	r, err := w.rgetAccumulate(origin, result, rank, disp, op)
	w.ob.rma(c, rank, len(origin)*w.esize, len(result)*w.esize, lRgetAccumulate, err)
	return r, err
}

func (w *dataPath[T]) rgetAccumulate(origin, result []T, rank, disp int, op collectives.Op[T]) (*Request, error) {
	const name = "rget_accumulate"
	if _, err := w.reqAccess(name, rank, disp, len(result)); err != nil {
		return nil, err
	}
	if err := w.getAccumulate(name, origin, result, rank, disp, op); err != nil {
		return nil, err
	}
	return completed, nil
}
