// Package coherence is the DSM invalidation protocol that keeps the page caches of
// passive-target windows coherent, as a pure state machine: no goroutines, no time, no
// I/O. It owns the decisions (which one-sided operation to issue on which protocol word,
// when a Get is served and from where, when a write is complete). Package window owns the
// memory, the transport and the cache buffers, and drives one Machine per (window, rank).
//
// # The protocol
//
// Every page has a home (its target rank), whose directory is words in its registered
// memory touched only by one-sided operations, so a busy home never delays anyone: a
// version per page and a registration slot per (page, cacher). Each cacher keeps a flag
// per remote page (see Usable and DecodeFlag). A fill registers a token, reads version
// and data in one round trip and installs the copy; a write bumps the versions and
// invalidates every registered copy before it completes. design.md has the state
// diagram, the invariants and the ordering proof.
//
// # Memory words the driver lays out
//
// At every rank, for its own window of Config.Pages pages: ver[p] and slot[p][c] for c in
// [0, Ranks), laid out so that the rows of consecutive pages can be read by one ReadSlots
// (for example slot[p*Ranks+c] contiguous). A ReadSlots result lists slot[p][c] at index
// (p-first)*Ranks+c. For every remote (home, page) it may cache: flag[home][page] and a
// cache buffer of one page, allocated at the first fill read (ReadData with Req 0) and
// freed at Released. All words start at 0 and are accessed atomically; remote ranks store
// into slots, versions and flags at any time.
//
// # Driving a Machine
//
// The driver feeds inputs (Get, Wrote, OwnerSync, Evict, Crashed, Done) and after each
// one runs this loop until HasReady is false:
//
//	for m.HasReady() {
//		rd := m.Ready()
//		for _, o := range rd.Outcomes {
//			// Served: copy the page to the Get's destination, from the cache buffer
//			//         of (o.Home, o.Page) if o.FromCache, else from the buffer of the
//			//         uncached ReadData of o.Req; then complete the Get.
//			// Completed: the write or owner sync o.Req is done (Flush/Unlock/Fence return).
//			// Failed: request o.Req failed with o.Err.
//			// Released: the cache buffer of (o.Home, o.Page) may be freed or reused.
//		}
//		for _, op := range rd.Ops {
//			// op.Target == Self: run it as a CPU load/store/atomic on this rank's own
//			// memory and call m.Done(op.ID, result, words, nil) (allowed inside the loop).
//			// Otherwise post it to op.Target (RDMA read/write/CAS/fetch-add, or the shm
//			// provider's equivalent); the completion later calls m.Done.
//		}
//		m.Advance()
//	}
//
// Requirements on the driver:
//   - Operations to one target are executed there in the order emitted (the same queue
//     pair; this rank's own operations in program order). Nothing else is assumed about
//     ordering; local operations may also complete late.
//   - Each emitted operation gets exactly one Done, with the operation's result: the old
//     value for CAS and FetchAdd, the value for ReadVersion, the rows for ReadSlots.
//     ReadData lands in the cache buffer (Req 0) or the request's buffer before its Done.
//   - The hit path: before calling Get, load flag[home][page] atomically; if Usable, copy
//     the cache buffer and do not call the Machine at all (no allocation, no call).
//   - Wrote(req, home, first, n) only after the data operations of the epoch to home have
//     completed (or were posted earlier on the same pair to home).
//   - OwnerSync(req) at Sync, Unlock of self and Fence, after this rank's own stores.
//   - An operation error from a rank means that rank is lost: call Crashed(rank) soon (the
//     Machine already treats an invalidation that failed at a cacher as delivered).
//   - Request IDs are nonzero and unique among requests in progress.
//
// # Concurrency and ownership
//
// A Machine is not safe for concurrent use: the driver serializes every call. The slices
// in a Ready are owned by the Machine and stay valid until Advance; inputs fed before
// Advance (Done of local operations) append to the next Ready without disturbing them. The
// words passed to Done are read during the call and never retained. Hits never enter the
// Machine; a cache buffer is written only by fill reads, which are posted only while the
// page's flag is not Valid. In steady state (pages already seen) no call allocates.
// Broken internal invariants panic; so do arguments that can only be driver bugs (a Get
// of a Self page, a rank out of range, a Done for an operation never emitted).
package coherence
