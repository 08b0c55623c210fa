package coherence

import "fmt"

// pageKey names a remote page: (home rank, page index).
type pageKey struct{ home, page int }

// phase is the step of the fill (or eviction) in progress for a page.
type phase uint8

const (
	phaseIdle     phase = iota
	phaseFlag           // local store Filling(tok) outstanding
	phaseReval          // CAS slot copyTok->tok, Read ver outstanding
	phaseRead           // [Write slot tok], Read ver, Read data outstanding
	phaseValidate       // local CAS Filling(tok)->Valid(tok) outstanding
	phaseEvict          // local CAS Valid(tok)->0 outstanding
)

// entry is this rank's state for one remote page.
type entry struct {
	key    pageKey
	misses int // Gets that entered the Machine, saturating at Promote

	// The fill or eviction in progress.
	phase   phase
	tok     uint64 // token of the current (or last) fill
	pending int    // outstanding operations of the phase
	err     error  // first error of the phase
	casOK   bool   // phaseReval: the slot still held copyTok
	ver     uint64 // the version read in this phase
	reqs    []ReqID
	group   int // reqs[:group] started before the current reads were posted
	hits    int // reqs[:hits] started before the Filling->Valid CAS was posted

	// The cache buffer of the page at this rank.
	buf       bool   // the driver holds a cache buffer (a fill read into it)
	installed bool   // this Machine set Valid(tok); a writer may have cleared it since
	hasCopy   bool   // the buffer holds the page as read under registration copyTok
	copyTok   uint64 // the registration the copy was read (or revalidated) under
	copyVer   uint64 // ver[p] read before the copy's data

	revalSkip    uint8 // fills left before revalidation is tried again
	revalBackoff uint8
	evictPending bool
}

const maxRevalBackoff = 15

// Get starts Get req of page page of home: the driver calls it after Usable found the
// page's flag not Valid. The outcome is Served (FromCache or from req's own ReadData) or
// Failed. Gets of a page with a fill in progress wait for it and never start a second one.
// It panics if home is Self (a rank does not cache its own pages) or out of range.
func (m *Machine) Get(req ReqID, home, page int) {
	m.checkRank(home)
	if home == m.cfg.Self || req == 0 || page < 0 {
		panic(fmt.Sprintf("coherence: bad Get(%d, %d, %d)", req, home, page))
	}
	if m.dead[home] {
		m.fail(req, ErrCrashed)
		return
	}
	e := m.entry(pageKey{home, page})
	if e.phase != phaseIdle {
		e.reqs = append(e.reqs, req)
		return
	}
	if e.misses < m.cfg.Promote {
		e.misses++
	}
	if e.misses < m.cfg.Promote && !e.hasCopy {
		m.post(Op{Kind: ReadData, Target: home, Page: page, Req: req}, opRef{role: rolePlainRead, req: req})
		return
	}
	e.reqs = append(e.reqs, req)
	m.startFill(e)
}

// Evict drops this rank's copy of (home, page): its flag is cleared, its registration at
// home lazily removed, and Released reports when the cache buffer may be reused (only if
// one was used). With a fill in progress the eviction follows the fill.
func (m *Machine) Evict(home, page int) {
	e := m.pages[pageKey{home, page}]
	switch {
	case e == nil || e.phase == phaseEvict:
	case e.phase != phaseIdle:
		e.evictPending = true
	default:
		m.startEvict(e)
	}
}

func (m *Machine) entry(k pageKey) *entry {
	if e := m.pages[k]; e != nil {
		return e
	}
	var e *entry
	if n := len(m.freePages); n > 0 {
		e = m.freePages[n-1]
		m.freePages = m.freePages[:n-1]
		reqs := e.reqs[:0]
		*e = entry{reqs: reqs}
	} else {
		e = new(entry)
	}
	e.key = k
	m.pages[k] = e
	return e
}

func (m *Machine) plainReadDone(s opSlot, err error) {
	if err != nil {
		m.fail(s.ref.req, err)
		return
	}
	m.outcome(Outcome{Kind: Served, Req: s.ref.req, Home: s.op.Target, Page: s.op.Page})
}

