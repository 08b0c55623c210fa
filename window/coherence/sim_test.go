package coherence

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// The simulation runs one Machine per rank over a simulated network of FIFO pairs (ops
// execute at the target in posting order per (origin, target), pairs interleave freely,
// completions travel back in order) with crashes, and checks after every event:
//
//   - registration: a flag Filling(t)/Valid(t) at C whose registration t was ever stored
//     at the home means slot[p][C] == t there (checkRegistration);
//   - no stale copy: a Valid flag's cached value is not older (in the home's memory order)
//     than the last completed write (checkValidCopies);
//   - the Machine's view: Filling(t)/Valid(t) flags belong to the entry with token t;
//
// and every Get against the reference model (ref.go-style sequential memory in world.legal).

// chooser picks one of n enabled events.
type chooser interface{ choose(n int) int }

type randChooser struct{ r *rand.Rand }

func (c randChooser) choose(n int) int { return c.r.IntN(n) }

// simOp is an operation in flight on a pair: a Machine op, or a Put's data write.
type simOp struct {
	op    Op
	put   *putRec // non-nil: the data write of put
	err   error   // set when executed at a dead target
	res   uint64
	words []uint64
	val   int // ReadData: the write id read
}

type pair struct {
	q  []simOp // posted, not executed at the target
	cq []simOp // executed, completion not yet delivered to the origin
}

type writeRec struct {
	id       int
	home     int
	pages    []int
	issue    int64
	complete int64 // -1 until completed
}

type putRec struct {
	w     *writeRec
	req   ReqID
	first int
	n     int
}

type getRec struct {
	home, page int
	start      int64
}

type action struct {
	kind byte // 'g' Get, 'p' Put, 'o' owner store, 's' owner sync, 'e' evict
	home int
	page int
	n    int
}

type simRank struct {
	id      int
	alive   bool
	m       *Machine
	ver     []uint64 // [page]
	slot    []uint64 // [page*n + cacher]
	maxReg  []uint64 // [page*n + cacher]: largest token ever stored into the slot
	data    []int    // [page]: id of the last write
	flag    []uint64 // [home*pages + page]
	cache   []int    // [home*pages + page]; -1: released
	reqBuf  map[ReqID]int
	gets    map[ReqID]getRec
	puts    map[ReqID]*putRec
	syncs   map[ReqID][]int
	owned   []int // owner stores not yet covered by an OwnerSync
	notify  []int // crashes not yet announced to m
	busy    int   // requests in progress
	script  []action
	actions int // random actions left
}

type simConfig struct {
	ranks, pages int
	promote      int
	noReval      bool
	actions      int // random actions per rank
	maxBusy      int
	crashes      int
	syncLocal    bool       // local ops execute and complete at once (CPU atomics)
	scripts      [][]action // instead of random actions
}

type world struct {
	t       testing.TB
	cfg     simConfig
	ch      chooser
	rng     *rand.Rand // workload choices (random mode)
	now     int64
	ranks   []*simRank
	pairs   []pair // [src*n + dst]
	writes  []*writeRec
	order   map[[2]int][]int // (home, page) -> write ids in memory order
	nextReq ReqID
	crashes int
	events  []event
	stats   simStats
	fail    func(format string, args ...any)
	trace   func(format string, args ...any) // nil: no trace
}

func (w *world) tracef(format string, args ...any) {
	if w.trace != nil {
		w.trace("%4d "+format, append([]any{w.now}, args...)...)
	}
}

type simStats struct {
	events, gets, hits, served, fromCache, installed, writes, completed, failed, stale int
}

type event struct {
	kind byte // 'x' exec, 'd' deliver, 'a' action, 'c' crash, 'n' notify
	a, b int
}

func newWorld(t testing.TB, cfg simConfig, ch chooser, seed uint64) *world {
	w := &world{t: t, cfg: cfg, ch: ch, order: map[[2]int][]int{}, fail: t.Fatalf}
	w.rng = rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	n, pg := cfg.ranks, cfg.pages
	w.pairs = make([]pair, n*n)
	w.writes = []*writeRec{{id: 0, home: -1, complete: -1}} // id 0: the initial contents
	for r := range n {
		sr := &simRank{
			id: r, alive: true,
			m:   New(Config{Self: r, Ranks: n, Pages: pg, Promote: cfg.promote, NoRevalidate: cfg.noReval}),
			ver: make([]uint64, pg), slot: make([]uint64, pg*n), maxReg: make([]uint64, pg*n),
			data: make([]int, pg), flag: make([]uint64, n*pg), cache: make([]int, n*pg),
			reqBuf: map[ReqID]int{}, gets: map[ReqID]getRec{}, puts: map[ReqID]*putRec{}, syncs: map[ReqID][]int{},
			actions: cfg.actions,
		}
		if cfg.scripts != nil {
			sr.script = cfg.scripts[r]
		}
		for i := range sr.cache {
			sr.cache[i] = -1
		}
		w.ranks = append(w.ranks, sr)
		for p := range pg {
			w.order[[2]int{r, p}] = []int{0}
		}
	}
	return w
}

