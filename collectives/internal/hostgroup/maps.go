package hostgroup

import (
	"fmt"
	"slices"

	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/substrate"
)

// mapping is a group member's own region and its mappings of the members' regions:
// what a setup replaces (Group embeds it). Every step reads mem.
type mapping struct {
	region  *substrate.Region
	old     *substrate.Region // the previous region, freed once no member maps it (attach)
	remotes []*substrate.Remote
	mem     [][]byte // every member's region (own included), by member index
	bigBufs          // the big buffers: their size, and under ScratchFresh their regions
}

// closeRemotes releases the mappings of the members' regions.
func (m *mapping) closeRemotes() {
	for i, rm := range m.remotes {
		if rm != nil {
			rm.Close()
			m.remotes[i] = nil
		}
	}
	m.mem = nil
}

// attach maps every other member's region from descs (by member index: the regions'
// descriptions), me being this member's index in ranks (World ranks). Every member has
// closed its mappings of the previous regions once it gave its description, so the
// previous region of this member's, if any, is freed then.
func (m *mapping) attach(w *runtime.World, ranks []int, me int, descs [][]byte) error {
	b := m.region.Bytes()
	m.remotes = make([]*substrate.Remote, len(ranks))
	m.mem = make([][]byte, len(ranks))
	m.mem[me] = b
	for i, peer := range ranks {
		if i == me {
			continue
		}
		rm, err := substrate.Attach(w, peer, descs[i])
		if err != nil {
			return fmt.Errorf("rank %d mapping rank %d's scratch: %w", w.Rank(), peer, err)
		}
		m.remotes[i] = rm
		if rm.Mapped() == nil {
			return fmt.Errorf("%w: rank %d cannot map rank %d's scratch (transport %s): shared memory needs every rank on one host",
				runtime.ErrInvalid, w.Rank(), peer, w.Transport(peer))
		}
		// Every member sizes its region alike when the calls match (same counts, same
		// history, same policy); a peer whose region differs was set up for another
		// count (or policy) in this very call.
		if len(rm.Mapped()) != len(b) {
			return fmt.Errorf("%w: rank %d's scratch has %d bytes, rank %d's %d (do all ranks pass the same counts and scratch policy?)",
				runtime.ErrMismatch, peer, len(rm.Mapped()), w.Rank(), len(b))
		}
		m.mem[i] = rm.Mapped()
	}
	if m.old != nil {
		m.old.Free()
		m.old = nil
	}
	return nil
}

// A step that carries region descriptions (SetupDup's adoptGroup) holds each member's in its
// flag line when it fits: a length byte and the description. One that does not fit goes
// in the member's small slot, and the flag line's length byte is descInSlot. So the step
// touches no page beyond the flag lines, which every step uses anyway (`bin/golaunch -n
// 64 bin/scalebench`, shm).
const descInSlot = 0xff

// putDesc writes desc, member me's description, for step v: inline or in its small slot.
func (m *mapping) putDesc(me int, v uint64, desc []byte) error {
	if len(desc) > descMax {
		return fmt.Errorf("internal: scratch description of %d bytes", len(desc))
	}
	line := m.mem[me][flagOff(v)+FlagData : flagOff(v)+lineBytes]
	if 1+len(desc) <= len(line) {
		line[0] = byte(len(desc))
		copy(line[1:], desc)
		return nil
	}
	line[0] = descInSlot
	slot := m.mem[me][offSmall+int(v&1)*SmallMax:]
	slot[0] = byte(len(desc))
	copy(slot[1:], desc)
	return nil
}

// getDesc returns a copy of member i's description of step v (putDesc).
func (m *mapping) getDesc(i int, v uint64) []byte {
	b := m.mem[i][flagOff(v)+FlagData : flagOff(v)+lineBytes]
	if b[0] == descInSlot {
		b = m.mem[i][offSmall+int(v&1)*SmallMax : offSmall+int(v&1+1)*SmallMax]
	}
	n := min(int(b[0]), len(b)-1)
	return slices.Clone(b[1 : 1+n])
}

// bigBufs is the size of a member's big buffers and, under ScratchFresh, their region
// of their own, acquired by a call and released before it returns (fresh.go; mapping
// embeds it).
type bigBufs struct {
	chunk   int                 // bytes of each big buffer
	bigReg  *substrate.Region   // this call's big buffers (fresh), or nil
	bigOld  *substrate.Region   // big buffers left by a failed call, freed at the next setup
	bigRems []*substrate.Remote // the peers' big buffers, by member index
	bigMem  [][]byte            // every member's big buffers (own included), or nil: in the region
}

// Chunk is the size in bytes of each big buffer.
func (b *bigBufs) Chunk() int { return b.chunk }

// closeBigRemotes releases the mappings of the peers' big buffers.
func (b *bigBufs) closeBigRemotes() {
	for i, rm := range b.bigRems {
		if rm != nil {
			rm.Close()
			b.bigRems[i] = nil
		}
	}
	b.bigMem = nil
}

// freeBigOld frees the big buffers a failed call left, which no peer maps any more.
func (b *bigBufs) freeBigOld() {
	if b.bigOld != nil {
		removePages(b.bigOld.Bytes())
		b.bigOld.Free()
		b.bigOld = nil
	}
}
