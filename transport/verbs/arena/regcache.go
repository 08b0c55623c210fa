package arena

import (
	"sync"
	"unsafe"

	"github.com/gorma-hpc/gorma/transport/verbs"
)

// RegCache caches registrations of user buffers, in the manner of UCX's registration
// cache: the function that registers is a parameter, the cache deregisters through
// MR.Dereg, and hits, misses and evictions are counted. It is safe for concurrent use.
//
// The caller must Invalidate a buffer before its memory is reused for something that must
// not stay remotely reachable; Go memory held by a cached MR is kept alive by the MR.
type RegCache struct {
	reg func(buf []byte, access verbs.Access) (verbs.MR, error)
	cap int

	mu      sync.Mutex
	entries []cacheEntry // most recently used last
	hits    int64
	misses  int64
	evicted int64
}

type cacheEntry struct {
	start, end uintptr
	mr         verbs.MR
}

// NewRegCache returns a cache of at most capacity registrations made by reg.
func NewRegCache(reg func(buf []byte, access verbs.Access) (verbs.MR, error), capacity int) *RegCache {
	return &RegCache{reg: reg, cap: max(capacity, 1)}
}

func span(buf []byte) (uintptr, uintptr) {
	p := uintptr(unsafe.Pointer(unsafe.SliceData(buf)))
	return p, p + uintptr(len(buf))
}

// Get returns a registration covering buf with at least access, registering on a miss.
// Empty buffers are registered each time and not cached.
func (c *RegCache) Get(buf []byte, access verbs.Access) (verbs.MR, error) {
	if len(buf) == 0 {
		return c.reg(buf, access)
	}
	start, end := span(buf)
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := len(c.entries) - 1; i >= 0; i-- {
		e := c.entries[i]
		if e.start <= start && end <= e.end && e.mr.Access().Has(access) {
			c.hits++
			copy(c.entries[i:], c.entries[i+1:])
			c.entries[len(c.entries)-1] = e
			return e.mr, nil
		}
	}
	c.misses++
	mr, err := c.reg(buf, access)
	if err != nil {
		return nil, err
	}
	if len(c.entries) == c.cap {
		c.entries[0].mr.Dereg()
		c.entries = append(c.entries[:0], c.entries[1:]...)
		c.evicted++
	}
	c.entries = append(c.entries, cacheEntry{start, end, mr})
	return mr, nil
}

// Invalidate deregisters cached registrations overlapping buf.
func (c *RegCache) Invalidate(buf []byte) {
	start, end := span(buf)
	c.mu.Lock()
	defer c.mu.Unlock()
	kept := c.entries[:0]
	for _, e := range c.entries {
		if e.start < end && start < e.end {
			e.mr.Dereg()
			continue
		}
		kept = append(kept, e)
	}
	clear(c.entries[len(kept):])
	c.entries = kept
}

// Close deregisters everything.
func (c *RegCache) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range c.entries {
		e.mr.Dereg()
	}
	c.entries = nil
}

// Stats returns hits, misses and evictions.
func (c *RegCache) Stats() (hits, misses, evictions int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hits, c.misses, c.evicted
}
