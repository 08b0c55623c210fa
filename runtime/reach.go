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
