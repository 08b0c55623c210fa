package window

import (
	"context"

	"github.com/gorma-hpc/gorma/collectives"
	"github.com/gorma-hpc/gorma/datatype"
)

// The window's API. Each method hands the call to the part that owns it (design.md,
// "Parts"): the data path (Put, Get, the accumulates and atomics, the request-based
// calls), the epochs (Fence, PSCW, Lock and Flush), the dynamic directory, the host's
// shared segment and the page cache.

// Accumulate combines origin into rank's window memory at disp, element by element:
// target[disp+i] = target[disp+i] op origin[i], atomically per element with respect to
// every accumulate-type operation of every rank. op is any valid operator (Sum, Prod,
// Min, Max, Band, Bor, Bxor, Replace, NoOp, or a user operator from collectives.NewOp);
// the zero Op fails with ErrInvalid.
//
// Completion: the operation is complete at the target when Accumulate returns (gorma runs
// it under the target's accumulate word, see above). As in MPI, origin may be reused at
// once, and Gets of other ranks are promised to see it after the next Flush, Unlock,
// Fence or Complete, which also completes the coherence work of cached copies.
func (w *Win[T]) Accumulate(origin []T, rank, disp int, op collectives.Op[T]) error {
	return w.dp.Accumulate(origin, rank, disp, op)
}

// GetAccumulate stores rank's window memory at disp into result and combines origin into
// it, as one atomic step per element (MPI_Get_accumulate): result[i] = target[disp+i];
// target[disp+i] = target[disp+i] op origin[i]. With collectives.NoOp the target is not
// changed (origin is ignored and may be nil): an atomic read. Otherwise origin and result
// must have the same length, and must not overlap.
//
// Completion: result holds the old values when GetAccumulate returns (MPI promises them
// only after a flush; here they are valid at once); on error its contents are
// unspecified. The target is updated as by Accumulate.
func (w *Win[T]) GetAccumulate(origin, result []T, rank, disp int, op collectives.Op[T]) error {
	return w.dp.GetAccumulate(origin, result, rank, disp, op)
}

// CompareAndSwap replaces the element of rank's window memory at disp by origin if it
// equals compare, and stores the element's old value into *result, as one atomic step
// (MPI_Compare_and_swap). Equality is bitwise (for floating-point types: a NaN matches a
// NaN of the same bits, and -0 does not match +0), so that a word used as a lock compares
// as it was stored. It is atomic with respect to every accumulate-type operation of every
// rank (see Accumulate). A nil result fails with ErrInvalid.
//
// Completion: *result holds the old value when CompareAndSwap returns (valid at once, MPI
// promises it only after a flush) and is set only on success; the swap is complete at the
// target as an Accumulate's update is. No buffer is retained.
func (w *Win[T]) CompareAndSwap(origin, compare T, result *T, rank, disp int) error {
	return w.dp.CompareAndSwap(origin, compare, result, rank, disp)
}

// FetchAndOp stores the element of rank's window memory at disp into *result and
// combines origin into it, as one atomic step (MPI_Fetch_and_op): *result = target[disp];
// target[disp] = target[disp] op origin. With collectives.NoOp it is an atomic read
// (origin is ignored). It is atomic with respect to every accumulate-type operation of
// every rank (see Accumulate). A nil result or the zero Op fails with ErrInvalid.
//
// Completion: *result holds the old value when FetchAndOp returns (MPI promises it only
// after a flush; here it is valid at once) and is set only on success; the target is
// updated as by Accumulate. No buffer is retained.
func (w *Win[T]) FetchAndOp(origin T, result *T, rank, disp int, op collectives.Op[T]) error {
	return w.dp.FetchAndOp(origin, result, rank, disp, op)
}

// AccumulateType combines ocount copies of the layout ot over origin into tcount copies
// of the layout tt at disp in rank's window memory with op (MPI_Accumulate with derived
// datatypes), element by element and atomically per element, as Accumulate.
func (w *Win[T]) AccumulateType(origin []T, ocount int, ot datatype.Type, rank, disp, tcount int, tt datatype.Type, op collectives.Op[T]) error {
	return w.dp.AccumulateType(origin, ocount, ot, rank, disp, tcount, tt, op)
}

// GetType fills rcount copies of the layout rt over result from tcount copies of the
// layout tt at disp in rank's window memory (MPI_Get with derived datatypes): the mirror
// of PutType, with Get's completion.
func (w *Win[T]) GetType(result []T, rcount int, rt datatype.Type, rank, disp, tcount int, tt datatype.Type) error {
	return w.dp.GetType(result, rcount, rt, rank, disp, tcount, tt)
}

