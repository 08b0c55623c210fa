package runtime

import (
	"context"

	"github.com/gorma-hpc/gorma/runtime/internal/subcore"
)

// KillTransport closes w's connection listener, devices and process manager session as a
// dying process's would, without Finalize: its connected peers see their connections
// fail, and the agent reports it failed to every rank.
func KillTransport(w *World) {
	w.e.halt()
	w.e.links.cm.closeCM()
	w.e.mu.Lock()
	w.e.closeDevicesLocked()
	w.e.mu.Unlock()
	if w.e.pm != nil {
		w.e.pm.Close()
	}
}

// Pending reports the engine's queue lengths: posted receives, unexpected messages, and
// rendezvous table entries in use.
func Pending(w *World) (posted, unexpected, table int) {
	e := w.e
	e.mu.Lock()
	defer e.mu.Unlock()
	m := &e.match
	return m.posted.Len(), m.ux.Len(), len(m.table.slots) - len(m.table.free)
}

// ForceCopyRendezvous makes w's shm rendezvous sends offer a private arena copy, as where
// the kernel forbids reading peer memory. It changes only the peers connected so far.
func ForceCopyRendezvous(w *World) {
	w.e.mu.Lock()
	defer w.e.mu.Unlock()
	for _, p := range w.e.links.peers {
		if p != nil {
			p.cma = false
		}
	}
}

// CopyRendezvousForced reports whether w has a connected peer and offers every connected
// peer a private arena copy in its shm rendezvous sends (ForceCopyRendezvous).
func CopyRendezvousForced(w *World) bool {
	w.e.mu.Lock()
	defer w.e.mu.Unlock()
	n := 0
	for _, p := range w.e.links.peers {
		if p == nil || !p.ready {
			continue
		}
		if p.cma {
			return false
		}
		n++
	}
	return n > 0
}

// The fast box geometry (fastbox.go), for tests that place records at chosen cells.
const (
	FastboxCells    = fbCells
	FastboxCellSize = fbCellSize
	FastboxRecHdr   = fbRecHdr
	FastboxHdrSize  = fbHdrSize
)

// FastboxSent reports the position w has reached in rank r's fast box: the cells its
// messages (and pad records) have filled, 0 when it sent nothing through the box.
func FastboxSent(w *World, r int) uint64 {
	w.e.mu.Lock()
	defer w.e.mu.Unlock()
	if p := w.e.links.peers[r]; p != nil {
		return p.fout.pos
	}
	return 0
}

// FastboxIn returns the fast box in which rank r writes to w's rank, and the position
// this rank has read it up to (nil, 0 when r has no box here).
func FastboxIn(w *World, r int) ([]byte, uint64) {
	w.e.mu.Lock()
	defer w.e.mu.Unlock()
	if p := w.e.links.peers[r]; p != nil {
		return p.fin.box, p.fin.pos.Load()
	}
	return nil, 0
}

// Context returns w's communication context (free_test.go checks which ones are reused).
func Context(w *World) uint16 { return w.ctx }

// CheckCall runs Track.Check's exchange whatever GORMA_CHECK says.
func CheckCall(ctx context.Context, t *subcore.Track, seq uint64, sig *CallSig) error {
	return subcore.CheckNow(ctx, t, seq, sig)
}

// EagerSlots returns the number of eager send slots, and of receive slots, that w's
// connections have per peer.
func EagerSlots(w *World) int { return w.e.links.slots }

// ConnectPeer connects w's rank to rank r (a job rank) as a first contact would, and
// waits until the connection is ready.
func ConnectPeer(ctx context.Context, w *World, r int) error {
	e := w.e
	e.mu.Lock()
	defer e.mu.Unlock()
	_, err := e.links.awaitPeerLocked(ctx, r)
	return err
}

// Quick reports whether r is marked quick: completed, with nothing for its report to run
// under the engine's lock.
func Quick(r *Request) bool { return r.quick.Load() != 0 }

// FlushEvents stores the events the engine of w holds in its batch in the timeline's
// recorder, as the engine does before it waits.
func FlushEvents(w *World) {
	w.e.mu.Lock()
	defer w.e.mu.Unlock()
	w.e.obs.flushLocked()
}
