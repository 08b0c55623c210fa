package runtime

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"unsafe"

	"github.com/gorma-hpc/gorma/runtime/internal/subcore"
	"github.com/gorma-hpc/gorma/transport/verbs"
	"github.com/gorma-hpc/gorma/transport/verbs/arena"
)

// One-sided substrate. Package window (and the collectives) build on three things the
// runtime owns because it owns the devices and the connections. Package runtime/substrate
// shows them (their types are in runtime/internal/subcore); here is their runtime side:
//
//   - Region: memory of this rank that every peer may access one-sidedly. AllocRegion
//     carves it from the pre-registered arena (the shm device's when the rank has shm
//     peers, so that they can map it; otherwise the tcp device's) and registers the same
//     bytes with the rank's other device; RegisterRegion registers user memory instead.
//     Desc describes a region to peers: the key per provider.
//   - Remote: a peer's region as seen from this rank (Attach). On a shm peer an arena
//     region is also mapped (verbs.Mapper): Mapped returns the peer's bytes for direct
//     loads, stores and CPU atomics. Every Remote also takes work requests: Write, Read,
//     FetchAdd, CmpSwap on the connection to the peer.
//   - Counter: counts one-sided work requests until they complete. Wait drives progress
//     (as a blocking receive does) until every counted request completed, and returns
//     the first error among them.
//
// A refused remote access (a key the target revoked, which the window's collective Free
// rules out in correct programs, as its local range checks rule out out-of-range
// accesses) breaks the connection to that peer as it does in InfiniBand: the QP enters
// Err. A Remote whose peer fails fails its counters with a *ProcError.

// rmaState is the part that owns the one-sided bookkeeping: the attached Remotes and the
// Counters' table. Remote.Post, the completion handler, the failure paths and Finalize
// call it, with the engine's mu held (it has no lock of its own). It waits for send
// queue room, and fails a peer, through e.
type rmaState struct {
	e           *engine
	remotes     map[*remote]struct{} // attached, not closed: closed before the devices
	counters    []*counter           // by table slot (the WRID of a request); nil when free
	counterFree []uint32
}

const wrRMA = 4 // a one-sided work request of a Counter (index: counter table slot)

// rmaAccess are the rights of every region: the window layer checks what a rank may do.
const rmaAccess = verbs.AccessAll

// descVers is the version of a region description. Its provider codes are descCodes.
const descVers = 1

var errRegionFreed = errors.New("region already freed")

// region is the runtime's side of a subcore.Region: its registrations. Its methods are
// safe for concurrent use.
type region struct {
	e     *engine
	buf   []byte
	devs  []*device  // the devices when it was made (links.devices)
	mrs   []verbs.MR // by devs index; nil for a device it is not registered with
	owned bool       // carved from an arena (Free returns it), not user memory
	zero  bool       // every byte reads zero: arena pages never handed out (Zero)
	freed atomic.Bool
}

// public returns the Region that the layers above see.
func (r *region) public() *subcore.Region { return subcore.NewRegion(r, r.buf, r.zero) }

// allocRegion carves n bytes from an arena (substrate.AllocRegion, AllocHostRegion).
func (w *World) allocRegion(n int, host bool) (*region, error) {
	if n < 0 {
		return nil, invalidf("region of %d bytes", n)
	}
	e := w.e
	if err := e.check(); err != nil {
		return nil, err
	}
	devs := e.links.devices()
	r := &region{e: e, owned: true, devs: devs}
	if len(devs) == 0 {
		r.buf, r.zero = alignedBytes(n), true
		return r, nil
	}
	first := 0 // the device whose arena the memory comes from
	if host {
		first = slices.IndexFunc(devs, func(d *device) bool { return d.caps.Has(verbs.CapMap) })
		if first < 0 {
			return nil, fmt.Errorf("%w: a host-local region needs the shared-memory device, and this rank has only %s",
				ErrTransport, devs[0].name)
		}
	}
	r.mrs = make([]verbs.MR, len(devs))
	mr, err := devs[first].pd.AllocMR(max(n, 8), rmaAccess)
	if err != nil {
		return nil, fmt.Errorf("%w: allocate %d bytes of window memory from the %s arena: %w", ErrTransport, n, devs[first].name, err)
	}
	r.mrs[first], r.buf = mr, mr.Bytes()[:n:n]
	if z, ok := mr.(interface{ Zero() bool }); ok {
		r.zero = z.Zero()
	}
	for i, d := range devs {
		if i == first || host && !d.caps.Has(verbs.CapMap) {
			continue
		}
		if r.mrs[i], err = d.pd.RegMR(mr.Bytes(), rmaAccess); err != nil {
			r.Free()
			return nil, fmt.Errorf("%w: register window memory with %s: %w", ErrTransport, d.name, err)
		}
	}
	return r, nil
}

// registerRegion registers buf with every device (substrate.RegisterRegion).
func (w *World) registerRegion(buf []byte) (*region, error) {
	e := w.e
	if err := e.check(); err != nil {
		return nil, err
	}
	devs := e.links.devices()
	r := &region{e: e, buf: buf, devs: devs, mrs: make([]verbs.MR, len(devs))}
	if len(buf) == 0 {
		return r, nil
	}
	for i, d := range devs {
		a := rmaAccess
		if !d.dev.Caps().Has(verbs.CapUserMemAtomic) {
			a &^= verbs.RemoteAtomic
		}
		mr, err := d.pd.RegMR(buf, a)
		if err != nil {
			r.Free()
			return nil, fmt.Errorf("%w: register %d bytes of user memory with %s: %w", ErrTransport, len(buf), d.name, err)
		}
		r.mrs[i] = mr
	}
	return r, nil
}

