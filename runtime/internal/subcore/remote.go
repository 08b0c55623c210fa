package subcore

import (
	"sync/atomic"

	"github.com/gorma-hpc/gorma/transport/verbs"
)

// RemoteOps is the runtime's side of a Remote: the connection to the peer.
type RemoteOps interface {
	// Post posts one-sided requests (Write, Read, FetchAdd, CmpSwap) counted on c.
	Post(c *Counter, op verbs.Opcode, off uint64, local []byte, add, swap uint64) error
	Err() error
	Close() error
}

// Remote is a peer's region as seen from this rank. Its methods are safe for concurrent
// use; ordering between requests posted by different goroutines is the order they took
// the engine's lock.
type Remote struct {
	ops  RemoteOps
	rank int
	size int
	m    verbs.Mapping
	mem  []byte
	off  *atomic.Bool // the runtime marked the peer failed
	live atomic.Bool
}

// NewRemote returns a live Remote of rank's region of size bytes, mapped through m when m
// is not nil. off is the peer's failure mark.
func NewRemote(ops RemoteOps, rank, size int, m verbs.Mapping, off *atomic.Bool) *Remote {
	r := &Remote{ops: ops, rank: rank, size: size, m: m, off: off}
	if m != nil {
		r.mem = m.Bytes()
	}
	r.live.Store(true)
	return r
}

// Unlive marks r closed and reports whether it was live; the caller unmaps it then.
func Unlive(r *Remote) bool { return r.live.Swap(false) }

// Mapping returns r's mapping, nil when it has none.
func Mapping(r *Remote) verbs.Mapping { return r.m }

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
func (r *Remote) Gone() bool { return r.m != nil && !r.m.PeerAlive() || r.off.Load() }

// Err returns why the peer cannot be reached: its failure (a *ProcError wrapping
// ErrProcFailed), the job's abort, ErrFinalized; or nil while it can. For a mapped peer
// the death of its process is seen at once, without waiting for the transport.
func (r *Remote) Err() error { return r.ops.Err() }

// Close releases the mapping. Outstanding work requests must have completed.
func (r *Remote) Close() error { return r.ops.Close() }

// Write copies src to offset off of the remote region (RDMA write).
func (r *Remote) Write(c *Counter, off uint64, src []byte) error {
	return r.ops.Post(c, verbs.OpRDMAWrite, off, src, 0, 0)
}

// Read copies len(dst) bytes at offset off of the remote region into dst (RDMA read).
func (r *Remote) Read(c *Counter, off uint64, dst []byte) error {
	return r.ops.Post(c, verbs.OpRDMARead, off, dst, 0, 0)
}

// FetchAdd adds add to the 8-byte word at off and stores the old value in result (8
// bytes, little-endian host order) when the request completes.
func (r *Remote) FetchAdd(c *Counter, off, add uint64, result []byte) error {
	return r.ops.Post(c, verbs.OpAtomicFetchAdd, off, result, add, 0)
}

// CmpSwap replaces the 8-byte word at off with swap if it equals expect, and stores the
// old value in result when the request completes.
func (r *Remote) CmpSwap(c *Counter, off, expect, swap uint64, result []byte) error {
	return r.ops.Post(c, verbs.OpAtomicCmpSwap, off, result, expect, swap)
}
