package window

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync"
	"unsafe"

	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/substrate"
)

// Dynamic windows (CreateDynamic, Attach, Detach).
//
// Each rank's metadata holds a directory of dynSlots entries of dynEntryWords words, which
// only the owner writes and every peer reads (mapped: atomic loads; otherwise RDMA reads):
//
//	word 0      generation: attach count << 1 | 1 while attached, attach count << 1 after
//	word 1      element count | description length << 56
//	words 2-6   the region description (substrate.Region.AppendDesc, at most 40 bytes)
//	word 7      the link: 1<<63 | generation bits << dynSlotBits | slot of the attachment
//	            that starts where this one ends in the owner's memory; 0 if none
//
// The owner writes words 1-7 while word 0 says "not attached" and publishes the entry by
// storing word 0 last; a reader checks word 0 again after reading the rest (a seqlock).
// The link alone also changes while the entry is published, by one atomic store, when a
// buffer is attached or detached right after this one. A reader sees the old link or the
// new, and reads it afresh when an access runs past the attachment's end.
//
// A displacement names slot, generation and element: the element offset in the low
// dynOffBits bits, the slot above it, and the attach count of the slot (modulo
// 1<<dynGenBits, never 0) above that. An access to a detached or reattached slot therefore
// never reaches the new memory: its generation no longer matches. An access that runs past
// the end of its attachment continues in the linked one (MPI programs attach the parts of
// one array and address them as one, displacements being addresses there). The origin
// splits it at the boundary (errCross), each part an access of its own.
//
// Every access checks the generation word of its entry: on a mapped target one atomic
// load. Otherwise one RDMA read of the entry (and, when the attachment is new to this
// rank, a second read of word 0) before the operation is posted, so that a stale key is
// never sent (a refused key would break the connection to the target, as in InfiniBand).
// Resolved attachments (a substrate.Remote each) are cached per target and slot, with their
// generation.
const (
	defaultDynSlots = 1024

	dynOffBits  = 40
	dynSlotBits = 10
	dynGenBits  = 13
	dynGenShift = dynOffBits + dynSlotBits
	dynMaxElems = 1 << dynOffBits
	dynDescMax  = (dynEntryWords - 3) * wordLen
	dynLink     = dynEntryWords - 1 // the link word
	dynLinked   = 1 << 63
)

// A compile-time check that every slot fits its bits.
var _ [1<<dynSlotBits - defaultDynSlots]struct{}

// dynState is the dynamic-window state of a Win: this rank's attachments and the peers'
// attachments it resolved. Safe for concurrent use: mu guards every field, and no call
// into the runtime is made while it is held (it nests with no other lock).
type dynState[T runtime.Elem] struct {
	*house[T]

	mu      sync.Mutex
	own     []dynOwn[T]  // by slot: this rank's attachments
	next    int          // the slot the next Attach tries first (round robin)
	peers   [][]dynPeer  // [rank][slot]: resolved attachments of peers
	readers []*dynReader // idle directory readers (transport path)
	all     []*dynReader // every reader, closed by Free
}

// dynOwn is an attachment of this rank.
type dynOwn[T runtime.Elem] struct {
	gen        uint64 // attach count of the slot
	buf        []T    // nil when detached
	reg        *substrate.Region
	prev, next int // slot+1 of the attachments that end where this starts, start where it ends; 0: none
}

// dynPeer is a peer's attachment as resolved here.
type dynPeer struct {
	gen uint64 // the generation word it was resolved under
	n   int    // elements
	rm  *substrate.Remote
}

// dynReader reads directory entries of peers through the transport. It is owned by one
// goroutine between taking it from dynState.readers and putting it back.
type dynReader struct {
	ctr *substrate.Counter
	buf [dynEntryWords]uint64
}

