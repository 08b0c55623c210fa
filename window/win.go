package window

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"strconv"
	"unsafe"

	"github.com/gorma-hpc/gorma/collectives"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/substrate"
)

// Win is an RMA window: memory of every rank of a World that every rank may access with
// one-sided operations, in epochs opened and closed by its synchronization calls.
//
// Concurrency: RMA calls (Put, Get, the accumulates, the request-based calls) on one
// window may run concurrently from several goroutines. A synchronization call (Fence,
// Lock, Unlock, Flush..., Post, Start, Complete, Wait, Free) must not run concurrently
// with RMA calls that it is meant to order, as in MPI. The buffers of Put, Get and the
// accumulates belong to the window until the call that completes the operation (Flush,
// Unlock, Fence, Complete, or the Request's Wait) has returned.
//
// Win is a facade (api.go): each call goes to the part that owns it. The parts share the
// house (house.go).
type Win[T runtime.Elem] struct {
	*house[T]
	ep *epochs[T]   // Fence, PSCW, Lock and Flush (fence.go, pscw.go, lock.go)
	dp *dataPath[T] // Put, Get, accumulates, atomics, requests (rma.go, accumulate.go, ...)
	// freeSig is Free's signature (Track.BeginSig, Check).
	freeSig *substrate.CallSig
}

// Local returns this rank's window memory (nil for a dynamic window). The slice dies with
// the window: it must not be used after Free. For Allocate and AllocateShared windows, a
// write through it after Free lands in arena memory that the arena holds back from reuse
// (its quarantine) until it runs out of other space or the quarantine passes its cap (64
// MiB by default), after which the write would corrupt whatever the memory serves next.
// Under GORMA_CHECK=1 the write faults instead, and Free has named the window and its
// address range on stderr (for AllocateShared, whose memory is its host's lowest rank's, at
// that rank only). For Create, the slice is the caller's own memory again after Free.
func (w *Win[T]) Local() []T { return w.local }

// Rank is this rank; Size the number of ranks of the window.
func (w *Win[T]) Rank() int { return w.rank }

// Size is the number of ranks sharing the window.
func (w *Win[T]) Size() int { return w.size }

// Flavor tells how the window's memory was obtained.
func (w *Win[T]) Flavor() Flavor { return w.flavor }

// Len returns the number of elements of rank's window memory.
func (w *Win[T]) Len(rank int) int {
	if rank < 0 || rank >= w.size {
		return 0
	}
	return w.tg[rank].n
}

// Allocate creates a window of n elements per rank (ranks may pass different n) from the
// pre-registered arena: the fast path. The memory starts zeroed, as make's does (MPI
// leaves it undefined; the arena reuses freed windows' bytes), unless NoZero is given.
// Collective over w.
func Allocate[T runtime.Elem](ctx context.Context, w *runtime.World, n int, opts ...Option) (*Win[T], error) {
	return create[T](ctx, w, FlavorAllocate, n, nil, opts)
}

// AllocateShared is Allocate with SharedQuery: every rank on the same host may load and
// store a peer's memory directly. As MPI_Win_allocate_shared does, it places the memory
// of the ranks of one host in one segment, each rank's right after the rank before it
// on that host (SharedQuery), unless NonContiguous is given. On a World that spans hosts
// each host has its own segment, and a rank on another host is reached through RMA
// calls only. Collective over w.
func AllocateShared[T runtime.Elem](ctx context.Context, w *runtime.World, n int, opts ...Option) (*Win[T], error) {
	return create[T](ctx, w, FlavorShared, n, nil, opts)
}

// Create creates a window over buf, the caller's memory (kept alive, and reachable by
// peers, until Free): peers on this host reach it by cross-memory attach, peers on other
// hosts through the transport's target-side progress. Collective over w.
func Create[T runtime.Elem](ctx context.Context, w *runtime.World, buf []T, opts ...Option) (*Win[T], error) {
	return create[T](ctx, w, FlavorCreate, len(buf), buf, opts)
}

func elemSize[T runtime.Elem]() int {
	var z T
	return int(unsafe.Sizeof(z))
}

func asBytes[T runtime.Elem](b []T) []byte {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(b))), len(b)*elemSize[T]())
}

func asElems[T runtime.Elem](b []byte) []T {
	n := len(b) / elemSize[T]()
	if n == 0 {
		return []T{}
	}
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), n)
}

