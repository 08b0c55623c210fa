package coherence

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"testing"
)

// legal reports whether a Get of (home, page) that started at start may return the write
// val now: the reference is a plain sequential memory. L is the last write (in the home's
// memory order) completed before the Get started; legal are L and every write after it in
// memory order that was issued before now (concurrent with the Get).
func (w *world) legal(home, page int, start int64, val int) bool {
	ord := w.order[[2]int{home, page}]
	last := 0
	for i, id := range ord {
		if c := w.writes[id].complete; c >= 0 && c < start || id == 0 {
			last = i
		}
	}
	for _, id := range ord[last:] {
		if id == val && w.writes[id].issue < w.now+1 {
			return true
		}
	}
	return false
}

func (w *world) checkGet(r *simRank, home, page int, start int64, val int, how string) {
	if !w.legal(home, page, start, val) {
		w.stats.stale++
		w.fail("stale read at event %d: rank %d Get(%d,%d) started %d got write %d by %s; memory order %v; completions %v",
			w.now, r.id, home, page, start, val, how, w.order[[2]int{home, page}], w.completions(home, page))
	}
}

func (w *world) completions(home, page int) []string {
	var s []string
	for _, id := range w.order[[2]int{home, page}] {
		s = append(s, fmt.Sprintf("%d@%d", id, w.writes[id].complete))
	}
	return s
}

// check verifies the invariants over the global state after an event.
func (w *world) check() {
	if *noInvariants {
		return
	}
	n, pg := w.cfg.ranks, w.cfg.pages
	for _, c := range w.ranks {
		if !c.alive {
			continue
		}
		for _, h := range w.ranks {
			if !h.alive || h == c {
				continue
			}
			for p := range pg {
				w.checkPage(c, h, p, n)
			}
		}
	}
}

func (w *world) checkPage(c, h *simRank, p, n int) {
	f := c.flag[w.idx(h.id, p)]
	st, tok := DecodeFlag(f)
	if st == Invalid {
		return
	}
	// Registration: once t reached the slot, the slot holds t while the flag does.
	if k := p*n + c.id; h.maxReg[k] >= tok && h.slot[k] != tok {
		w.fail("event %d: flag@%d[%d][%d] = %v(%d) but slot = %d (max registered %d)",
			w.now, c.id, h.id, p, st, tok, h.slot[k], h.maxReg[k])
	}
	e := c.m.pages[pageKey{h.id, p}]
	if e == nil || e.tok != tok && (e.phase != phaseFlag || tok > e.tok) {
		w.fail("event %d: flag@%d[%d][%d] = %v(%d) but the machine's entry is %+v", w.now, c.id, h.id, p, st, tok, e)
	}
	if st == Filling && tok == e.tok && (e.phase == phaseIdle || e.phase == phaseEvict) {
		w.fail("event %d: flag@%d[%d][%d] Filling(%d) with no fill in progress", w.now, c.id, h.id, p, tok)
	}
	if st != Valid {
		return
	}
	val := c.cache[w.idx(h.id, p)]
	if val < 0 {
		w.fail("event %d: flag@%d[%d][%d] Valid over a released buffer", w.now, c.id, h.id, p)
	}
	// No stale copy: a Valid copy is at least the last completed write.
	if !w.legal(h.id, p, w.now+1, val) {
		w.fail("event %d: flag@%d[%d][%d] Valid(%d) with stale copy %d; order %v; completions %v",
			w.now, c.id, h.id, p, tok, val, w.order[[2]int{h.id, p}], w.completions(h.id, p))
	}
}

var (
	oneSeed      = flag.Int("coherence.seed", -1, "run TestSim with this seed only, tracing")
	noInvariants = flag.Bool("coherence.noinv", false, "skip the invariant checks: only the stale-read checker judges")
)

func simSeeds(short, long int) int {
	if testing.Short() {
		return short
	}
	if *soak {
		return long * 50
	}
	return long
}

func TestSim(t *testing.T) {
	seeds := simSeeds(200, 600)
	var total simStats
	for seed := range uint64(seeds) {
		if *oneSeed >= 0 && seed != uint64(*oneSeed) {
			continue
		}
		r := rand.New(rand.NewPCG(seed, 1))
		cfg := simConfig{
			ranks:   2 + r.IntN(4),
			pages:   1 + r.IntN(4),
			promote: 1 + r.IntN(2),
			noReval: r.IntN(4) == 0,
			actions: 10 + r.IntN(30),
			maxBusy: 1 + r.IntN(3),
			crashes: r.IntN(2),
		}
		w := newWorld(t, cfg, randChooser{rand.New(rand.NewPCG(seed, 2))}, seed)
		w.fail = func(format string, args ...any) {
			t.Helper()
			t.Fatalf("seed %d %+v: %s", seed, cfg, fmt.Sprintf(format, args...))
		}
		if *oneSeed >= 0 {
			w.trace = t.Logf
		}
		w.run()
		total.add(w.stats)
	}
	t.Logf("%d seeds: %+v", seeds, total)
	if total.hits == 0 || total.installed == 0 || total.fromCache == 0 {
		t.Errorf("the workload never exercised the cache: %+v", total)
	}
}

func (s *simStats) add(o simStats) {
	s.events += o.events
	s.gets += o.gets
	s.hits += o.hits
	s.served += o.served
	s.fromCache += o.fromCache
	s.installed += o.installed
	s.writes += o.writes
	s.completed += o.completed
	s.failed += o.failed
	s.stale += o.stale
}
