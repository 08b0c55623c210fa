package hostgroup

import (
	"context"
	"sync/atomic"

	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/substrate"
)

// detached is what a peer adds to the sleepers word of a region it let go of: the high
// half, from bit detachedShift, counts such peers; waiters count themselves in the low
// half.
const (
	detachedShift = 32
	detached      = 1 << detachedShift
)

// Detach tells every peer whose region g still maps that this rank let go of it, and
// closes g's mappings. Errors are dropped: a peer that cannot be told keeps its region.
func (m *mapping) Detach(ctx context.Context, w *runtime.World) {
	m.closeBigRemotes()
	ctr := substrate.NewCounter(w)
	defer ctr.Close()
	res := make([]byte, 8*len(m.remotes)) // the runtime's until Wait returns
	for i, rm := range m.remotes {
		if rm != nil && rm.Live() {
			_ = rm.FetchAdd(ctr, offSleep, detached, res[8*i:8*i+8])
		}
	}
	_ = ctr.Wait(ctx)
	m.closeRemotes()
}

// FreeOwn frees this rank's regions of g, whose state was dropped and detached, if every
// peer has let go of them; it reports whether nothing is left to wait for.
func (g *Group) FreeOwn(w *runtime.World) bool {
	switch {
	case w.Finalized():
		return true // the device releases the whole arena
	case g.region == nil:
		// No region (or only one a failed setup left, which the peers may still map
		// without saying so when they let go: they say it on the current one).
		return true
	case atomic.LoadUint64(word(g.region.Bytes(), offSleep))>>detachedShift < uint64(len(g.Ranks)-1):
		return false
	}
	for _, r := range []*substrate.Region{g.region, g.old} {
		if r != nil {
			r.Free()
		}
	}
	g.region, g.old = nil, nil
	if g.bigReg != nil { // a call that failed in ReleaseBig's step
		removePages(g.bigReg.Bytes())
		g.bigReg.Free()
		g.bigReg = nil
	}
	g.freeBigOld()
	return true
}