// run steps until nothing is enabled, then checks that every request ended.
func (w *world) run() {
	for w.step() {
	}
	for _, r := range w.ranks {
		if !r.alive {
			continue
		}
		if len(r.gets)+len(r.puts)+len(r.syncs) > 0 {
			w.fail("rank %d: requests never ended: gets %v puts %d syncs %d", r.id, r.gets, len(r.puts), len(r.syncs))
		}
		if k := r.m.ops.outstanding(); k > 0 {
			w.fail("rank %d: %d ops still tracked with an idle network", r.id, k)
		}
	}
}

func (w *world) step() bool {
	n := w.cfg.ranks
	ev := w.events[:0]
	for i := range w.pairs {
		s, d := i/n, i%n
		if len(w.pairs[i].q) > 0 {
			ev = append(ev, event{'x', s, d})
		}
		if len(w.pairs[i].cq) > 0 {
			ev = append(ev, event{'d', s, d})
		}
	}
	alive := 0
	for _, r := range w.ranks {
		if !r.alive {
			continue
		}
		alive++
		if len(r.notify) > 0 {
			ev = append(ev, event{'n', r.id, 0})
		}
		if w.canAct(r) {
			ev = append(ev, event{'a', r.id, 0})
		}
	}
	if w.crashes < w.cfg.crashes && alive > 2 && w.rng.IntN(20) == 0 {
		ev = append(ev, event{'c', w.rng.IntN(n), 0})
	}
	w.events = ev
	if len(ev) == 0 {
		return false
	}
	e := ev[w.ch.choose(len(ev))]
	w.now++
	w.tracef("event %c %d %d", e.kind, e.a, e.b)
	w.stats.events++
	switch e.kind {
	case 'x':
		w.exec(e.a, e.b)
	case 'd':
		w.deliver(e.a, e.b)
	case 'a':
		w.act(w.ranks[e.a])
	case 'c':
		w.crash(e.a)
	case 'n':
		r := w.ranks[e.a]
		dead := r.notify[0]
		r.notify = r.notify[1:]
		r.m.Crashed(dead)
		w.drain(r)
	}
	w.check()
	return true
}

func (w *world) canAct(r *simRank) bool {
	if w.cfg.scripts != nil {
		return len(r.script) > 0 && r.busy == 0
	}
	return r.actions > 0 && r.busy < w.cfg.maxBusy
}

// act performs the rank's next client action.
func (w *world) act(r *simRank) {
	var a action
	if w.cfg.scripts != nil {
		a, r.script = r.script[0], r.script[1:]
	} else {
		r.actions--
		a = w.randomAction(r)
	}
	switch a.kind {
	case 'g':
		w.get(r, a.home, a.page)
	case 'p':
		w.put(r, a.home, a.page, a.n)
	case 'o':
		w.ownerStore(r, a.page)
	case 's':
		w.ownerSync(r)
	case 'e':
		r.m.Evict(a.home, a.page)
		w.drain(r)
	}
}

func (w *world) randomAction(r *simRank) action {
	n, pg := w.cfg.ranks, w.cfg.pages
	other := (r.id + 1 + w.rng.IntN(n-1)) % n
	x := w.rng.IntN(100)
	switch {
	case x < 55:
		return action{kind: 'g', home: other, page: w.rng.IntN(pg)}
	case x < 75:
		home := other
		if w.rng.IntN(4) == 0 {
			home = r.id
		}
		first := w.rng.IntN(pg)
		return action{kind: 'p', home: home, page: first, n: 1 + w.rng.IntN(pg-first)}
	case x < 85:
		return action{kind: 'o', page: w.rng.IntN(pg)}
	case x < 95:
		return action{kind: 's'}
	}
	return action{kind: 'e', home: other, page: w.rng.IntN(pg)}
}

