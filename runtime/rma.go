package runtime

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"unsafe"

	"github.com/gorma-hpc/gorma/transport/verbs"
	"github.com/gorma-hpc/gorma/transport/verbs/arena"
)

// One-sided substrate. Package window (and the collectives) build on three things the
// runtime owns because it owns the devices and the connections:
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

// rmaState is the engine's one-sided bookkeeping, guarded by the engine's mu.
type rmaState struct {
	remotes     map[*Remote]struct{} // attached, not closed: closed before the devices
	counters    []*Counter           // by table slot (the WRID of a request); nil when free
	counterFree []uint32
}

const wrRMA = 4 // a one-sided work request of a Counter (index: counter table slot)

// rmaAccess are the rights of every region: the window layer checks what a rank may do.
const rmaAccess = verbs.AccessAll

// descVers is the version of a region description. Its provider codes are descCodes.
const descVers = 1

var errRegionFreed = errors.New("region already freed")

// Region is registered memory of this rank. Its methods are safe for concurrent use.
type Region struct {
	e     *engine
	buf   []byte
	mrs   []verbs.MR // by e.devs index; nil for a device it is not registered with
	owned bool       // carved from an arena (Free returns it), not user memory
	zero  bool       // every byte reads zero: arena pages never handed out (Zero)
	freed atomic.Bool
}

// Zero reports that the region's bytes all read zero without having been written: fresh
// arena pages (or plain memory in a world of one). Clearing such a region would only
// fault its pages in.
func (r *Region) Zero() bool { return r.zero }

// AllocRegion returns n bytes of pre-registered arena memory (zeroed on first use; it may
// hold old data on reuse), accessible to every peer. In a world of one it is plain memory.
func (w *World) AllocRegion(n int) (*Region, error) { return w.allocRegion(n, false) }

// AllocHostRegion is AllocRegion for memory that only the ranks on this host use (they
// map it): it is carved from the shared-memory device's arena and registered with that
// device alone, so its description carries no tcp key and a peer over tcp cannot attach
// it. A rank's tcp device then holds no memory that peers may write for it, and
// golaunch's idle-role watcher stays slow for the rank (docs/launcher.md). It fails with
// ErrTransport on a rank without a shared-memory device; in a world of one it is plain
// memory.
func (w *World) AllocHostRegion(n int) (*Region, error) { return w.allocRegion(n, true) }

func (w *World) allocRegion(n int, host bool) (*Region, error) {
	if n < 0 {
		return nil, invalidf("region of %d bytes", n)
	}
	e := w.e
	if err := e.check(); err != nil {
		return nil, err
	}
	r := &Region{e: e, owned: true}
	if len(e.devs) == 0 {
		r.buf, r.zero = alignedBytes(n), true
		return r, nil
	}
	first := 0 // the device whose arena the memory comes from
	if host {
		first = slices.IndexFunc(e.devs, func(d *device) bool { return d.caps.Has(verbs.CapMap) })
		if first < 0 {
			return nil, fmt.Errorf("%w: a host-local region needs the shared-memory device, and this rank has only %s",
				ErrTransport, e.devs[0].name)
		}
	}
	r.mrs = make([]verbs.MR, len(e.devs))
	mr, err := e.devs[first].pd.AllocMR(max(n, 8), rmaAccess)
	if err != nil {
		return nil, fmt.Errorf("%w: allocate %d bytes of window memory from the %s arena: %w", ErrTransport, n, e.devs[first].name, err)
	}
	r.mrs[first], r.buf = mr, mr.Bytes()[:n:n]
	if z, ok := mr.(interface{ Zero() bool }); ok {
		r.zero = z.Zero()
	}
	for i := range e.devs {
		if i == first || host && !e.devs[i].caps.Has(verbs.CapMap) {
			continue
		}
		if r.mrs[i], err = e.devs[i].pd.RegMR(mr.Bytes(), rmaAccess); err != nil {
			r.Free()
			return nil, fmt.Errorf("%w: register window memory with %s: %w", ErrTransport, e.devs[i].name, err)
		}
	}
	return r, nil
}

