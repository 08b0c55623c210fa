package hostgroup

import (
	"sync/atomic"

	"fmt"

	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/substrate"
)

// Fresh big buffers of the shared-memory algorithm (ScratchFresh). Each call that needs
// big buffers acquires a region of its own per member and releases it before returning:
//
//   - acquireBig: the member carves a region of two big buffers from its arena
//     (AllocHostRegion: a new key, registered with the shared-memory device). It writes a byte
//     of every page: its pages were given back to the kernel by the last release, so each is a
//     page fault and a zeroed page. It publishes the region's description in its small slot
//     with one step of the flags. Each member then attaches every peer's region (Attach:
//     validate and pin the key, map) and reads a byte of every page (a fault per page in its
//     own page table).
//   - ReleaseBig: each member closes its mappings of the peers' regions (unpin), takes
//     one step (after which no member reads or pins another's buffers), gives the pages
//     of its region back to the kernel (MADV_REMOVE, which drops them from every
//     process's mapping) and frees the region (deregistration: the key is revoked).
//
// The flag lines and small slots stay set up across calls, as the control segments of
// Open MPI's and MPICH's shared-memory collectives do. So a vector of up to SmallMax
// bytes (one step through the small slots) costs nothing more under ScratchFresh.

// freshMeta marks the byte count of acquireBig's step, so that a member whose policy
// differs (its first step of the call carries the bare count) sees a mismatch.
const freshMeta = 1 << 36

// acquireBig sets up this call's big buffers, chunk bytes each, for a call on vectors of
// bytes bytes (a collective step over the group).
func (g *Group) acquireBig(c Call, chunk, bytes int) error {
	w := c.World()
	r, err := substrate.AllocHostRegion(w, 2*chunk)
	if err != nil {
		return fmt.Errorf("fresh shared-memory scratch: %w", err)
	}
	freshAcquired.Add(1)
	b := r.Bytes()
	TouchPages(b)
	g.bigReg, g.chunk, g.turn = r, chunk, bigTurn{}
	v := g.seq + 1
	slot := SmallSlot[byte](g, g.Me, v, SmallMax)
	desc := r.AppendDesc(slot[1:1])
	slot[0] = byte(len(desc))
	g.SetMeta(v, bytes|freshMeta)
	if err := g.Step(c, v, bytes|freshMeta); err != nil {
		return err
	}
	n := len(g.Ranks)
	if len(g.bigRems) != n {
		g.bigRems = make([]*substrate.Remote, n)
	}
	g.bigMem = make([][]byte, n)
	g.bigMem[g.Me] = b
	for i, peer := range g.Ranks {
		if i == g.Me {
			continue
		}
		ps := SmallSlot[byte](g, i, v, SmallMax)
		rm, err := substrate.Attach(w, peer, ps[1:1+int(ps[0])])
		if err != nil {
			g.bigMem = nil
			return fmt.Errorf("rank %d mapping rank %d's fresh scratch: %w", w.Rank(), peer, err)
		}
		g.bigRems[i] = rm
		if m := rm.Mapped(); len(m) < 2*chunk {
			g.bigMem = nil
			return fmt.Errorf("%w: rank %d cannot map rank %d's fresh scratch", runtime.ErrInvalid, w.Rank(), peer)
		}
		g.bigMem[i] = rm.Mapped()
		readPages(g.bigMem[i])
	}
	return nil
}

// ReleaseBig releases this call's big buffers, if any (a collective step over the group).
func (g *Group) ReleaseBig(c Call) error {
	if g.bigReg == nil {
		return nil
	}
	g.closeBigRemotes()
	if err := g.Step(c, g.seq+1, -1); err != nil {
		return err
	}
	r := g.bigReg
	g.bigReg = nil
	err := removePages(r.Bytes())
	if ferr := r.Free(); err == nil && ferr != nil {
		err = fmt.Errorf("free fresh scratch: %w", ferr)
	}
	return err
}

// freshAcquired counts the acquisitions of fresh big buffers.
var freshAcquired atomic.Int64

// FreshAcquired returns the number of fresh big buffer acquisitions of this process.
func FreshAcquired() int64 { return freshAcquired.Load() }
