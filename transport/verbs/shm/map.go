package shm

import (
	"sync"
	"sync/atomic"

	"github.com/gorma-hpc/gorma/transport/verbs"
	"github.com/gorma-hpc/gorma/transport/verbs/arena"
)

// Map implements verbs.Mapper: a pinned view of an arena region of the connected peer.
// The mapping holds a reference on the peer's mapped arena (as a connected QP does), so
// the arena stays mapped after the QP closes or the peer dies, until Unmap.
func (q *qp) Map(rkey, off uint64, n int, want verbs.Access) (verbs.Mapping, error) {
	q.mu.Lock()
	st, p := q.state, q.peer
	q.mu.Unlock()
	if st != verbs.RTS || p == nil {
		return nil, q.errorf("map", verbs.ErrQPState, "map needs a connected QP (state %v)", st)
	}
	if n < 0 {
		return nil, q.errorf("map", verbs.ErrInvalid, "negative length %d", n)
	}
	tg, ok := q.rtab.Pin(rkey, off, uint64(n), want)
	if !ok {
		return nil, q.errorf("map", verbs.ErrAccess, "key %#x, %d bytes at offset %d", rkey, n, off)
	}
	if tg.Kind != arena.KindArena {
		q.rtab.Unpin(rkey)
		return nil, q.errorf("map", verbs.ErrUnsupported, "key %#x names registered user memory, which only RDMA reaches", rkey)
	}
	b, ok := q.window(&tg, off, uint64(n))
	if !ok {
		q.rtab.Unpin(rkey)
		return nil, q.errorf("map", verbs.ErrAccess, "key %#x: region lies outside the peer's arena", rkey)
	}
	c := &q.dev.peers
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		q.rtab.Unpin(rkey)
		return nil, q.errorf("map", verbs.ErrClosed, "the device is closed")
	}
	p.refs++
	c.mu.Unlock()
	return &mapping{c: c, p: p, live: p.live, tab: q.rtab, key: rkey, b: b}, nil
}

// mapping is a pinned region of a peer's arena.
type mapping struct {
	c    *peerCache
	p    *peer
	live *atomic.Uint32 // p.live, one load nearer
	tab  *arena.Table
	key  uint64
	b    []byte
	once sync.Once
}

func (m *mapping) Bytes() []byte   { return m.b }
func (m *mapping) PeerAlive() bool { return m.live.Load()&ownerDied == 0 }

// Note tells the owner that this side wrote into the region (arena.Table.Note): an owner
// that reads the region only once told (the runtime's fast boxes) reads it from now on.
// It is one store into the region's key table entry.
func (m *mapping) Note() { m.tab.Note(m.key) }

// Unmap unpins the region and drops the reference on the peer's arena mapping; a dead
// peer that nothing uses any more is unmapped.
func (m *mapping) Unmap() error {
	m.once.Do(func() {
		m.c.mu.Lock()
		defer m.c.mu.Unlock()
		if !m.c.closed {
			m.tab.Unpin(m.key)
		}
		m.p.refs--
		if m.p.refs == 0 && m.p.dead.Load() && !m.c.closed {
			delete(m.c.m, m.p.key)
			m.p.unmap()
		}
	})
	return nil
}
