package coherence

import (
	"fmt"
	"slices"
)

// Config configures a Machine.
type Config struct {
	// Self is this rank; Ranks is the number of ranks (the length of every slot row).
	Self  int
	Ranks int
	// Pages is the number of pages of this rank's own window segment: OwnerSync scans the
	// slot rows of pages [0, Pages) in this rank's memory.
	Pages int
	// Promote is the miss from which a page is cached: the first Promote-1 misses of a page
	// are served by uncached reads. 0 means DefaultPromote; 1 caches on the first miss.
	Promote int
	// NoRevalidate disables revalidation (reading only the version of an invalidated copy
	// before deciding to read the page again).
	NoRevalidate bool
}

// DefaultPromote is the Promote used when Config.Promote is 0.
const DefaultPromote = 2

// Machine is the coherence protocol of one (window, rank): the cacher of remote pages
// and the writer that invalidates them. It is not safe for concurrent use.
type Machine struct {
	cfg   Config
	dead  []bool
	token uint64 // last token handed out

	ops opTable

	pages     map[pageKey]*entry
	freePages []*entry
	freeWrite []*write

	// Pending output; the first readyOps/readyOuts were returned by the last Ready.
	out       Ready
	readyOps  int
	readyOuts int
}

// New returns a Machine for cfg. It panics if cfg is inconsistent.
func New(cfg Config) *Machine {
	if cfg.Ranks <= 0 || cfg.Self < 0 || cfg.Self >= cfg.Ranks || cfg.Pages < 0 || cfg.Promote < 0 {
		panic(fmt.Sprintf("coherence: bad config %+v", cfg))
	}
	if cfg.Promote == 0 {
		cfg.Promote = DefaultPromote
	}
	return &Machine{
		cfg:   cfg,
		dead:  make([]bool, cfg.Ranks),
		pages: make(map[pageKey]*entry),
	}
}

// HasReady reports whether output is pending.
func (m *Machine) HasReady() bool {
	return len(m.out.Ops) > m.readyOps || len(m.out.Outcomes) > m.readyOuts
}

// Ready returns the pending output. The slices stay valid until Advance, even if the
// driver feeds inputs (for example Done of local operations) while walking them; output
// of those inputs appears in the next Ready. Call Advance after processing.
func (m *Machine) Ready() Ready {
	m.readyOps, m.readyOuts = len(m.out.Ops), len(m.out.Outcomes)
	return Ready{Ops: m.out.Ops[:m.readyOps:m.readyOps], Outcomes: m.out.Outcomes[:m.readyOuts:m.readyOuts]}
}

// Advance discards the output returned by the last Ready.
func (m *Machine) Advance() {
	n := copy(m.out.Ops, m.out.Ops[m.readyOps:])
	clear(m.out.Ops[n:])
	m.out.Ops = m.out.Ops[:n]
	n = copy(m.out.Outcomes, m.out.Outcomes[m.readyOuts:])
	clear(m.out.Outcomes[n:])
	m.out.Outcomes = m.out.Outcomes[:n]
	m.readyOps, m.readyOuts = 0, 0
}

// Done reports the completion of operation id: result is the value returned by
// ReadVersion, CAS and FetchAdd; words the result of ReadSlots (read during the call only,
// never retained); err is non-nil if the operation failed. A Done for an operation the
// Machine no longer tracks (one Crashed already failed) is ignored; a Done for an ID the
// Machine never emitted panics.
func (m *Machine) Done(id OpID, result uint64, words []uint64, err error) {
	s, ok := m.ops.take(id)
	if !ok {
		return
	}
	m.dispatch(s, result, words, err)
}

func (m *Machine) dispatch(s opSlot, result uint64, words []uint64, err error) {
	switch s.ref.role {
	case rolePlainRead:
		m.plainReadDone(s, err)
	case roleFillFlag, roleFillRegister, roleFillRevalCAS, roleFillVersion, roleFillData, roleFillValidate:
		m.fillStepDone(s, result, err)
	case roleEvictFlag:
		m.evictFlagDone(s.ref.e)
	case roleWriteVersion, roleWriteSlots, roleWriteFlag:
		m.writeStepDone(s, words, err)
	case roleDropFlag:
		if s.ref.release {
			m.outcome(Outcome{Kind: Released, Home: s.op.Word.Home, Page: s.op.Word.Page})
		}
	case roleCleanup:
		// Result ignored: a failed slot clear leaves a registration that costs a spurious
		// invalidation later.
	default:
		panic(fmt.Sprintf("coherence: op %v has no role", s.op))
	}
}

