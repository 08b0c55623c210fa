package window

import (
	"runtime"
	"sync"
	"weak"

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
type commEntry struct {
	c *gorma.World

	mu        sync.Mutex
	open      int  // windows created on c and not freed
	userFreed bool // the World was freed
}

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
	ce := &commEntry{c: c}
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
