package window

import (
	"sync"
	"sync/atomic"

	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/substrate"
)

// target is what a rank knows of one rank's window (itself included).
type target[T runtime.Elem] struct {
	rank int
	n    int               // elements
	data *substrate.Remote // nil for self, for dynamic windows and in a world of one
	meta *substrate.Remote // nil for self
	mem  []T               // direct view (self, or a mapped peer), else nil
	mw   []uint64          // direct view of its metadata, else nil
	ctr  *substrate.Counter

	open  uint8       // openFence | openStart | openLock: an access epoch includes this rank
	lock  uint8       // lockShared, lockExcl (held), or lockNoCheck
	dirty bool        // the transport path wrote to it since the last flush (w.mu)
	pend  atomic.Bool // transport-path requests were posted since the last flush
	res   [16]byte
	acc   accState[T] // accumulate-type operations (accumulate.go)

	rec   []byte      // its creation record, kept until the rank is reached (reach)
	ready atomic.Bool // data, meta, mem, mw and ctr are set: the rank is reached
}

// memReady is t.mem once the rank is reached, else nil: the RMA fast paths' view, safe
// against a reach by a concurrent RMA call.
func (t *target[T]) memReady() []T {
	if !t.ready.Load() {
		return nil
	}
	return t.mem
}

// live reports that t's memory may be used: a peer's region is live, and this rank's own
// memory is until the World (comm) is finalized. Atomic loads.
func (t *target[T]) live(comm *runtime.World) bool {
	if t.data != nil {
		return t.data.Live()
	}
	return !comm.Finalized()
}

// gone reports, in atomic loads, that t's rank is reached and known to have failed.
func (t *target[T]) gone() bool { return t.ready.Load() && t.meta != nil && t.meta.Gone() }

// accState is this rank's accumulate machinery for one target.
//
// Concurrency: one goroutine of this rank at a time holds the target's accumulate word
// (a second one waits for it like any other origin), and the fields are used only with
// the word held: one by the mapped path. mu serializes the transport path, whose fields
// it guards.
type accState[T runtime.Elem] struct {
	one [1]T // mapped path: the operand of FetchAndOp

	mu  sync.Mutex
	ctr *substrate.Counter // transport path's requests: its Wait must not wait for Puts (t.ctr)
	res [8]byte            // old value of the word's remote atomics
	buf []T                // read-modify-write scratch: up to accChunk bytes, at least 2 elements
}

const (
	openFence uint8 = 1 << iota
	openStart
	openLock
)
