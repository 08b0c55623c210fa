package window

// SharedQuery returns rank's window memory of a shared window (AllocateShared), mapped in
// this process, for direct loads and stores (MPI_Win_shared_query); for this rank it is
// Local(). The slice aliases the memory of rank: ordering loads and stores of different
// ranks through it is the program's business, with the window's synchronization calls
// (Fence; or Sync on both sides around a Barrier or another synchronizing message) or with
// sync/atomic-style accesses of its own. The slice is valid until Free.
//
// Errors (*Error): ErrNotShared for a rank whose memory this rank cannot map (on another
// host, or a world that reaches same-host ranks through tcp); ErrFlavor for a window not
// made by AllocateShared; ErrInvalid for a rank out of range; ErrFreed.
func (w *Win[T]) SharedQuery(rank int) ([]T, error) {
	const op = "shared_query"
	if err := w.usable(op, rank, -1); err != nil {
		return nil, err
	}
	if w.flavor != FlavorShared {
		return nil, werrf(op, rank, -1, ErrFlavor, "SharedQuery on a %v window (AllocateShared makes shared ones)", w.flavor)
	}
	if uint(rank) >= uint(w.size) {
		return nil, werrf(op, rank, -1, ErrInvalid, "rank %d of a window of %d ranks", rank, w.size)
	}
	t := &w.tg[rank]
	if t.mem == nil && t.n == 0 && t.mw != nil {
		return []T{}, nil // nothing to map of a same-host rank without memory
	}
	if t.mem == nil {
		return nil, werrf(op, rank, -1, ErrNotShared, "rank %d's memory is not mapped here (%s transport)", rank, w.comm.Transport(rank))
	}
	return t.mem, nil
}
