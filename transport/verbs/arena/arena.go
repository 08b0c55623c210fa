package arena

import (
	"fmt"
	"math/bits"
	"os"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/gorma-hpc/gorma/transport/verbs"
)

// Config configures an arena.
type Config struct {
	Name      string // label for errors and the memfd name
	Size      int64  // data bytes, rounded up to a power of two; default verbs.DefaultArenaSize
	HighWater int64  // resident free bytes kept before trimming; 0 default, <0 never trims
	MaxMRs    int    // key table slots; default verbs.DefaultMaxMRs
	// Quarantine caps the bytes of freed blocks held back from reuse (quarantine.go);
	// 0 means a quarter of the high-water mark, at most an eighth of the arena; <0 turns
	// the quarantine off.
	Quarantine int64
}

// Region is an allocation from the arena.
type Region struct {
	Key   uint64 // 0 for raw regions
	Off   int64  // segment offset
	Bytes []byte // aliases the segment
	// Zero reports that every byte reads zero: no page of the region was handed out
	// since the segment was made or the page was last returned to the kernel. Clearing
	// such a region would only fault its pages in.
	Zero bool

	held bool // freed into the quarantine (rights that let peers write)
}

// Arena is the owner's side of a device's pre-registered memory. Its methods are safe for
// concurrent use.
type Arena struct {
	seg  *Segment
	hdr  *header
	tab  *Table
	name string
	high int64

	mu        sync.Mutex
	alloc     *buddy
	resident  []uint64         // one bit per data page: faulted in and not punched since
	freeSlots []uint64         // free key table slots (LIFO)
	slotOf    map[int64]uint64 // keyed region offset → slot
	userLen   map[uint64]int64 // user-memory slot → length (for stats)
	nextGen   uint64
	st        verbs.ArenaStats
	closed    bool
	retired   bool // closed by Retire; Close still unmaps

	quar      []quarBlock // freed blocks withheld from reuse; quar[quarHead] is the oldest
	quarHead  int
	quarBytes int64
	quarCap   int64 // <0: no quarantine
}

// New creates an arena with a fresh segment.
func New(cfg Config) (*Arena, error) {
	if cfg.Size == 0 {
		cfg.Size = verbs.DefaultArenaSize
	}
	if cfg.HighWater == 0 {
		cfg.HighWater = verbs.DefaultHighWater
	}
	if cfg.MaxMRs == 0 {
		cfg.MaxMRs = verbs.DefaultMaxMRs
	}
	if cfg.Size < 0 || cfg.Size > 1<<46 {
		return nil, fmt.Errorf("arena %s: size %d out of range (1 B to 64 TiB)", cfg.Name, cfg.Size)
	}
	if cfg.MaxMRs < 1 || cfg.MaxMRs >= maxSlots {
		return nil, fmt.Errorf("arena %s: MaxMRs %d out of range (1 to %d)", cfg.Name, cfg.MaxMRs, maxSlots-1)
	}
	dataSize := int64(1) << bits.Len64(uint64(cfg.Size-1))
	if dataSize < pageSize {
		dataSize = pageSize
	}
	slots := cfg.MaxMRs + 1 // slot 0 is never used, so key 0 is never valid
	dataOff, total := layout(slots, dataSize)
	seg, err := CreateSegment(cfg.Name, total)
	if err != nil {
		return nil, err
	}
	writeHeader(seg.Bytes(), slots, dataOff, dataSize, os.Getpid())
	hdr, err := readHeader(seg.Bytes())
	if err != nil {
		seg.Close()
		return nil, err
	}
	a := &Arena{
		seg: seg, hdr: hdr, tab: hdr.table(), name: cfg.Name, high: cfg.HighWater,
		alloc:    newBuddy(dataSize),
		resident: make([]uint64, (dataSize/pageSize+63)/64),
		slotOf:   make(map[int64]uint64),
		userLen:  make(map[uint64]int64),
		nextGen:  1,
		quarCap:  cfg.Quarantine,
	}
	if a.quarCap == 0 {
		a.quarCap = defaultQuarantine(cfg.HighWater, dataSize)
	}
	for i := slots - 1; i >= 1; i-- {
		a.freeSlots = append(a.freeSlots, uint64(i))
	}
	a.st.Reserved = dataSize
	return a, nil
}

