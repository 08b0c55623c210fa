package runtime

import (
	"strings"

	"github.com/gorma-hpc/gorma/transport/verbs"
)

// Reach says what the transport from one rank to another offers: the facts that window,
// collectives and other layers above the runtime choose by. They read Reach, never the
// provider's name that Transport returns for users and diagnostics, so that a new
// provider needs no change above the runtime.
type Reach uint8

// Reach flags. A rank reaches itself with ReachSelf|ReachMap|ReachZeroCopy: its own
// memory is at hand.
const (
	// ReachSelf: the peer is this rank.
	ReachSelf Reach = 1 << iota
	// ReachMap: the peer's arena regions are mapped here (Remote.Mapped), so loads and
	// stores reach them without a message. Ranks that reach each other so share memory
	// (SplitShared, window.AllocateShared).
	ReachMap
	// ReachZeroCopy: a read or write of the peer's regions is one copy by this rank; the
	// peer's processor does nothing. Without it the peer's progress goroutine serves it.
	ReachZeroCopy
)

var reachNames = []string{"self", "map", "zero-copy"}

// Has reports whether every flag of want is set.
func (r Reach) Has(want Reach) bool { return r&want == want }

// String lists the set flags, separated by '|', or "none".
func (r Reach) String() string {
	var names []string
	for i, n := range reachNames {
		if r&(1<<i) != 0 {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, "|")
}

// reachOf is the Reach of a provider with caps c.
func reachOf(c verbs.Caps) Reach {
	var r Reach
	if c.Has(verbs.CapMap) {
		r |= ReachMap
	}
	if c.Has(verbs.CapZeroCopy) {
		r |= ReachZeroCopy
	}
	return r
}

// ReachOf returns how this rank reaches rank r, or 0 if r is out of range. Ranks are
// those Transport takes.
func (w *World) ReachOf(r int) Reach {
	r, ok := w.jobRank(r)
	if !ok {
		return 0
	}
	return w.e.reach(w.e.rank, r)
}

// ReachBetween returns how rank a reaches rank b: what ReachOf(b) returns at rank a, or 0
// if either is out of range. Every rank computes the same answer, as for
// TransportBetween, so that a layer can agree on a layout without messages.
func (w *World) ReachBetween(a, b int) Reach {
	a, okA := w.jobRank(a)
	b, okB := w.jobRank(b)
	if !okA || !okB {
		return 0
	}
	return w.e.reach(a, b)
}

// reach is how job rank a reaches job rank b.
func (e *engine) reach(a, b int) Reach {
	if a == b {
		return ReachSelf | ReachMap | ReachZeroCopy
	}
	c, err := e.links.capsBetween(a, b)
	if err != nil {
		return 0
	}
	return reachOf(c)
}
