package hostgroup

import (
	"fmt"
	"sync/atomic"

	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/substrate"
)

// markReads sets word offReads of region, member me's of the group of World ranks
// ranks on w, when this rank reads every other member's user memory
// (substrate.ReadsUser), and clears it otherwise. It connects to the members that this
// rank has not yet contacted, as the attach of their regions would.
func markReads(w *runtime.World, ranks []int, me int, region []byte) error {
	all := true
	for i, r := range ranks {
		if i == me {
			continue
		}
		ok, err := substrate.ReadsUser(w, r)
		if err != nil {
			return fmt.Errorf("rank %d connecting to rank %d: %w", w.Rank(), r, err)
		}
		all = all && ok
	}
	atomic.StoreUint64(word(region, offReads), b2u(all))
	return nil
}

// ReadsAll reports whether every member of g reads every other member's user memory:
// whether a call may move by single copy. Every member reads the same marks (markReads),
// so all decide alike. One load per member, of a line written at setup only.
func ReadsAll(g *Group) bool {
	for i := range g.Ranks {
		if atomic.LoadUint64(word(g.mem[i], offReads)) == 0 {
			return false
		}
	}
	return true
}

// b2u is 1 for true, 0 for false.
func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}
