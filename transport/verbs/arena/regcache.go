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
// Every Get takes a reference on the registration it returns, which its caller gives back
// with Put once no peer may use the key any more (a rendezvous send: at its FIN). Only
// idle registrations are evicted. When all are in use the cache holds more than its
// capacity until enough are put back. So a key stays valid as long as it is referenced,
// however many transfers are in flight (evicting a registration that a peer was still
// reading made the read fail with RemAccessErr once more than the capacity of rendezvous
// sends were outstanding).
//
// The caller must Invalidate a buffer before its memory is reused for something that must
// not stay remotely reachable; Go memory held by a cached MR is kept alive by the MR.
type RegCache struct {
	reg       func(buf []byte, access verbs.Access) (verbs.MR, error)
	cap       int
	idleLimit int64 // bytes of idle registrations kept at most (SetIdleLimit); 0: no limit

	mu      sync.Mutex
	entries []*cacheEntry // most recently used last
	retired []*cacheEntry // invalidated while referenced: deregistered at their last Put
	idle    int64         // bytes of the idle (unreferenced) registrations in entries
	hits    int64
	misses  int64
	evicted int64
}

type cacheEntry struct {
	start, end uintptr
	mr         verbs.MR
	refs       int
}

// SetIdleLimit bounds the bytes of idle registrations the cache keeps (0: no bound, the
// default). A registration of Go memory keeps that memory alive, so a program that sends
// from a fresh large buffer each time would otherwise hold capacity times the largest
// buffer. Least recently used idle registrations go first.
func (c *RegCache) SetIdleLimit(bytes int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.idleLimit = bytes
	c.trimLocked(c.cap)
}

// NewRegCache returns a cache of at most capacity idle registrations made by reg.
func NewRegCache(reg func(buf []byte, access verbs.Access) (verbs.MR, error), capacity int) *RegCache {
	return &RegCache{reg: reg, cap: max(capacity, 1)}
}

func span(buf []byte) (uintptr, uintptr) {
	p := uintptr(unsafe.Pointer(unsafe.SliceData(buf)))
	return p, p + uintptr(len(buf))
}

// Get returns a registration covering buf with at least access, registering on a miss,
// and takes a reference on it (give it back with Put). Empty buffers are registered each
// time and not cached; Put deregisters them.
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
			if e.refs == 0 {
				c.idle -= int64(e.end - e.start)
			}
			e.refs++
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
	c.trimLocked(c.cap - 1)
	c.entries = append(c.entries, &cacheEntry{start: start, end: end, mr: mr, refs: 1})
	return mr, nil
}

// trimLocked evicts idle registrations, least recently used first, until at most keep
// entries are left or none is idle.
func (c *RegCache) trimLocked(keep int) {
	excess := len(c.entries) - keep
	over := func() bool { return excess > 0 || c.idleLimit > 0 && c.idle > c.idleLimit }
	if !over() {
		return
	}
	kept := c.entries[:0]
	for _, e := range c.entries {
		if over() && e.refs == 0 {
			e.mr.Dereg()
			c.evicted++
			c.idle -= int64(e.end - e.start)
			excess--
			continue
		}
		kept = append(kept, e)
	}
	clear(c.entries[len(kept):])
	c.entries = kept
}

// Put gives back the reference that Get took on mr. A registration the cache holds more
// of than its capacity, or that was invalidated meanwhile, is deregistered when its last
// reference goes.
func (c *RegCache) Put(mr verbs.MR) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range c.entries {
		if e.mr == mr {
			if e.refs--; e.refs == 0 {
				c.idle += int64(e.end - e.start)
			}
			c.trimLocked(c.cap)
			return
		}
	}
	for i, e := range c.retired {
		if e.mr == mr {
			if e.refs--; e.refs == 0 {
				e.mr.Dereg()
				c.retired = append(c.retired[:i], c.retired[i+1:]...)
			}
			return
		}
	}
	mr.Dereg() // an uncached (empty) registration
}

// Invalidate removes cached registrations overlapping buf: idle ones are deregistered now,
// referenced ones at their last Put.
func (c *RegCache) Invalidate(buf []byte) {
	start, end := span(buf)
	c.mu.Lock()
	defer c.mu.Unlock()
	kept := c.entries[:0]
	for _, e := range c.entries {
		switch {
		case e.start >= end || start >= e.end:
			kept = append(kept, e)
		case e.refs > 0:
			c.retired = append(c.retired, e)
		default:
			e.mr.Dereg()
			c.idle -= int64(e.end - e.start)
		}
	}
	clear(c.entries[len(kept):])
	c.entries = kept
}

// Close deregisters everything, referenced or not: the keys stop working.
func (c *RegCache) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range c.entries {
		e.mr.Dereg()
	}
	for _, e := range c.retired {
		e.mr.Dereg()
	}
	c.entries, c.retired, c.idle = nil, nil, 0
}

// Stats returns hits, misses and evictions.
func (c *RegCache) Stats() (hits, misses, evictions int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hits, c.misses, c.evicted
}
