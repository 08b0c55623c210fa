package window

import (
	"sync/atomic"
	"unsafe"
)

// Metadata. Every rank's window has a metadata region next to its memory: 8-byte words
// that peers change by one-sided atomics and writes (on a mapped peer: CPU atomics on its
// shared memory), so that no synchronization needs the target's code to run:
//
//	word 0                    passive-target lock: lockExcl, or the number of shared holders
//	word 8                    accumulate lock: 0 free, rank+1 of the holder
//	word 16                   doorbell: bumped by a peer that changed a word this rank waits for
//	word 17                   sleepers: goroutines of this rank asleep on the doorbell
//	word 24 + r               fence: the number of Fences rank r has entered
//	word 24 + size + r        PSCW: the number of Posts rank r (a target) made to this rank
//	word 24 + 2*size + r      PSCW: the number of Completes rank r (an origin) made here
//	then                      dynamic windows: the attachment directory (dynamic.go)
//	then                      coherence: versions and copyset slots of this rank's pages,
//	                          and flags of the pages it caches (cache.go)
//
// The lock and accumulate words sit on cache lines of their own.
const (
	mLock   = 0
	mAcc    = 8
	mBell   = 16
	mSleep  = 17
	mFence  = 24
	lineW   = 8 // words per cache line
	wordLen = 8
)

const lockExcl = uint64(1) << 63

// dynEntryWords is the size of one entry of a dynamic window's attachment directory, in
// words (dynamic.go).
const dynEntryWords = 8

type layout struct {
	size     int
	post     int // first PSCW post word
	done     int // first PSCW complete word
	dyn      int // first word of the dynamic directory
	coh      int // first word of the coherence area
	words    int // total words
	dynSlots int
}

func newLayout(size, dynSlots int) layout {
	l := layout{size: size, post: mFence + size, done: mFence + 2*size, dynSlots: dynSlots}
	l.dyn = roundUp(mFence+3*size, lineW)
	l.coh = roundUp(l.dyn+dynSlots*dynEntryWords, lineW)
	l.words = l.coh
	return l
}

func roundUp(n, m int) int { return (n + m - 1) / m * m }

// words views b (8-byte aligned arena or heap memory) as uint64 words.
func words(b []byte) []uint64 {
	if len(b) < 8 {
		return nil
	}
	return unsafe.Slice((*uint64)(unsafe.Pointer(&b[0])), len(b)/8)
}

// fullFence orders this goroutine's earlier stores before its later loads, the order a
// release store (release) does not give: a locked instruction on amd64, on a word only
// this goroutine touches.
func fullFence() {
	var x uint32
	atomic.AddUint32(&x, 0)
}

func load(w []uint64, i int) uint64          { return atomic.LoadUint64(&w[i]) }
func store(w []uint64, i int, v uint64)      { atomic.StoreUint64(&w[i], v) }
func add(w []uint64, i int, v uint64) uint64 { return atomic.AddUint64(&w[i], v) }
func cas(w []uint64, i int, old, new uint64) bool {
	return atomic.CompareAndSwapUint64(&w[i], old, new)
}