func create[T runtime.Elem](ctx context.Context, rw *runtime.World, fl Flavor, n int, buf []T, opts []Option) (win *Win[T], err error) {
	op := "create"
	if rw == nil {
		return nil, werrf(op, -1, -1, ErrInvalid, "nil World (pass the World that runtime.Init, Dup or Split returned)")
	}
	if rw.IsInter() {
		return nil, werrf(op, -1, -1, ErrInvalid, "the World is an intercommunicator (MPI has no windows on one: Merge it first)")
	}
	if n < 0 || n > math.MaxInt/elemSize[T]() { // the byte count must not overflow
		return nil, werrf(op, -1, -1, ErrInvalid, "%d elements", n)
	}
	o := options{pageSize: 4096, cache: true}
	if fl == FlavorDynamic {
		o.dynSlots = defaultDynSlots
	}
	for _, f := range opts {
		f(&o)
	}
	if o.pageSize < 512 || o.pageSize > 1<<20 || o.pageSize&(o.pageSize-1) != 0 {
		return nil, werrf(op, -1, -1, ErrInvalid, "page size %d: want a power of two from 512 to 1 MiB", o.pageSize)
	}
	ce, err := commOf(rw)
	if err != nil {
		return nil, werr(op, -1, -1, err)
	}
	if err := ce.enter(ctx); err != nil {
		return nil, werr(op, -1, -1, err)
	}
	defer ce.leave()
	w := newWin[T](ce, rw, fl, o)
	seq := w.track.Next()
	name := "win" + strconv.FormatUint(seq, 10)
	w.label = name
	w.ep.fenceSig = &substrate.CallSig{Call: "window.Fence", Count: -1, Root: -1, Win: name}
	w.freeSig = &substrate.CallSig{Call: "window.Free", Count: -1, Root: -1, Win: name}
	sig := &substrate.CallSig{Call: trackNames[fl], Count: -1, Root: -1}
	w.track.BeginSig(sig, seq)
	defer func() {
		w.track.End()
		if err != nil {
			w.track.Close()
			w.releaseFailed()
		} else {
			ce.retain()
		}
	}()
	if err := w.track.Check(ctx, seq, sig); err != nil {
		return nil, werr(op, -1, -1, err)
	}
	if err := ce.setUp(ctx, rw); err != nil { // comm.go
		return nil, werr(op, -1, -1, err)
	}
	switch fl {
	case FlavorShared:
		if err := w.shm.allocShared(ctx, n); err != nil { // shared.go
			return nil, werr(op, -1, -1, err)
		}
	case FlavorAllocate:
		if w.data, err = substrate.AllocRegion(rw, dataBytes(n*w.esize)); err != nil {
			return nil, werr(op, -1, -1, err)
		}
		w.local = asElems[T](w.data.Bytes())[:n:n]
		if !o.noZero && !w.data.Zero() {
			clear(w.local) // reused arena bytes may hold a freed window's data
		}
	case FlavorCreate:
		if w.data, err = substrate.RegisterRegion(rw, asBytes(buf)); err != nil {
			return nil, werr(op, -1, -1, err)
		}
		w.local = buf
	}
	if w.meta, err = substrate.AllocRegion(rw, w.lay.words*wordLen); err != nil {
		return nil, werr(op, -1, -1, err)
	}
	w.mw = words(w.meta.Bytes())
	clear(w.mw)
	// A peer over a transport changes our words without ringing our doorbell (ring); our
	// transport wakes our sleepers for it (wait.go).
	mw := w.mw
	w.meta.OnRemoteAtomic(func() { ring(mw) })
	recs, err := w.exchange(ctx, n)
	if err != nil {
		return nil, werr(op, -1, -1, err)
	}
	w.lazy = fl != FlavorShared && w.size > eagerRanks()
	if err := w.attach(recs); err != nil {
		return nil, werr(op, -1, -1, err)
	}
	w.shm.mapHost() // shared.go
	w.ep.flags = !w.lazy
	for r := range w.size {
		if w.tg[r].ready.Load() && w.tg[r].mw == nil {
			w.ep.flags = false
		}
	}
	// Every rank must agree on how fences synchronize: mapped metadata of every rank is
	// the same fact seen from every rank (all ranks on one host), and the window's size
	// decides lazy for all, so no vote is needed.
	if err := w.initCoherence(ctx); err != nil { // cache.go
		return nil, werr(op, -1, -1, err)
	}
	// Nobody accesses a peer's metadata before the peer has cleared it. Every rank
	// cleared its words before its record went into the exchange, which no rank
	// completes before every record is in. A lazy window without the page cache attaches
	// no peer after it, so no rank can fail alone here: it needs no Barrier (design.md,
	// "Reaching a rank"; `scripts/compare-scale.sh`, win_allocate_us). The others wait in
	// one, so that no rank returns a window while another's attach has failed.
	if w.lazy && w.coh == nil {
		return w, nil
	}
	if err := collectives.Barrier(ctx, w.comm); err != nil {
		return nil, werr(op, -1, -1, err)
	}
	return w, nil
}

