// Package window provides MPI-3 one-sided communication: Win[T], memory of every rank of
// a World that every rank reads and writes with Put, Get, accumulates and atomics (and
// PutType, GetType, AccumulateType over datatype layouts), in epochs opened and closed by
// Fence, by PSCW or by Lock/Unlock. With a name and attributes (SetName, NewKeyval).
//
//	win, err := window.Allocate[float64](ctx, w, 1<<20)   // arena memory: the fast path
//	defer win.Free(ctx)
//	win.Fence(ctx, 0)
//	win.Put(buf, (w.Rank()+1)%w.Size(), 0)                 // origin slice, target rank, displacement
//	win.Fence(ctx, 0)
//	win.Lock(ctx, window.Shared, target, 0)
//	win.Get(dst, target, 64)
//	win.Unlock(ctx, target)                                // dst is filled when Unlock returns
//
// # Flavors
//
// Allocate carves each rank's memory from the pre-registered arena of its transport device.
// Allocation and Free reuse mapped, faulted-in memory (no mmap, munmap or page fault on reuse).
// Ranks on one host map each other's memory, so that a Put is a copy into the target's memory
// and a Get a copy out of it. AllocateShared adds SharedQuery, a []T view of a same-host rank's
// memory for loads and stores; a host's ranks share one segment, rank after rank, as MPI lays
// it out (NonContiguous: each rank's own). Both clear the memory first, as make does, unless
// given NoZero. Create exposes the caller's slice: peers on the same host reach it by
// cross-memory attach (process_vm_readv/writev), peers on other hosts through the transport.
// CreateDynamic starts without memory; Attach and Detach add and remove slices. A window of
// more than GORMA_WINDOW_EAGER ranks (16) maps and connects to a rank when this rank first uses
// it, not at creation.
//
// The slice Local returns dies with the window: do not use it after Free. The arena
// keeps a freed window's memory from the next allocations while it has other free space
// (a quarantine), and under GORMA_CHECK=1 a write through the stale slice faults (arena
// flavors only: Create's and dynamic windows' memory is the caller's).
//
// Displacements are in elements of T; Len(rank) is a rank's element count (ranks may
// differ). Every access is checked against it before anything is sent: an out-of-range
// access fails with ErrRange, and the target's memory is untouched.
//
// # Completion
//
// An operation on a mapped rank (same host, arena memory) is complete when the call returns.
// An operation through the transport (another host, or user memory) is complete at the next
// Flush or Unlock of its target, Fence, or Complete; until then its buffer belongs to the
// window. The memory model is MPI's unified model. A rank's own loads and stores of Local()
// see remote writes once they are complete, and its own stores become visible to others
// (including their cached copies) at its next Fence, Sync or Unlock of itself.
//
// When the job spans hosts, Gets in passive-target epochs from ranks reached over tcp may be
// served from a coherent page cache (window/coherence) unless the window is created with
// NoCache; PageSize sets its page, CacheStats reports it. It suits read-mostly data: pages
// polled while writes invalidate them are read uncached. Use NoCache for written windows.
//
// # Synchronization without the target
//
// Every synchronization word (the lock word, fence and PSCW counters) lives in the target's
// memory, and origins change it with one-sided atomics, so no synchronization and no
// passive-target operation waits for the target's code to run. A target that computes without
// calling the runtime serves Lock, Get and Unlock all the same. Waits spin briefly and then
// sleep, checking the context and the peers' liveness. design.md describes the metadata
// words, the waits and the page cache.
//
// # Errors
//
// Calls return a *Error naming the operation, the target rank and the displacement, and
// wrapping a sentinel (ErrEpoch, ErrRange, ErrFreed, ErrNotShared, ErrFlavor, ErrInvalid)
// or the runtime's error (a *runtime.ProcError for a failed peer) or a context error.
// Once the World's Finalize has begun, every call fails with an error wrapping
// runtime.ErrFinalized before it touches memory that Finalize unmaps, but Free returns
// nil. A call racing Finalize from another goroutine is the caller's error, as in MPI.
//
// # Concurrency contract
//
// RMA calls on one window may run concurrently from several goroutines. A synchronization
// call must not run concurrently with the RMA calls it is meant to order (as in MPI).
// Collective calls (constructors, Fence, Free) follow one order at every rank, with the
// World's collectives (GORMA_CHECK=1 checks it). The window holds no goroutine.
//
// The windows of a World talk on a Dup of it, made at the first window, one collective call
// at a time. Freeing the World (World.Free) frees that Dup too (substrate.OnFree), once its
// last open window is freed: as in MPI, a window stays usable after its World is freed.
package window
