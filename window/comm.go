package window

import (
	"context"
	"runtime"
	"sync"
	"weak"

	"github.com/gorma-hpc/gorma/collectives"
	gorma "github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/substrate"
)

// comms holds, per World, the World the windows created from it communicate on (a Dup,
// so that window traffic never matches the user's receives).
//
// The key is a weak pointer and a cleanup on the World deletes its entry. A World that its
// program dropped (a Dup'd World, or the Worlds of finished in-process jobs) must not stay
// reachable through this map, with its rank's engine and everything the engine holds.
// Holding the World itself as the key kept every World that ever created a window alive
// for the process's life (TestLeakWindowWorlds).
var comms sync.Map // weak.Pointer[gorma.World] -> *commEntry

// commEntry is the Dup that a World's windows talk on, and how many of them are open.
// When the World is freed (World.Free runs the OnFree hook) the Dup is freed as well,
// once its last window is: as in MPI, a window stays usable after its World is freed.
// Window creation and Free are collective and every rank frees in the same order, so
// every rank frees the Dup at the same point of its sequence of Dup, Split and Free calls.
//
// The windows' collective calls that run collectives on c (creation, Free, and a Fence
// that is a Barrier) take turns (enter, leave): one at a time, each from before it takes
// its number among the World's collective calls until its last collective on c. Every
// rank makes those calls in one order (the package's concurrency contract), so their
// collectives on c pair up at every rank, and calls of two windows that the program
// overlaps wait for each other instead of failing with collectives.ErrConcurrent. No
// user code runs in a turn.
type commEntry struct {
	c    *gorma.World
	rule *substrate.Waiting // the rank's waiting rule (wait.go), set before the engine starts
	turn chan struct{}      // holds a token while a window's collective call runs on c
	// scratch: c's shared-memory scratch is set up (setUp), which the first creation does
	// in its turn. Guarded by the turn.
	scratch bool

	mu        sync.Mutex
	open      int  // windows created on c and not freed
	userFreed bool // the World was freed
}

// enter waits for the turn to make a collective call on c, or for ctx to end.
func (ce *commEntry) enter(ctx context.Context) error {
	select {
	case ce.turn <- struct{}{}:
		return nil
	default:
	}
	select {
	case ce.turn <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// setUp sets up c's collectives' shared-memory scratch through the World's, w's
// (collectives.SetupDup), once: the first creation does it in its turn. It is a
// collective call on w, which window creation is, so every rank makes it in the same
// creation. Without it, c's first collective call, in the same creation, would set its
// scratch up with messages between the ranks (`scripts/compare-scale.sh`,
// win_allocate_us).
func (ce *commEntry) setUp(ctx context.Context, w *gorma.World) error {
	if ce.scratch {
		return nil
	}
	// One name for every flavor: the ranks may create one window with different calls
	// (MPI_Win_create at some, MPI_Win_allocate at others).
	if err := collectives.SetupDup(ctx, w, ce.c, "window creation"); err != nil {
		return err
	}
	ce.scratch = true
	return nil
}

// leave ends the turn that enter began.
func (ce *commEntry) leave() { <-ce.turn }

func (ce *commEntry) retain() {
	ce.mu.Lock()
	ce.open++
	ce.mu.Unlock()
}

// release is called as a window on c is freed.
func (ce *commEntry) release() {
	ce.mu.Lock()
	ce.open--
	last := ce.open == 0 && ce.userFreed
	ce.mu.Unlock()
	if last {
		ce.c.Free()
	}
}

func commOf(w *gorma.World) (*commEntry, error) {
	key := weak.Make(w)
	if ce, ok := comms.Load(key); ok {
		return ce.(*commEntry), nil
	}
	c, err := w.Dup()
	if err != nil {
		return nil, err
	}
	substrate.MarkInternal(c) // the window calls on the user's World name what runs on c
	ce := &commEntry{c: c, rule: substrate.WaitRule(c), turn: make(chan struct{}, 1)}
	actual, loaded := comms.LoadOrStore(key, ce)
	if !loaded {
		// c shares w's engine but not w itself, so it does not keep w reachable.
		runtime.AddCleanup(w, func(k weak.Pointer[gorma.World]) { comms.Delete(k) }, key)
		if err := substrate.OnFree(w, func() {
			comms.Delete(key)
			ce.mu.Lock()
			ce.userFreed = true
			last := ce.open == 0
			ce.mu.Unlock()
			if last {
				ce.c.Free()
			}
		}); err != nil {
			return nil, err
		}
	}
	return actual.(*commEntry), nil
}
