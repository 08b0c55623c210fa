package ulfm

import (
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"slices"
	"testing"
)

// The model checker: every interleaving of a small group's events, every member killed
// at every point up to a number of kills, every prefix of a dead member's queued
// messages delivered. States already seen are skipped (by a 64-bit hash of the state).

type mcState struct {
	n        int
	nodes    []*agreeNode
	q        [][]Msg // by from*n+to
	alive    []bool
	verdicts []bool // by dead*n+to: pending
	kills    int
}

func (a *Agreement) clone() *Agreement {
	c := *a
	c.failed = a.failed.Clone()
	c.heard = a.heard.Clone()
	c.andAcc = slices.Clone(a.andAcc)
	c.failAcc = a.failAcc.Clone()
	return &c
}

// clone copies st but shares its nodes and queue arrays: a successor replaces a node
// before it changes it (own) and never writes into a shared queue array.
func (st *mcState) clone() *mcState {
	return &mcState{n: st.n, nodes: slices.Clone(st.nodes), q: slices.Clone(st.q),
		alive: slices.Clone(st.alive), verdicts: slices.Clone(st.verdicts), kills: st.kills}
}

// own gives st its own copy of node i.
func (st *mcState) own(i int) *agreeNode {
	x := st.nodes[i]
	st.nodes[i] = &agreeNode{a: x.a.clone(), started: x.started, early: slices.Clone(x.early)}
	return st.nodes[i]
}

var mcSeed = maphash.MakeSeed()

// hash hashes everything that decides st's future.
func (st *mcState) hash(buf []byte) (uint64, []byte) {
	b := buf[:0]
	u := func(xs ...uint64) {
		for _, x := range xs {
			b = binary.LittleEndian.AppendUint64(b, x)
		}
	}
	words := func(ws ...[]uint64) {
		for _, w := range ws {
			u(uint64(len(w)))
			u(w...)
		}
	}
	flag := func(f bool) uint64 {
		if f {
			return 1
		}
		return 0
	}
	for _, x := range st.nodes {
		a := x.a
		u(flag(x.started), uint64(a.coord), uint64(a.promise), uint64(a.acc), flag(a.decided),
			flag(a.announced), uint64(a.phase), uint64(a.pending), uint64(a.best), uint64(len(x.early)))
		words(a.failed, a.heard, a.andAcc, a.failAcc, a.accVal.And, a.accVal.Failed, a.decision.And,
			a.decision.Failed, a.bestVal.And, a.bestVal.Failed, a.proposal.And, a.proposal.Failed)
		for _, e := range x.early {
			u(uint64(e.from))
			b = e.m.Append(b)
		}
	}
	for _, q := range st.q {
		u(uint64(len(q)))
		for _, m := range q {
			b = m.Append(b)
		}
	}
	for i := range st.alive {
		u(flag(st.alive[i]))
	}
	for i := range st.verdicts {
		u(flag(st.verdicts[i]))
	}
	u(uint64(st.kills))
	return maphash.Bytes(mcSeed, b), b
}

func (st *mcState) send(from int, out []Send) {
	for _, o := range out {
		if st.alive[o.To] {
			q := st.q[from*st.n+o.To]
			st.q[from*st.n+o.To] = append(q[:len(q):len(q)], o.M)
		}
	}
}

type checker struct {
	n, maxKills int
	contrib     [][]uint64
	seen        map[uint64]bool
	buf         []byte
	states      int
	err         error
}

// succ returns the states one event after st, kills included.
func (c *checker) succ(st *mcState) (next []*mcState, quiet bool) {
	n := st.n
	quiet = true
	for p, q := range st.q {
		if len(q) == 0 {
			continue
		}
		quiet = false
		s := st.clone()
		m := s.q[p][0]
		s.q[p] = s.q[p][1:]
		s.send(p%n, s.own(p%n).recv(p/n, m))
		next = append(next, s)
	}
	for i, x := range st.nodes {
		if st.alive[i] && !x.started {
			quiet = false
			s := st.clone()
			s.send(i, s.own(i).start())
			next = append(next, s)
		}
	}
	for v, ok := range st.verdicts {
		if ok {
			quiet = false
			s := st.clone()
			s.verdicts[v] = false
			s.send(v%n, s.own(v%n).verdict(v/n))
			next = append(next, s)
		}
	}
	if st.kills < c.maxKills {
		for v := range n {
			if st.alive[v] {
				next = append(next, c.killAll(st, v)...)
			}
		}
	}
	return next, quiet
}

