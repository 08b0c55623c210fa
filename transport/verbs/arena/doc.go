// Package arena is gorma's pre-registered memory: one shared segment per device, carved
// into memory regions with no system call on the common path, with lazy unmapping and
// generation-carrying keys.
//
// # Layout
//
// A [Segment] is a memfd (or, where memfd is unavailable, a 0600 file in /dev/shm that is
// unlinked on Close and swept when its owner is dead), sized sparsely up front: pages are
// committed only when touched. An [Arena] owns one segment. Its first pages hold a header
// (magic, version, doorbell words, counters) and the key table; the rest is data, managed
// by a buddy allocator.
//
// Peers on the same host map a segment once with [Attach] (through /proc/PID/fd/FD, or the
// fallback path) and keep the mapping: memory freed by the owner stays mapped in every peer
// and stays faulted in (lazy unmapping). So reuse costs neither mmap nor page faults.
// Memory goes back to the kernel (fallocate PUNCH_HOLE, seen by every mapper) only when the
// freed-but-resident bytes pass the configured high-water mark.
//
// [Arena.Close] unmaps the segment. [Arena.Retire] is a close for owners whose lock-free
// readers may still look at the memory for a moment. The memory and the memfd are released
// at once, but the range stays mapped to private zero pages (one mmap with MAP_FIXED, so
// it is never unmapped in between) until a later Close.
//
// # Quarantine
//
// A freed region whose rights let peers write it (RemoteWrite or RemoteAtomic: window
// memory, collective scratch) is not reused at once. It waits in a FIFO quarantine and
// comes back only when an allocation finds no other free space (oldest first), or when the
// quarantine passes Config.Quarantine bytes (default a quarter of the high-water mark, at
// most an eighth of the arena; the last freed block always stays). A program that keeps a
// slice of such a region past Free then writes into memory nobody else uses while the
// arena has other space. Other regions (send and receive buffers) are reused at once.
// Under GORMA_CHECK=1 (EnvCheck, read once per process) each quarantined block of whole
// pages is made inaccessible in this process (mprotect PROT_NONE) until it leaves the
// quarantine, so that a stale write faults; Guarded reports such a block.
//
// # Keys
//
// Every memory region owns a slot in the key table. A key is slot<<44 | generation, with a
// 44-bit generation that is unique per arena for its whole life, so a key from a
// deregistered MR never matches again, not even when the same slot and bytes are reused. A
// slot's state word packs the generation with a pin count. [Table.Pin] validates a key,
// bounds and rights and pins the slot with one compare-and-swap; [Table.Unpin] releases it.
// Deregistration first revokes the generation and then waits for the pins to drain before
// the bytes can be reused, so a remote access never touches memory that changed owner. If
// pins do not drain (the pinning process died mid-access), the bytes are withheld for
// good instead of reused (ArenaStats.Quarantined). Every refusal is counted in the shared
// header. A peer that wrote into a region through a mapping may say so ([Table.Note]),
// and the owner asks ([Table.Noted]). An owner that polls a region for messages reads it
// only once told, so a region nobody writes is never faulted in.
//
// # Concurrency
//
// An Arena's allocation methods are safe for concurrent use (one mutex). Table methods are
// lock-free and may be called by any process that maps the segment. Segment bytes are
// shared memory: the caller owns the synchronization of their contents.
package arena
