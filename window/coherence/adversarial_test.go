package coherence

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// Adversarial schedules over the simulation of sim_test.go: scripts whose next action may
// start while earlier requests of the rank are still in flight (an eviction during a fill,
// two writes of one page from two goroutines, a Get joining a fill), and crashes placed by
// the schedule itself (a home, a cacher or a writer dying at any point of the protocol).
// Every interleaving of the network and of these actions is explored (depth-first, up to
// a budget; then seeded random schedules), with the invariants checked after every event,
// every Get checked against the sequential reference, and every surviving request required
// to end (never a hang).

// advAction is a scripted action; async lets it start while the rank has requests in
// progress (from another goroutine of the rank). Kind 'c' crashes rank home.
type advAction struct {
	a     action
	async bool
}

func crashOf(r int) action { return action{kind: 'c', home: r} }
func evict(home, page int) action {
	return action{kind: 'e', home: home, page: page}
}

func now(a action) advAction  { return advAction{a: a, async: true} }
func then(a action) advAction { return advAction{a: a} }

// advWorld drives a world with advAction scripts.
type advWorld struct {
	*world
	scripts [][]advAction
}

func newAdvWorld(t testing.TB, ranks, pages int, noReval bool, scripts [][]advAction, ch chooser, seed uint64) *advWorld {
	cfg := simConfig{ranks: ranks, pages: pages, promote: 1, noReval: noReval,
		scripts: make([][]action, ranks)}
	w := newWorld(t, cfg, ch, seed)
	s := make([][]advAction, ranks)
	for i := range scripts {
		s[i] = append([]advAction(nil), scripts[i]...)
	}
	return &advWorld{world: w, scripts: s}
}

func (w *advWorld) canAct(r *simRank) bool {
	s := w.scripts[r.id]
	return r.alive && len(s) > 0 && (r.busy == 0 || s[0].async)
}

// step is world.step with scripted (possibly concurrent) actions and scripted crashes.
func (w *advWorld) step() bool {
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
	for _, r := range w.ranks {
		if !r.alive {
			continue
		}
		if len(r.notify) > 0 {
			ev = append(ev, event{'n', r.id, 0})
		}
		if w.canAct(r) {
			ev = append(ev, event{'a', r.id, 0})
		}
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
		r := w.ranks[e.a]
		a := w.scripts[r.id][0].a
		w.scripts[r.id] = w.scripts[r.id][1:]
		if a.kind == 'c' {
			w.crash(a.home)
			break
		}
		r.script = []action{a}
		w.act(r)
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

// run steps until nothing is enabled; every request of a surviving rank must have ended
// and its Machine must track no operation.
func (w *advWorld) run() {
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
		for k, e := range r.m.pages {
			if e.phase != phaseIdle || len(e.reqs) > 0 {
				w.fail("rank %d: page %v left in phase %d with %d waiting Gets", r.id, k, e.phase, len(e.reqs))
			}
			if !w.ranks[k.home].alive {
				w.fail("rank %d: entry of dead home %d's page %d kept", r.id, k.home, k.page)
			}
		}
	}
}

type advScope struct {
	name    string
	ranks   int
	noReval bool
	scripts [][]advAction
}

// advScopes: rank 0 is the home of the single page unless said otherwise.
var advScopes = []advScope{
	{"evict then refill vs put", 3, false, [][]advAction{nil,
		{then(get(0, 0)), then(get(0, 0)), then(evict(0, 0)), then(get(0, 0))},
		{then(put(0, 0))}}},
	{"evict during fill vs put", 3, true, [][]advAction{nil,
		{then(get(0, 0)), now(evict(0, 0)), now(get(0, 0))},
		{then(put(0, 0))}}},
	{"evict during invalidation", 3, false, [][]advAction{nil,
		{then(get(0, 0)), then(get(0, 0)), now(evict(0, 0)), now(get(0, 0))},
		{then(put(0, 0))}}},
	{"one writer, two goroutines, one page", 3, true, [][]advAction{nil,
		{then(get(0, 0)), then(get(0, 0))},
		{then(put(0, 0)), now(put(0, 0))}}},
	{"gets join a fill vs put", 3, false, [][]advAction{nil,
		{then(get(0, 0)), now(get(0, 0)), now(get(0, 0))},
		{then(put(0, 0))}}},
	{"owner sync vs evict and refetch", 2, false, [][]advAction{
		{then(ownerStore), then(ownerSync)},
		{then(get(0, 0)), then(get(0, 0)), now(evict(0, 0)), now(get(0, 0))}}},
	{"home crashes mid-fill", 3, false, [][]advAction{
		{then(ownerStore), then(ownerSync)},
		{then(get(0, 0)), now(get(0, 0)), then(get(0, 0))},
		{now(crashOf(0))}}},
	{"cacher crashes during invalidation", 3, false, [][]advAction{
		nil,
		{then(get(0, 0)), then(get(0, 0))},
		{then(put(0, 0)), now(crashOf(1))}}},
	{"writer crashes mid-write", 3, false, [][]advAction{
		nil,
		{then(get(0, 0)), then(get(0, 0)), then(get(0, 0))},
		{then(put(0, 0)), now(crashOf(2))}}},
	{"writer crashes, second writer completes", 4, true, [][]advAction{
		nil,
		{then(get(0, 0)), then(get(0, 0))},
		{then(put(0, 0)), now(crashOf(2))},
		{then(put(0, 0))}}},
}

var advDFSBudget = 3000 // exhaustive runs per scope before switching to random schedules

// TestAdversarialSchedules explores each scope exhaustively when it fits the budget, and
// otherwise runs the budget's worth of its depth-first prefix plus seeded random schedules.
func TestAdversarialSchedules(t *testing.T) {
	for _, sc := range advScopes {
		t.Run(sc.name, func(t *testing.T) {
			start := time.Now()
			budget, seeds := advDFSBudget, 300
			if testing.Short() {
				budget, seeds = budget/10, seeds/10
			}
			if *soak {
				budget, seeds = *dfsLimit, seeds*50
			}
			d := &dfsChooser{}
			runs, complete := 0, false
			var total simStats
			for {
				w := newAdvWorld(t, sc.ranks, 1, sc.noReval, sc.scripts, d, 0)
				w.fail = func(format string, args ...any) {
					t.Helper()
					t.Fatalf("dfs run %d, choices %v: %s", runs, d.path, fmt.Sprintf(format, args...))
				}
				w.run()
				total.add(w.stats)
				runs++
				if !d.next() {
					complete = true
					break
				}
				if runs >= budget {
					break
				}
			}
			if !complete {
				for seed := range uint64(seeds) {
					w := newAdvWorld(t, sc.ranks, 1, sc.noReval, sc.scripts, randChooser{rand.New(rand.NewPCG(seed, 77))}, seed)
					w.fail = func(format string, args ...any) {
						t.Helper()
						t.Fatalf("seed %d: %s", seed, fmt.Sprintf(format, args...))
					}
					w.run()
					total.add(w.stats)
				}
			}
			t.Logf("%d interleavings (complete %v) in %v: %+v", runs, complete, time.Since(start).Round(time.Millisecond), total)
			if total.served == 0 || total.completed+total.failed == 0 {
				t.Errorf("the scope served no Get or ended no write: %+v", total)
			}
		})
	}
}