// killAll returns the states after v dies, one per choice of the prefixes of v's
// queues that still arrive.
func (c *checker) killAll(st *mcState, v int) []*mcState {
	n := st.n
	base := st.clone()
	base.kills++
	base.alive[v] = false
	for o := range n {
		base.q[o*n+v] = nil
		base.verdicts[o*n+v] = false
		if base.alive[o] {
			base.verdicts[v*n+o] = true
		}
	}
	out := []*mcState{base}
	for o := range n {
		p := v*n + o
		var grown []*mcState
		for _, s := range out {
			for k := 0; k < len(s.q[p]); k++ {
				t := s.clone()
				t.q[p] = t.q[p][:k]
				grown = append(grown, t)
			}
		}
		out = append(out, grown...)
	}
	return out
}

// check tests uniform agreement and, once nothing is left to happen, termination and
// validity.
func (c *checker) check(st *mcState, quiet bool) error {
	var first *Decision
	for i, x := range st.nodes {
		d, ok := x.a.Decided()
		if !ok {
			if quiet && st.alive[i] {
				return fmt.Errorf("live member %d did not decide", i)
			}
			continue
		}
		if d.Failed.Has(i) {
			return fmt.Errorf("member %d decided a failed set that holds itself", i)
		}
		if first == nil {
			first = &d
		} else if !first.Equal(d) {
			return fmt.Errorf("member %d decided %v, another member %v", i, d, *first)
		}
	}
	if quiet && first != nil {
		dead := NewBitmap(st.n)
		for i, ok := range st.alive {
			if !ok {
				dead.Set(i)
			}
		}
		return valid(*first, c.contrib, dead, st.n)
	}
	return nil
}

func (c *checker) explore(st *mcState, depth int) {
	if c.err != nil {
		return
	}
	h, buf := st.hash(c.buf)
	c.buf = buf
	if c.seen[h] {
		return
	}
	c.seen[h] = true
	c.states++
	next, quiet := c.succ(st)
	if err := c.check(st, quiet); err != nil {
		c.err = fmt.Errorf("after %d events: %v", depth, err)
		return
	}
	for _, s := range next {
		c.explore(s, depth+1)
	}
}

func modelCheck(n, maxKills int) (int, error) {
	c := &checker{n: n, maxKills: maxKills, seen: map[uint64]bool{}}
	st := &mcState{n: n, q: make([][]Msg, n*n), alive: make([]bool, n), verdicts: make([]bool, n*n)}
	for i := range n {
		c.contrib = append(c.contrib, contribution(i, n, nil))
		st.nodes = append(st.nodes, &agreeNode{a: NewAgreement(i, n, 0, c.contrib[i], nil)})
		st.alive[i] = true
	}
	c.explore(st, 0)
	return c.states, c.err
}

// TestAgreeModelCheck explores every interleaving of groups of up to 3 members with up
// to 3 kills, and of 4 members with one kill (not with -short or -race). With
// -ulfm.soak it adds 4 members with 2 kills and 5 with 1.
func TestAgreeModelCheck(t *testing.T) {
	cases := []struct{ n, kills int }{{1, 1}, {2, 2}, {3, 1}, {3, 2}, {3, 3}}
	if !testing.Short() && !raceEnabled || *soak {
		cases = append(cases, struct{ n, kills int }{4, 1})
	}
	if *soak {
		cases = append(cases, struct{ n, kills int }{4, 2}, struct{ n, kills int }{5, 1})
	}
	for _, tc := range cases {
		states, err := modelCheck(tc.n, tc.kills)
		if err != nil {
			t.Fatalf("n=%d, up to %d kills: %v", tc.n, tc.kills, err)
		}
		t.Logf("n=%d, up to %d kills: %d states", tc.n, tc.kills, states)
	}
}