func (w *dynState[T]) Attach(ctx context.Context, buf []T) (base int, err error) {
	const op = "attach"
	if err := w.dynCheck(op); err != nil {
		return 0, err
	}
	if len(buf) == 0 || len(buf) >= dynMaxElems {
		return 0, werrf(op, -1, -1, ErrInvalid, "buffer of %d elements (want 1 to 2^%d-1)", len(buf), dynOffBits)
	}
	reg, err := substrate.RegisterRegion(w.comm, asBytes(buf))
	if err != nil {
		return 0, werr(op, -1, -1, err)
	}
	var pad [dynDescMax]byte
	desc := reg.AppendDesc(nil)
	if len(desc) > dynDescMax {
		reg.Free()
		return 0, werrf(op, -1, -1, ErrInvalid, "internal: region description of %d bytes", len(desc))
	}
	copy(pad[:], desc)
	d := w
	d.mu.Lock()
	slot := w.dynFreeSlot()
	if slot < 0 {
		d.mu.Unlock()
		reg.Free()
		return 0, werrf(op, -1, -1, ErrInvalid, "all %d attachment slots are in use (Detach first)", w.lay.dynSlots)
	}
	gen := d.own[slot].gen + 1
	if gen&(1<<dynGenBits-1) == 0 {
		gen++ // a displacement's generation bits are never 0
	}
	e := w.lay.dyn + slot*dynEntryWords
	store(w.mw, e+1, uint64(len(buf))|uint64(len(desc))<<56)
	for i := range dynEntryWords - 3 {
		store(w.mw, e+2+i, binary.NativeEndian.Uint64(pad[i*wordLen:]))
	}
	own := dynOwn[T]{gen: gen, buf: buf, reg: reg}
	before, after := w.dynNeighbours(buf)
	link := uint64(0)
	if after >= 0 {
		own.next = after + 1
		d.own[after].prev = slot + 1
		link = dynLinkOf(after, d.own[after].gen)
	}
	store(w.mw, e+dynLink, link)
	store(w.mw, e, gen<<1|1) // publish
	if before >= 0 {         // after publishing: a reader that follows the link finds this entry
		own.prev = before + 1
		d.own[before].next = slot + 1
		store(w.mw, w.lay.dyn+before*dynEntryWords+dynLink, dynLinkOf(slot, gen))
	}
	d.own[slot] = own
	d.next = (slot + 1) % len(d.own)
	d.mu.Unlock()
	return dynBase(slot, gen), nil
}

// dynLinkOf is the link word naming slot under attach count gen.
func dynLinkOf(slot int, gen uint64) uint64 {
	return dynLinked | (gen&(1<<dynGenBits-1))<<dynSlotBits | uint64(slot)
}

// dynNeighbours returns the slots of this rank's attachments that end where buf starts
// and that start where buf ends in memory, or -1. d.mu is held.
func (w *dynState[T]) dynNeighbours(buf []T) (before, after int) {
	before, after = -1, -1
	start := uintptr(unsafe.Pointer(unsafe.SliceData(buf)))
	end := start + uintptr(len(buf)*w.esize)
	for s, a := range w.dyn.own {
		if a.buf == nil {
			continue
		}
		as := uintptr(unsafe.Pointer(unsafe.SliceData(a.buf)))
		switch {
		case as+uintptr(len(a.buf)*w.esize) == start:
			before = s
		case as == end:
			after = s
		}
	}
	return before, after
}

func (w *dynState[T]) Detach(ctx context.Context, base int) error {
	const op = "detach"
	if err := w.dynCheck(op); err != nil {
		return err
	}
	slot, gb, off := dynSplit(base)
	d := w
	d.mu.Lock()
	if base < 0 || off != 0 || slot >= len(d.own) || d.own[slot].buf == nil || d.own[slot].gen&(1<<dynGenBits-1) != gb {
		d.mu.Unlock()
		return werrf(op, w.rank, base, ErrRange, "displacement %d is not the base of an attached buffer", base)
	}
	a := &d.own[slot]
	if a.prev > 0 { // unlink before unpublishing: a reader never follows a link to it
		store(w.mw, w.lay.dyn+(a.prev-1)*dynEntryWords+dynLink, 0)
		d.own[a.prev-1].next = 0
	}
	if a.next > 0 {
		d.own[a.next-1].prev = 0
	}
	store(w.mw, w.lay.dyn+slot*dynEntryWords, a.gen<<1) // unpublish before the key dies
	reg := a.reg
	a.buf, a.reg, a.prev, a.next = nil, nil, 0, 0
	d.mu.Unlock()
	return werr(op, w.rank, base, reg.Free())
}