// RegisterRegion registers buf (ordinary memory, kept alive until Free) with every device.
// Peers reach it through work requests only (never Mapped); on shm through cross-memory
// attach, which the kernel may forbid (Yama ptrace scope): the error then says so.
func (w *World) RegisterRegion(buf []byte) (*Region, error) {
	e := w.e
	if err := e.check(); err != nil {
		return nil, err
	}
	r := &Region{e: e, buf: buf, mrs: make([]verbs.MR, len(e.devs))}
	if len(buf) == 0 {
		return r, nil
	}
	for i, d := range e.devs {
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

// Bytes is the region's memory.
func (r *Region) Bytes() []byte { return r.buf }

// AppendDesc appends the region's description for peers (its key per provider).
func (r *Region) AppendDesc(b []byte) []byte {
	b = append(b, descVers, byte(len(r.mrs)))
	for i, mr := range r.mrs {
		code := byte(0)
		var key uint64
		if mr != nil {
			key, code = mr.RKey(), r.e.devs[i].desc
		}
		b = append(b, code)
		b = binary.LittleEndian.AppendUint64(b, key)
		b = binary.LittleEndian.AppendUint64(b, uint64(len(r.buf)))
	}
	return b
}

// DescLen is the length of a region description in a job whose ranks use up to two
// devices; descriptions of one job all have the same length on one rank.
func (w *World) DescLen() int { return 2 + len(w.e.devs)*17 }

// OnRemoteAtomic makes fn run after each remote atomic that a peer makes on the region
// through a transport whose target side is this process: over tcp, the rank's connection
// goroutine calls fn once the word holds its new value (and after the peer's answer is
// queued). A peer that maps the region (shm) changes it with its own CPU's atomics, and
// nothing runs here: such a peer must wake this rank itself. So a rank asleep until a
// word of the region changes (a window's metadata) can be woken by peers on other hosts
// too. fn must be quick and must neither block nor call the runtime; it may run
// concurrently with anything, including a moment after Free. A nil fn removes it.
func (r *Region) OnRemoteAtomic(fn func()) {
	if r.freed.Load() {
		return
	}
	for i, mr := range r.mrs {
		if mr != nil {
			r.e.devs[i].setAtomicHook(mr.RKey(), fn)
		}
	}
}

// ServePeers makes this rank's transports serve peers' requests while the caller waits
// outside the runtime (on a word of shared memory that a peer changes by a remote atomic,
// say), as they do while a goroutine waits in the runtime. Over tcp, a wait for a
// completion reads the connection itself (it leads) and leaves the reading to the
// connection's goroutine only lazily once it returns: within a millisecond or two, or
// when the process idles. ServePeers hands it back now. Call it before such a wait; it
// costs a system call per connection whose reading is waiting to be handed back, a lock
// per tcp device otherwise, and nothing on a rank without one.
func (w *World) ServePeers() {
	for _, r := range w.e.returners {
		r.HandBack()
	}
}

// PollPeers serves, on the calling goroutine and without waiting, the requests that peers
// have already sent over connections that nobody reads at the moment, and reports whether
// it served any. Over tcp those are connections whose reading a completion wait took over
// and left idle (see ServePeers). A goroutine that spins outside the runtime on a
// condition that a peer's request sets (a remote atomic on this rank's memory) calls it
// in its spin, and ServePeers before it sleeps: the request is served as soon as it
// lands, without a wake-up of the connection's goroutine. It costs a lock per tcp device,
// and a system call per idle connection; nothing on a rank without tcp.
func (w *World) PollPeers() bool {
	served := false
	for _, r := range w.e.returners {
		if r.Progress() {
			served = true
		}
	}
	return served
}

// Free deregisters the region (every key stops working at once, even for bytes reused
// later) and returns arena memory for reuse: through the arena's quarantine, so that the
// bytes come back only when the arena has no other free space (package arena). A second
// Free returns an error.
func (r *Region) Free() error {
	if r.freed.Swap(true) {
		return errRegionFreed
	}
	for i, mr := range r.mrs {
		if mr != nil {
			r.e.devs[i].setAtomicHook(mr.RKey(), nil)
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

// EnvCheck turns on checked memory when set to "1", read once per process: freed arena
// regions that peers may write (AllocRegion's) are made inaccessible in this process
// until the arena hands their bytes out again, so that a write through a stale slice of
// one faults at the write. The arena's quarantine (package arena) decides when.
const EnvCheck = arena.EnvCheck

// MemCheck reports whether GORMA_CHECK=1 is in force in this process.
func MemCheck() bool { return arena.Checking() }

// Guarded reports whether the freed region's memory is inaccessible in this process
// (GORMA_CHECK=1): false for a live region, for user memory, in a world of one (plain
// memory), and for a region its arena reused or did not quarantine (larger than the
// quarantine's cap, or less than a page).
func (r *Region) Guarded() bool { return r.owned && r.freed.Load() && arena.Guarded(r.buf) }

func alignedBytes(n int) []byte {
	b := make([]uint64, (n+7)/8)
	if len(b) == 0 {
		return []byte{}
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&b[0])), n)
}

// Remote is a peer's region as seen from this rank. Its methods are safe for concurrent
// use; ordering between requests posted by different goroutines is the order they took
// the engine's lock.
type Remote struct {
	e    *engine
	rank int
	p    *peer
	rkey uint64
	size int
	m    verbs.Mapping
	mem  []byte
	live atomic.Bool
}

// Attach opens rank's region described by desc (from its AppendDesc, delivered by the
// caller). On a shm peer an arena region is mapped as well (Mapped), which validates the
// key at once: a stale or forged description fails here with an error wrapping
// verbs.ErrAccess.
func (w *World) Attach(rank int, desc []byte) (*Remote, error) {
	if err := w.live(); err != nil {
		return nil, err
	}
	e := w.e
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.checkLocked(); err != nil {
		return nil, err
	}
	jr, ok := w.jobRank(rank)
	if !ok || jr == e.rank {
		return nil, invalidf("attach to rank %d (size %d, self %d): the peer must be another rank", rank, w.Size(), w.Rank())
	}
	p, err := e.awaitPeerLocked(e.stop, jr)
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
	rm := &Remote{e: e, rank: rank, p: p, rkey: key, size: int(size)}
	if mp, ok := p.qp.(verbs.Mapper); ok && size > 0 {
		// Read and write rights only: user memory (RegisterRegion) lacks the atomic right
		// where the provider cannot run atomics on it, and Map must get as far as saying
		// ErrUnsupported for it. Arena regions have every right (AllocRegion).
		m, err := mp.Map(key, 0, int(size), verbs.RemoteRead|verbs.RemoteWrite)
		switch {
		case err == nil:
			rm.m, rm.mem = m, m.Bytes()
		case errors.Is(err, verbs.ErrUnsupported):
		default:
			return nil, fmt.Errorf("attach to rank %d's region: %w", rank, err)
		}
	}
	rm.live.Store(true)
	e.rma.remotes[rm] = struct{}{}
	return rm, nil
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

// Rank is the peer owning the region.
func (r *Remote) Rank() int { return r.rank }

// Size is the region's length in bytes.
func (r *Remote) Size() int { return r.size }

// Mapped returns the peer's region for direct access, or nil when it is reached through
// work requests only (another host, user memory). Accesses are valid while Live.
func (r *Remote) Mapped() []byte { return r.mem }

// Live reports whether the Remote is still open (not closed, and the World not finalized):
// Mapped bytes may be touched only while it holds. One atomic load.
func (r *Remote) Live() bool { return r.live.Load() }

// Gone reports, in atomic loads, that the peer is known to have failed: its process
// exited (seen at once for a mapped region), or the runtime marked it failed. Err says
// why.
func (r *Remote) Gone() bool { return r.m != nil && !r.m.PeerAlive() || r.p.fin.off.Load() }

// Err returns why the peer cannot be reached: its failure (a *ProcError wrapping
// ErrProcFailed), the job's abort, ErrFinalized; or nil while it can. For a mapped peer
// the death of its process is seen at once (one atomic load), without waiting for the
// transport to report it.
func (r *Remote) Err() error {
	e := r.e
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.checkLocked(); err != nil {
		return err
	}
	p := r.p
	if p.failed == nil && r.m != nil && !r.m.PeerAlive() {
		if !e.polling {
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

// Close releases the mapping. Outstanding work requests must have completed.
func (r *Remote) Close() error {
	r.e.mu.Lock()
	defer r.e.mu.Unlock()
	r.closeLocked()
	return nil
}

func (r *Remote) closeLocked() {
	if !r.live.Swap(false) {
		return
	}
	delete(r.e.rma.remotes, r)
	if r.m != nil {
		r.m.Unmap()
	}
}

// closeRemotesLocked closes every Remote before the devices close (Finalize).
func (e *engine) closeRemotesLocked() {
	for r := range e.rma.remotes {
		r.closeLocked()
	}
}