// PutType puts ocount copies of the layout ot, laid over origin, into rank's window
// memory as tcount copies of the layout tt placed at displacement disp (in elements of
// T; tt's byte offsets count from there): MPI_Put with an origin and a target datatype.
// The two sides must hold the same bytes (ocount*ot.Size() == tcount*tt.Size()), paired
// in typemap order, and every block of both layouts must be whole elements of T. Each
// run that is contiguous on both sides is one Put: on a mapped rank a copy straight into
// its memory, with no packing; through the transport one RDMA write. Completion is Put's.
// Both layouts are checked against origin and rank's memory before anything is written.
func (w *Win[T]) PutType(origin []T, ocount int, ot datatype.Type, rank, disp, tcount int, tt datatype.Type) error {
	return w.dp.PutType(origin, ocount, ot, rank, disp, tcount, tt)
}

// Raccumulate is Accumulate returning a Request, valid in a passive-target epoch only
// (Lock or LockAll; otherwise ErrEpoch). gorma runs the operation when Raccumulate is
// called (an accumulate holds the target's accumulate word from its read to its write,
// see Accumulate), so the Request is complete when returned and origin is the caller's
// again at once.
func (w *Win[T]) Raccumulate(origin []T, rank, disp int, op collectives.Op[T]) (*Request, error) {
	return w.dp.Raccumulate(origin, rank, disp, op)
}

// Rget is Get returning a Request: result belongs to the window, and holds rank's data,
// once the request completes (Wait, Test, or a Flush or Unlock of rank). It is valid in
// a passive-target epoch only (Lock or LockAll; otherwise ErrEpoch). From a mapped rank,
// or from a coherent cached copy, result is filled when Rget returns and the Request is
// already complete.
func (w *Win[T]) Rget(result []T, rank, disp int) (*Request, error) {
	return w.dp.Rget(result, rank, disp)
}

// RgetAccumulate is GetAccumulate returning a Request, valid in a passive-target epoch
// only (Lock or LockAll; otherwise ErrEpoch). As with Raccumulate the operation runs
// when RgetAccumulate is called: the Request is complete when returned, result holds the
// old values and origin is the caller's again at once.
func (w *Win[T]) RgetAccumulate(origin, result []T, rank, disp int, op collectives.Op[T]) (*Request, error) {
	return w.dp.RgetAccumulate(origin, result, rank, disp, op)
}

// Rput is Put returning a Request: origin belongs to the window until the request
// completes (Wait, Test, or a Flush or Unlock of rank). It is valid in a passive-target
// epoch only (Lock or LockAll; otherwise ErrEpoch). When Wait returns nil the data is in
// rank's memory. To a mapped rank the copy is done when Rput returns and the Request is
// already complete.
func (w *Win[T]) Rput(origin []T, rank, disp int) (*Request, error) {
	return w.dp.Rput(origin, rank, disp)
}

// Get copies len(result) elements of rank's window memory at disp into result. From a
// mapped rank it is complete when Get returns; otherwise result is filled by the next
// Flush, Unlock, Fence or Complete (or at once when a cached copy serves it).
func (w *Win[T]) Get(result []T, rank, disp int) error { return w.dp.Get(result, rank, disp) }

// Put copies origin into rank's window memory at displacement disp (in elements). On a
// rank whose memory is mapped (this host, arena memory) it is a copy into the target's
// memory and complete when Put returns. Otherwise it is an RDMA write, complete at the
// next Flush, Unlock, Fence or Complete, and origin belongs to the window until then.
func (w *Win[T]) Put(origin []T, rank, disp int) error { return w.dp.Put(origin, rank, disp) }

// Fence completes every RMA operation of this rank issued since the previous Fence (at
// the origin and at the target), makes this rank's own stores to its window memory
// visible to the others, and synchronizes every rank of the window: collective. It opens
// an access and exposure epoch to every rank, unless assert has NoSucceed, that RMA
// calls may use until the next Fence. As in MPI, a Fence that no RMA call of this rank
// follows opens nothing that a Lock, LockAll, Post or Start (which end it) must wait
// for. A Fence while this rank holds a lock (passive-target epoch) or has a PSCW epoch
// open fails with ErrEpoch, and so does one asserting NoPrecede after RMA calls of this
// rank in the epoch it closes (it completes them first, so no rank is left waiting).
func (w *Win[T]) Fence(ctx context.Context, assert Assert) error { return w.ep.Fence(ctx, assert) }

