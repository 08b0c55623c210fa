package coherence

import (
	"flag"
	"fmt"
	"testing"
	"time"
)

// dfsChooser enumerates every sequence of choices by stateless depth-first search: each
// run replays a prefix and extends it with first choices; next moves to the following
// sequence.
type dfsChooser struct {
	path []dfsChoice
	pos  int
}

type dfsChoice struct{ i, n int }

func (d *dfsChooser) choose(n int) int {
	if d.pos < len(d.path) {
		c := d.path[d.pos]
		if c.n != n {
			panic(fmt.Sprintf("dfs: replay diverged at %d: %d choices, recorded %d", d.pos, n, c.n))
		}
		d.pos++
		return c.i
	}
	d.path = append(d.path, dfsChoice{0, n})
	d.pos++
	return 0
}

func (d *dfsChooser) next() bool {
	d.pos = 0
	for len(d.path) > 0 {
		last := &d.path[len(d.path)-1]
		if last.i+1 < last.n {
			last.i++
			return true
		}
		d.path = d.path[:len(d.path)-1]
	}
	return false
}

var dfsLimit = flag.Int("coherence.dfslimit", 3_000_000, "stop each exhaustive scope after this many runs")

func get(home, page int) action { return action{kind: 'g', home: home, page: page} }
func put(home, page int) action { return action{kind: 'p', home: home, page: page, n: 1} }

var (
	ownerStore = action{kind: 'o'}
	ownerSync  = action{kind: 's'}
)

// TestExhaustive explores every interleaving of small scopes: three ranks, one page, a
// few requests; local operations run at once (as CPU atomics), remote operations and
// their completions interleave freely across pairs.
func TestExhaustive(t *testing.T) {
	scopes := []struct {
		name    string
		promote int
		noReval bool
		scripts [][]action
		tier    int // 0: always; 1: not with -short; 2: only with -coherence.soak
	}{
		{"fill, put, get", 1, false, [][]action{nil, {get(0, 0), put(0, 0), get(0, 0)}}, 0},
		{"fill vs put", 1, true, [][]action{nil, {get(0, 0), get(0, 0)}, {put(0, 0)}}, 2},
		{"fill vs owner store", 1, true, [][]action{{ownerStore, ownerSync}, {get(0, 0), get(0, 0)}}, 1},
		{"fill vs put, revalidating", 1, false, [][]action{nil, {get(0, 0), get(0, 0)}, {put(0, 0)}}, 2},
		{"revalidate vs owner store", 1, false, [][]action{{ownerStore, ownerSync}, {get(0, 0), get(0, 0)}}, 2},
		{"plain read then fill vs put", 2, true, [][]action{nil, {get(0, 0), get(0, 0)}, {put(0, 0)}}, 2},
		{"two cachers vs put", 1, true, [][]action{nil, {get(0, 0)}, {get(0, 0)}, {put(0, 0)}}, 2},
		{"fill vs two puts", 1, true, [][]action{nil, {get(0, 0), get(0, 0)}, {put(0, 0), put(0, 0)}}, 2},
	}
	for _, sc := range scopes {
		t.Run(sc.name, func(t *testing.T) {
			switch {
			case sc.tier == 2 && !*soak:
				t.Skip("run with -coherence.soak")
			case sc.tier == 1 && testing.Short():
				t.Skip("-short")
			}
			start := time.Now()
			d := &dfsChooser{}
			runs := 0
			var total simStats
			for {
				cfg := simConfig{ranks: len(sc.scripts), pages: 1, promote: sc.promote, noReval: sc.noReval, syncLocal: true, scripts: sc.scripts}
				w := newWorld(t, cfg, d, 0)
				w.fail = func(format string, args ...any) {
					t.Helper()
					t.Fatalf("run %d, choices %v: %s", runs, d.path, fmt.Sprintf(format, args...))
				}
				w.run()
				total.add(w.stats)
				runs++
				if runs%100000 == 0 {
					t.Logf("%d runs, depth %d, %v", runs, len(d.path), time.Since(start))
				}
				if runs >= *dfsLimit {
					t.Logf("stopped at the limit of %d runs", runs)
					break
				}
				if !d.next() {
					break
				}
			}
			t.Logf("%d interleavings in %v: %+v", runs, time.Since(start).Round(time.Millisecond), total)
		})
	}
}