func (w *world) newReq() ReqID {
	w.nextReq++
	return w.nextReq
}

func (w *world) idx(home, page int) int { return home*w.cfg.pages + page }

func (w *world) get(r *simRank, home, page int) {
	w.stats.gets++
	if f := r.flag[w.idx(home, page)]; Usable(f) {
		w.stats.hits++
		w.checkGet(r, home, page, w.now, r.cache[w.idx(home, page)], "hit")
		return
	}
	req := w.newReq()
	w.tracef("  r%d Get req %d (%d,%d) flag %#x", r.id, req, home, page, r.flag[w.idx(home, page)])
	r.gets[req] = getRec{home: home, page: page, start: w.now}
	r.busy++
	r.m.Get(req, home, page)
	w.drain(r)
}

func (w *world) put(r *simRank, home, first, n int) {
	wr := &writeRec{id: len(w.writes), home: home, issue: w.now, complete: -1}
	for p := first; p < first+n; p++ {
		wr.pages = append(wr.pages, p)
	}
	w.writes = append(w.writes, wr)
	pr := &putRec{w: wr, req: w.newReq(), first: first, n: n}
	w.tracef("  r%d Put req %d write %d to %d[%d:%d]", r.id, pr.req, wr.id, home, first, first+n)
	r.puts[pr.req] = pr
	r.busy++
	w.stats.writes++
	w.enqueue(r.id, home, simOp{put: pr})
}

// ownerStore is a CPU store of the home into its own window: it lands at once.
func (w *world) ownerStore(r *simRank, page int) {
	wr := &writeRec{id: len(w.writes), home: r.id, pages: []int{page}, issue: w.now, complete: -1}
	w.writes = append(w.writes, wr)
	w.stats.writes++
	w.storeData(r, page, wr.id)
	w.tracef("  r%d owner store write %d page %d", r.id, wr.id, page)
	r.owned = append(r.owned, wr.id)
}

func (w *world) ownerSync(r *simRank) {
	req := w.newReq()
	r.syncs[req] = r.owned
	r.owned = nil
	r.busy++
	r.m.OwnerSync(req)
	w.drain(r)
}

func (w *world) storeData(home *simRank, page, id int) {
	home.data[page] = id
	k := [2]int{home.id, page}
	w.order[k] = append(w.order[k], id)
}

func (w *world) enqueue(src, dst int, o simOp) {
	p := &w.pairs[src*w.cfg.ranks+dst]
	p.q = append(p.q, o)
}

// drain takes the Machine's output: outcomes are delivered, ops posted on their pairs.
// Under syncLocal, the batch's local ops execute and complete after Advance, as
// window.drive does: completing one inside the loop let the Machine's next output be read
// before Advance (which its contract forbids), and the batch being handled came back,
// delivered twice.
func (w *world) drain(r *simRank) {
	for r.m.HasReady() {
		rd := r.m.Ready()
		for _, o := range rd.Outcomes {
			w.tracef("  r%d outcome %+v", r.id, o)
			w.outcome(r, o)
		}
		var local []simOp
		for _, op := range rd.Ops {
			if w.cfg.syncLocal && op.Target == r.id {
				local = append(local, simOp{op: op})
				continue
			}
			w.tracef("  r%d post %v", r.id, op)
			w.enqueue(r.id, op.Target, simOp{op: op})
		}
		r.m.Advance()
		for i := range local {
			w.apply(r, &local[i])
			w.complete(r, &local[i])
		}
	}
}

func (w *world) exec(s, d int) {
	p := &w.pairs[s*w.cfg.ranks+d]
	o := p.q[0]
	p.q = p.q[1:]
	t := w.ranks[d]
	if !t.alive {
		o.err = ErrCrashed
	} else {
		w.apply(t, &o)
	}
	w.tracef("  exec %d->%d %v put=%v err=%v res=%#x words=%v val=%d", s, d, o.op, o.put != nil, o.err, o.res, o.words, o.val)
	p.cq = append(p.cq, o)
}

