package window

import (
	"github.com/gorma-hpc/gorma/internal/prof"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/substrate"
)

// copyShort is the longest Put or Get (elements) whose fast path copies with Go's copy
// inline rather than through copyMapped, whose call costs more than a short copy
// (`bin/golaunch -n 2 bin/rmabench --test put_bw,get_bw`, 8 B).
const copyShort = 64

// Put's and Get's fast paths: rank is mapped here (reached, arena memory on this host),
// an epoch includes it, the range is in it and the memory is live. The checks are loads
// of this rank's own state and one atomic load of liveness, written out in each, as a
// call costs more than the checks at 8 B (`bin/golaunch -n 2 bin/rmabench --test
// put_lat.lock_all`). Every other case, errors included, takes the checked path.
func (w *dataPath[T]) Put(origin []T, rank, disp int) error {
	if w.ob == nil && w.coh == nil && uint(rank) < uint(len(w.tg)) { // observe.go, cache.go: their own paths
		t := &w.tg[rank]
		if m := t.memReady(); m != nil && t.open != 0 && uint(disp) <= uint(len(m)) &&
			uint(len(origin)) <= uint(len(m)-disp) && t.live(w.comm) {
			w.markFence(t)
			if len(origin) <= copyShort {
				copy(m[disp:], origin)
			} else {
				copyMapped(m[disp:], origin)
			}
			return nil
		}
	}
	if w.ob != nil {
		return w.observedPut(origin, rank, disp) // observe.go
	}
	return w.put(origin, rank, disp)
}

// markFence marks the Fence epoch used by an RMA call to t, with a load first so that
// a fast path stores at most once per epoch.
func (w *dataPath[T]) markFence(t *target[T]) {
	if t.open&openFence != 0 && !w.fenceUsed.Load() {
		w.fenceUsed.Store(true)
	}
}

func (w *dataPath[T]) put(origin []T, rank, disp int) error {
	s, err := w.access("put", rank, disp, len(origin))
	if c, ok := err.(*errCross); ok { // dynamic.go: into the next attachment
		if err := w.put(origin[:c.k], rank, disp); err != nil {
			return err
		}
		return w.put(origin[c.k:], rank, c.next)
	}
	if err != nil {
		return err
	}
	if s.mem != nil {
		copyMapped(s.mem[s.off:s.off+len(origin)], origin)
		if w.coh != nil {
			w.coh.wroteMapped(s, len(origin)) // cache.go
		}
		return nil
	}
	return w.putRemote(s, origin, disp)
}

func (w *dataPath[T]) Get(result []T, rank, disp int) error {
	if w.ob == nil { // the fast path, as Put's; a mapped rank is never cached
		if uint(rank) < uint(len(w.tg)) {
			t := &w.tg[rank]
			if m := t.memReady(); m != nil && t.open != 0 && uint(disp) <= uint(len(m)) &&
				uint(len(result)) <= uint(len(m)-disp) && t.live(w.comm) {
				w.markFence(t)
				if len(result) <= copyShort {
					copy(result, m[disp:])
				} else {
					copyMapped(result, m[disp:])
				}
				return nil
			}
		}
		return w.get(result, rank, disp)
	}
	return w.observedGet(result, rank, disp) // observe.go
}

func (w *dataPath[T]) get(result []T, rank, disp int) error {
	s, err := w.access("get", rank, disp, len(result))
	if c, ok := err.(*errCross); ok { // dynamic.go: into the next attachment
		if err := w.get(result[:c.k], rank, disp); err != nil {
			return err
		}
		return w.get(result[c.k:], rank, c.next)
	}
	if err != nil {
		return err
	}
	if s.mem != nil {
		copyMapped(result, s.mem[s.off:s.off+len(result)])
		return nil
	}
	return w.getRemote(s, result, disp)
}

// span is where an access lands: the target, and either its memory mapped here (mem,
// with the access at element off) or its region reached through the transport (data,
// at element off).
type span[T runtime.Elem] struct {
	t    *target[T]
	mem  []T
	data *substrate.Remote
	off  int
}

// access checks a call on rank's memory at disp for n elements and returns where it
// lands.
func (w *dataPath[T]) access(op string, rank, disp, n int) (span[T], error) {
	if err := w.usable(op, rank, disp); err != nil {
		return span[T]{}, err
	}
	if uint(rank) >= uint(w.size) {
		return span[T]{}, werrf(op, rank, disp, ErrInvalid, "rank %d of a window of %d ranks", rank, w.size)
	}
	t := &w.tg[rank]
	if t.open == 0 {
		return span[T]{}, werrf(op, rank, disp, ErrEpoch, "no Fence, Start or Lock epoch includes rank %d", rank)
	}
	if t.open&openFence != 0 && !w.fenceUsed.Load() {
		w.fenceUsed.Store(true)
	}
	if err := w.reach(t); err != nil {
		return span[T]{}, werr(op, rank, disp, err)
	}
	if w.flavor == FlavorDynamic {
		return w.dyn.dynSpan(op, t, disp, n) // dynamic.go
	}
	if disp < 0 || n < 0 || disp > t.n || n > t.n-disp {
		return span[T]{}, werrf(op, rank, disp, ErrRange, "%d elements at displacement %d of rank %d's %d", n, disp, rank, t.n)
	}
	if t.data != nil && !t.data.Live() {
		return span[T]{}, werrf(op, rank, disp, runtime.ErrFinalized, "the World was finalized")
	}
	return span[T]{t: t, mem: t.mem, data: t.data, off: disp}, nil
}

func (w *dataPath[T]) putRemote(s span[T], origin []T, disp int) error {
	if len(origin) == 0 {
		return nil
	}
	off := uint64(s.off * w.esize)
	s.t.pend.Store(true)
	if err := s.data.Write(s.t.ctr, off, asBytes(origin)); err != nil {
		return werr("put", s.t.rank, disp, err)
	}
	w.wroteRemote(s, off, len(origin)*w.esize)
	return nil
}

func (w *dataPath[T]) getRemote(s span[T], result []T, disp int) error {
	if len(result) == 0 {
		return nil
	}
	off := uint64(s.off * w.esize)
	if w.coh.cacheGet(s, result, off) { // cache.go: served from a coherent cached copy
		return nil
	}
	s.t.pend.Store(true)
	if err := s.data.Read(s.t.ctr, off, asBytes(result)); err != nil {
		return werr("get", s.t.rank, disp, err)
	}
	return nil
}

// wroteRemote records that bytes [off, off+n) of s's region were written through the
// transport: the next flush of the target completes the write's coherence work
// (invalidations of cached copies) as well.
func (w *dataPath[T]) wroteRemote(s span[T], off uint64, n int) {
	s.t.pend.Store(true)
	w.mu.Lock()
	s.t.dirty = true
	w.coh.noteWrite(s, off, n) // cache.go
	w.mu.Unlock()
}

// observedPut is Put under observation.
func (w *dataPath[T]) observedPut(origin []T, rank, disp int) error {
	c := w.ob.begin(prof.CallPut)
	err := w.put(origin, rank, disp)
	w.ob.rma(c, rank, len(origin)*w.esize, -1, -1, err)
	return err
}

// observedGet is Get under observation.
func (w *dataPath[T]) observedGet(result []T, rank, disp int) error {
	c := w.ob.begin(prof.CallGet)
	err := w.get(result, rank, disp)
	w.ob.rma(c, rank, 0, len(result)*w.esize, -1, err) // an empty request out, the data back
	return err
}
