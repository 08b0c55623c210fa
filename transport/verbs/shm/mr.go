package shm

import (
	"sync"
	"sync/atomic"

	"github.com/gorma-hpc/gorma/transport/verbs"
	"github.com/gorma-hpc/gorma/transport/verbs/arena"
)

// pd is a protection domain: it owns MRs and QPs, and a QP may only use local MRs of its
// own PD (LocProtErr otherwise, as in libibverbs).
type pd struct {
	dev *device

	mu     sync.Mutex
	closed bool
	mrs    map[*mr]struct{}
	qps    map[*qp]struct{}
}

// mr is a memory region: arena memory (AllocMR) or user memory (RegMR). Its key is both
// the LKey and the RKey.
// Zero reports that an arena region's bytes all read zero (arena.Region.Zero).
func (m *mr) Zero() bool { return m.kind == arena.KindArena && m.region.Zero }

// Noted reports whether a peer said it wrote into the region through a mapping
// (mapping.Note) since it was registered: one load of the region's key table entry.
func (m *mr) Noted() bool { return m.kind == arena.KindArena && m.pd.dev.arena.Table().Noted(m.key) }

type mr struct {
	pd     *pd
	key    uint64
	access verbs.Access
	kind   arena.Kind
	region arena.Region // KindArena
	buf    []byte       // the region's bytes; for KindUser this reference keeps them alive

	mu   sync.Mutex
	dead bool
}

func (m *mr) LKey() uint64         { return m.key }
func (m *mr) RKey() uint64         { return m.key }
func (m *mr) Len() int             { return len(m.buf) }
func (m *mr) Access() verbs.Access { return m.access }
func (m *mr) Bytes() []byte        { return m.buf }

// AllocMR carves length bytes of the device arena as a memory region.
func (p *pd) AllocMR(length int, access verbs.Access) (verbs.MR, error) {
	if length < 0 {
		return nil, opError("alloc mr", 0, verbs.ErrInvalid, "negative length")
	}
	if access&^verbs.AccessAll != 0 {
		return nil, opError("alloc mr", 0, verbs.ErrInvalid, "unknown access bits "+access.String())
	}
	if err := p.checkOpen("alloc mr"); err != nil {
		return nil, err
	}
	r, err := p.dev.arena.Alloc(length, access)
	if err != nil {
		return nil, opError("alloc mr", 0, err, "")
	}
	m := &mr{pd: p, key: r.Key, access: access, kind: arena.KindArena, region: r, buf: r.Bytes}
	if err := p.addMR(m); err != nil {
		p.dev.arena.Free(r)
		return nil, err
	}
	return m, nil
}

// RegMR registers ordinary Go memory. RemoteAtomic is refused: atomics across processes
// need memory both map, so allocate atomic targets with AllocMR.
func (p *pd) RegMR(buf []byte, access verbs.Access) (verbs.MR, error) {
	if access&^verbs.AccessAll != 0 {
		return nil, opError("reg mr", 0, verbs.ErrInvalid, "unknown access bits "+access.String())
	}
	if access.Has(verbs.RemoteAtomic) {
		return nil, opError("reg mr", 0, verbs.ErrUnsupported,
			"shm cannot run atomics on registered user memory (peers reach it through process_vm_writev, which is not atomic); allocate atomic targets with PD.AllocMR")
	}
	if err := p.checkOpen("reg mr"); err != nil {
		return nil, err
	}
	key, err := p.dev.arena.RegisterUser(buf, access)
	if err != nil {
		return nil, opError("reg mr", 0, err, "")
	}
	p.dev.huge.collapse(buf) // peers' process_vm_readv of it pins huge pages (huge.go)
	m := &mr{pd: p, key: key, access: access, kind: arena.KindUser, buf: buf}
	if err := p.addMR(m); err != nil {
		p.dev.arena.Deregister(key)
		return nil, err
	}
	return m, nil
}

func (p *pd) checkOpen(op string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return opError(op, 0, verbs.ErrClosed, "the protection domain was closed")
	}
	return nil
}

func (p *pd) addMR(m *mr) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return opError("reg mr", 0, verbs.ErrClosed, "the protection domain was closed")
	}
	p.mrs[m] = struct{}{}
	p.dev.mrs.add(m)
	return nil
}

// Dereg revokes the region's key (waiting for in-flight remote accesses to finish) and
// returns arena memory for reuse. Later work naming the key fails.
func (m *mr) Dereg() error { return m.dereg(false) }

// dereg deregisters m. closing is true when the whole device is closing: arena memory is
// then not freed, which would wait (up to the arena's drain bound) for peers' pins — a
// peer's Mapping of a region, which a dead or slower peer may hold for a long time. The
// arena is closed right after, so the memory is never reused; peers' mappings keep the
// segment's pages until they unmap.
func (m *mr) dereg(closing bool) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.dead {
		return opError("dereg mr", 0, verbs.ErrClosed, "the memory region was already deregistered")
	}
	m.dead = true
	p := m.pd
	p.dev.mrs.remove(m)
	p.mu.Lock()
	delete(p.mrs, m)
	p.mu.Unlock()
	var err error
	if m.kind == arena.KindArena && closing {
		return nil
	}
	if m.kind == arena.KindArena {
		err = p.dev.arena.Free(m.region)
	} else {
		err = p.dev.arena.Deregister(m.key)
	}
	if err != nil {
		return opError("dereg mr", 0, err, "")
	}
	return nil
}

// Close destroys the PD's QPs and deregisters its MRs.
func (p *pd) Close() error { return p.close(false) }

// close is Close; closing is true when the device is closing (see mr.dereg).
func (p *pd) close(closing bool) error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	qps, mrs := keys(p.qps), keys(p.mrs)
	p.mu.Unlock()
	for _, q := range qps {
		q.Close()
	}
	for _, m := range mrs {
		m.dereg(closing)
	}
	p.dev.removePD(p)
	return nil
}

// mrTable finds a local MR by key without a map or a lock: keys carry their key table slot
// (arena.KeySlot). So the table is an array indexed by slot, and an entry matches only if
// its full key (with the generation) does.
type mrTable struct {
	slots []atomic.Pointer[mr]
}

func newMRTable(maxMRs int) mrTable {
	return mrTable{slots: make([]atomic.Pointer[mr], maxMRs+1)}
}

func (t *mrTable) add(m *mr) {
	if i := arena.KeySlot(m.key); i < uint64(len(t.slots)) {
		t.slots[i].Store(m)
	}
}

func (t *mrTable) remove(m *mr) {
	if i := arena.KeySlot(m.key); i < uint64(len(t.slots)) {
		t.slots[i].CompareAndSwap(m, nil)
	}
}

// lookup returns the live MR whose key is key, or nil.
func (t *mrTable) lookup(key uint64) *mr {
	i := arena.KeySlot(key)
	if i >= uint64(len(t.slots)) {
		return nil
	}
	if m := t.slots[i].Load(); m != nil && m.key == key {
		return m
	}
	return nil
}
