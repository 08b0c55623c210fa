package window

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync/atomic"

	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/substrate"
	"github.com/gorma-hpc/gorma/window/coherence"
)

// The coherent page cache for cross-host targets: this file drives window/coherence's
// Machine (the DSM invalidation protocol) over the runtime's one-sided substrate.
//
// It is on when the window was created without NoCache, is not dynamic, and the job
// spans hosts (some rank reaches another over tcp: the same fact at every rank). Every
// rank then allocates a coherence region next to its metadata, laid out as
//
//	word 0                       ver[p] for each page p of this rank's window (P pages)
//	word P + p*size + c          slot[p][c]: rank c's registration token for page p
//	word P + P*size + base[h]+p  flag[h][p]: this rank's copy of rank h's page p
//	word P + P*size + total      syncs: the owner syncs this rank made
//
// (base[h] is the number of pages of the ranks before h, total the pages of all ranks;
// syncs is this file's, not the Machine's: ownerSync counts, cache_policy.go reads), and
// exchanges its description in a second round at creation. Gets in passive-target epochs
// from ranks reached over tcp are served from the cache when the page's flag is Valid (a
// hit costs a lock and a copy). A miss goes through the Machine, which caches the page,
// or reads the target as without the cache: a page's first miss does, and so do the
// misses of a page whose copies writes keep invalidating (cache_policy.go). Every write
// to a page of a rank that has cachers (Put, the accumulates, through the transport or
// into mapped memory) tells the Machine at the next flush of that rank, which invalidates
// the cached copies before the flush returns; a rank's own stores are published the same
// way at its Fence, Sync, Unlock of itself and UnlockAll (OwnerSync). The flush posts
// that work before it waits for the writes themselves (flush in lock.go): the target
// executes it after them, in posting order, and one round trip serves both.
//
// The Machine is driven under w.mu, synchronously: operations on this rank's own words
// and on mapped ranks' words are CPU atomics, fed back at once; the others are posted on
// the coherence counter, waited for together, and fed back in order. Protocol waits use
// no caller context (an abandoned protocol step would leave the Machine waiting for a
// completion): they end when the operations complete or their rank fails.

// cacheMaxPages bounds the number of pages a rank caches per window; past it the oldest
// installed page is evicted. Tests lower it (SetCacheMaxPages) to reach the bound cheaply.
var cacheMaxPages = 16384

// CacheStats are the page cache's counters at this rank.
type CacheStats struct {
	Hits          int64 // Gets (per page) served from a valid cached copy
	Misses        int64 // Gets (per page) that went to the target
	Installs      int64 // pages installed in the cache
	Invalidations int64 // cached copies at other ranks this rank invalidated (writes, owner syncs)
	Evictions     int64 // pages this rank dropped to stay under its budget
	Bypassed      int64 // misses read through because writes kept invalidating the page's copies
}

type coh[T runtime.Elem] struct {
	*house[T]

	m       *coherence.Machine
	region  *substrate.Region
	words   []uint64            // this rank's coherence words
	rem     []*substrate.Remote // by rank: nil for self
	mapped  [][]uint64          // by rank: mapped coherence words, own included
	ctr     *substrate.Counter
	pages   []int       // by rank
	base    []int       // by rank: first flag of its pages in every flag array
	cached  []bool      // by rank: Gets from it may be cached
	bufs    [][][]byte  // by rank, page: cache buffers
	pol     cachePolicy // when to cache a page (cache_policy.go)
	fifo    []fifoEntry // installed pages, oldest first; entries may be stale (see install)
	qgen    [][]uint32  // by rank, page: the generation of its live fifo entry, 0 for none
	lastGen uint32
	queued  int // live fifo entries: the pages counted against cacheMaxPages
	nextID  coherence.ReqID
	pend    []pendingOp
	scratch []byte
	slots   []uint64

	drv driven // the request being driven

	// Writes recorded since the last flush, by rank: page ranges.
	dirty [][][2]int

	stats struct{ hits, misses, installs, invals, evictions, bypassed atomic.Int64 }
}

// driven is the coherence request being driven (runReq, cacheMiss).
type driven struct {
	id   coherence.ReqID
	dst  []byte // Get: destination (sub-range of one page)
	lo   int    // Get: offset of dst within its page
	done bool
	err  error
}

// fifoEntry is a page in the eviction order; it is live while qgen holds its gen.
type fifoEntry struct {
	home, page int
	gen        uint32
}

type pendingOp struct {
	op  coherence.Op
	buf []byte
}

