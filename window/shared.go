package window

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"unsafe"

	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/substrate"
)

// NonContiguous lets AllocateShared place each rank's memory on its own, as the info key
// alloc_shared_noncontig lets MPI_Win_allocate_shared do: rank r's memory then need not
// start where rank r-1's ends, and SharedQuery's slices reach no further than their
// rank's memory. It saves AllocateShared two collective exchanges (window creation
// then costs what Allocate's does). Other constructors ignore it.
func NonContiguous() Option { return func(o *options) { o.noncontig = true } }

// sharedState is an AllocateShared window's host segment: the memory of every rank of
// this host, one rank's after another's in rank order, mapped whole in each of them.
// Set at creation, read-only until Free.
type sharedState[T runtime.Elem] struct {
	*house[T]

	seg  *substrate.Region // the segment, at the host's lowest rank only
	view *substrate.Remote // the lowest rank's segment mapped here, at the host's other ranks
	mem  []T               // the whole segment in this process; nil when not contiguous
	off  []int             // by rank: the element where its memory starts in mem; -1 off this host
}

func (w *sharedState[T]) SharedQuery(rank int) ([]T, error) {
	const op = "shared_query"
	if err := w.usable(op, rank, -1); err != nil {
		return nil, err
	}
	if uint(rank) >= uint(w.size) {
		return nil, werrf(op, rank, -1, ErrInvalid, "rank %d of a window of %d ranks", rank, w.size)
	}
	if m := w.shm.mem; m != nil && w.shm.off[rank] >= 0 {
		o := w.shm.off[rank]
		return m[o : o+w.tg[rank].n : len(m)], nil
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

// Markers of a host segment's record in AllocateShared's second exchange (allocShared).
const (
	segNone   = iota // not a host's lowest rank, or a host without a segment
	segFresh         // the segment's bytes read zero
	segReused        // the segment may hold a freed window's bytes
	segFailed        // the lowest rank could not allocate it
	segTooBig        // the host's ranks ask for more than an int's bytes
)

// hostRanks returns the window's ranks that this rank reaches through shared memory
// (substrate.ReachMap), itself included, in rank order. Every rank of a host computes the
// same list: the runtime maps a peer's memory exactly when both share a host (or a node,
// under a foreign process manager), which is an equivalence.
func (w *sharedState[T]) hostRanks() []int {
	var g []int
	for r := range w.size {
		if substrate.ReachOf(w.comm, r).Has(substrate.ReachMap) {
			g = append(g, r)
		}
	}
	return g
}

// allocShared gives an AllocateShared window its memory (w.data, w.local). Unless
// NonContiguous is given, the lowest rank of each host allocates one segment for the
// memory of all its host's ranks, in rank order (exchanging the counts first), and
// publishes it (a second exchange); every other rank of the host maps it whole, and
// each rank registers its own part (RegisterRegion) for peers that reach it through
// the transport. Both exchanges run over the whole World, so that every rank calls the
// same collectives; a rank alone on its host allocates its memory as Allocate does.
func (w *sharedState[T]) allocShared(ctx context.Context, n int) error {
	if w.opt.noncontig || w.size == 1 {
		return w.allocOwn(n)
	}
	all, err := gatherWords(ctx, w.comm, []uint64{uint64(n)})
	if err != nil {
		return err
	}
	group := w.hostRanks()
	off := make([]int, w.size)
	for r := range off {
		off[r] = -1
	}
	total := hostTotal(all, group, off, w.esize)
	lead := group[0]
	rec, allocErr := w.leadSegment(lead, len(group), total)
	recs, err := w.gatherRecords(ctx, rec)
	if err != nil {
		return err
	}
	if allocErr != nil {
		return allocErr
	}
	if err := segVerdict(recs, w.esize); err != nil {
		return err
	}
	if len(group) == 1 {
		return w.allocOwn(n)
	}
	w.shm.off = off
	if err := w.mapSegment(recs[lead], lead, total); err != nil {
		return err
	}
	w.local = w.shm.mem[off[w.rank] : off[w.rank]+n : off[w.rank]+n]
	if w.data, err = substrate.RegisterRegion(w.comm, asBytes(w.local)); err != nil {
		return err
	}
	if !w.opt.noZero && recs[lead][0] != segFresh {
		clear(w.local) // reused arena bytes may hold a freed window's data
	}
	return nil
}

// hostTotal returns the element count of the host segment of the ranks in group, whose
// counts all holds by rank, and sets off[r] to where rank r's memory starts in it; -1 if
// the count overflows an int's bytes.
func hostTotal(all []uint64, group, off []int, esize int) int {
	total, limit := 0, uint64(math.MaxInt/esize)
	for _, r := range group {
		off[r] = total
		if all[r] > limit-uint64(total) {
			return -1
		}
		total += int(all[r])
	}
	return total
}

// leadSegment allocates the host segment of total elements when this rank is its host's
// lowest (lead) and the host has other ranks, and returns this rank's record of the
// second exchange: the segment's description, or why there is none. A non-nil error is
// this rank's failure, which the record tells the others.
func (w *sharedState[T]) leadSegment(lead, ranks, total int) ([]byte, error) {
	rec := make([]byte, recLen)
	switch {
	case lead != w.rank || ranks == 1 || total == 0:
		return rec, nil
	case total < 0:
		rec[0] = segTooBig
		return rec, fmt.Errorf("%w: the %d ranks of this host ask for more than %d elements in all (NonContiguous allocates each rank's memory on its own)",
			ErrInvalid, ranks, math.MaxInt/w.esize)
	}
	seg, err := substrate.AllocHostRegion(w.comm, dataBytes(total*w.esize))
	if err != nil {
		rec[0] = segFailed
		return rec, fmt.Errorf("the shared memory of the %d ranks of this host (%d bytes): %w", ranks, total*w.esize, err)
	}
	w.shm.seg = seg
	rec[0] = segReused
	if seg.Zero() {
		rec[0] = segFresh
	}
	d := seg.AppendDesc(nil)
	rec[1] = byte(len(d))
	copy(rec[2:], d)
	return rec, nil
}

// segVerdict fails every rank when a host's lowest rank could not lay out its segment
// (recs: the second exchange), so that no rank goes on to the record exchange alone.
func segVerdict(recs [][]byte, esize int) error {
	for r, rc := range recs {
		switch rc[0] {
		case segFailed:
			return fmt.Errorf("%w: rank %d could not allocate the shared memory of its host's ranks (its error says why)", runtime.ErrTransport, r)
		case segTooBig:
			return fmt.Errorf("%w: the ranks of rank %d's host ask for more than %d elements in all (NonContiguous allocates each rank's memory on its own)",
				ErrInvalid, r, math.MaxInt/esize)
		}
	}
	return nil
}

// mapSegment sets w.shm.mem to the host segment of total elements that rank lead
// described in rec (mapping it unless this rank is lead).
func (w *sharedState[T]) mapSegment(rec []byte, lead, total int) error {
	switch {
	case total == 0:
		w.shm.mem = []T{}
		return nil
	case lead == w.rank:
		w.shm.mem = asElems[T](w.shm.seg.Bytes())[:total:total]
		return nil
	}
	desc, err := segDesc(rec)
	if err != nil {
		return fmt.Errorf("%w: rank %d: %w (mixed gorma builds in one job?)", ErrInvalid, lead, err)
	}
	view, err := substrate.Attach(w.comm, lead, desc)
	if err != nil {
		return fmt.Errorf("the shared memory of rank %d: %w", lead, err)
	}
	b := view.Mapped()
	if len(b) < total*w.esize {
		view.Close()
		return fmt.Errorf("%w: rank %d's shared memory maps %d bytes here, want %d", runtime.ErrTransport, lead, len(b), total*w.esize)
	}
	w.shm.view, w.shm.mem = view, asElems[T](b)[:total:total]
	return nil
}

// segDesc decodes a host leader's record of AllocateShared's second exchange: its
// segment's description (aliasing rec). It never panics; a record that holds no
// segment is an error.
func segDesc(rec []byte) ([]byte, error) {
	if len(rec) < 2 || (rec[0] != segFresh && rec[0] != segReused) {
		return nil, errors.New("record holds no shared memory segment")
	}
	dl := int(rec[1])
	if dl == 0 || 2+dl > len(rec) {
		return nil, fmt.Errorf("shared memory record with a description of %d bytes in %d", dl, len(rec))
	}
	return rec[2 : 2+dl], nil
}

// allocOwn gives the window memory of its own from the arena, as Allocate does.
func (w *sharedState[T]) allocOwn(n int) error {
	var err error
	if w.data, err = substrate.AllocRegion(w.comm, dataBytes(n*w.esize)); err != nil {
		return err
	}
	w.local = asElems[T](w.data.Bytes())[:n:n]
	if !w.opt.noZero && !w.data.Zero() {
		clear(w.local) // reused arena bytes may hold a freed window's data
	}
	return nil
}

// mapHost points the reached ranks of this host at their memory in the host segment.
// Creation calls it once every rank is reached.
func (w *sharedState[T]) mapHost() {
	m := w.shm.mem
	if m == nil {
		return
	}
	for r, o := range w.shm.off {
		if o >= 0 && r != w.rank {
			t := &w.tg[r]
			t.mem = m[o : o+t.n : o+t.n]
		}
	}
}

// freeShared releases the host segment: this rank's mapping of it, or (at the host's
// lowest rank) the segment itself, whose release waits for the other ranks' mappings
// to go (package arena's drain bound). Free calls it after the closing barrier, once
// w.data no longer registers a part of the segment: a peer over the transport may use
// that registration until the barrier.
func (w *sharedState[T]) freeShared() {
	if w.shm.view != nil {
		w.shm.view.Close()
		w.shm.view = nil
	}
	if seg := w.shm.seg; seg != nil {
		w.shm.seg = nil
		seg.Free()
		if b := seg.Bytes(); seg.Guarded() && len(b) > 0 {
			lo := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
			fmt.Fprintf(os.Stderr, "gorma: GORMA_CHECK=1: %s released its host's shared memory [%#x, %#x): it is "+
				"inaccessible in this process until the arena reuses it; a write through a stale Local() or "+
				"SharedQuery slice faults there (\"unexpected fault address\" in that range)\n", w.describe(), lo, lo+uintptr(len(b)))
		}
	}
}