// Flush completes every operation of this rank to rank, at the origin and at the target.
// It is valid in a passive-target epoch (Lock or LockAll).
func (w *Win[T]) Flush(ctx context.Context, rank int) error { return w.ep.Flush(ctx, rank) }

// FlushAll is Flush for every rank.
func (w *Win[T]) FlushAll(ctx context.Context) error { return w.ep.FlushAll(ctx) }

// FlushLocal completes every operation of this rank to rank at the origin: its buffers
// may be reused. gorma's transport path holds origin buffers until the target has
// completed the operation, so FlushLocal is Flush.
func (w *Win[T]) FlushLocal(ctx context.Context, rank int) error { return w.ep.Flush(ctx, rank) }

// FlushLocalAll is FlushLocal for every rank.
func (w *Win[T]) FlushLocalAll(ctx context.Context) error { return w.ep.FlushAll(ctx) }

// Lock opens a passive-target access epoch to rank: it acquires rank's lock word (in the
// rank's metadata, by CPU atomics on a mapped rank and by remote atomics otherwise, so
// the target's code never runs) unless assert has NoCheck. A rank may hold locks on
// several ranks at once, but one on each.
func (w *Win[T]) Lock(ctx context.Context, lt LockType, rank int, assert Assert) error {
	return w.ep.Lock(ctx, lt, rank, assert)
}

// LockAll opens a shared passive-target epoch to every rank (MPI_Win_lock_all).
func (w *Win[T]) LockAll(ctx context.Context, assert Assert) error { return w.ep.LockAll(ctx, assert) }

// Sync makes this rank's own stores to its window memory visible to Gets of other ranks,
// cached copies included (MPI_Win_sync in the unified model).
func (w *Win[T]) Sync(ctx context.Context) error { return w.ep.Sync(ctx) }

// Unlock completes every operation of this rank to rank (at the target: a later Get of
// any rank sees it) and releases the lock.
func (w *Win[T]) Unlock(ctx context.Context, rank int) error { return w.ep.Unlock(ctx, rank) }

// UnlockAll completes every operation of this rank and releases the locks of LockAll.
func (w *Win[T]) UnlockAll(ctx context.Context) error { return w.ep.UnlockAll(ctx) }

// Complete closes the access epoch opened by Start: every operation of the epoch is
// complete at its target (the origin buffers may be reused) when Complete returns, and
// each target's Wait can return once Complete has told it. The epoch is closed even when
// Complete fails; a target whose operations could not be completed (it failed) is not
// told, the others are.
//
// Errors (*Error): ErrEpoch without an open access epoch; ErrFreed; ctx's error; a failed
// target's error (the first).
func (w *Win[T]) Complete(ctx context.Context) error { return w.ep.Complete(ctx) }

// Post opens an exposure epoch of this rank's window for the origins in group (ranks of
// the window, each at most once; this rank may be one of them): each origin's matching
// Start may return once Post has run. This rank's stores to its window memory before Post
// are visible to the origins' Gets (unless assert has NoStore, which promises there were
// none). With NoCheck the origins' matching Starts must carry NoCheck too: neither call
// then touches the handshake words (MPI_MODE_NOCHECK: the program knows the Post came
// first). Post does not wait for the origins.
//
// Errors (*Error): ErrEpoch if an exposure epoch is open already, or inside a Fence or
// passive-target epoch; ErrInvalid for a bad group; ErrFreed; a failed origin's error.
// After a failed Post (a failed origin) no exposure epoch is open, but the other origins
// may already have been told.
func (w *Win[T]) Post(ctx context.Context, group []int, assert Assert) error {
	return w.ep.Post(ctx, group, assert)
}

// Start opens an access epoch to the targets in group (ranks of the window, each at most
// once; this rank may be one of them): afterwards Put, Get and the accumulates may name
// them. Start returns once every target has posted the matching exposure epoch (with
// NoCheck at once: the matching Posts carry NoCheck too and came first). While it waits
// it checks ctx and the targets' liveness: a failed target's error is returned, never a
// hang. A failed Start changes nothing: it may be called again.
//
// Errors (*Error): ErrEpoch if an access epoch is open already, or inside a Fence or
// passive-target epoch; ErrInvalid for a bad group; ErrFreed; ctx's error; a failed
// target's error.
func (w *Win[T]) Start(ctx context.Context, group []int, assert Assert) error {
	return w.ep.Start(ctx, group, assert)
}