// spansHosts reports whether this rank reaches some rank of w through the transport: its
// memory is not mapped here (substrate.ReachMap).
func spansHosts(w *runtime.World) bool {
	for r := range w.Size() {
		if !substrate.ReachOf(w, r).Has(substrate.ReachMap) {
			return true
		}
	}
	return false
}

// initCoherence sets the page cache up (a collective step of creation) when it is on.
func (w *house[T]) initCoherence(ctx context.Context) error {
	if !w.opt.cache || w.flavor == FlavorDynamic || !spansHosts(w.comm) {
		return nil
	}
	ps := w.opt.pageSize
	c := &coh[T]{house: w, rem: make([]*substrate.Remote, w.size), mapped: make([][]uint64, w.size),
		pages: make([]int, w.size), base: make([]int, w.size), cached: make([]bool, w.size),
		bufs: make([][][]byte, w.size), pol: cachePolicy{use: make([][]pageUse, w.size), checks: make([][]byte, w.size)},
		dirty: make([][][2]int, w.size), qgen: make([][]uint32, w.size)}
	total := 0
	for r := range w.size {
		c.pages[r] = (w.tg[r].n*w.esize + ps - 1) / ps
		c.base[r] = total
		total += c.pages[r]
		c.cached[r] = r != w.rank && !substrate.ReachOf(w.comm, r).Has(substrate.ReachMap)
		if c.cached[r] {
			c.bufs[r] = make([][]byte, c.pages[r])
			c.pol.use[r] = make([]pageUse, c.pages[r])
			c.qgen[r] = make([]uint32, c.pages[r])
		}
	}
	n := c.syncsIndex(w.rank) + 1
	var err error
	if c.region, err = substrate.AllocRegion(w.comm, n*wordLen); err != nil {
		return err
	}
	w.coh = c
	c.words = words(c.region.Bytes())
	clear(c.words)
	c.mapped[w.rank] = c.words
	recs, err := w.coh.allgather(ctx, c.region.AppendDesc(nil))
	if err != nil {
		return err
	}
	for r := range w.size {
		if r == w.rank {
			continue
		}
		if c.rem[r], err = substrate.Attach(w.comm, r, recs[r]); err != nil {
			return fmt.Errorf("coherence region of rank %d: %w", r, err)
		}
		c.mapped[r] = words(c.rem[r].Mapped())
	}
	c.ctr = substrate.NewCounter(w.comm)
	c.m = coherence.New(coherence.Config{Self: w.rank, Ranks: w.size, Pages: c.pages[w.rank], Promote: 1})
	return nil
}

// allgather gives every rank everyone's rec (at most recLen-1 bytes).
func (w *coh[T]) allgather(ctx context.Context, rec []byte) ([][]byte, error) {
	if len(rec) > recLen-1 {
		return nil, fmt.Errorf("internal: record of %d bytes", len(rec))
	}
	out := make([]byte, recLen)
	out[0] = byte(len(rec))
	copy(out[1:], rec)
	recs, err := w.gatherRecords(ctx, out)
	if err != nil {
		return nil, err
	}
	for r, b := range recs {
		if int(b[0]) > recLen-1 {
			return nil, fmt.Errorf("%w: rank %d's coherence record claims %d bytes", ErrInvalid, r, b[0])
		}
		recs[r] = b[1 : 1+int(b[0])]
	}
	return recs, nil
}

func (w *house[T]) closeCoherence() {
	c := w.coh
	if c == nil {
		return
	}
	for _, r := range c.rem {
		if r != nil {
			r.Close()
		}
	}
	if c.ctr != nil {
		c.ctr.Close()
	}
}

func (w *house[T]) freeCoherence() {
	if c := w.coh; c != nil && c.region != nil {
		c.region.Free()
	}
}

func (w *coh[T]) CacheStats() CacheStats {
	c := w
	if c == nil {
		return CacheStats{}
	}
	return CacheStats{Hits: c.stats.hits.Load(), Misses: c.stats.misses.Load(),
		Installs: c.stats.installs.Load(), Invalidations: c.stats.invals.Load(),
		Evictions: c.stats.evictions.Load(), Bypassed: c.stats.bypassed.Load()}
}

// syncsIndex is the index of rank r's syncs word in its coherence words.
func (c *coh[T]) syncsIndex(r int) int {
	last := len(c.pages) - 1
	return c.pages[r]*(1+len(c.pages)) + c.base[last] + c.pages[last]
}

