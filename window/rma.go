package window

// Put copies origin into rank's window memory at displacement disp (in elements). On a
// rank whose memory is mapped (this host, arena memory) it is a copy into the target's
// memory and complete when Put returns; otherwise it is an RDMA write, complete at the
// next Flush, Unlock, Fence or Complete, and origin belongs to the window until then.
func (w *Win[T]) Put(origin []T, rank, disp int) error {
	t, err := w.access("put", rank, disp, len(origin))
	if err != nil {
		return err
	}
	if t.mem != nil {
		copy(t.mem[disp:disp+len(origin)], origin)
		return nil
	}
	return w.putRemote(t, origin, disp)
}

// Get copies len(result) elements of rank's window memory at disp into result. From a
// mapped rank it is complete when Get returns; otherwise result is filled by the next
// Flush, Unlock, Fence or Complete (or at once when a cached copy serves it).
func (w *Win[T]) Get(result []T, rank, disp int) error {
	t, err := w.access("get", rank, disp, len(result))
	if err != nil {
		return err
	}
	if t.mem != nil {
		copy(result, t.mem[disp:disp+len(result)])
		return nil
	}
	return w.getRemote(t, result, disp)
}

// access checks a call on rank's memory at disp for n elements and returns the target.
func (w *Win[T]) access(op string, rank, disp, n int) (*target[T], error) {
	if w.freed.Load() {
		return nil, werr(op, rank, disp, ErrFreed)
	}
	if uint(rank) >= uint(w.size) {
		return nil, werrf(op, rank, disp, ErrInvalid, "rank %d of a window of %d ranks", rank, w.size)
	}
	t := &w.tg[rank]
	if t.open == 0 {
		return nil, werrf(op, rank, disp, ErrEpoch, "no Fence, Start or Lock epoch includes rank %d", rank)
	}
	if disp < 0 || n < 0 || disp > t.n || n > t.n-disp {
		return nil, werrf(op, rank, disp, ErrRange, "%d elements at displacement %d of rank %d's %d", n, disp, rank, t.n)
	}
	if t.data != nil && !t.data.Live() {
		return nil, werrf(op, rank, disp, ErrFreed, "the World was finalized")
	}
	return t, nil
}

func (w *Win[T]) putRemote(t *target[T], origin []T, disp int) error {
	if len(origin) == 0 {
		return nil
	}
	off := uint64(disp * w.esize)
	if err := t.data.Write(t.ctr, off, asBytes(origin)); err != nil {
		return werr("put", t.rank, disp, err)
	}
	w.wroteRemote(t, off, len(origin)*w.esize)
	return nil
}

func (w *Win[T]) getRemote(t *target[T], result []T, disp int) error {
	if len(result) == 0 {
		return nil
	}
	off := uint64(disp * w.esize)
	if w.cacheGet(t, result, off) { // cache.go: served from a coherent cached copy
		return nil
	}
	if err := t.data.Read(t.ctr, off, asBytes(result)); err != nil {
		return werr("get", t.rank, disp, err)
	}
	return nil
}

// wroteRemote records that bytes [off, off+n) of t were written through the transport:
// the next flush of t completes the write's coherence (invalidations) as well.
func (w *Win[T]) wroteRemote(t *target[T], off uint64, n int) {
	w.mu.Lock()
	t.dirty = true
	w.noteWrite(t, off, n) // cache.go
	w.mu.Unlock()
}