// dynFreeSlot returns a free slot of this rank's directory, the one after the last taken
// first (round robin: a slot is reused as late as possible), or -1. d.mu is held.
func (w *dynState[T]) dynFreeSlot() int {
	d := w
	if d.own == nil {
		d.own = make([]dynOwn[T], w.lay.dynSlots)
	}
	for i := range d.own {
		if s := (d.next + i) % len(d.own); d.own[s].buf == nil {
			return s
		}
	}
	return -1
}

func (w *dynState[T]) dynCheck(op string) error {
	if err := w.usable(op, -1, -1); err != nil {
		return err
	}
	if w.flavor != FlavorDynamic {
		return werrf(op, -1, -1, ErrFlavor, "%s on a %v window (CreateDynamic makes dynamic ones)", op, w.flavor)
	}
	return nil
}

func dynBase(slot int, gen uint64) int {
	return int((gen&(1<<dynGenBits-1))<<dynGenShift | uint64(slot)<<dynOffBits)
}

// dynSplit decodes a displacement into slot, generation bits and element offset.
func dynSplit(disp int) (slot int, gen uint64, off int) {
	u := uint64(disp)
	return int(u >> dynOffBits & (1<<dynSlotBits - 1)), u >> dynGenShift & (1<<dynGenBits - 1), int(u & (dynMaxElems - 1))
}

// freeDynamic releases this rank's attachments and the resolved ones of peers (Free, and
// a failed creation).
func (w *dynState[T]) freeDynamic() {
	d := w
	d.mu.Lock()
	own, peers, readers := d.own, d.peers, d.all
	d.own, d.peers, d.readers, d.all = nil, nil, nil, nil
	d.mu.Unlock()
	for _, a := range own {
		if a.reg != nil {
			a.reg.Free()
		}
	}
	for _, row := range peers {
		for _, p := range row {
			if p.rm != nil {
				p.rm.Close()
			}
		}
	}
	for _, r := range readers {
		r.ctr.Close()
	}
}

// dynSpan resolves an access to a dynamic window (called by access, rma.go).
func (w *dynState[T]) dynSpan(op string, t *target[T], disp, n int) (span[T], error) {
	slot, gb, off := dynSplit(disp)
	if disp < 0 || n < 0 || gb == 0 || slot >= w.lay.dynSlots {
		return span[T]{}, werrf(op, t.rank, disp, ErrRange, "displacement %d names no attachment of rank %d", disp, t.rank)
	}
	if t.rank == w.rank {
		return w.dynSelf(op, t, disp, n)
	}
	var p dynPeer
	var err error
	if t.mw != nil {
		p, err = w.dynMapped(t, slot, gb)
	} else {
		p, err = w.dynRemote(t, slot, gb)
	}
	if err != nil {
		return span[T]{}, werr(op, t.rank, disp, err)
	}
	if p.rm == nil {
		return span[T]{}, werrf(op, t.rank, disp, ErrRange, "displacement %d names no buffer attached at rank %d (detached, or never attached)", disp, t.rank)
	}
	if off > p.n || n > p.n-off {
		err := werrf(op, t.rank, disp, ErrRange, "%d elements at element %d of a buffer of %d attached at rank %d (an access runs past a buffer's end only into one attached right after it in the target's memory)", n, off, p.n, t.rank)
		if off > p.n {
			return span[T]{}, err
		}
		link, lerr := w.dynLinkWord(t, slot)
		if lerr != nil {
			return span[T]{}, werr(op, t.rank, disp, lerr)
		}
		return span[T]{}, crossing(link, p.n-off, err)
	}
	if !p.rm.Live() {
		return span[T]{}, werrf(op, t.rank, disp, runtime.ErrFinalized, "the World was finalized")
	}
	return span[T]{t: t, data: p.rm, off: off}, nil
}

