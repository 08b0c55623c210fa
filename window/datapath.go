package window

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/substrate"
)

// dataPath is the part that moves data: Put and Get (rma.go), the accumulates and
// atomics (accumulate.go), the datatype forms (datatype.go) and the
// request-based calls (request.go). It chooses per target between the mapped path (a CPU
// copy or atomic on the target's memory) and the transport path (work requests), and
// completes the transport path's operations (flush). Its calls may run concurrently;
// house.mu guards the transport path's bookkeeping.
type dataPath[T runtime.Elem] struct {
	*house[T]
	reqs reqState // request-based operations (request.go)
}

// reqState is a window's bookkeeping of request-based operations: a pool of counters (one
// per outstanding request, so that waiting for one never waits for another operation)
// and the outstanding requests per target, which a flush of the target completes.
type reqState struct {
	n atomic.Int64 // outstanding requests: flushes look no further while it is 0

	mu     sync.Mutex
	free   []*substrate.Counter
	out    [][]*Request // by target rank
	closed bool         // the window was freed: counters are closed, not pooled
}

// flush completes the transport-path operations to t and their coherence work.
func (w *dataPath[T]) flush(ctx context.Context, t *target[T], op string) error {
	if err := w.flushRequests(ctx, t); err != nil { // request.go
		return werr(op, t.rank, -1, err)
	}
	if t.ctr == nil || !t.pend.Load() {
		// Mapped targets complete every operation in the call; a target known to have
		// failed fails the call that would complete them (ErrProcFailed, naming it). The
		// check of a live target is Flush's: atomic loads (gone), no lock.
		if !t.gone() {
			return nil
		}
		return werr(op, t.rank, -1, w.targetErr(t))
	}
	t.pend.Store(false)
	w.mu.Lock()
	dirty := t.dirty
	t.dirty = false
	w.mu.Unlock()
	// The writes' coherence work (cache.go: a fetch-and-add and a read at the target) goes
	// out before the wait for the operations, not after it: work requests to one rank
	// execute in the order they were posted. So the target runs it after the writes, as
	// the protocol needs, and one round trip carries both. Waiting for the writes first
	// made a Put + Flush to a rank over tcp two round trips.
	var cerr error
	if dirty {
		cerr = w.coh.completeWrites(ctx, t)
	}
	if err := t.ctr.Wait(ctx); err != nil {
		return werr(op, t.rank, -1, err) // the operations' own error comes first
	}
	if cerr != nil {
		return werr(op, t.rank, -1, cerr)
	}
	return nil
}

func (w *dataPath[T]) flushAll(ctx context.Context, op string) error {
	for r := range w.tg {
		if err := w.flush(ctx, &w.tg[r], op); err != nil {
			return err
		}
	}
	return nil
}

func (w *dataPath[T]) closeRemotes() {
	w.closeCoherence()
	w.closeRequests() // request.go
	for r := range w.tg {
		t := &w.tg[r]
		if t.data != nil {
			t.data.Close()
		}
		if t.meta != nil {
			t.meta.Close()
		}
		if t.ctr != nil {
			t.ctr.Close()
		}
		t.mem, t.mw, t.open = nil, nil, 0
	}
}
