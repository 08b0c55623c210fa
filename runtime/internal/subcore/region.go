package subcore

// RegionOps is the runtime's side of a Region: its registrations with the devices.
type RegionOps interface {
	AppendDesc(b []byte) []byte
	Free() error
	Guarded() bool
	OnRemoteAtomic(fn func())
}

// Region is registered memory of this rank. Its methods are safe for concurrent use.
type Region struct {
	ops  RegionOps
	buf  []byte
	zero bool
}

// NewRegion returns the Region of buf; zero says that its bytes all read zero.
func NewRegion(ops RegionOps, buf []byte, zero bool) *Region {
	return &Region{ops: ops, buf: buf, zero: zero}
}

// Bytes is the region's memory.
func (r *Region) Bytes() []byte { return r.buf }

// Zero reports that the region's bytes all read zero without having been written: fresh
// arena pages (or plain memory in a world of one). Clearing such a region would only
// fault its pages in.
func (r *Region) Zero() bool { return r.zero }

// AppendDesc appends the region's description for peers (its key per provider).
func (r *Region) AppendDesc(b []byte) []byte { return r.ops.AppendDesc(b) }

// Free deregisters the region (every key stops working at once, even for bytes reused
// later) and returns arena memory for reuse: through the arena's quarantine, so that the
// bytes come back only when the arena has no other free space (package arena). A second
// Free returns an error.
func (r *Region) Free() error { return r.ops.Free() }

// Guarded reports whether the freed region's memory is inaccessible in this process
// (GORMA_CHECK=1): false for a live region, for user memory, in a world of one (plain
// memory), and for a region its arena reused or did not quarantine (larger than the
// quarantine's cap, or less than a page).
func (r *Region) Guarded() bool { return r.ops.Guarded() }

// OnRemoteAtomic makes fn run after each remote atomic that a peer makes on the region
// through a transport whose target side is this process. Over tcp, the rank's connection
// goroutine calls fn once the word holds its new value (and after the peer's answer is
// queued). A peer that maps the region (shm) uses its own CPU's atomics, and nothing runs
// here: such a peer must wake this rank itself. So a rank asleep until a word of the
// region changes can be woken by peers on other hosts too. fn must be quick and must
// neither block nor call the runtime. It may run concurrently with anything, even a
// moment after Free. A nil fn removes it.
func (r *Region) OnRemoteAtomic(fn func()) { r.ops.OnRemoteAtomic(fn) }
