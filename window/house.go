package window

import (
	"sync"
	"sync/atomic"

	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/substrate"
)

// house is what the parts of one window share: the World, this rank's memory and
// metadata, what it knows of every rank (tg), and the parts that others call down to
// (the page cache, the dynamic directory, the host's shared segment). Each part embeds
// a pointer to it.
//
// The parts, and who calls whom (design.md, "Parts"):
//
//	Win (api.go, free.go)         the facade: hands each call to a part
//	epochs (fence.go, lock.go,    Fence, PSCW, Lock, Flush; completes through dataPath
//	        pscw.go)
//	dataPath (rma.go, ...)        Put, Get, accumulates, atomics, requests; mapped or
//	                              transport once per target
//	coh (cache.go)                the coherent page cache of transport-path targets
//	dynState (dynamic.go)         the attachment directory of dynamic windows
//	sharedState (shared.go)       AllocateShared's host segment and SharedQuery
//
// The fields are set at creation and read-only afterwards, but for tg's per-target
// state (see target), freed, fenceUsed and what mu guards.
type house[T runtime.Elem] struct {
	comm    *runtime.World
	ob      *winObs    // the rank's observer (observe.go); nil when it does not observe
	commRef *commEntry // comm's entry: counts this window while it is open (comm.go)
	rank    int
	size    int
	esize   int
	flavor  Flavor
	opt     options
	lay     layout

	track *substrate.Track // names its calls in hang reports; closed by Free
	label string           // "winK", K the number of the World's collective call that made it
	attrs attrSet          // its name and attributes (attr.go)

	local   []T
	data    *substrate.Region // nil for dynamic windows
	meta    *substrate.Region
	mw      []uint64 // this rank's metadata words
	tg      []target[T]
	lazy    bool       // ranks are reached on first use (reach), not at creation
	reachMu sync.Mutex // serializes reach
	freed   atomic.Bool

	// fenceUsed: an RMA call of this rank since the last Fence (the data path sets it,
	// with a load first so that a fast path stores at most once per epoch; Fence clears
	// it). A Fence's epoch holds RMA calls only if some follow it (MPI 12.5.1): without
	// them a Lock, Post or Start may follow the Fence (epochs.fenceGiveWay).
	fenceUsed atomic.Bool

	coh *coh[T]         // the page cache (cache.go); nil when off
	dyn *dynState[T]    // dynamic windows (dynamic.go)
	shm *sharedState[T] // AllocateShared's host segment (shared.go)

	mu sync.Mutex // guards the bookkeeping of the transport path (pending lists, the cache)
}

func (w *house[T]) targetErr(t *target[T]) error {
	if !t.ready.Load() || t.meta == nil {
		return nil
	}
	return t.meta.Err()
}

// usable returns ErrFreed after Free, and an error wrapping runtime.ErrFinalized once the
// World's Finalize has begun: Finalize unmaps this rank's arena and its peers' mappings,
// which the window reads and writes directly. So every call checks first rather than
// fault (a Put to this rank, a Fence on shm, a Sync did).
func (w *house[T]) usable(op string, rank, disp int) error {
	if w.freed.Load() {
		return w.freedErr(op, rank, disp)
	}
	if w.comm.Finalized() {
		return werrf(op, rank, disp, runtime.ErrFinalized, "the World was finalized")
	}
	return nil
}

// checkPeers returns the error of a failed peer of the window, or nil.
func (w *house[T]) checkPeers() error {
	for r := range w.tg {
		if m := w.tg[r].meta; m != nil {
			if err := m.Err(); err != nil {
				return err
			}
		}
	}
	return nil
}