// Test is Wait without waiting: it reports whether every origin has called Complete, and
// closes the exposure epoch if so. It returns false and a failed origin's error if one of
// those that have not completed failed.
//
// Errors (*Error): as Wait, without ctx's.
func (w *Win[T]) Test() (bool, error) { return w.ep.Test() }

// Wait closes the exposure epoch opened by Post once every origin of its group has called
// Complete: their operations on this rank's window memory are then complete and visible to
// this rank's loads. While it waits it checks ctx and the origins' liveness: a failed
// origin's error is returned, never a hang, and the epoch stays open.
//
// Errors (*Error): ErrEpoch without an open exposure epoch; ErrFreed; ctx's error; a
// failed origin's error.
func (w *Win[T]) Wait(ctx context.Context) error { return w.ep.Wait(ctx) }

// Attach makes buf (the caller's memory, which peers reach through the transport: by
// cross-memory attach on this host, by the transport's target-side progress on others) part of
// this rank's dynamic window, and returns the displacement of buf[0] as peers must name it. The
// element buf[i] is at base+i. Not collective: peers learn base from the program (a message,
// say). Until Detach or Free, buf is window memory: this rank's own loads and stores of it
// follow the rules of Local() (order them with the window's synchronization calls), and it
// stays reachable by peers. At most 1024 buffers are attached at a time. An access that runs
// past buf's end continues in a buffer attached right after it in this rank's memory (the parts
// of one array), split there by Put, Get, Accumulate and GetAccumulate. Attach does not block
// (ctx is for symmetry with the other calls). Safe for concurrent use with RMA calls and with
// Attach and Detach.
//
// Errors (*Error): ErrFlavor for a window that is not dynamic; ErrInvalid for an empty or
// too long buffer (2^40 elements) or when every slot is taken; ErrFreed; the runtime's
// registration error.
func (w *Win[T]) Attach(ctx context.Context, buf []T) (base int, err error) {
	return w.dyn.Attach(ctx, buf)
}

// Detach removes the buffer attached at base (Attach's result) from this rank's dynamic
// window: afterwards the buffer belongs to the caller again. Every access of a peer to
// it in a later epoch fails with ErrRange (the buffer's key is revoked as well). A peer
// must not access the buffer in an epoch that Detach overlaps (MPI calls it erroneous):
// such an access may fail, and on a peer reaching it through the transport may break
// that peer's connection to this rank. Detach does not block (ctx is for symmetry with
// the other calls).
//
// Errors (*Error): ErrFlavor for a window that is not dynamic; ErrRange if base is not
// the base of an attached buffer; ErrFreed.
func (w *Win[T]) Detach(ctx context.Context, base int) error { return w.dyn.Detach(ctx, base) }

// SharedQuery returns rank's window memory mapped in this process, for direct loads and
// stores (MPI_Win_shared_query); for this rank it starts where Local() does. On a window
// made by AllocateShared without NonContiguous, the memory of a host's ranks is one
// segment, rank after rank. The slice of a rank of this host has the length that rank
// asked for and reaches to the end of the segment. So v[:cap(v)] holds that rank's memory
// and then every higher rank's of the host, as MPI indexes from the lowest rank's base. A
// rank without memory gets an empty slice at its place. The slice aliases the memory of
// rank: ordering loads and stores of different ranks through it is the program's business,
// with the window's synchronization calls (Fence; or Sync on both sides around a Barrier
// or another synchronizing message) or with sync/atomic-style accesses of its own. The
// slice is valid until Free.
//
// A window of any flavor may be asked, as from MPI 4.0. One made by AllocateShared maps
// every rank of its host. One made by Allocate maps the ranks of this host whose memory
// the transport maps (shm). For any other rank of a window not made by AllocateShared
// (Create's user memory, another host, a dynamic window) it returns nil and no error,
// MPI's size 0 and NULL base.
//
// Errors (*Error): ErrNotShared for a rank of an AllocateShared window whose memory this
// rank cannot map (on another host, or a world that reaches same-host ranks through tcp);
// ErrInvalid for a rank out of range; ErrFreed.
func (w *Win[T]) SharedQuery(rank int) ([]T, error) { return w.shm.SharedQuery(rank) }

// CacheStats returns the counters of this rank's page cache (zero when it is off).
func (w *Win[T]) CacheStats() CacheStats { return w.coh.CacheStats() }