// Crashed declares rank r dead: every tracked operation to r fails with ErrCrashed (a
// later Done for it is ignored), Gets from pages of r fail, their cached copies are
// invalidated and released, writes to r fail, and r's registrations are forgotten (no
// invalidation is sent to r again). Crashed of a dead rank does nothing; Crashed(Self)
// panics.
func (m *Machine) Crashed(r int) {
	m.checkRank(r)
	if r == m.cfg.Self {
		panic("coherence: Crashed(Self)")
	}
	if m.dead[r] {
		return
	}
	m.dead[r] = true
	for i := 0; i < len(m.ops.slots); i++ {
		s := &m.ops.slots[i]
		if s.live && s.op.Target == r {
			m.dispatch(m.ops.takeIndex(i), 0, nil, ErrCrashed)
		}
	}
	keys := make([]pageKey, 0)
	for k := range m.pages {
		if k.home == r {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b pageKey) int { return a.page - b.page })
	for _, k := range keys {
		if e := m.pages[k]; e.phase == phaseIdle {
			m.dropEntry(e)
		}
		// A fill or eviction in progress waits for a local operation; its completion sees
		// the dead home and finishes the entry.
	}
}

func (m *Machine) checkRank(r int) {
	if r < 0 || r >= m.cfg.Ranks {
		panic(fmt.Sprintf("coherence: rank %d out of range [0,%d)", r, m.cfg.Ranks))
	}
}

func (m *Machine) post(op Op, ref opRef) {
	if m.dead[op.Target] {
		panic(fmt.Sprintf("coherence: op %v to dead rank", op))
	}
	op.ID = m.ops.add(op, ref)
	m.out.Ops = append(m.out.Ops, op)
}

func (m *Machine) outcome(o Outcome) {
	m.out.Outcomes = append(m.out.Outcomes, o)
}

func (m *Machine) fail(req ReqID, err error) {
	m.outcome(Outcome{Kind: Failed, Req: req, Err: err})
}

func (m *Machine) nextToken() uint64 {
	if m.token == maxToken {
		panic("coherence: tokens exhausted")
	}
	m.token++
	return m.token
}

// Word constructors.

func (m *Machine) flagWord(cacher, home, page int) Word {
	return Word{Kind: Flag, Rank: cacher, Home: home, Page: page, Cacher: cacher}
}

func slotWord(home, page, cacher int) Word {
	return Word{Kind: Slot, Rank: home, Home: home, Page: page, Cacher: cacher}
}

func versionWord(home, page int) Word {
	return Word{Kind: Version, Rank: home, Home: home, Page: page}
}

// opTable tracks emitted operations without allocating in steady state. An OpID is
// gen<<32 | index+1, so a stale ID (its slot reused) is recognised and ignored.
type opTable struct {
	slots []opSlot
	free  []int
}

type opRole uint8

const (
	roleNone opRole = iota
	rolePlainRead
	roleFillFlag
	roleFillRegister
	roleFillRevalCAS
	roleFillVersion
	roleFillData
	roleFillValidate
	roleEvictFlag
	roleWriteVersion
	roleWriteSlots
	roleWriteFlag
	roleCleanup
	roleDropFlag
)

// opRef says what an operation is for.
type opRef struct {
	role opRole
	e    *entry
	w    *write
	req  ReqID  // rolePlainRead: the request
	tok  uint64 // roleWriteFlag: the token seen in the slot
	// roleDropFlag: report Released when the flag store completed
	release bool
}

type opSlot struct {
	gen  uint32
	live bool
	op   Op
	ref  opRef
}

func (t *opTable) add(op Op, ref opRef) OpID {
	var i int
	if n := len(t.free); n > 0 {
		i = t.free[n-1]
		t.free = t.free[:n-1]
	} else {
		t.slots = append(t.slots, opSlot{})
		i = len(t.slots) - 1
	}
	s := &t.slots[i]
	s.gen++
	s.live = true
	op.ID = OpID(uint64(s.gen)<<32 | uint64(i+1))
	s.op, s.ref = op, ref
	return op.ID
}

// take removes and returns the live operation id; ok is false for a stale id.
func (t *opTable) take(id OpID) (opSlot, bool) {
	i, gen := int(uint32(id))-1, uint32(id>>32)
	if i < 0 || i >= len(t.slots) || gen > t.slots[i].gen || gen == 0 {
		panic(fmt.Sprintf("coherence: Done for unknown op %#x", uint64(id)))
	}
	if gen < t.slots[i].gen || !t.slots[i].live {
		return opSlot{}, false
	}
	return t.takeIndex(i), true
}

func (t *opTable) takeIndex(i int) opSlot {
	s := t.slots[i]
	t.slots[i].live = false
	t.slots[i].ref = opRef{}
	t.free = append(t.free, i)
	return s
}

// outstanding returns the number of tracked operations (tests).
func (t *opTable) outstanding() int {
	return len(t.slots) - len(t.free)
}