// newWin assembles a window's house and parts, before anything is allocated.
func newWin[T runtime.Elem](ce *commEntry, rw *runtime.World, fl Flavor, o options) *Win[T] {
	h := &house[T]{comm: ce.c, commRef: ce, rank: rw.Rank(), size: rw.Size(), esize: elemSize[T](), flavor: fl, opt: o,
		lay: newLayout(rw.Size(), o.dynSlots), track: substrate.NewTrack(rw)}
	h.tg = make([]target[T], h.size)
	h.ob = newWinObs(rw, h.size)
	h.dyn = &dynState[T]{house: h}
	h.shm = &sharedState[T]{house: h}
	dp := &dataPath[T]{house: h}
	return &Win[T]{house: h, dp: dp, ep: &epochs[T]{house: h, dp: dp}}
}

// A rank's record in the creation exchange: its element count and the descriptions of
// its data and metadata regions.
const recLen = 96

func (w *house[T]) exchange(ctx context.Context, n int) ([][]byte, error) {
	rec := make([]byte, 0, recLen)
	rec = binary.LittleEndian.AppendUint64(rec, uint64(n))
	var d []byte
	if w.data != nil {
		d = w.data.AppendDesc(nil)
	}
	rec = append(rec, byte(len(d)))
	rec = append(rec, d...)
	m := w.meta.AppendDesc(nil)
	rec = append(rec, byte(len(m)))
	rec = append(rec, m...)
	if len(rec) > recLen {
		return nil, fmt.Errorf("internal: window record of %d bytes", len(rec))
	}
	return w.gatherRecords(ctx, rec[:recLen])
}

// gatherRecords gives every rank every rank's record of recLen bytes (a multiple of 8),
// through gatherWords.
func (w *house[T]) gatherRecords(ctx context.Context, rec []byte) ([][]byte, error) {
	mine := make([]uint64, recLen/8)
	copy(asBytes(mine), rec)
	words, err := gatherWords(ctx, w.comm, mine)
	if err != nil {
		return nil, err
	}
	all := asBytes(words)
	recs := make([][]byte, w.size)
	for r := range recs {
		recs[r] = all[r*recLen : (r+1)*recLen : (r+1)*recLen]
	}
	return recs, nil
}

// gatherWords returns every rank's block of len(mine) words, in rank order (every rank
// passes as many). It is an Allreduce (bitwise or) of a vector of blocks in which each
// rank fills in its own. The collectives run it through the partners of their other calls
// on c (on a large host, its teams: collectives/teams.go), so it connects no pair of
// ranks that those do not. An Allgather would, by recursive doubling across the teams
// (design.md, "Reaching a rank").
func gatherWords(ctx context.Context, c *runtime.World, mine []uint64) ([]uint64, error) {
	all := make([]uint64, len(mine)*c.Size())
	copy(all[c.Rank()*len(mine):], mine)
	if err := collectives.Allreduce(ctx, c, nil, all, collectives.Bor[uint64]()); err != nil {
		return nil, err
	}
	return all, nil
}

// decodeRecord decodes a rank's record of the creation exchange (exchange): its element
// count and its data and metadata descriptions (aliasing rec). It never panics; a record
// that does not parse is an error.
func decodeRecord(rec []byte) (n int, ddesc, mdesc []byte, err error) {
	if len(rec) != recLen {
		return 0, nil, nil, fmt.Errorf("window record of %d bytes, want %d", len(rec), recLen)
	}
	u := binary.LittleEndian.Uint64(rec)
	dl := int(rec[8])
	if u > math.MaxInt/16 || 10+dl > len(rec) { // 16: the largest element
		return 0, nil, nil, fmt.Errorf("malformed window record (count %d, data description of %d bytes)", u, dl)
	}
	ml := int(rec[9+dl])
	if 10+dl+ml > len(rec) {
		return 0, nil, nil, fmt.Errorf("malformed window record (metadata description of %d bytes)", ml)
	}
	return int(u), rec[9 : 9+dl], rec[10+dl : 10+dl+ml], nil
}

