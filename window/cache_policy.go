package window

import (
	"encoding/binary"
	"sync/atomic"

	"github.com/gorma-hpc/gorma/runtime/substrate"
	"github.com/gorma-hpc/gorma/window/coherence"
)

// When a rank caches a remote page. A page is cached from its second miss on, unless
// writes keep invalidating copies that this rank polls. Every cached copy costs each
// write to the page a round trip to this rank before the write completes. A rank that
// polls a page waits for a write: its hits save it little, while the writer waits for
// its copy's invalidation at every write.
//
// A hit that repeats this rank's previous Get (the same bytes of the same rank: a poll)
// counts 1/pollWeight of a hit. A copy that served a poll and that a write invalidates
// before it served copyHits hits is short-lived. After shortCopies short-lived copies in
// a row the page is read through, uncached, as with NoCache. A read-through page holds
// no registration, and its writes complete without waiting for this rank. A copy that
// served no poll is never short-lived, however few its hits: a page read now and then
// (a cold bucket of a table) costs one fill per write, as its reads through would.
//
// A read-through Get also reads the page's version (the writes counted to it) and the
// home's syncs word (its owner syncs, which publish stores the version does not count),
// on the target's counter; the page's first miss after the reads completed checks their
// sum. A check that finds the sum where the previous check left it (no write and no
// owner sync in between) ends the read-through: that miss caches the page again. The
// Gets from one check to the next start at checkEvery and double with each relapse (a
// copy short-lived again after a read-through), up to checkEvery<<maxLevel; a copy that
// serves copyHits hits resets them. Polls count 1/pollWeight here too: a poll that
// found no write says little about the next one.
//
// A page polled about as often as it is written (a flag, a counter, a queue head) thus
// goes uncached. A page that stops being written (the end of a phase that
// wrote it) is cached again once two checks after its last write find the same sum,
// about two gaps of its Gets later. The counts are the page's own Gets, not time: a
// writer slowed down by invalidations makes copies live longer, which a time window
// would take for a page written less often.
const (
	copyHits    = 16 // hits that make a copy worth its fill and its invalidation
	pollWeight  = 16 // repeated Gets that count as one hit
	shortCopies = 2  // short-lived copies in a row that make a page read through
	checkEvery  = 1  // Gets from one check of a read-through page to the next, at first
	maxLevel    = 4  // the longest gap is checkEvery<<maxLevel Gets
)

// pageUse is a rank's record of one remote page: whether it missed before, how its
// copies fared, and its read-through state (20 bytes). Its methods run under w.mu.
type pageUse struct {
	sum      uint32 // the sum the last check read (version and syncs), modulo 2^32
	hits     uint16 // hits on the current copy, in 1/pollWeight, up to copyHits*pollWeight
	left     uint16 // read-through Gets left before the next check, in 1/pollWeight
	gap      uint16 // Gets from one check to the next, in 1/pollWeight
	short    uint8  // short-lived copies in a row, up to shortCopies
	level    uint8  // the next read-through's gap is checkEvery<<level
	seen     bool   // the page missed once
	live     bool   // a fill brought a copy that no miss has found invalidated yet
	polled   bool   // a Get that repeated the previous one hit the current copy
	through  bool   // the page is read through
	checked  bool   // sum holds a check's result
	checking bool   // the check's reads are posted and their result not yet taken
}

// missKind is what a Get does with a page it did not find valid in the cache.
type missKind uint8

const (
	missFill   missKind = iota // run the Machine: fill the page and cache it
	missCold                   // read the target: the page's first miss
	missBypass                 // read the target: the page is read through
	missCheck                  // read the target, and post the check's reads
)

// weight is what a Get counts, in 1/pollWeight: repeat says it repeats the previous Get.
func weight(repeat bool) uint16 {
	if repeat {
		return 1
	}
	return pollWeight
}

// hit counts a Get served from the copy.
func (u *pageUse) hit(repeat bool) {
	u.hits = min(u.hits+weight(repeat), copyHits*pollWeight)
	u.polled = u.polled || repeat
}

// filled records that a fill brought a copy (installed or not: a write may have
// invalidated it before the install).
func (u *pageUse) filled() {
	u.live, u.hits, u.polled = true, 0, false
}

// released records that the copy left the cache by eviction: its end says nothing
// about writes.
func (u *pageUse) released() {
	u.live = false
}