// dynSelf resolves an access to this rank's own attachment: its memory, directly.
func (w *dynState[T]) dynSelf(op string, t *target[T], disp, n int) (span[T], error) {
	slot, gb, off := dynSplit(disp)
	d := w
	d.mu.Lock()
	var buf []T
	link := uint64(0)
	if slot < len(d.own) && d.own[slot].gen&(1<<dynGenBits-1) == gb {
		buf = d.own[slot].buf
		if nx := d.own[slot].next; nx > 0 {
			link = dynLinkOf(nx-1, d.own[nx-1].gen)
		}
	}
	d.mu.Unlock()
	if buf == nil {
		return span[T]{}, werrf(op, t.rank, disp, ErrRange, "displacement %d names no buffer attached at rank %d (detached, or never attached)", disp, t.rank)
	}
	if off > len(buf) || n > len(buf)-off {
		err := werrf(op, t.rank, disp, ErrRange, "%d elements at element %d of a buffer of %d attached at rank %d (an access runs past a buffer's end only into one attached right after it in the target's memory)", n, off, len(buf), t.rank)
		if off > len(buf) {
			return span[T]{}, err
		}
		return span[T]{}, crossing(link, len(buf)-off, err)
	}
	return span[T]{t: t, mem: buf, off: off}, nil
}

// dynMapped resolves slot of t, whose metadata is mapped: the generation word is one
// atomic load. A zero dynPeer means no matching attachment.
func (w *dynState[T]) dynMapped(t *target[T], slot int, gb uint64) (dynPeer, error) {
	e := w.lay.dyn + slot*dynEntryWords
	for {
		g := load(t.mw, e)
		if !dynMatch(g, gb) {
			return dynPeer{}, nil
		}
		if p, ok := w.dynCached(t.rank, slot, g); ok {
			return p, nil
		}
		var ent [dynEntryWords]uint64
		for i := 1; i < dynEntryWords; i++ {
			ent[i] = load(t.mw, e+i)
		}
		if load(t.mw, e) != g {
			continue // changed while read: read again
		}
		ent[0] = g
		return w.dynResolve(t, slot, &ent)
	}
}

// dynRemote resolves slot of t through the transport: one RDMA read of the entry; a
// second read of its generation word when the attachment is new here.
func (w *dynState[T]) dynRemote(t *target[T], slot int, gb uint64) (dynPeer, error) {
	off := uint64((w.lay.dyn + slot*dynEntryWords) * wordLen)
	r := w.dynReader()
	defer w.dynPutReader(r)
	for {
		if err := w.dynRead(r, t, off, r.buf[:]); err != nil {
			return dynPeer{}, err
		}
		g := r.buf[0]
		if !dynMatch(g, gb) {
			return dynPeer{}, nil
		}
		if p, ok := w.dynCached(t.rank, slot, g); ok {
			return p, nil
		}
		ent := r.buf
		if err := w.dynRead(r, t, off, r.buf[:1]); err != nil {
			return dynPeer{}, err
		}
		if r.buf[0] != g {
			continue
		}
		return w.dynResolve(t, slot, &ent)
	}
}

// dynRead reads len(dst) words at byte offset off of t's metadata and waits for them. A
// failed peer fails the counter: it never hangs.
func (w *dynState[T]) dynRead(r *dynReader, t *target[T], off uint64, dst []uint64) error {
	if err := t.meta.Read(r.ctr, off, asBytes(dst)); err != nil {
		return err
	}
	return r.ctr.Wait(context.Background())
}

func dynMatch(g, gb uint64) bool { return g&1 == 1 && (g>>1)&(1<<dynGenBits-1) == gb }

// dynCached returns the cached attachment of rank's slot if it was resolved under
// generation word g.
func (w *dynState[T]) dynCached(rank, slot int, g uint64) (dynPeer, bool) {
	d := w
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.peers == nil || d.peers[rank] == nil {
		return dynPeer{}, false
	}
	p := d.peers[rank][slot]
	return p, p.rm != nil && p.gen == g
}

