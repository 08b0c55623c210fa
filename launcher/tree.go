package launcher

// The agent tree of a job: each node talks to its parent and at most k children, so no
// node handles a frame per agent. It is a pure function of the agent count, the fan-out
// and the dead set, as the roster is: every node computes it, and nobody negotiates it.
//
// Positions: the submitter is 0 and the roster's host i is i + 1. With fan-out k the
// parent of position p is (p-1)/k. A dead node's children take its nearest live
// ancestor as their parent; the submitter never dies.

// tree is the agent tree of one job. The zero dead set means every agent lives.
type tree struct {
	agents int    // hosts in the roster; positions run from 0 to agents
	fanout int    // k ≥ 2
	dead   []bool // by position; nil or shorter means alive
}

// newTree returns the tree of agents hosts with fan-out k (at least 2).
func newTree(agents, k int) *tree {
	return &tree{agents: agents, fanout: max(k, 2)}
}

// treePos is the position of the roster's host i.
func treePos(host int) int { return host + 1 }

// treeHost is the roster's host at position p ≥ 1.
func treeHost(p int) int { return p - 1 }

// size is the number of positions, the submitter's included.
func (t *tree) size() int { return t.agents + 1 }

// isDead reports whether the node at p was declared dead.
func (t *tree) isDead(p int) bool { return p > 0 && p < len(t.dead) && t.dead[p] }

// kill marks the node at p dead. The submitter cannot die.
func (t *tree) kill(p int) {
	if p <= 0 || p >= t.size() {
		return
	}
	if t.dead == nil {
		t.dead = make([]bool, t.size())
	}
	t.dead[p] = true
}

// parent returns the nearest live ancestor of p, or -1 for the submitter.
func (t *tree) parent(p int) int {
	if p == 0 {
		return -1
	}
	q := (p - 1) / t.fanout
	for t.isDead(q) {
		q = (q - 1) / t.fanout
	}
	return q
}

// children appends to dst the live nodes whose parent is p, in ascending order of
// position within each level of dead nodes walked through, and returns it.
func (t *tree) children(dst []int, p int) []int {
	lo := p*t.fanout + 1
	for c := lo; c < lo+t.fanout && c < t.size(); c++ {
		if t.isDead(c) {
			dst = t.children(dst, c) // the orphans of a dead child are p's
			continue
		}
		dst = append(dst, c)
	}
	return dst
}

// depth returns the number of live edges from p up to the submitter.
func (t *tree) depth(p int) int {
	d := 0
	for p > 0 {
		p = t.parent(p)
		d++
	}
	return d
}

// height returns the largest depth of a live node: the hops a fence takes one way.
func (t *tree) height() int {
	h := 0
	for p := 1; p < t.size(); p++ {
		if !t.isDead(p) {
			h = max(h, t.depth(p))
		}
	}
	return h
}
