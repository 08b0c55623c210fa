package window

import (
	"runtime"
	"sync"
	"weak"

	gorma "github.com/gorma-hpc/gorma/runtime"
)

// comms holds, per World, the World the windows created from it communicate on (a Dup,
// so that window traffic never matches the user's receives).
//
// The key is a weak pointer and a cleanup on the World deletes its entry: a World that its
// program dropped (a Dup'd World, or the Worlds of finished in-process jobs) must not stay
// reachable through this map, with its rank's engine and everything the engine holds.
// Holding the World itself as the key kept every World that ever created a window alive
// for the process's life (TestLeakWindowWorlds).
var comms sync.Map // weak.Pointer[gorma.World] -> *gorma.World

func commOf(w *gorma.World) (*gorma.World, error) {
	key := weak.Make(w)
	if c, ok := comms.Load(key); ok {
		return c.(*gorma.World), nil
	}
	c, err := w.Dup()
	if err != nil {
		return nil, err
	}
	actual, loaded := comms.LoadOrStore(key, c)
	if !loaded {
		// c shares w's engine but not w itself, so it does not keep w reachable.
		runtime.AddCleanup(w, func(k weak.Pointer[gorma.World]) { comms.Delete(k) }, key)
	}
	return actual.(*gorma.World), nil
}