// startFill begins a fill for e.reqs: Filling(tok) is stored locally before anything is
// posted to the home, so a writer that sees the registration always finds the flag set.
func (m *Machine) startFill(e *entry) {
	e.tok = m.nextToken()
	e.err = nil
	m.setPhase(e, phaseFlag, 1)
	m.post(Op{Kind: Write, Target: m.cfg.Self, Word: m.flagWord(m.cfg.Self, e.key.home, e.key.page), Value: FillingFlag(e.tok)},
		opRef{role: roleFillFlag, e: e})
}

func (m *Machine) setPhase(e *entry, p phase, pending int) {
	e.phase, e.pending = p, pending
}

func (m *Machine) fillStepDone(s opSlot, result uint64, err error) {
	e := s.ref.e
	if err != nil && e.err == nil {
		e.err = err
	}
	switch s.ref.role {
	case roleFillRevalCAS:
		e.casOK = err == nil && result == e.copyTok
	case roleFillVersion:
		e.ver = result
	case roleFillValidate:
		m.finishFill(e, err == nil && result == FillingFlag(e.tok))
		return
	}
	e.pending--
	if e.pending > 0 {
		return
	}
	switch {
	case e.err != nil:
		m.failFill(e, e.err)
	case e.phase == phaseFlag:
		if m.dead[e.key.home] {
			m.failFill(e, ErrCrashed)
		} else {
			m.postReads(e)
		}
	case e.phase == phaseReval:
		m.revalidated(e)
	case e.phase == phaseRead:
		e.hasCopy, e.copyTok, e.copyVer = true, e.tok, e.ver
		m.postValidate(e)
	default:
		panic(fmt.Sprintf("coherence: fill step done in phase %d", e.phase))
	}
}

// postReads posts the fill's operations to the home, back to back on one pair. Every Get
// in e.reqs now started before these reads were posted, so the reads may serve them all.
func (m *Machine) postReads(e *entry) {
	e.group = len(e.reqs)
	if !e.hasCopy || m.cfg.NoRevalidate || e.revalSkip > 0 {
		if e.revalSkip > 0 {
			e.revalSkip--
		}
		m.postFullRead(e, true)
		return
	}
	// Revalidation: move the copy's registration to tok if it survived, and read the version.
	home, page := e.key.home, e.key.page
	m.setPhase(e, phaseReval, 2)
	m.post(Op{Kind: CAS, Target: home, Word: slotWord(home, page, m.cfg.Self), Expect: e.copyTok, Value: e.tok},
		opRef{role: roleFillRevalCAS, e: e})
	m.post(Op{Kind: ReadVersion, Target: home, Word: versionWord(home, page)}, opRef{role: roleFillVersion, e: e})
}

// postFullRead registers tok (unless the revalidation CAS already did) and reads version
// and data. The data lands in the cache buffer, so the old copy is gone from here on.
func (m *Machine) postFullRead(e *entry, register bool) {
	home, page := e.key.home, e.key.page
	n := 2
	if register {
		n++
	}
	m.setPhase(e, phaseRead, n)
	e.hasCopy, e.buf = false, true
	if register {
		m.post(Op{Kind: Write, Target: home, Word: slotWord(home, page, m.cfg.Self), Value: e.tok},
			opRef{role: roleFillRegister, e: e})
	}
	m.post(Op{Kind: ReadVersion, Target: home, Word: versionWord(home, page)}, opRef{role: roleFillVersion, e: e})
	m.post(Op{Kind: ReadData, Target: home, Page: page}, opRef{role: roleFillData, e: e})
}

// revalidated decides after the revalidation round trip: the copy is current if its
// registration survived without a break (so every owner sync since saw it and counted) and
// no write was counted since the copy's version was read.
func (m *Machine) revalidated(e *entry) {
	if e.casOK && e.ver == e.copyVer {
		e.copyTok = e.tok
		e.revalBackoff = 0
		m.postValidate(e)
		return
	}
	e.revalBackoff = min(2*e.revalBackoff+1, maxRevalBackoff)
	e.revalSkip = e.revalBackoff
	e.group = len(e.reqs)
	m.postFullRead(e, !e.casOK)
}

