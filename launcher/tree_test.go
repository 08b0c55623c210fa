package launcher

import (
	"math/rand/v2"
	"slices"
	"testing"
)

func TestTreeShape(t *testing.T) {
	cases := []struct {
		agents, k int
		dead      []int
		pos       int
		parent    int
		children  []int
		depth     int
	}{
		{agents: 1, k: 16, pos: 0, parent: -1, children: []int{1}, depth: 0},
		{agents: 1, k: 16, pos: 1, parent: 0, children: nil, depth: 1},
		{agents: 20, k: 16, pos: 0, parent: -1, children: []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, depth: 0},
		{agents: 20, k: 16, pos: 1, parent: 0, children: []int{17, 18, 19, 20}, depth: 1},
		{agents: 20, k: 16, pos: 20, parent: 1, children: nil, depth: 2},
		{agents: 6, k: 2, pos: 1, parent: 0, children: []int{3, 4}, depth: 1},
		{agents: 6, k: 2, pos: 6, parent: 2, children: nil, depth: 2},
		// A dead node's children go to its parent, in its place.
		{agents: 6, k: 2, dead: []int{1}, pos: 0, parent: -1, children: []int{3, 4, 2}, depth: 0},
		{agents: 6, k: 2, dead: []int{1}, pos: 3, parent: 0, children: nil, depth: 1},
		// Through two dead levels.
		{agents: 14, k: 2, dead: []int{1, 3}, pos: 0, parent: -1, children: []int{7, 8, 4, 2}, depth: 0},
		{agents: 14, k: 2, dead: []int{1, 3}, pos: 7, parent: 0, children: []int{}, depth: 1},
		{agents: 14, k: 2, dead: []int{1, 3}, pos: 9, parent: 4, children: nil, depth: 2},
		// The submitter never dies; a fan-out below 2 is 2.
		{agents: 3, k: 1, dead: []int{0}, pos: 1, parent: 0, children: []int{3}, depth: 1},
	}
	for _, c := range cases {
		tr := newTree(c.agents, c.k)
		for _, p := range c.dead {
			tr.kill(p)
		}
		if got := tr.parent(c.pos); got != c.parent {
			t.Errorf("agents %d k %d dead %v: parent(%d) = %d, want %d", c.agents, c.k, c.dead, c.pos, got, c.parent)
		}
		if got := tr.children(nil, c.pos); len(got)+len(c.children) > 0 && !slices.Equal(got, c.children) {
			t.Errorf("agents %d k %d dead %v: children(%d) = %v, want %v", c.agents, c.k, c.dead, c.pos, got, c.children)
		}
		if got := tr.depth(c.pos); got != c.depth {
			t.Errorf("agents %d k %d dead %v: depth(%d) = %d, want %d", c.agents, c.k, c.dead, c.pos, got, c.depth)
		}
	}
	if h := newTree(1000, 16).height(); h != 3 {
		t.Errorf("1,000 agents at fan-out 16: height %d, want 3", h)
	}
	if h := newTree(1000, 2).height(); h != 9 {
		t.Errorf("1,000 agents at fan-out 2: height %d, want 9", h)
	}
	if got := treeHost(treePos(7)); got != 7 {
		t.Errorf("treeHost(treePos(7)) = %d", got)
	}
}

// Over random dead sets: every live node reaches the submitter, parent and children
// agree, each live node has exactly one parent, and a node's degree grows by at most
// k-1 for each dead node it adopts orphans through.
func TestTreeDeadSets(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 300; trial++ {
		agents := 1 + rng.IntN(300)
		k := 2 + rng.IntN(17)
		tr := newTree(agents, k)
		for range rng.IntN(agents) {
			tr.kill(1 + rng.IntN(agents))
		}
		seen := make([]int, tr.size())
		for p := 0; p < tr.size(); p++ {
			if tr.isDead(p) {
				continue
			}
			kids := tr.children(nil, p)
			adopted := 0 // dead nodes walked through under p
			var walk func(q int)
			walk = func(q int) {
				lo := q*k + 1
				for c := lo; c < lo+k && c < tr.size(); c++ {
					if tr.isDead(c) {
						adopted++
						walk(c)
					}
				}
			}
			walk(p)
			if len(kids) > k+(k-1)*adopted {
				t.Fatalf("agents %d k %d: node %d has %d children through %d dead nodes", agents, k, p, len(kids), adopted)
			}
			for _, c := range kids {
				seen[c]++
				if tr.parent(c) != p {
					t.Fatalf("agents %d k %d: %d is a child of %d, but its parent is %d", agents, k, c, p, tr.parent(c))
				}
			}
			if p > 0 {
				q, hops := p, 0
				for q > 0 && hops <= tr.size() {
					q = tr.parent(q)
					if tr.isDead(q) {
						t.Fatalf("agents %d k %d: the parent chain of %d holds dead %d", agents, k, p, q)
					}
					hops++
				}
				if q != 0 {
					t.Fatalf("agents %d k %d: %d does not reach the submitter", agents, k, p)
				}
			}
		}
		for p := 1; p < tr.size(); p++ {
			if want := map[bool]int{true: 0, false: 1}[tr.isDead(p)]; seen[p] != want {
				t.Fatalf("agents %d k %d: node %d (dead %v) is the child of %d nodes", agents, k, p, tr.isDead(p), seen[p])
			}
		}
	}
}