// Segment returns the arena's segment.
func (a *Arena) Segment() *Segment { return a.seg }

// Table returns the key table in the owner's mapping.
func (a *Arena) Table() *Table { return a.tab }

// Doorbell returns the header's doorbell words: a sequence number to use as a futex word,
// and a count of sleeping waiters.
func (a *Arena) Doorbell() (seq, waiters *atomic.Uint32) { return a.hdr.seq, a.hdr.waiters }

func (a *Arena) errorf(format string, args ...any) error {
	return fmt.Errorf("arena %s: "+format, append([]any{a.name}, args...)...)
}

// Alloc carves n bytes with rights access and a fresh key.
func (a *Arena) Alloc(n int, access verbs.Access) (Region, error) {
	return a.carve(n, access, true)
}

// AllocRaw carves n bytes without a key, for provider-internal structures (rings).
func (a *Arena) AllocRaw(n int) (Region, error) { return a.carve(n, 0, false) }

func (a *Arena) carve(n int, access verbs.Access, keyed bool) (Region, error) {
	if n < 0 {
		return Region{}, a.errorf("allocate %d bytes: %w", n, verbs.ErrInvalid)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return Region{}, a.errorf("allocate: %w", verbs.ErrClosed)
	}
	if keyed && len(a.freeSlots) == 0 {
		return Region{}, a.errorf("allocate: %w (%d live MRs; raise MaxMRs)", verbs.ErrTooManyMRs, a.st.LiveMRs)
	}
	rel, order, ok := a.alloc.alloc(int64(max(n, 1)))
	for !ok && a.releaseOldest() { // the quarantine serves only what other space cannot
		rel, order, ok = a.alloc.alloc(int64(max(n, 1)))
	}
	if !ok {
		return Region{}, a.errorf("allocate %d bytes: %w (%d of %d bytes in use; raise the arena size)",
			n, verbs.ErrNoMemory, a.st.InUse, a.st.Reserved)
	}
	size := blockSize(order)
	warm := a.markResident(rel, size)
	if warm > 0 {
		a.st.Reuses++
		a.st.PageInsAvoided += warm
		a.st.ResidentFree = max(0, a.st.ResidentFree-min(size, warm*pageSize))
	}
	a.st.InUse += size
	off := a.hdr.dataOff + rel
	r := Region{Off: off, Bytes: a.seg.Bytes()[off : off+int64(n) : off+int64(n)], Zero: warm == 0}
	if keyed {
		idx := a.freeSlots[len(a.freeSlots)-1]
		a.freeSlots = a.freeSlots[:len(a.freeSlots)-1]
		r.Key = a.tab.publish(idx, a.gen(), KindArena, uint64(off), uint64(n), access)
		r.held = a.quarCap >= 0 && held(access)
		a.slotOf[off] = idx
		a.st.LiveMRs++
		a.st.Allocs++
	}
	return r, nil
}

func (a *Arena) gen() uint64 {
	g := a.nextGen
	a.nextGen++
	if a.nextGen > genMask {
		panic("arena: key generations exhausted") // 2^44 registrations: not reachable in practice
	}
	return g
}

// markResident marks the pages of [rel, rel+size) resident and returns how many already were.
func (a *Arena) markResident(rel, size int64) int64 {
	first, last := rel/pageSize, (rel+size-1)/pageSize
	var warm int64
	for p := first; p <= last; p++ {
		w, bit := &a.resident[p/64], uint64(1)<<(p%64)
		if *w&bit != 0 {
			warm++
		}
		*w |= bit
	}
	return warm
}

// Free revokes r's key (waiting for pins to drain) and keeps the bytes mapped for reuse.
// A region with remote write or atomic rights goes to the quarantine first
// (quarantine.go): its bytes are reused only when no other free space serves an
// allocation.
func (a *Arena) Free(r Region) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return nil // the whole segment is gone
	}
	rel := r.Off - a.hdr.dataOff
	if r.Key != 0 {
		idx, ok := a.slotOf[r.Off]
		if !ok || idx != KeySlot(r.Key) || !a.tab.Valid(r.Key) {
			return a.errorf("free region at %d: %w (not allocated, or freed twice)", r.Off, verbs.ErrInvalid)
		}
		delete(a.slotOf, r.Off)
		a.st.LiveMRs--
		if !a.retire(idx) {
			order := a.alloc.used[rel]
			a.st.Quarantined += blockSize(order)
			a.st.InUse -= blockSize(order)
			delete(a.alloc.used, rel) // withheld: neither free nor reusable
			return nil
		}
	}
	order, ok := a.alloc.used[rel]
	if !ok {
		return a.errorf("free region at %d: %w (not allocated, or freed twice)", r.Off, verbs.ErrInvalid)
	}
	a.st.InUse -= blockSize(order)
	if r.held {
		a.quarantine(rel, order)
	} else {
		a.releaseBlock(rel)
	}
	return nil
}