func (m *Machine) postValidate(e *entry) {
	m.setPhase(e, phaseValidate, 1)
	e.hits = len(e.reqs)
	m.post(Op{Kind: CAS, Target: m.cfg.Self, Word: m.flagWord(m.cfg.Self, e.key.home, e.key.page),
		Expect: FillingFlag(e.tok), Value: ValidFlag(e.tok)}, opRef{role: roleFillValidate, e: e})
}

// finishFill serves the Gets after the Filling->Valid CAS: the group from the copy in any
// case; if the copy was installed also those that started before the CAS was posted (they
// are hits at the moment the CAS executed). Gets that joined later start the next fill:
// the flag may have been cleared between the CAS and its completion. (A driver that runs
// local operations at once never lets a Get join then.)
func (m *Machine) finishFill(e *entry, installed bool) {
	e.installed = installed
	n := e.group
	if installed {
		n = e.hits
	}
	for _, r := range e.reqs[:n] {
		m.outcome(Outcome{Kind: Served, Req: r, Home: e.key.home, Page: e.key.page, FromCache: true, Installed: installed})
	}
	e.reqs = e.reqs[:copy(e.reqs, e.reqs[n:])]
	m.toIdle(e)
}

func (m *Machine) failFill(e *entry, err error) {
	for _, r := range e.reqs {
		m.fail(r, err)
	}
	e.reqs = e.reqs[:0]
	e.hasCopy, e.installed = false, false
	m.toIdle(e)
}

// toIdle ends a phase and starts what waits: a drop for a dead home, an eviction, or the
// next fill for Gets that were not served.
func (m *Machine) toIdle(e *entry) {
	m.setPhase(e, phaseIdle, 0)
	e.group, e.hits = 0, 0
	switch {
	case m.dead[e.key.home]:
		m.dropEntry(e)
	case e.evictPending:
		e.evictPending = false
		m.startEvict(e)
	case len(e.reqs) > 0:
		m.startFill(e)
	}
}

func (m *Machine) startEvict(e *entry) {
	if e.tok == 0 {
		m.forget(e)
		return
	}
	m.setPhase(e, phaseEvict, 1)
	m.post(Op{Kind: CAS, Target: m.cfg.Self, Word: m.flagWord(m.cfg.Self, e.key.home, e.key.page),
		Expect: ValidFlag(e.tok), Value: 0}, opRef{role: roleEvictFlag, e: e})
}

// evictFlagDone follows the local flag CAS: the flag is not Valid(tok) any more, so the
// registration may go (lazily: a leftover one costs only a spurious invalidation).
func (m *Machine) evictFlagDone(e *entry) {
	home, page := e.key.home, e.key.page
	if !m.dead[home] {
		m.post(Op{Kind: CAS, Target: home, Word: slotWord(home, page, m.cfg.Self), Expect: e.tok},
			opRef{role: roleCleanup})
	}
	if e.buf {
		m.outcome(Outcome{Kind: Released, Home: home, Page: page})
	}
	e.phase = phaseIdle
	e.buf, e.hasCopy, e.installed, e.tok = false, false, false, 0
	if m.dead[home] || len(e.reqs) == 0 {
		m.dropEntry(e)
		return
	}
	m.startFill(e)
}

// dropEntry forgets a page (its home is dead, or it was evicted): its flag is cleared,
// its buffer released and waiting Gets failed.
func (m *Machine) dropEntry(e *entry) {
	switch {
	case e.tok != 0:
		// Released only once the flag is cleared: until then hits may use the buffer.
		m.post(Op{Kind: Write, Target: m.cfg.Self, Word: m.flagWord(m.cfg.Self, e.key.home, e.key.page)},
			opRef{role: roleDropFlag, release: e.buf})
	case e.buf:
		m.outcome(Outcome{Kind: Released, Home: e.key.home, Page: e.key.page})
	}
	for _, r := range e.reqs {
		m.fail(r, ErrCrashed)
	}
	m.forget(e)
}

func (m *Machine) forget(e *entry) {
	delete(m.pages, e.key)
	m.freePages = append(m.freePages, e)
}
