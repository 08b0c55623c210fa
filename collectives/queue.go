package collectives

import (
	"context"
	"sync"
	"sync/atomic"
)

// queue holds a World's nonblocking calls (or one persistent Request's: each has a queue
// of its own, persistent_match.go) that were started and have not finished, in the order
// this rank started them, and runs them one after the other on a worker goroutine of its
// own, through the blocking algorithms. The calls progress while the goroutines that
// started them compute.
//
// The worker runs while the queue is not empty and ends when it is; an idle World has
// none. It reaches the World only through the queued Requests' calls, which hold it until
// they have run (a Request that was started keeps its World, as a pending MPI request
// keeps its communicator). So a World with nothing queued is collected as any other.
//
// A blocking call on the World waits in begin until the queue is empty (waitIdle): the
// calls started before it come first, as every rank must keep one order.
type queue struct {
	n atomic.Int32 // Requests started and not finished; read by begin without mu

	mu      sync.Mutex
	reqs    []*Request    // started, not yet running: reqs[head:], in start order
	head    int           // the next Request to run
	running bool          // a worker goroutine runs (work)
	idle    chan struct{} // closed when the worker ends; nil while none runs
}

// jobCtx is the context a queued call runs with. The context its Request was started
// with, marked as the worker's (job) so that its begin does not wait for itself, and
// carrying the name hang reports and GORMA_CHECK=1 give the call (Request.call) and its
// number among the World's collective calls. The number is taken at start, in the
// rank's program order. The World's window calls (numbered on the same count) do not
// wait for the queue. So a number taken when the worker reaches the call would put it
// before or after a window call depending on timing, differently at each rank.
type jobCtx struct {
	context.Context
	q    *queue
	own  *state // the state a persistent call runs on (persistent_match.go); nil: its World's
	call string
	seq  uint64
}

// job returns ctx as the context of a call that q's worker runs, or nil if it is not.
func (q *queue) job(ctx context.Context) *jobCtx {
	if j, ok := ctx.(*jobCtx); ok && j.q == q {
		return j
	}
	return nil
}

// push queues r, whose call runs after every call queued before it, and starts the
// worker if none runs.
func (q *queue) push(r *Request) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.reqs = append(q.reqs, r)
	q.n.Add(1)
	if !q.running {
		q.running = true
		q.idle = make(chan struct{})
		go q.work()
	}
}

// work runs the queued calls in order, each to its end, and ends when the queue is empty.
func (q *queue) work() {
	for {
		q.mu.Lock()
		if q.head == len(q.reqs) {
			clear(q.reqs)
			q.reqs, q.head = q.reqs[:0], 0
			q.running = false
			close(q.idle)
			q.idle = nil
			q.mu.Unlock()
			return
		}
		r := q.reqs[q.head]
		q.reqs[q.head] = nil
		q.head++
		q.mu.Unlock()
		r.finish(r.run(r.job))
		q.n.Add(-1)
	}
}

// waitIdle returns when every call queued before it has finished, or when ctx ends.
func (q *queue) waitIdle(ctx context.Context) error {
	for q.n.Load() != 0 {
		q.mu.Lock()
		idle := q.idle
		q.mu.Unlock()
		if idle == nil {
			return nil
		}
		select {
		case <-idle:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	return nil
}
