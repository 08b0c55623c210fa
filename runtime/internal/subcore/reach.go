package subcore

import "strings"

// Reach says what the transport from one rank to another offers: the facts that window,
// collectives and other layers above the runtime choose by. They read Reach, never the
// provider's name (World.Transport), so that a new provider needs no change above the
// runtime.
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
