package arena

import (
	"sync/atomic"

	"github.com/gorma-hpc/gorma/transport/verbs"
)

// SegmentDesc tells a process on the same host how to map a segment.
type SegmentDesc struct {
	PID  int32  // owner process
	FD   int32  // memfd in the owner, mapped through /proc/PID/fd/FD; -1 for a path
	Path string // fallback file in /dev/shm, "" for memfd
	Size int64  // bytes
}

// AppendBinary appends d's wire form to b.
func (d SegmentDesc) AppendBinary(b []byte) ([]byte, error) { panic("unimplemented") }

// DecodeSegmentDesc decodes a SegmentDesc from the front of b and returns the rest.
func DecodeSegmentDesc(b []byte) (SegmentDesc, []byte, error) { panic("unimplemented") }

// Segment is a mapped shared memory segment.
type Segment struct{}

// CreateSegment creates and maps a sparse segment of size bytes (memfd preferred).
func CreateSegment(name string, size int64) (*Segment, error) { panic("unimplemented") }

// MapSegment maps a segment created by another process (or this one) on this host.
func MapSegment(d SegmentDesc) (*Segment, error) { panic("unimplemented") }

// Bytes is the whole mapping.
func (s *Segment) Bytes() []byte { panic("unimplemented") }

// Desc describes the segment for peers.
func (s *Segment) Desc() SegmentDesc { panic("unimplemented") }

// Punch returns [off, off+n) to the kernel; it reads as zeros afterwards for every mapper.
func (s *Segment) Punch(off, n int64) error { panic("unimplemented") }

// Close unmaps the segment (and closes the fd, and unlinks a fallback file it created).
func (s *Segment) Close() error { panic("unimplemented") }

// Kind tells what memory a key table slot describes.
type Kind uint8

const (
	KindArena Kind = 1 // bytes within the arena's own segment; Base is the segment offset
	KindUser  Kind = 2 // ordinary memory of the owner process; Base is its virtual address
)

// Target is a validated, pinned remote access.
type Target struct {
	Kind Kind
	Base uint64 // segment offset (KindArena) or owner virtual address (KindUser) of offset 0 of the MR
	Len  uint64 // MR length
}

// Table is a view of an arena's key table, in the owner's or a peer's mapping.
type Table struct{}

// Pin validates key for an access of n bytes at offset off with the rights want, and pins
// the MR against deregistration until Unpin. A stale, forged or out-of-range access returns
// ok=false and is counted as a key rejection.
func (t *Table) Pin(key, off, n uint64, want verbs.Access) (tg Target, ok bool) {
	panic("unimplemented")
}

// Unpin releases a pin taken by Pin.
func (t *Table) Unpin(key uint64) { panic("unimplemented") }

// Config configures an arena.
type Config struct {
	Name      string // label for errors and the memfd name
	Size      int64  // sparse bytes; default verbs.DefaultArenaSize
	HighWater int64  // resident free bytes kept before trimming; <0 never trims
	MaxMRs    int    // key table slots
}

// Region is an allocation from the arena.
type Region struct {
	Key   uint64 // 0 for raw regions
	Off   int64  // segment offset
	Bytes []byte // aliases the segment
}

// Arena is the owner's side of a device's pre-registered memory.
type Arena struct{}

// New creates an arena with a fresh segment.
func New(cfg Config) (*Arena, error) { panic("unimplemented") }

// Segment returns the arena's segment.
func (a *Arena) Segment() *Segment { panic("unimplemented") }

// Table returns the key table in the owner's mapping.
func (a *Arena) Table() *Table { panic("unimplemented") }

// Alloc carves n bytes with rights access and a fresh key.
func (a *Arena) Alloc(n int, access verbs.Access) (Region, error) { panic("unimplemented") }

// AllocRaw carves n bytes without a key, for provider-internal structures (rings).
func (a *Arena) AllocRaw(n int) (Region, error) { panic("unimplemented") }

// Free revokes r's key (waiting for pins to drain) and keeps the bytes mapped for reuse.
func (a *Arena) Free(r Region) error { panic("unimplemented") }

// RegisterUser gives buf (ordinary memory of this process) a key with rights access.
func (a *Arena) RegisterUser(buf []byte, access verbs.Access) (uint64, error) {
	panic("unimplemented")
}

// Deregister revokes a key from RegisterUser, waiting for pins to drain.
func (a *Arena) Deregister(key uint64) error { panic("unimplemented") }

// Stats returns the counters.
func (a *Arena) Stats() verbs.ArenaStats { panic("unimplemented") }

// Doorbell returns the header's doorbell words: a sequence number to use as a futex word,
// and a count of sleeping waiters.
func (a *Arena) Doorbell() (seq, waiters *atomic.Uint32) { panic("unimplemented") }

// Close releases the segment.
func (a *Arena) Close() error { panic("unimplemented") }

// Remote is a peer's mapping of another arena.
type Remote struct{}

// Attach maps the arena described by d and checks its header.
func Attach(d SegmentDesc) (*Remote, error) { panic("unimplemented") }

// Table is the remote arena's key table.
func (r *Remote) Table() *Table { panic("unimplemented") }

// Bytes is the remote arena's whole mapping.
func (r *Remote) Bytes() []byte { panic("unimplemented") }

// Doorbell returns the remote arena's doorbell words.
func (r *Remote) Doorbell() (seq, waiters *atomic.Uint32) { panic("unimplemented") }

// Close unmaps the remote arena.
func (r *Remote) Close() error { panic("unimplemented") }

// RegCache caches registrations of user buffers (UCX style): register and deregister are
// parameters; hits and misses are counted.
type RegCache struct{}

// NewRegCache returns a cache of at most capacity registrations made by reg.
func NewRegCache(reg func(buf []byte, access verbs.Access) (verbs.MR, error), capacity int) *RegCache {
	panic("unimplemented")
}

// Get returns a registration covering buf with at least access, registering on a miss.
func (c *RegCache) Get(buf []byte, access verbs.Access) (verbs.MR, error) { panic("unimplemented") }

// Invalidate deregisters cached registrations overlapping buf.
func (c *RegCache) Invalidate(buf []byte) { panic("unimplemented") }

// Close deregisters everything.
func (c *RegCache) Close() { panic("unimplemented") }

// Stats returns hits, misses and evictions.
func (c *RegCache) Stats() (hits, misses, evictions int64) { panic("unimplemented") }
