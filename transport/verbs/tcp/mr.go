package tcp

import (
	"sync"
	"sync/atomic"

	"github.com/gorma-hpc/gorma/transport/verbs"
	"github.com/gorma-hpc/gorma/transport/verbs/arena"
)

// pd is a protection domain. It tracks its MRs and QPs so that Close can release them.
// The tcp provider does not check that a work request's MRs belong to the QP's PD.
type pd struct {
	d *device

	mu     sync.Mutex
	closed bool
	mrs    map[*mr]struct{}
	qps    map[*qp]struct{}
}

func (p *pd) markClosed() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
}

func (p *pd) add(m *mr, q *qp) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	if m != nil {
		p.mrs[m] = struct{}{}
	}
	if q != nil {
		p.qps[q] = struct{}{}
	}
	return true
}

func (p *pd) forget(m *mr, q *qp) {
	p.mu.Lock()
	if m != nil {
		delete(p.mrs, m)
	}
	if q != nil {
		delete(p.qps, q)
	}
	p.mu.Unlock()
}

const knownAccess = verbs.AccessAll

// AllocMR carves length bytes from the device's arena. Its key is both LKey and RKey.
func (p *pd) AllocMR(length int, access verbs.Access) (verbs.MR, error) {
	if length < 0 || access&^knownAccess != 0 {
		return nil, newErr("alloc mr", 0, verbs.ErrInvalid, "length %d, access %#x: want length >= 0 and known rights", length, uint32(access))
	}
	r, err := p.d.arena.Alloc(length, access)
	if err != nil {
		return nil, wrapErr("alloc mr", 0, err, "")
	}
	m := &mr{d: p.d, pd: p, key: r.Key, buf: r.Bytes, access: access, region: r}
	if err := p.register(m); err != nil {
		p.d.arena.Free(r)
		return nil, err
	}
	return m, nil
}

// RegMR registers buf, ordinary Go memory, with every right the caller asks for: the
// target's progress goroutine serves RDMA and atomics on it as on arena memory.
func (p *pd) RegMR(buf []byte, access verbs.Access) (verbs.MR, error) {
	if access&^knownAccess != 0 {
		return nil, newErr("reg mr", 0, verbs.ErrInvalid, "unknown access bits %#x", uint32(access))
	}
	key, err := p.d.arena.RegisterUser(buf, access)
	if err != nil {
		return nil, wrapErr("reg mr", 0, err, "")
	}
	m := &mr{d: p.d, pd: p, key: key, buf: buf, access: access, user: true}
	if err := p.register(m); err != nil {
		p.d.arena.Deregister(key)
		return nil, err
	}
	return m, nil
}

func (p *pd) register(m *mr) error {
	if !p.add(m, nil) {
		return newErr("reg mr", 0, verbs.ErrClosed, "the protection domain is closed")
	}
	p.d.mrMu.Lock()
	p.d.mrs[m.key] = m
	p.d.mrMu.Unlock()
	if p.d.watch != nil && exposes(m.access) {
		p.d.watch.expose(1)
	}
	return nil
}

// CreateQP creates a QP in Reset.
func (p *pd) CreateQP(attr verbs.QPAttr) (verbs.QP, error) {
	scq, ok1 := attr.SendCQ.(*cq)
	rcq, ok2 := attr.RecvCQ.(*cq)
	if !ok1 || !ok2 || scq == nil || rcq == nil || scq.d != p.d || rcq.d != p.d {
		return nil, newErr("create qp", 0, verbs.ErrInvalid, "SendCQ and RecvCQ must be CQs of this tcp device (RecvCQ may equal SendCQ)")
	}
	if attr.MaxSendWR == 0 {
		attr.MaxSendWR = verbs.DefaultMaxSendWR
	}
	if attr.MaxRecvWR == 0 {
		attr.MaxRecvWR = verbs.DefaultMaxRecvWR
	}
	if attr.MaxSendWR < 0 || attr.MaxSendWR > maxQueueDepth || attr.MaxRecvWR < 0 || attr.MaxRecvWR > maxQueueDepth {
		return nil, newErr("create qp", 0, verbs.ErrInvalid, "MaxSendWR %d and MaxRecvWR %d must be within 1..%d",
			attr.MaxSendWR, attr.MaxRecvWR, maxQueueDepth)
	}
	q := newQP(p, scq, rcq, attr.MaxSendWR, attr.MaxRecvWR)
	if err := p.d.addQP(q); err != nil {
		return nil, err
	}
	if !p.add(nil, q) {
		p.d.forgetQP(q)
		return nil, newErr("create qp", 0, verbs.ErrClosed, "the protection domain is closed")
	}
	q.ep = appendEndpoint(nil, endpoint{devID: p.d.id, qpn: q.num, addr: p.d.addr})
	return q, nil
}

// Close destroys the PD's QPs and deregisters its MRs.
func (p *pd) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	qps := make([]*qp, 0, len(p.qps))
	for q := range p.qps {
		qps = append(qps, q)
	}
	mrs := make([]*mr, 0, len(p.mrs))
	for m := range p.mrs {
		mrs = append(mrs, m)
	}
	p.mu.Unlock()
	for _, q := range qps {
		q.Close()
	}
	for _, m := range mrs {
		m.Dereg()
	}
	p.d.forgetPD(p)
	return nil
}

// mr is a memory region: arena memory (AllocMR) or registered user memory (RegMR).
// Deregistration revokes the key first (waiting for pins of in-progress remote accesses
// to drain), then forgets the MR, so a stale key fails even after its bytes are reused.
type mr struct {
	d       *device
	pd      *pd
	key     uint64
	buf     []byte // the region's memory; for user MRs this reference keeps it alive
	access  verbs.Access
	region  arena.Region
	user    bool
	dereged atomic.Bool
}

// Zero reports that an arena region's bytes all read zero (arena.Region.Zero).
func (m *mr) Zero() bool { return !m.user && m.region.Zero }

func (m *mr) LKey() uint64         { return m.key }
func (m *mr) RKey() uint64         { return m.key }
func (m *mr) Len() int             { return len(m.buf) }
func (m *mr) Access() verbs.Access { return m.access }
func (m *mr) Bytes() []byte        { return m.buf }

// Dereg deregisters the region. A second Dereg is an ErrInvalid error.
func (m *mr) Dereg() error {
	if m.dereged.Swap(true) {
		return newErr("dereg mr", 0, verbs.ErrInvalid, "key %#x is already deregistered", m.key)
	}
	m.pd.forget(m, nil)
	if m.d.watch != nil && exposes(m.access) {
		m.d.watch.expose(-1)
	}
	if m.d.isClosed() {
		return nil // the arena and every key went with the device
	}
	var err error
	if m.user {
		err = m.d.arena.Deregister(m.key)
	} else {
		err = m.d.arena.Free(m.region)
	}
	m.d.mrMu.Lock()
	delete(m.d.mrs, m.key)
	m.d.mrMu.Unlock()
	if err != nil {
		return wrapErr("dereg mr", 0, err, "")
	}
	return nil
}