// attach records every rank's element count and reaches every rank, or only this one
// when the window is lazy (the others on first use: reach).
func (w *house[T]) attach(recs [][]byte) error {
	for r := range w.size {
		t := &w.tg[r]
		t.rank = r
		if r == w.rank {
			t.n = int(binary.LittleEndian.Uint64(recs[r]))
			t.mem, t.mw = w.local, w.mw
			t.ctr = substrate.NewCounter(w.comm)
			t.ready.Store(true)
			continue
		}
		n, _, _, err := decodeRecord(recs[r])
		if err != nil {
			return fmt.Errorf("%w: rank %d: %w (mixed gorma builds in one job?)", ErrInvalid, r, err)
		}
		t.n, t.rec = n, recs[r]
		if !w.lazy {
			if err := w.reachTarget(t); err != nil {
				return err
			}
		}
	}
	return nil
}

// eagerRanks is the largest window that reaches every rank at creation
// (GORMA_WINDOW_EAGER, default 16). A larger window maps a rank's memory and metadata,
// and connects to it, when this rank first needs it (reach), so that a window costs
// memory, mappings and connections for the ranks it is used with, not for every pair.
func eagerRanks() int {
	if v, err := strconv.Atoi(os.Getenv("GORMA_WINDOW_EAGER")); err == nil && v >= 0 {
		return v
	}
	return 16
}

// reach makes sure t's rank is reached: its memory and metadata attached and mapped
// where the transport maps them. Safe for concurrent use; the check of a reached rank is
// one atomic load. Every path that touches t.data, t.meta, t.mem, t.mw or t.ctr of
// another rank calls it first, or reads ready (the RMA fast paths).
func (w *house[T]) reach(t *target[T]) error {
	if t.ready.Load() {
		return nil
	}
	w.reachMu.Lock()
	defer w.reachMu.Unlock()
	if t.ready.Load() {
		return nil
	}
	return w.reachTarget(t)
}

// reachTarget attaches t's rank from its record (under reachMu, or at creation). On an
// error nothing stays attached, and a later reach tries again.
func (w *house[T]) reachTarget(t *target[T]) error {
	r := t.rank
	_, ddesc, mdesc, err := decodeRecord(t.rec)
	if err != nil {
		return fmt.Errorf("%w: rank %d: %w (mixed gorma builds in one job?)", ErrInvalid, r, err)
	}
	meta, err := substrate.Attach(w.comm, r, mdesc)
	if err != nil {
		return fmt.Errorf("metadata of rank %d: %w", r, err)
	}
	var data *substrate.Remote
	var mem []T
	if len(ddesc) > 0 && t.n > 0 { // an empty window (MPI_Win_create(NULL, 0)) has nothing to reach
		if data, err = substrate.Attach(w.comm, r, ddesc); err != nil {
			meta.Close()
			return fmt.Errorf("memory of rank %d: %w", r, err)
		}
		if b := data.Mapped(); b != nil {
			if t.n > len(b)/elemSize[T]() {
				meta.Close()
				data.Close()
				return fmt.Errorf("%w: rank %d's window of %d elements does not fit its %d-byte region", ErrInvalid, r, t.n, len(b))
			}
			mem = asElems[T](b)[:t.n:t.n]
		}
	}
	t.meta, t.data, t.mem, t.mw = meta, data, mem, words(meta.Mapped())
	t.ctr = substrate.NewCounter(w.comm)
	t.rec = nil
	t.ready.Store(true)
	return nil
}

func (w *house[T]) releaseRegions() {
	w.dyn.freeDynamic()
	w.freeCoherence()
	if w.data != nil {
		w.data.Free()
	}
	w.shm.freeShared() // shared.go
	if w.meta != nil {
		w.meta.Free()
	}
	w.local = nil
}

// releaseFailed undoes a creation that failed midway.
func (w *Win[T]) releaseFailed() {
	w.freed.Store(true)
	w.dp.closeRemotes()
	w.releaseRegions()
}

// CreateDynamic creates a window without memory: each rank attaches memory later
// (Attach) and detaches it (Detach). Collective over w.
func CreateDynamic[T runtime.Elem](ctx context.Context, w *runtime.World, opts ...Option) (*Win[T], error) {
	return create[T](ctx, w, FlavorDynamic, 0, nil, opts)
}