// retire revokes a slot and returns it to the free list once its pins drained. Called
// with mu held: remote pins last one copy, so the wait is short unless a peer died.
func (a *Arena) retire(idx uint64) bool {
	if !a.tab.revoke(idx) {
		return false // a dead peer holds a pin forever: never reuse this slot
	}
	a.freeSlots = append(a.freeSlots, idx)
	return true
}

// trim punches free, resident blocks until resident free memory is at half the high-water mark.
func (a *Arena) trim() {
	target := a.high / 2
	a.alloc.each(func(rel int64, order int) bool {
		size := blockSize(order)
		if size < pageSize {
			return true // sub-page blocks share pages with live data
		}
		first, n := rel/pageSize, size/pageSize
		warm := int64(0)
		for p := first; p < first+n; p++ {
			if a.resident[p/64]&(1<<(p%64)) != 0 {
				warm++
			}
		}
		if warm == 0 {
			return true
		}
		if a.seg.Punch(a.hdr.dataOff+rel, size) != nil {
			return false
		}
		for p := first; p < first+n; p++ {
			a.resident[p/64] &^= 1 << (p % 64)
		}
		a.st.Trims++
		a.st.TrimmedBytes += warm * pageSize
		a.st.ResidentFree = max(0, a.st.ResidentFree-warm*pageSize)
		return a.st.ResidentFree > target
	})
}

// RegisterUser gives buf (ordinary memory of this process) a key with rights access. The
// caller keeps buf alive until Deregister.
func (a *Arena) RegisterUser(buf []byte, access verbs.Access) (uint64, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return 0, a.errorf("register: %w", verbs.ErrClosed)
	}
	if len(a.freeSlots) == 0 {
		return 0, a.errorf("register: %w (%d live MRs; raise MaxMRs)", verbs.ErrTooManyMRs, a.st.LiveMRs)
	}
	var base uint64
	if len(buf) > 0 {
		base = uint64(uintptr(unsafe.Pointer(unsafe.SliceData(buf))))
	}
	idx := a.freeSlots[len(a.freeSlots)-1]
	a.freeSlots = a.freeSlots[:len(a.freeSlots)-1]
	a.userLen[idx] = int64(len(buf))
	a.st.LiveMRs++
	return a.tab.publish(idx, a.gen(), KindUser, base, uint64(len(buf)), access), nil
}

// Deregister revokes a key from RegisterUser, waiting for pins to drain.
func (a *Arena) Deregister(key uint64) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return nil
	}
	idx := KeySlot(key)
	if _, ok := a.userLen[idx]; !ok || !a.tab.Valid(key) {
		return a.errorf("deregister key %#x: %w (not a live user registration)", key, verbs.ErrInvalid)
	}
	delete(a.userLen, idx)
	a.st.LiveMRs--
	a.retire(idx)
	return nil
}

// Stats returns the counters.
func (a *Arena) Stats() verbs.ArenaStats {
	a.mu.Lock()
	st := a.st
	a.mu.Unlock()
	st.KeyRejections = a.hdr.rejections.Load()
	return st
}

// Close releases the segment. Memory regions carved from it become invalid. After Retire
// it unmaps the retired range.
func (a *Arena) Close() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed && !a.retired {
		return nil
	}
	if !a.closed {
		a.unguardAll()
	}
	a.closed, a.retired = true, false
	return a.seg.Close()
}

// Retire closes the arena as Close does, except that its address range stays mapped to
// inert zero-filled memory (Segment.Retire) until a later Close: for an owner whose
// lock-free readers (a CQ poll that raced the close) may still look at the arena's
// memory for a moment. The memory itself, and the segment's fd, are released now.
func (a *Arena) Retire() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return nil
	}
	a.unguardAll()
	a.closed, a.retired = true, true
	return a.seg.Retire()
}
