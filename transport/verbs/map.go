package verbs

// Mapper is implemented by the QPs of providers whose peers' memory lies in this
// process's address space (CapMap: shm maps every peer's arena). It is the verbs-level
// form of MPI_Win_shared_query and of osc/sm's direct loads and stores: instead of
// posting a work request per access, the caller maps a remote region once and then reads,
// writes and runs CPU atomics on it directly.
//
// Map validates rkey for n bytes at offset off with the rights want exactly as an RDMA
// access would (a stale, forged or out-of-range key fails with ErrAccess and counts as a
// key rejection), pins the region against deregistration and returns the bytes. While a
// Mapping is held the owner's Dereg of the region waits for it (up to the arena's drain
// bound, after which the owner quarantines the bytes: they are never reused for another
// region while a peer may still touch them). Memory the peer registered with RegMR is
// not in its arena and cannot be mapped: Map returns ErrUnsupported and the caller falls
// back to work requests.
//
// Map may be called in state RTS only. The mapping stays valid memory after the peer
// dies (the caller learns of the death through the QP) and until Unmap; it must be
// unmapped before the device is closed.
type Mapper interface {
	Map(rkey, off uint64, n int, want Access) (Mapping, error)
}

// Mapping is a pinned, directly addressable view of a peer's memory region.
//
// Concurrency: Bytes may be read and written by any number of goroutines (and by the
// peer's processes) at once; ordering between them is the caller's business (sync/atomic
// on 8-byte aligned words). Unmap must be called once, after every access.
type Mapping interface {
	// Bytes is the mapped range: n bytes starting at the requested offset.
	Bytes() []byte
	// PeerAlive reports whether the process owning the memory is still running. It
	// costs one atomic load.
	PeerAlive() bool
	// Unmap releases the pin. Later accesses to Bytes are undefined.
	Unmap() error
}