// AppendDesc appends the region's description for peers (its key per provider).
func (r *region) AppendDesc(b []byte) []byte {
	b = append(b, descVers, byte(len(r.mrs)))
	for i, mr := range r.mrs {
		code := byte(0)
		var key uint64
		if mr != nil {
			key, code = mr.RKey(), r.devs[i].desc
		}
		b = append(b, code)
		b = binary.LittleEndian.AppendUint64(b, key)
		b = binary.LittleEndian.AppendUint64(b, uint64(len(r.buf)))
	}
	return b
}

// OnRemoteAtomic sets the hook of the region's keys (subcore.Region.OnRemoteAtomic).
func (r *region) OnRemoteAtomic(fn func()) {
	if r.freed.Load() {
		return
	}
	for i, mr := range r.mrs {
		if mr != nil {
			r.devs[i].setAtomicHook(mr.RKey(), fn)
		}
	}
}

// Free deregisters the region and returns arena memory to the arena's quarantine.
func (r *region) Free() error {
	if r.freed.Swap(true) {
		return errRegionFreed
	}
	for i, mr := range r.mrs {
		if mr != nil {
			r.devs[i].setAtomicHook(mr.RKey(), nil)
		}
	}
	var first error
	for i := len(r.mrs) - 1; i >= 0; i-- {
		if mr := r.mrs[i]; mr != nil {
			if err := mr.Dereg(); err != nil && first == nil {
				first = err
			}
		}
	}
	return first
}

// EnvCheck set to "1" turns on checked memory and call checks, read once per process:
// freed window memory faults when written through a stale slice, and collective calls are
// compared across the ranks (ErrMismatch).
const EnvCheck = arena.EnvCheck

// Guarded reports whether the freed region's memory is inaccessible (subcore.Region.Guarded).
func (r *region) Guarded() bool { return r.owned && r.freed.Load() && arena.Guarded(r.buf) }

func alignedBytes(n int) []byte {
	b := make([]uint64, (n+7)/8)
	if len(b) == 0 {
		return []byte{}
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&b[0])), n)
}

// remote is the runtime's side of a subcore.Remote: the peer and its key.
type remote struct {
	e    *engine
	pub  *subcore.Remote
	p    *peer
	rkey uint64
}

// attach opens rank's region described by desc (substrate.Attach).
func (w *World) attach(rank int, desc []byte) (*subcore.Remote, error) {
	if err := w.live(); err != nil {
		return nil, err
	}
	e := w.e
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.checkLocked(); err != nil {
		return nil, err
	}
	jr, ok := jobRank(w, rank)
	if !ok || jr == e.rank {
		return nil, invalidf("attach to rank %d (size %d, self %d): the peer must be another rank", rank, w.Size(), w.Rank())
	}
	p, err := e.links.awaitPeerLocked(e.stop, jr)
	if err != nil {
		return nil, err
	}
	if err := e.checkLocked(); err != nil {
		return nil, err
	}
	key, size, ok := findDesc(desc, p.dev.desc)
	if !ok {
		return nil, fmt.Errorf("%w: rank %d's region description has no %s key (%d bytes)", ErrTransport, rank, p.dev.name, len(desc))
	}
	rm := &remote{e: e, p: p, rkey: key}
	var mapping verbs.Mapping
	if mp, ok := p.qp.(verbs.Mapper); ok && size > 0 {
		// Read and write rights only: user memory (RegisterRegion) lacks the atomic right
		// where the provider cannot run atomics on it, and Map must get as far as saying
		// ErrUnsupported for it. Arena regions have every right (AllocRegion).
		m, err := mp.Map(key, 0, int(size), verbs.RemoteRead|verbs.RemoteWrite)
		switch {
		case err == nil:
			mapping = m
		case errors.Is(err, verbs.ErrUnsupported):
		default:
			return nil, fmt.Errorf("attach to rank %d's region: %w", rank, err)
		}
	}
	rm.pub = subcore.NewRemote(rm, rank, int(size), mapping, &p.fin.off)
	e.rma.remotes[rm] = struct{}{}
	return rm.pub, nil
}

func findDesc(b []byte, want byte) (key, size uint64, ok bool) {
	if len(b) < 2 || b[0] != descVers || len(b) != 2+int(b[1])*17 {
		return 0, 0, false
	}
	for i := 0; i < int(b[1]); i++ {
		ent := b[2+17*i:]
		if ent[0] == want {
			return binary.LittleEndian.Uint64(ent[1:]), binary.LittleEndian.Uint64(ent[9:]), true
		}
	}
	return 0, 0, false
}

// Err returns why the peer cannot be reached (subcore.Remote.Err).
func (r *remote) Err() error {
	e := r.e
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.checkLocked(); err != nil {
		return err
	}
	p := r.p
	if m := subcore.Mapping(r.pub); p.failed == nil && m != nil && !m.PeerAlive() {
		if !e.poll.active {
			e.progressLocked() // the provider fails the QP; its completions say how
		}
		if p.failed == nil {
			e.peerFailedLocked(p, errPeerExited)
		}
	}
	if p.failed != nil {
		return p.failed
	}
	return nil
}

// Close releases the mapping (subcore.Remote.Close).
func (r *remote) Close() error {
	r.e.mu.Lock()
	defer r.e.mu.Unlock()
	r.closeLocked()
	return nil
}

func (r *remote) closeLocked() {
	if !subcore.Unlive(r.pub) {
		return
	}
	delete(r.e.rma.remotes, r)
	if m := subcore.Mapping(r.pub); m != nil {
		m.Unmap()
	}
}

// closeRemotesLocked closes every Remote before the devices close (Finalize).
func (s *rmaState) closeRemotesLocked() {
	for r := range s.remotes {
		r.closeLocked()
	}
}
