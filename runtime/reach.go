package runtime

import (
	"github.com/gorma-hpc/gorma/runtime/internal/subcore"
	"github.com/gorma-hpc/gorma/transport/verbs"
)

// reachOf is the subcore.Reach of a provider with caps c.
func reachOf(c verbs.Caps) subcore.Reach {
	var r subcore.Reach
	if c.Has(verbs.CapMap) {
		r |= subcore.ReachMap
	}
	if c.Has(verbs.CapZeroCopy) {
		r |= subcore.ReachZeroCopy
	}
	return r
}

// ReachOf returns how this rank reaches rank r, or 0 if r is out of range. Ranks are
// those Transport takes.
func (s *subWorld) ReachOf(r int) subcore.Reach {
	w := (*World)(s)
	r, ok := jobRank(w, r)
	if !ok {
		return 0
	}
	return w.e.reach(w.e.rank, r)
}

// ReachBetween returns how rank a reaches rank b: what ReachOf(b) returns at rank a, or 0
// if either is out of range. Every rank computes the same answer, as for
// TransportBetween, so that a layer can agree on a layout without messages.
func (s *subWorld) ReachBetween(a, b int) subcore.Reach {
	w := (*World)(s)
	a, okA := jobRank(w, a)
	b, okB := jobRank(w, b)
	if !okA || !okB {
		return 0
	}
	return w.e.reach(a, b)
}

// reach is how job rank a reaches job rank b.
func (e *engine) reach(a, b int) subcore.Reach {
	if a == b {
		return subcore.ReachSelf | subcore.ReachMap | subcore.ReachZeroCopy
	}
	c, err := e.links.capsBetween(a, b)
	if err != nil {
		return 0
	}
	return reachOf(c)
}

// readsUser reports whether this rank's work requests read the user memory
// (RegisterRegion) of rank r of w, connecting to r first as attach does
// (substrate.ReadsUser). A provider that reads user memory by cross-memory attach
// (verbs.CapCMA) does so when the kernel let this process read r's memory at connect
// (peer.cma); any other provider always does.
func readsUser(w *World, r int) (bool, error) {
	if err := w.live(); err != nil {
		return false, err
	}
	e := w.e
	jr, ok := jobRank(w, r)
	if !ok {
		return false, invalidf("reads of rank %d (size %d): no such rank", r, w.Size())
	}
	if jr == e.rank {
		return true, nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.checkLocked(); err != nil {
		return false, err
	}
	p, err := e.links.awaitPeerLocked(e.stop, jr)
	if err != nil {
		return false, err
	}
	return !p.dev.caps.Has(verbs.CapCMA) || p.cma, nil
}