// miss decides for a Get that did not find the page valid; repeat says it repeats the
// previous Get. A live copy was invalidated by a write since its fill: miss judges it
// first. After missCheck the caller posts the check's reads and reports that with
// posted; it reports their result with check, before a later miss.
func (u *pageUse) miss(repeat bool) missKind {
	if u.live {
		u.live = false
		if u.hits >= copyHits*pollWeight || !u.polled {
			u.short, u.level = 0, 0
		} else if u.short < shortCopies {
			u.short++
		}
		u.hits = 0
		if u.short == shortCopies {
			u.through, u.checked, u.checking, u.left = true, false, false, 0
			u.gap = checkEvery * pollWeight << u.level
			u.level = min(u.level+1, maxLevel)
		}
	}
	switch {
	case u.through && u.checking:
		return missBypass
	case u.through:
		u.left -= min(u.left, weight(repeat))
		if u.left > 0 {
			return missBypass
		}
		return missCheck
	case !u.seen:
		u.seen = true
		return missCold
	}
	return missFill
}

// posted records that the check's reads are in flight.
func (u *pageUse) posted() {
	u.checking = true
}

// check records the sum the check's reads returned. The same sum as at the previous
// check ends the read-through.
func (u *pageUse) check(sum uint32) {
	u.checking = false
	if u.checked && sum == u.sum {
		u.through = false
		return
	}
	u.sum, u.checked, u.left = sum, true, u.gap
}

// cachePolicy is a rank's policy state for one window's cache: the record of every
// remote page it may cache and the buffers of its checks. It is guarded by w.mu.
type cachePolicy struct {
	use    [][]pageUse // by rank, page: nil for ranks not cached
	checks [][]byte    // by rank: two words per page, the results of its check's reads
	last   getKey      // the previous Get through cacheGet
	due    []int       // pages whose checks the current Get posts
}

// getKey names the bytes a Get reads: target rank, byte offset, length.
type getKey struct {
	rank int
	off  uint64
	n    int
}

// repeats records the Get of k and reports whether it repeats the previous one.
func (pl *cachePolicy) repeats(k getKey) bool {
	r := k == pl.last
	pl.last = k
	return r
}

// post posts the check of page p of rank h (pages pages): reads of rm's words at ver
// (the page's version) and at syncs (the owner's syncs word), counted on ctr, whose
// next Wait completes them. If the first read cannot be posted, the page stays due.
func (pl *cachePolicy) post(rm *substrate.Remote, ctr *substrate.Counter, h, p, pages int, ver, syncs uint64) {
	if pl.checks[h] == nil {
		pl.checks[h] = make([]byte, 2*pages*wordLen)
	}
	buf := pl.checks[h][2*p*wordLen : 2*(p+1)*wordLen]
	if rm.Read(ctr, ver, buf[:wordLen]) != nil {
		return
	}
	// The read writes buf until ctr's next Wait: no other check of the page before then.
	pl.use[h][p].posted()
	_ = rm.Read(ctr, syncs, buf[wordLen:]) // if it fails, so does the Get's own read
}

// take hands the completed check of page p of rank h to its record: the sum of the
// version and the syncs word, which grows with every write to the page and every owner
// sync of h.
func (pl *cachePolicy) take(h, p int) {
	buf := pl.checks[h][2*p*wordLen:]
	pl.use[h][p].check(uint32(binary.NativeEndian.Uint64(buf) + binary.NativeEndian.Uint64(buf[wordLen:])))
}

// readsThrough decides whether a Get of pages [first, last] of t's rank goes to the
// target uncached, and if so counts its misses and posts the checks due. The Machine
// caches every page it is asked for (Promote 1); this rank decides which misses go to it
// (pageUse.miss). A miss that does not cache costs what a Get costs without the cache: a
// read completed by the next flush, not a protocol step. If one page of the Get is read
// through, all are. w.mu is held.
func (c *coh[T]) readsThrough(t *target[T], first, last int, repeat bool, flags []uint64) bool {
	h := t.rank
	through, misses, bypassed := false, int64(0), int64(0)
	due, idle := c.pol.due[:0], -1
	for p := first; p <= last; p++ {
		if c.bufs[h][p] != nil && coherence.Usable(atomic.LoadUint64(&flags[p])) {
			continue
		}
		misses++
		u := &c.pol.use[h][p]
		if u.checking {
			// The check's reads are complete once nothing is pending on h's counter.
			if idle < 0 {
				idle = 0
				if t.ctr.Pending() == 0 {
					idle = 1
				}
			}
			if idle == 1 {
				c.pol.take(h, p)
			}
		}
		switch u.miss(repeat) {
		case missCold:
			through = true
		case missBypass:
			through = true
			bypassed++
		case missCheck:
			through = true
			bypassed++
			due = append(due, p)
		}
	}
	c.pol.due = due
	if !through {
		return false
	}
	c.stats.misses.Add(misses)
	c.stats.bypassed.Add(bypassed)
	for _, p := range due {
		t.pend.Store(true)
		ver := uint64(c.index(coherence.Word{Kind: coherence.Version, Rank: h, Home: h, Page: p})) * wordLen
		c.pol.post(c.rem[h], t.ctr, h, p, c.pages[h], ver, uint64(c.syncsIndex(h))*wordLen)
	}
	return true
}
