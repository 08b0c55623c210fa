package window

// SharedQuery returns rank's window memory mapped in this process, for direct loads and
// stores (MPI_Win_shared_query); for this rank it is Local(). The slice aliases the
// memory of rank: ordering loads and stores of different ranks through it is the
// program's business, with the window's synchronization calls (Fence; or Sync on both
// sides around a Barrier or another synchronizing message) or with sync/atomic-style
// accesses of its own. The slice is valid until Free.
//
// A window of any flavor may be asked, as from MPI 4.0: one made by AllocateShared maps
// every rank of its host; one made by Allocate maps the ranks of this host whose memory
// the transport maps (shm); for any other rank of a window not made by AllocateShared
// (Create's user memory, another host, a dynamic window) it returns nil and no error,
// MPI's size 0 and NULL base.
//
// Errors (*Error): ErrNotShared for a rank of an AllocateShared window whose memory this
// rank cannot map (on another host, or a world that reaches same-host ranks through tcp);
// ErrInvalid for a rank out of range; ErrFreed.
func (w *Win[T]) SharedQuery(rank int) ([]T, error) {
	const op = "shared_query"
	if err := w.usable(op, rank, -1); err != nil {
		return nil, err
	}
	if uint(rank) >= uint(w.size) {
		return nil, werrf(op, rank, -1, ErrInvalid, "rank %d of a window of %d ranks", rank, w.size)
	}
	t := &w.tg[rank]
	if w.flavor != FlavorShared {
		if rank == w.rank {
			return w.local, nil
		}
		if w.flavor == FlavorDynamic {
			return nil, nil
		}
		if err := w.reach(t); err != nil {
			return nil, werr(op, rank, -1, err)
		}
		return t.mem, nil
	}
	if t.mem == nil && t.n == 0 && t.mw != nil {
		return []T{}, nil // nothing to map of a same-host rank without memory
	}
	if t.mem == nil {
		return nil, werrf(op, rank, -1, ErrNotShared, "rank %d's memory is not mapped here (%s transport)", rank, w.comm.Transport(rank))
	}
	return t.mem, nil
}
