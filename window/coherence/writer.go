package coherence

import "fmt"

// write is a write (Wrote) or an owner sync in progress.
type write struct {
	req     ReqID
	home    int
	first   int
	n       int
	owner   bool // an owner sync: a first slot read finds the pages to count (bumpRegistered)
	bumped  bool // owner sync: versions counted, the invalidating slot read posted
	pending int
	err     error
}

// Wrote starts write req: the data of pages [first, first+n) of home has been written
// (every Put, Accumulate or atomic of the epoch to home completed, or was posted earlier on
// the same pair). The Machine counts the write in each page's version, reads the slot rows
// and invalidates every registered copy; Completed reports when no later Get anywhere can
// return older data. An error from home fails the write; an error from a cacher counts as
// done (the driver must declare that rank dead with Crashed). home may be Self.
func (m *Machine) Wrote(req ReqID, home, first, n int) {
	m.checkRank(home)
	if req == 0 || first < 0 || n < 0 {
		panic(fmt.Sprintf("coherence: bad Wrote(%d, %d, %d, %d)", req, home, first, n))
	}
	switch {
	case n == 0:
		m.outcome(Outcome{Kind: Completed, Req: req, Home: home})
	case m.dead[home]:
		m.fail(req, ErrCrashed)
	default:
		w := m.newWrite(req, home, first, n, false)
		for p := first; p < first+n; p++ {
			m.post(Op{Kind: FetchAdd, Target: home, Word: versionWord(home, p), Value: 1}, opRef{role: roleWriteVersion, w: w})
		}
		m.post(Op{Kind: ReadSlots, Target: home, Page: first, N: n}, opRef{role: roleWriteSlots, w: w})
		w.pending = n + 1
	}
}

// OwnerSync starts owner sync req: this rank's own stores to its window (made by the CPU,
// not through the Machine) become visible. Every page of [0, Config.Pages) that has a
// registered copy is treated as written. Call it at Sync, Unlock of self and Fence, after
// the stores; Completed reports when it is done. All its operations target Self.
func (m *Machine) OwnerSync(req ReqID) {
	if req == 0 {
		panic("coherence: OwnerSync(0)")
	}
	if m.cfg.Pages == 0 {
		m.outcome(Outcome{Kind: Completed, Req: req, Home: m.cfg.Self})
		return
	}
	w := m.newWrite(req, m.cfg.Self, 0, m.cfg.Pages, true)
	m.post(Op{Kind: ReadSlots, Target: m.cfg.Self, Page: 0, N: m.cfg.Pages}, opRef{role: roleWriteSlots, w: w})
	w.pending = 1
}

func (m *Machine) newWrite(req ReqID, home, first, n int, owner bool) *write {
	var w *write
	if k := len(m.freeWrite); k > 0 {
		w = m.freeWrite[k-1]
		m.freeWrite = m.freeWrite[:k-1]
	} else {
		w = new(write)
	}
	*w = write{req: req, home: home, first: first, n: n, owner: owner}
	return w
}

func (m *Machine) writeStepDone(s opSlot, words []uint64, err error) {
	w := s.ref.w
	switch s.ref.role {
	case roleWriteVersion:
		if err != nil && w.err == nil {
			w.err = err
		}
	case roleWriteSlots:
		if err != nil {
			if w.err == nil {
				w.err = err
			}
		} else {
			m.invalidate(w, words)
		}
	case roleWriteFlag:
		// The flag store landed (or the cacher is dead): only now may the registration go,
		// so a slot that reads 0 always means its cacher's flag was cleared.
		m.clearSlot(w.home, s.op.Word.Page, s.op.Word.Rank, s.ref.tok)
	}
	w.pending--
	if w.pending > 0 {
		return
	}
	if w.err != nil {
		m.fail(w.req, w.err)
	} else {
		m.outcome(Outcome{Kind: Completed, Req: w.req, Home: w.home})
	}
	*w = write{}
	m.freeWrite = append(m.freeWrite, w)
}

// invalidate acts on the slot rows a write read: for each registration t of cacher c it
// stores 0 into c's flag; the slot is cleared (CAS t->0) after that store completes. The
// first read of an owner sync only discovers the registered pages: they are counted in
// their versions and read again (see bumpRegistered).
func (m *Machine) invalidate(w *write, words []uint64) {
	ranks := m.cfg.Ranks
	if len(words) != w.n*ranks {
		panic(fmt.Sprintf("coherence: ReadSlots returned %d words, want %d", len(words), w.n*ranks))
	}
	if w.owner && !w.bumped {
		m.bumpRegistered(w, words)
		return
	}
	for i, t := range words {
		if t == 0 {
			continue
		}
		p, c := w.first+i/ranks, i%ranks
		if m.dead[c] {
			m.clearSlot(w.home, p, c, t)
			continue
		}
		m.post(Op{Kind: Write, Target: c, Word: m.flagWord(c, w.home, p)}, opRef{role: roleWriteFlag, w: w, tok: t})
		w.pending++
	}
}

// bumpRegistered counts an owner sync in the version of every page that had a
// registration, then posts the invalidating slot read over those pages. The order matters
// as for a remote write (FetchAdd before ReadSlots): a registration that misses the read
// was made after the count, so a revalidation under it sees the new version.
func (m *Machine) bumpRegistered(w *write, words []uint64) {
	ranks := m.cfg.Ranks
	lo, hi := -1, -1
	for i := 0; i < w.n; i++ {
		p := w.first + i
		if !anyNonzero(words[i*ranks : (i+1)*ranks]) {
			continue
		}
		if lo < 0 {
			lo = p
		}
		hi = p
		m.post(Op{Kind: FetchAdd, Target: w.home, Word: versionWord(w.home, p), Value: 1}, opRef{role: roleWriteVersion, w: w})
		w.pending++
	}
	w.bumped = true
	if lo < 0 {
		return
	}
	w.first, w.n = lo, hi-lo+1
	m.post(Op{Kind: ReadSlots, Target: w.home, Page: w.first, N: w.n}, opRef{role: roleWriteSlots, w: w})
	w.pending++
}

func anyNonzero(row []uint64) bool {
	for _, t := range row {
		if t != 0 {
			return true
		}
	}
	return false
}

// clearSlot removes registration t of cacher c from slot[page][c] at home, unless c has
// registered again since (the CAS fails then; its result is ignored).
func (m *Machine) clearSlot(home, page, c int, t uint64) {
	if m.dead[home] {
		return
	}
	m.post(Op{Kind: CAS, Target: home, Word: slotWord(home, page, c), Expect: t}, opRef{role: roleCleanup})
}
