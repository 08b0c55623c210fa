package arena

import (
	"runtime"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/gorma-hpc/gorma/transport/verbs"
)

// Key layout: slot<<genBits | generation. Generation 0 is never issued, so a slot whose
// state carries generation 0 is free or revoked, and key 0 is never valid.
const (
	genBits  = 44
	genMask  = 1<<genBits - 1
	pinBits  = 20 // state word: generation<<pinBits | pins
	pinMask  = 1<<pinBits - 1
	slotSize = 64 // one cache line per slot, so pins of different MRs never share a line
	maxSlots = 1 << (64 - genBits)
)

// Kind tells what memory a key table slot describes.
type Kind uint8

const (
	KindArena Kind = 1 // bytes within the arena's own segment; Base is the segment offset
	KindUser  Kind = 2 // ordinary memory of the owner process; Base is its virtual address
)

// Target is a validated, pinned remote access.
type Target struct {
	Kind Kind
	Base uint64 // segment offset (KindArena) or owner virtual address (KindUser) of the MR's byte 0
	Len  uint64 // MR length
}

// slot is one key table entry in shared memory. The owner writes base, length and meta
// before it publishes a generation in state; readers load state first.
type slot struct {
	state  atomic.Uint64 // generation<<pinBits | pins
	base   atomic.Uint64
	length atomic.Uint64
	meta   atomic.Uint64 // access | kind<<8
	notes  atomic.Uint64 // nonzero: a peer wrote into the MR through a mapping and said so (Note)
	_      [slotSize - 40]byte
}

// Table is a view of an arena's key table, in the owner's or a peer's mapping. Its methods
// are lock-free and safe for concurrent use from any process mapping the arena.
type Table struct {
	slots      []slot
	rejections *atomic.Int64
}

func newTable(mem []byte, off int64, n int, rejections *atomic.Int64) *Table {
	p := unsafe.Pointer(&mem[off])
	return &Table{slots: unsafe.Slice((*slot)(p), n), rejections: rejections}
}

// KeySlot returns the table slot a key names.
func KeySlot(key uint64) uint64 { return key >> genBits }

// Pin validates key for an access of n bytes at offset off with the rights want, and pins
// the MR against deregistration until Unpin. A stale, forged or out-of-range access returns
// ok=false and is counted as a key rejection; nothing stays pinned then.
func (t *Table) Pin(key, off, n uint64, want verbs.Access) (tg Target, ok bool) {
	idx, gen := key>>genBits, key&genMask
	if idx == 0 || idx >= uint64(len(t.slots)) || gen == 0 {
		t.rejections.Add(1)
		return Target{}, false
	}
	s := &t.slots[idx]
	// Optimistic pin: one atomic add. A stale or revoked key backs its pin out at once;
	// revoke waits for every pin, including such transient ones, to drain.
	if w := s.state.Add(1); w>>pinBits != gen || w&pinMask == 0 {
		s.state.Add(^uint64(0))
		t.rejections.Add(1)
		return Target{}, false
	}
	ln, meta := s.length.Load(), s.meta.Load()
	if !verbs.Access(meta&0xff).Has(want) || off > ln || n > ln-off {
		s.state.Add(^uint64(0))
		t.rejections.Add(1)
		return Target{}, false
	}
	return Target{Kind: Kind(meta >> 8), Base: s.base.Load(), Len: ln}, true
}

// Unpin releases a pin taken by a successful Pin.
func (t *Table) Unpin(key uint64) {
	t.slots[key>>genBits].state.Add(^uint64(0))
}

// Valid reports whether key is currently live, without pinning.
func (t *Table) Valid(key uint64) bool {
	idx, gen := key>>genBits, key&genMask
	if idx == 0 || idx >= uint64(len(t.slots)) || gen == 0 {
		return false
	}
	return t.slots[idx].state.Load()>>pinBits == gen
}

// Note records in the MR that key names that a peer wrote into it through a mapping:
// its owner, which reads the MR only once told (Noted), reads it from then on. A stale
// key notes nothing.
func (t *Table) Note(key uint64) {
	idx, gen := KeySlot(key), key&genMask
	if idx < uint64(len(t.slots)) && t.slots[idx].state.Load()>>pinBits == gen {
		t.slots[idx].notes.Store(1)
	}
}

// Noted reports whether a peer noted the MR that key names since it was registered.
func (t *Table) Noted(key uint64) bool {
	idx := KeySlot(key)
	return idx < uint64(len(t.slots)) && t.slots[idx].notes.Load() != 0
}

// publish makes slot idx live under gen. The slot must be free (generation 0).
func (t *Table) publish(idx, gen uint64, kind Kind, base, length uint64, access verbs.Access) uint64 {
	s := &t.slots[idx]
	s.base.Store(base)
	s.length.Store(length)
	s.meta.Store(uint64(access) | uint64(kind)<<8)
	s.notes.Store(0)
	for { // keep transient pins of stale keys, which back out on their own
		w := s.state.Load()
		if s.state.CompareAndSwap(w, gen<<pinBits|w&pinMask) {
			break
		}
	}
	return idx<<genBits | gen
}

// drainTimeout bounds how long revoke waits for remote pins to drain. A pin lasts one copy;
// one that outlives this belongs to a process that died mid-access.
const drainTimeout = 2 * time.Second

// revoke retires the generation in slot idx so no new Pin succeeds, then waits for the
// pins to drain. It reports false if they did not drain (the slot must then be withheld).
func (t *Table) revoke(idx uint64) bool {
	s := &t.slots[idx]
	for {
		w := s.state.Load()
		if s.state.CompareAndSwap(w, w&pinMask) {
			if w&pinMask == 0 {
				return true
			}
			break
		}
	}
	deadline := time.Now().Add(drainTimeout)
	for spins := 0; s.state.Load()&pinMask != 0; spins++ {
		if spins < 100 {
			runtime.Gosched()
			continue
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Microsecond)
	}
	return true
}