// Word addresses (indexes into a rank's coherence words).
func (c *coh[T]) index(wd coherence.Word) int {
	switch wd.Kind {
	case coherence.Version:
		return wd.Page
	case coherence.Slot:
		p := c.pages[wd.Rank]
		return p + wd.Page*len(c.pages) + wd.Cacher
	default: // Flag
		p := c.pages[wd.Rank]
		return p + p*len(c.pages) + c.base[wd.Home] + wd.Page
	}
}

// cacheGet serves a Get of len(result) elements at byte offset off of s through the
// cache, and reports whether it did (false: the caller reads the target as usual).
func (w *coh[T]) cacheGet(s span[T], result []T, off uint64) bool {
	c := w
	if c == nil || !c.cached[s.t.rank] || s.t.open&openLock == 0 {
		return false
	}
	h := s.t.rank
	ps := w.opt.pageSize
	dst := asBytes(result)
	w.mu.Lock()
	defer w.mu.Unlock()
	// A Get of the same bytes as this rank's previous one repeats it (a poll).
	repeat := c.pol.repeats(getKey{h, off, len(dst)})
	// Pages this rank wrote since its last flush of h are read from h, behind the writes
	// on the same connection: the invalidations of their copies (this rank's own
	// included) run only at that flush.
	first, last := int(off)/ps, (int(off)+len(dst)-1)/ps
	for _, d := range c.dirty[h] {
		if first <= d[1] && last >= d[0] {
			return false
		}
	}
	flags := c.words[c.pages[w.rank]*(1+w.size)+c.base[h]:]
	if c.readsThrough(s.t, first, last, repeat, flags) {
		return false
	}
	for len(dst) > 0 {
		page, lo := int(off)/ps, int(off)%ps
		n := min(len(dst), ps-lo)
		if buf := c.bufs[h][page]; buf != nil && coherence.Usable(atomic.LoadUint64(&flags[page])) {
			copy(dst[:n], buf[lo:lo+n])
			c.stats.hits.Add(1)
			c.pol.use[h][page].hit(repeat)
		} else {
			c.stats.misses.Add(1)
			if err := w.cacheMiss(h, page, lo, dst[:n]); err != nil {
				// The machine failed the Get (its home died): the plain read reports it.
				return false
			}
		}
		dst, off = dst[n:], off+uint64(n)
	}
	return true
}

// cacheMiss runs one Get of page through the Machine into dst (the bytes at lo of the
// page). w.mu is held.
func (w *coh[T]) cacheMiss(h, page, lo int, dst []byte) error {
	c := w
	c.nextID++
	c.drv.id, c.drv.dst, c.drv.lo, c.drv.done, c.drv.err = c.nextID, dst, lo, false, nil
	c.m.Get(c.drv.id, h, page)
	w.drive()
	c.drv.dst = nil
	if !c.drv.done && c.drv.err == nil {
		return fmt.Errorf("internal: coherence Get of rank %d page %d did not finish", h, page)
	}
	return c.drv.err
}

// noteWrite records a transport-path write of n bytes at byte off of s's target. w.mu
// is held.
func (w *coh[T]) noteWrite(s span[T], off uint64, n int) {
	c := w
	if c == nil || n == 0 {
		return
	}
	ps := uint64(w.opt.pageSize)
	first, last := int(off/ps), int((off+uint64(n)-1)/ps)
	r := s.t.rank
	d := c.dirty[r]
	if k := len(d); k > 0 && first <= d[k-1][1]+1 && last >= d[k-1][0]-1 {
		d[k-1] = [2]int{min(first, d[k-1][0]), max(last, d[k-1][1])}
		return
	}
	c.dirty[r] = append(d, [2]int{first, last})
}

// wroteMapped records a write of n elements at s into mapped memory.
func (w *coh[T]) wroteMapped(s span[T], n int) {
	s.t.pend.Store(true)
	w.mu.Lock()
	s.t.dirty = true
	w.noteWrite(s, uint64(s.off*w.esize), n*w.esize)
	w.mu.Unlock()
}

