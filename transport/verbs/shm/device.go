package shm

import (
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorma-hpc/gorma/transport/verbs"
	"github.com/gorma-hpc/gorma/transport/verbs/arena"
)

// maxCQDepth bounds CreateQP's and CreateCQ's sizes, to catch unit mistakes early.
const maxCQDepth = 1 << 22

// device is an opened shm device: one arena, its doorbell, and the objects made from it.
type device struct {
	cfg   verbs.Config
	arena *arena.Arena
	mem   []byte // the arena segment in this process
	desc  arena.SegmentDesc
	bell  doorbell
	pid   int32
	nonce uint64
	host  hostID
	mrs   mrTable
	peers peerCache
	huge  hugeRegions // stretches of registered user memory collapsed into huge pages (huge.go)
	live  liveWord    // marked by the kernel when this process dies (live.go)

	nextQPN atomic.Uint32

	mu      sync.Mutex
	closed  bool
	pds     map[*pd]struct{}
	cqs     map[*cq]struct{}
	qps     map[*qp]struct{}
	zombies []zombie // rings of closed QPs whose peer may still write into them
}

// zombie is the ring of a closed QP whose connected sender has not yet acknowledged (by
// leaving RTS itself, or dying). Its memory is reused only after that, so a late write from
// the peer can never land in memory that has a new owner.
type zombie struct {
	r        ring
	regs     [2]arena.Region
	p        *peer
	peerRing *ring  // the connected peer QP's ring: its owner state says it left RTS
	claim    uint64 // the claim the connected peer QP wrote (if it is the sender)
}

// quiet reports whether no sender can write into z's ring any more: the connected peer
// QP acknowledged (closed), left RTS (it never writes in Err), or died.
func (z *zombie) quiet() bool {
	if z.r.senderState.Load() != codeLive {
		return true
	}
	if z.p == nil || z.r.claim.Load() != z.claim {
		return false // the sender is not the QP we connected to: only its ack counts
	}
	if z.p.gone() {
		return true
	}
	return z.peerRing != nil && z.peerRing.ownerState.Load() != codeLive
}

func openDevice(cfg verbs.Config) (*device, error) {
	if cfg.Provider != nil {
		return nil, opError("open", 0, verbs.ErrInvalid,
			fmt.Sprintf("Config.Provider is a %T; the shm provider takes no provider options (nil)", cfg.Provider))
	}
	name := cfg.Name
	if name == "" {
		name = "shm"
	}
	a, err := arena.New(arena.Config{Name: name, Size: cfg.ArenaSize, HighWater: cfg.HighWater, MaxMRs: cfg.MaxMRs})
	if err != nil {
		return nil, opError("open", 0, err, "could not create the device arena; check ArenaSize and MaxMRs")
	}
	d := &device{
		cfg:   cfg,
		arena: a,
		mem:   a.Segment().Bytes(),
		desc:  a.Segment().Desc(),
		pid:   int32(os.Getpid()),
		nonce: rand.Uint64() | 1,
		host:  localHost(),
		mrs:   newMRTable(cfg.MaxMRs),
		pds:   make(map[*pd]struct{}),
		cqs:   make(map[*cq]struct{}),
		qps:   make(map[*qp]struct{}),
	}
	if d.live, err = newLiveWord(a); err != nil {
		a.Close()
		return nil, opError("open", 0, err, "no arena memory for the device's liveness word")
	}
	d.bell.seq, d.bell.waiters = a.Doorbell()
	d.peers.init(d)
	return d, nil
}

func (d *device) Provider() string        { return Name }
func (d *device) Caps() verbs.Caps        { return caps }
func (d *device) Stats() verbs.ArenaStats { return d.arena.Stats() }

// AllocPD allocates a protection domain.
func (d *device) AllocPD() (verbs.PD, error) {
	p := &pd{dev: d, mrs: make(map[*mr]struct{}), qps: make(map[*qp]struct{})}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, opError("alloc pd", 0, verbs.ErrClosed, "the device was closed")
	}
	d.pds[p] = struct{}{}
	return p, nil
}

// CreateCQ creates a completion queue of depth entries.
func (d *device) CreateCQ(depth int) (verbs.CQ, error) {
	if depth < 1 || depth > maxCQDepth {
		return nil, opError("create cq", 0, verbs.ErrInvalid, "depth must be in [1, 4194304]")
	}
	c := newCQ(d, depth)
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, opError("create cq", 0, verbs.ErrClosed, "the device was closed")
	}
	d.cqs[c] = struct{}{}
	return c, nil
}

// Close destroys the device: its QPs flush and tell their peers, its CQs wake their
// waiters, the peer monitor stops, peer mappings are unmapped and the arena is released.
func (d *device) Close() error {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil
	}
	d.closed = true
	qps := keys(d.qps)
	cqs := keys(d.cqs)
	pds := keys(d.pds)
	d.mu.Unlock()

	for _, q := range qps {
		q.Close()
	}
	for _, p := range pds {
		p.close(true)
	}
	for _, c := range cqs {
		c.shutdown()
	}
	d.peers.close()
	d.live.remove()
	d.mu.Lock()
	d.zombies = nil
	d.mu.Unlock()
	// Poll reads the arena's rings without a lock or a registration (cq.Poll), so one that
	// raced this Close may still be looking. The arena's memory and fd are released now,
	// but its address range stays mapped to inert zeros until the device is unreachable.
	err := d.arena.Retire()
	runtime.AddCleanup(d, func(a *arena.Arena) { a.Close() }, d.arena)
	if err != nil {
		return opError("close device", 0, err, "")
	}
	return nil
}

func (d *device) addQP(q *qp) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return opError("create qp", 0, verbs.ErrClosed, "the device was closed")
	}
	d.sweepZombiesLocked()
	d.qps[q] = struct{}{}
	return nil
}

func (d *device) removeQP(q *qp) {
	d.mu.Lock()
	delete(d.qps, q)
	d.mu.Unlock()
}

func (d *device) removeCQ(c *cq) {
	d.mu.Lock()
	delete(d.cqs, c)
	d.mu.Unlock()
}

func (d *device) removePD(p *pd) {
	d.mu.Lock()
	delete(d.pds, p)
	d.mu.Unlock()
}

// retireRing frees a closed QP's ring now if no sender can still write into it, and
// otherwise keeps it as a zombie until the sender acknowledges.
func (d *device) retireRing(z zombie) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return // the arena goes as a whole
	}
	if z.r.claim.CompareAndSwap(0, claimDead) || z.quiet() {
		d.freeRingLocked(z)
		return
	}
	d.zombies = append(d.zombies, z)
}

func (d *device) sweepZombiesLocked() {
	kept := d.zombies[:0]
	for _, z := range d.zombies {
		if z.quiet() {
			d.freeRingLocked(z)
			continue
		}
		kept = append(kept, z)
	}
	clear(d.zombies[len(kept):])
	d.zombies = kept
}

func (d *device) freeRingLocked(z zombie) {
	for _, r := range z.regs {
		if r.Bytes != nil {
			d.arena.Free(r)
		}
	}
}

// shutdownWait waits until n reads 0, for a bounded time (a goroutine stuck in a Poll of a
// closed device is a caller bug; we must not hang Close on it forever).
func shutdownWait(n *atomic.Int32) {
	deadline := time.Now().Add(2 * time.Second)
	for n.Load() != 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Microsecond)
	}
}

func keys[K comparable](m map[K]struct{}) []K {
	out := make([]K, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
