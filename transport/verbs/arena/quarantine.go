package arena

import (
	"fmt"
	"os"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/gorma-hpc/gorma/transport/verbs"
)

// The reuse quarantine. A keyed region that peers may write (RemoteWrite or RemoteAtomic
// rights: window memory, collective scratch) is the memory gorma hands to code that may keep a
// slice of it past Free. Its freed block is not given back to the buddy allocator at once but
// queued here, oldest first. It becomes allocatable again only in two cases. One is an
// allocation that cannot be served from other free space (the oldest first, so the most
// recently freed is reused last). The other is the queue passing its byte cap: the oldest past
// the cap go. The most recently freed block stays even when it alone is larger than the cap:
// its bytes were in use a moment ago, so holding them adds no memory. The quarantine's resident
// memory is thus at most the larger of the cap and the last freed block, on top of the
// high-water mark of free memory. A stale write through such a slice then lands in memory no
// live region uses for as long as the arena has other space. Send and receive buffers (no
// remote write rights) are freed at once: they come and go per message and reuse of warm memory
// is what makes them cheap.
//
// The policy lives in the arena because the arena alone sees every allocation of the
// device and so knows whether other free space exists. The rights decide which regions
// take part because they are all the arena knows of a region's use.
//
// Under GORMA_CHECK=1 each quarantined block of whole pages is also made inaccessible in
// this process (mprotect PROT_NONE) until it leaves the quarantine, so that a stale write
// faults at the write.

// EnvCheck names the environment variable that turns on checked mode: "1" makes freed,
// quarantined blocks inaccessible in this process. It is read once per process.
const EnvCheck = "GORMA_CHECK"

var checking = sync.OnceValue(func() bool { return os.Getenv(EnvCheck) == "1" })

// Checking reports whether GORMA_CHECK=1 was set when the process first asked.
func Checking() bool { return checking() }

// quarBlock is a freed block withheld from reuse.
type quarBlock struct {
	rel     int64 // data-relative offset; the buddy allocator still counts it as used
	order   int
	guarded bool // made inaccessible (GORMA_CHECK=1)
}

// held reports whether a freed region with rights access goes to the quarantine.
func held(access verbs.Access) bool {
	return access&(verbs.RemoteWrite|verbs.RemoteAtomic) != 0
}

// defaultQuarantine is the quarantine's byte cap when Config.Quarantine is 0: a quarter
// of the high-water mark, at most an eighth of the arena. A program that allocates and
// frees windows in a loop then cycles through that much warm memory: the first cycles
// fault pages in, the later ones reuse them (bin/rmabench --test alloc_free.allocate
// shows the cost).
func defaultQuarantine(high, dataSize int64) int64 {
	if high <= 0 {
		return max(dataSize/8, 1)
	}
	return max(min(high/4, dataSize/8), 1)
}

// quarantine queues the freed block at rel and releases the oldest blocks past the cap.
// Called with mu held.
func (a *Arena) quarantine(rel int64, order int) {
	size := blockSize(order)
	q := quarBlock{rel: rel, order: order}
	if checking() && size >= pageSize {
		q.guarded = a.guard(rel, size)
	}
	a.quar = append(a.quar, q)
	a.quarBytes += size
	for a.quarBytes > a.quarCap && len(a.quar)-a.quarHead > 1 {
		a.releaseOldest()
	}
}

// releaseOldest gives the oldest quarantined block back to the buddy allocator. It
// reports false if the quarantine is empty. Called with mu held.
func (a *Arena) releaseOldest() bool {
	if a.quarHead == len(a.quar) {
		return false
	}
	q := a.quar[a.quarHead]
	a.quar[a.quarHead] = quarBlock{}
	a.quarHead++
	if a.quarHead == len(a.quar) {
		a.quar, a.quarHead = a.quar[:0], 0
	} else if a.quarHead >= 64 && a.quarHead*2 >= len(a.quar) {
		n := copy(a.quar, a.quar[a.quarHead:])
		a.quar, a.quarHead = a.quar[:n], 0
	}
	size := blockSize(q.order)
	a.quarBytes -= size
	if q.guarded {
		a.unguard(q.rel, size)
	}
	a.releaseBlock(q.rel)
	return true
}

// releaseBlock returns a block to the buddy allocator as resident free memory and trims
// past the high-water mark. Called with mu held.
func (a *Arena) releaseBlock(rel int64) {
	order := a.alloc.release(rel)
	a.st.ResidentFree += blockSize(order)
	if a.high >= 0 && a.st.ResidentFree > a.high {
		a.trim()
	}
}

// Quarantined returns how many freed blocks, and bytes, the quarantine holds.
func (a *Arena) Quarantined() (blocks int, bytes int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.quar) - a.quarHead, a.quarBytes
}

// guards is the process-wide set of blocks made inaccessible, by address, for Guarded.
var guards struct {
	mu sync.Mutex
	m  map[uintptr]int64 // block address → length
}

// guard makes the block at rel inaccessible in this process. It reports whether it did.
func (a *Arena) guard(rel, size int64) bool {
	b := a.block(rel, size)
	if unix.Mprotect(b, unix.PROT_NONE) != nil {
		return false // checked mode degrades to the plain quarantine
	}
	guards.mu.Lock()
	if guards.m == nil {
		guards.m = make(map[uintptr]int64)
	}
	guards.m[uintptr(unsafe.Pointer(unsafe.SliceData(b)))] = size
	guards.mu.Unlock()
	return true
}

// unguard makes the block at rel readable and writable again, before it is reused.
func (a *Arena) unguard(rel, size int64) {
	b := a.block(rel, size)
	guards.mu.Lock()
	delete(guards.m, uintptr(unsafe.Pointer(unsafe.SliceData(b))))
	guards.mu.Unlock()
	if err := unix.Mprotect(b, unix.PROT_READ|unix.PROT_WRITE); err != nil {
		// Handing out memory that faults would break its next owner.
		panic(fmt.Sprintf("arena %s: restore access to %d bytes at %d: %v", a.name, size, rel, err))
	}
}

// unguardAll restores access to every guarded block, before the segment is retired or
// unmapped. Called with mu held.
func (a *Arena) unguardAll() {
	for i := a.quarHead; i < len(a.quar); i++ {
		if q := &a.quar[i]; q.guarded {
			a.unguard(q.rel, blockSize(q.order))
			q.guarded = false
		}
	}
}

func (a *Arena) block(rel, size int64) []byte {
	off := a.hdr.dataOff + rel
	return a.seg.Bytes()[off : off+size : off+size]
}

// Guarded reports whether b starts in a freed block that GORMA_CHECK=1 made inaccessible
// in this process: a write through b faults.
func Guarded(b []byte) bool {
	if cap(b) == 0 {
		return false
	}
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	guards.mu.Lock()
	defer guards.mu.Unlock()
	for base, n := range guards.m {
		if p >= base && p < base+uintptr(n) {
			return true
		}
	}
	return false
}