// apply executes o at target t's memory.
func (w *world) apply(t *simRank, o *simOp) {
	if o.put != nil {
		for _, p := range o.put.w.pages {
			w.storeData(t, p, o.put.w.id)
		}
		return
	}
	op := o.op
	switch op.Kind {
	case ReadData:
		o.val = t.data[op.Page]
	case ReadSlots:
		o.words = slices.Clone(t.slot[op.Page*w.cfg.ranks : (op.Page+op.N)*w.cfg.ranks])
	default:
		p := w.word(t, op.Word)
		old := *p
		switch op.Kind {
		case ReadVersion:
		case Write:
			*p = op.Value
		case CAS:
			if old == op.Expect {
				*p = op.Value
			}
		case FetchAdd:
			*p += op.Value
		}
		if op.Word.Kind == Slot && *p != old && *p != 0 {
			k := op.Word.Page*w.cfg.ranks + op.Word.Cacher
			t.maxReg[k] = max(t.maxReg[k], *p)
		}
		o.res = old
	}
}

func (w *world) word(t *simRank, wd Word) *uint64 {
	if wd.Rank != t.id {
		w.fail("op on %v executed at rank %d", wd, t.id)
	}
	switch wd.Kind {
	case Slot:
		return &t.slot[wd.Page*w.cfg.ranks+wd.Cacher]
	case Version:
		return &t.ver[wd.Page]
	case Flag:
		return &t.flag[w.idx(wd.Home, wd.Page)]
	}
	w.fail("bad word %v", wd)
	return nil
}

func (w *world) deliver(s, d int) {
	p := &w.pairs[s*w.cfg.ranks+d]
	o := p.cq[0]
	p.cq = p.cq[1:]
	w.complete(w.ranks[s], &o)
}

func (w *world) complete(r *simRank, o *simOp) {
	if o.put != nil {
		if o.err != nil {
			delete(r.puts, o.put.req)
			r.busy--
			return
		}
		r.m.Wrote(o.put.req, o.put.w.home, o.put.first, o.put.n)
		w.drain(r)
		return
	}
	if o.op.Kind == ReadData && o.err == nil {
		if o.op.Req != 0 {
			r.reqBuf[o.op.Req] = o.val
		} else {
			r.cache[w.idx(o.op.Target, o.op.Page)] = o.val
		}
	}
	r.m.Done(o.op.ID, o.res, o.words, o.err)
	w.drain(r)
}

func (w *world) outcome(r *simRank, o Outcome) {
	switch o.Kind {
	case Served:
		g, ok := r.gets[o.Req]
		if !ok || g.home != o.Home || g.page != o.Page {
			w.fail("rank %d: outcome %+v for unknown get", r.id, o)
		}
		delete(r.gets, o.Req)
		r.busy--
		w.stats.served++
		val, how := r.reqBuf[o.Req], "read"
		delete(r.reqBuf, o.Req)
		if o.FromCache {
			val, how = r.cache[w.idx(o.Home, o.Page)], "fill"
			w.stats.fromCache++
		}
		if o.Installed {
			w.stats.installed++
		}
		w.checkGet(r, o.Home, o.Page, g.start, val, how)
	case Completed:
		if pr, ok := r.puts[o.Req]; ok {
			pr.w.complete = w.now
			delete(r.puts, o.Req)
		} else if ids, ok := r.syncs[o.Req]; ok {
			for _, id := range ids {
				w.writes[id].complete = w.now
			}
			delete(r.syncs, o.Req)
		} else {
			w.fail("rank %d: Completed for unknown req %d", r.id, o.Req)
		}
		r.busy--
		w.stats.completed++
	case Failed:
		w.stats.failed++
		if g, ok := r.gets[o.Req]; ok {
			w.mustBeDead(r, g.home, o)
			delete(r.gets, o.Req)
		} else if pr, ok := r.puts[o.Req]; ok {
			w.mustBeDead(r, pr.w.home, o)
			delete(r.puts, o.Req)
		} else {
			w.fail("rank %d: Failed for unknown req %d: %v", r.id, o.Req, o.Err)
		}
		r.busy--
	case Released:
		r.cache[w.idx(o.Home, o.Page)] = -1
	}
}

func (w *world) mustBeDead(r *simRank, home int, o Outcome) {
	if w.ranks[home].alive {
		w.fail("rank %d: req %d failed with home %d alive: %v", r.id, o.Req, home, o.Err)
	}
}

func (w *world) crash(x int) {
	r := w.ranks[x]
	if !r.alive {
		return
	}
	w.crashes++
	r.alive = false
	n := w.cfg.ranks
	for d := range n {
		w.pairs[x*n+d] = pair{} // its posted ops never execute, its completions are lost
	}
	for _, o := range w.ranks {
		if o.alive {
			o.notify = append(o.notify, x)
		}
	}
}