// completeWrites invalidates the cached copies of the pages of t recorded since the last
// flush.
func (w *coh[T]) completeWrites(ctx context.Context, t *target[T]) error {
	c := w
	if c == nil {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	var first error
	for _, d := range c.dirty[t.rank] {
		if err := w.runReq(func(id coherence.ReqID) { c.m.Wrote(id, t.rank, d[0], d[1]-d[0]+1) }); err != nil && first == nil {
			first = err
		}
	}
	c.dirty[t.rank] = c.dirty[t.rank][:0]
	return first
}

// ownerSync makes this rank's own stores visible to ranks caching its pages.
func (w *coh[T]) ownerSync(ctx context.Context) error {
	c := w
	if c == nil || c.pages[w.rank] == 0 {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	atomic.AddUint64(&c.words[c.syncsIndex(w.rank)], 1)
	return w.runReq(func(id coherence.ReqID) { c.m.OwnerSync(id) })
}

// runReq starts a write or owner-sync request and drives the Machine until it ends.
func (w *coh[T]) runReq(start func(coherence.ReqID)) error {
	c := w
	c.nextID++
	c.drv.id, c.drv.done, c.drv.err = c.nextID, false, nil
	start(c.drv.id)
	w.drive()
	if !c.drv.done && c.drv.err == nil {
		return fmt.Errorf("internal: coherence request did not finish")
	}
	return c.drv.err
}

// drive runs the Machine until it has nothing ready and nothing outstanding. w.mu is held.
func (w *coh[T]) drive() {
	c := w
	for {
		for c.m.HasReady() {
			rd := c.m.Ready()
			for _, o := range rd.Outcomes {
				w.outcome(o)
			}
			for _, op := range rd.Ops {
				w.exec(op)
			}
			c.m.Advance()
		}
		if len(c.pend) == 0 {
			return
		}
		err := c.ctr.Wait(context.Background())
		pend := c.pend
		c.pend = c.pend[:0]
		crashed := map[int]bool{}
		for _, p := range pend {
			var opErr error
			if err != nil {
				opErr = c.rem[p.op.Target].Err()
				if opErr != nil {
					crashed[p.op.Target] = true
				}
			}
			w.doneOp(p.op, p.buf, opErr)
		}
		for r := range crashed {
			c.m.Crashed(r)
		}
	}
}

// outcome applies one Machine outcome.
func (w *coh[T]) outcome(o coherence.Outcome) {
	c := w
	switch o.Kind {
	case coherence.Served:
		if o.Req == c.drv.id {
			if o.FromCache {
				buf := c.bufs[o.Home][o.Page]
				copy(c.drv.dst, buf[c.drv.lo:])
			}
			c.drv.done = true
		}
		if o.FromCache {
			c.pol.use[o.Home][o.Page].filled()
		}
		if o.Installed {
			c.stats.installs.Add(1)
			c.install(o.Home, o.Page)
		}
	case coherence.Completed:
		if o.Req == c.drv.id {
			c.drv.done = true
		}
	case coherence.Failed:
		if o.Req == c.drv.id {
			c.drv.err = o.Err
		}
	case coherence.Released:
		c.bufs[o.Home][o.Page] = nil
		c.pol.use[o.Home][o.Page].released()
		if c.qgen[o.Home][o.Page] != 0 {
			c.qgen[o.Home][o.Page] = 0 // its entry goes stale
			c.queued--
		}
	}
}

// install counts a page installed in the cache against its budget and evicts the oldest
// live pages past it. A page installed again (after an invalidation kept its buffer)
// keeps its place and counts once; a released one leaves a stale entry, skipped when it
// comes to the front (or dropped when stale entries outnumber live ones), so that a
// page released and installed again is not evicted on its old entry's account.
func (c *coh[T]) install(home, page int) {
	if c.qgen[home][page] == 0 {
		c.lastGen++
		if c.lastGen == 0 {
			c.lastGen = 1
		}
		c.qgen[home][page] = c.lastGen
		c.fifo = append(c.fifo, fifoEntry{home, page, c.lastGen})
		c.queued++
	}
	for c.queued > cacheMaxPages {
		e := c.fifo[0]
		c.fifo = c.fifo[1:]
		if c.qgen[e.home][e.page] != e.gen {
			continue
		}
		c.qgen[e.home][e.page] = 0
		c.queued--
		c.stats.evictions.Add(1)
		c.m.Evict(e.home, e.page)
	}
	if len(c.fifo) > 2*c.queued+1024 {
		live := c.fifo[:0]
		for _, e := range c.fifo {
			if c.qgen[e.home][e.page] == e.gen {
				live = append(live, e)
			}
		}
		clear(c.fifo[len(live):])
		c.fifo = live
	}
}

// exec performs op: at once on this rank's own or mapped words, else by posting it.
func (w *coh[T]) exec(op coherence.Op) {
	c := w
	if op.Kind == coherence.Write && op.Word.Kind == coherence.Flag && op.Target != w.rank && op.Value == 0 {
		c.stats.invals.Add(1)
	}
	if op.Kind == coherence.ReadData {
		w.postRead(op)
		return
	}
	if mw := c.mapped[op.Target]; mw != nil {
		w.cpuOp(op, mw)
		return
	}
	rm := c.rem[op.Target]
	i := uint64(c.index(op.Word)) * wordLen
	var buf []byte
	var err error
	switch op.Kind {
	case coherence.ReadVersion:
		buf = c.buf(8)
		err = rm.Read(c.ctr, i, buf)
	case coherence.ReadSlots:
		buf = c.buf(op.N * w.size * wordLen)
		err = rm.Read(c.ctr, uint64(c.index(coherence.Word{Kind: coherence.Slot, Rank: op.Target, Page: op.Page}))*wordLen, buf)
	case coherence.Write:
		buf = c.buf(8)
		binary.NativeEndian.PutUint64(buf, op.Value)
		err = rm.Write(c.ctr, i, buf)
	case coherence.CAS:
		buf = c.buf(8)
		err = rm.CmpSwap(c.ctr, i, op.Expect, op.Value, buf)
	case coherence.FetchAdd:
		buf = c.buf(8)
		err = rm.FetchAdd(c.ctr, i, op.Value, buf)
	}
	if err != nil {
		w.doneOp(op, nil, err)
		c.m.Crashed(op.Target)
		return
	}
	c.pend = append(c.pend, pendingOp{op: op, buf: buf})
}

// postRead posts a page data read: into the current Get's destination (uncached) or
// into the page's cache buffer (a fill).
func (w *coh[T]) postRead(op coherence.Op) {
	c := w
	ps := w.opt.pageSize
	t := &w.tg[op.Target]
	base := op.Page * ps
	var dst []byte
	off := base
	if op.Req != 0 {
		dst, off = c.drv.dst, base+c.drv.lo
	} else {
		n := min(ps, t.n*w.esize-base)
		if c.bufs[op.Target][op.Page] == nil {
			c.bufs[op.Target][op.Page] = make([]byte, n)
		}
		dst = c.bufs[op.Target][op.Page]
	}
	t.pend.Store(true)
	if err := t.data.Read(c.ctr, uint64(off), dst); err != nil {
		w.doneOp(op, nil, err)
		c.m.Crashed(op.Target)
		return
	}
	c.pend = append(c.pend, pendingOp{op: op})
}

// cpuOp performs op on mapped (or own) coherence words and reports it at once.
func (w *coh[T]) cpuOp(op coherence.Op, mw []uint64) {
	c := w
	i := c.index(op.Word)
	var res uint64
	var ws []uint64
	switch op.Kind {
	case coherence.ReadVersion:
		res = atomic.LoadUint64(&mw[i])
	case coherence.ReadSlots:
		first := c.index(coherence.Word{Kind: coherence.Slot, Rank: op.Target, Page: op.Page})
		n := op.N * w.size
		if cap(c.slots) < n {
			c.slots = make([]uint64, n)
		}
		ws = c.slots[:n]
		for k := range ws {
			ws[k] = atomic.LoadUint64(&mw[first+k])
		}
	case coherence.Write:
		atomic.StoreUint64(&mw[i], op.Value)
	case coherence.CAS:
		for {
			if atomic.CompareAndSwapUint64(&mw[i], op.Expect, op.Value) {
				res = op.Expect
				break
			}
			if res = atomic.LoadUint64(&mw[i]); res != op.Expect {
				break
			}
		}
	case coherence.FetchAdd:
		res = atomic.AddUint64(&mw[i], op.Value) - op.Value
	}
	c.m.Done(op.ID, res, ws, nil)
}

// doneOp reports a posted op's completion to the Machine.
func (w *coh[T]) doneOp(op coherence.Op, buf []byte, err error) {
	c := w
	if err != nil {
		c.m.Done(op.ID, 0, nil, err)
		return
	}
	var res uint64
	var ws []uint64
	switch op.Kind {
	case coherence.ReadVersion, coherence.CAS, coherence.FetchAdd:
		res = binary.NativeEndian.Uint64(buf)
	case coherence.ReadSlots:
		ws = words(buf)
	}
	c.m.Done(op.ID, res, ws, nil)
}

// buf returns n bytes of 8-byte aligned scratch that stay valid until the pending
// operations are reported (the scratch grows, never moves, while operations are pending:
// a fresh block is taken when the current one is too small).
func (c *coh[T]) buf(n int) []byte {
	if len(c.pend) == 0 {
		c.scratch = c.scratch[:0]
	}
	if len(c.scratch)+n > cap(c.scratch) {
		c.scratch = make([]byte, 0, max(4096, 2*cap(c.scratch), n))
	}
	k := len(c.scratch)
	c.scratch = c.scratch[:k+n]
	return c.scratch[k : k+n : k+n]
}