// dynResolve attaches the region described by entry ent of t's slot and caches it,
// replacing (and closing) an attachment of an older generation.
func (w *dynState[T]) dynResolve(t *target[T], slot int, ent *[dynEntryWords]uint64) (dynPeer, error) {
	n := int(ent[1] & (dynMaxElems - 1))
	dl := int(ent[1] >> 56)
	if dl > dynDescMax {
		return dynPeer{}, fmt.Errorf("rank %d's directory entry %d is corrupt (description of %d bytes)", t.rank, slot, dl)
	}
	desc := asBytes(ent[2:])[:dl]
	rm, err := substrate.Attach(w.comm, t.rank, desc)
	if err != nil {
		return dynPeer{}, err
	}
	if rm.Size() < n*w.esize {
		rm.Close()
		return dynPeer{}, fmt.Errorf("rank %d's attachment %d: region of %d bytes for %d elements", t.rank, slot, rm.Size(), n)
	}
	p := dynPeer{gen: ent[0], n: n, rm: rm}
	d := w
	d.mu.Lock()
	if d.peers == nil {
		d.peers = make([][]dynPeer, w.size)
	}
	if d.peers[t.rank] == nil {
		d.peers[t.rank] = make([]dynPeer, w.lay.dynSlots)
	}
	cur := &d.peers[t.rank][slot]
	var drop *substrate.Remote
	switch {
	case cur.rm != nil && cur.gen == p.gen: // another goroutine was first
		drop, p = rm, *cur
	default:
		drop, *cur = cur.rm, p // an older generation: its operations completed earlier
	}
	d.mu.Unlock()
	if drop != nil {
		drop.Close()
	}
	return p, nil
}

// dynReader returns an idle directory reader, making one if none is idle.
func (w *dynState[T]) dynReader() *dynReader {
	d := w
	d.mu.Lock()
	if n := len(d.readers); n > 0 {
		r := d.readers[n-1]
		d.readers = d.readers[:n-1]
		d.mu.Unlock()
		return r
	}
	d.mu.Unlock()
	r := &dynReader{ctr: substrate.NewCounter(w.comm)}
	d.mu.Lock()
	d.all = append(d.all, r)
	d.mu.Unlock()
	return r
}

func (w *dynState[T]) dynPutReader(r *dynReader) {
	d := w
	d.mu.Lock()
	d.readers = append(d.readers, r)
	d.mu.Unlock()
}

// errCross is dynSpan's answer for an access that runs past the end of its attachment
// into the linked one: its first k elements lie in this attachment, the rest from
// displacement next on. The callers that split accesses (put, get, accumulate) run the
// two parts; any other sees the ErrRange error it wraps.
type errCross struct {
	k, next int
	err     error
}

func (e *errCross) Error() string { return e.err.Error() }
func (e *errCross) Unwrap() error { return e.err }

// crossing returns the errCross of an access whose first k elements fit, when link names
// an attachment, or err.
func crossing(link uint64, k int, err error) error {
	if link&dynLinked == 0 {
		return err
	}
	slot := int(link & (1<<dynSlotBits - 1))
	gen := link >> dynSlotBits & (1<<dynGenBits - 1)
	return &errCross{k: k, next: dynBase(slot, gen), err: err}
}

// dynLinkWord reads the link word of t's slot afresh: an atomic load when t's metadata
// is mapped, else one RDMA read.
func (w *dynState[T]) dynLinkWord(t *target[T], slot int) (uint64, error) {
	e := w.lay.dyn + slot*dynEntryWords + dynLink
	if t.mw != nil {
		return load(t.mw, e), nil
	}
	r := w.dynReader()
	defer w.dynPutReader(r)
	if err := w.dynRead(r, t, uint64(e*wordLen), r.buf[:1]); err != nil {
		return 0, err
	}
	return r.buf[0], nil
}
