package ulfm

import (
	"fmt"
	"math/rand/v2"
	"slices"
)

// The simulator: a seeded model of the network and detector of doc.go's model. Each step
// runs one event chosen at random among the heads of the non-empty (sender, receiver)
// queues, the members yet to start, and the verdicts yet to be delivered. A kill
// schedule kills members before given steps.

// simNode is a machine under simulation, seen by the simulator.
type simNode interface {
	start() []Send
	recv(from int, m Msg) []Send
	verdict(dead int) []Send
}

// Dead members' queued messages: dropped, delivered, or a random prefix per receiver
// delivered.
const (
	dropAll = iota
	keepAll
	keepPrefix
	modes
)

// victim values that name a member by its rank among the live ones at the kill.
const (
	lowestLive = -1 // the coordinator of a member that knows every failure
	secondLive = -2 // the next coordinator
)

type kill struct{ step, victim int }

type verdictEv struct{ dead, to int }

type sim struct {
	rng      *rand.Rand
	n        int
	nodes    []simNode
	alive    []bool
	q        [][][]byte // by from*n+to: wire forms in flight, oldest first
	active   []int      // pairs with a non-empty queue
	pos      []int      // by pair: index in active, or -1
	starts   []int      // members to start
	verdicts []verdictEv
	mode     int
	sched    int       // how events are chosen: byChance, slowPairs or byPriority
	slow     []bool    // by channel (see channel): slowPairs passes these over
	prio     []float64 // by channel: byPriority's order
	sent     int       // messages sent by live members
	steps    int
}

func newSim(seed uint64, n, mode int) *sim {
	s := &sim{rng: rand.New(rand.NewPCG(seed, uint64(n)<<8|uint64(mode))), n: n, mode: mode,
		nodes: make([]simNode, n), alive: make([]bool, n), q: make([][][]byte, n*n), pos: make([]int, n*n),
		slow: make([]bool, 2*n*n+n), prio: make([]float64, 2*n*n+n)}
	s.sched = s.rng.IntN(schedules)
	for i := range s.slow {
		s.slow[i] = s.rng.IntN(3) == 0
	}
	for i := range s.prio {
		s.prio[i] = s.rng.Float64()
	}
	for i := range s.alive {
		s.alive[i] = true
	}
	for i := range s.pos {
		s.pos[i] = -1
	}
	return s
}

func (s *sim) send(from int, out []Send) error {
	for _, o := range out {
		if o.To < 0 || o.To >= s.n || o.To == from {
			return fmt.Errorf("member %d sent %v to member %d", from, o.M.Kind, o.To)
		}
		s.sent++
		if !s.alive[o.To] {
			continue
		}
		p := from*s.n + o.To
		s.q[p] = append(s.q[p], o.M.Append(nil))
		if s.pos[p] < 0 {
			s.pos[p] = len(s.active)
			s.active = append(s.active, p)
		}
	}
	return nil
}

func (s *sim) unqueue(p int) {
	i := s.pos[p]
	last := s.active[len(s.active)-1]
	s.active[i], s.pos[last] = last, i
	s.active = s.active[:len(s.active)-1]
	s.pos[p] = -1
	s.q[p] = nil
}

// kill kills member v: its queued messages go as s.mode says, every live member gets a
// verdict later (some twice), and messages to it vanish.
func (s *sim) kill(v int) {
	if !s.alive[v] {
		return
	}
	s.alive[v] = false
	s.starts = slices.DeleteFunc(s.starts, func(m int) bool { return m == v })
	s.verdicts = slices.DeleteFunc(s.verdicts, func(e verdictEv) bool { return e.to == v })
	for o := range s.n {
		if in := o*s.n + v; s.pos[in] >= 0 {
			s.unqueue(in)
		}
		out := v*s.n + o
		if s.pos[out] >= 0 {
			switch s.mode {
			case dropAll:
				s.unqueue(out)
			case keepPrefix:
				if k := s.rng.IntN(len(s.q[out]) + 1); k == 0 {
					s.unqueue(out)
				} else {
					s.q[out] = s.q[out][:k]
				}
			}
		}
		if s.alive[o] {
			s.verdicts = append(s.verdicts, verdictEv{v, o})
			if s.rng.IntN(4) == 0 {
				s.verdicts = append(s.verdicts, verdictEv{v, o})
			}
		}
	}
}

// live returns the i-th live member, lowest first, or -1.
func (s *sim) live(i int) int {
	for m, ok := range s.alive {
		if ok {
			if i == 0 {
				return m
			}
			i--
		}
	}
	return -1
}

// The schedules: every event equally likely; the same, with the events of one pair in
// three passed over most of the time; or the event of the highest priority, the chosen
// one's priority drawn again one time in ten (so that a pair or verdict can be held back
// for long, as in probabilistic concurrency testing).
const (
	byChance = iota
	slowPairs
	byPriority
	schedules
)

// channel returns the index in slow and prio of event e's source.
func (s *sim) channel(e int) int {
	if e < len(s.active) {
		return s.active[e]
	}
	if e -= len(s.active); e < len(s.starts) {
		return 2*s.n*s.n + s.starts[e]
	}
	v := s.verdicts[e-len(s.starts)]
	return s.n*s.n + v.dead*s.n + v.to
}

// pick chooses one of total events as s.sched says.
func (s *sim) pick(total int) int {
	switch s.sched {
	case byPriority:
		e := 0
		for i := 1; i < total; i++ {
			if s.prio[s.channel(i)] > s.prio[s.channel(e)] {
				e = i
			}
		}
		if s.rng.IntN(10) == 0 {
			s.prio[s.channel(e)] = s.rng.Float64()
		}
		return e
	case slowPairs:
		e := s.rng.IntN(total)
		for try := 0; try < 3 && s.slow[s.channel(e)] && s.rng.IntN(8) != 0; try++ {
			e = s.rng.IntN(total)
		}
		return e
	}
	return s.rng.IntN(total)
}

// step runs one event; false when none is left.
func (s *sim) step() (bool, error) {
	total := len(s.active) + len(s.starts) + len(s.verdicts)
	if total == 0 {
		return false, nil
	}
	s.steps++
	e := s.pick(total)
	switch {
	case e < len(s.active):
		p := s.active[e]
		from, to := p/s.n, p%s.n
		b := s.q[p][0]
		if s.q[p] = s.q[p][1:]; len(s.q[p]) == 0 {
			s.unqueue(p)
		}
		m, err := Decode(b)
		if err != nil {
			return false, fmt.Errorf("member %d's message to %d: %v", from, to, err)
		}
		return true, s.send(to, s.nodes[to].recv(from, m))
	case e < len(s.active)+len(s.starts):
		e -= len(s.active)
		m := s.starts[e]
		s.starts = slices.Delete(s.starts, e, e+1)
		return true, s.send(m, s.nodes[m].start())
	default:
		e -= len(s.active) + len(s.starts)
		v := s.verdicts[e]
		s.verdicts[e] = s.verdicts[len(s.verdicts)-1]
		s.verdicts = s.verdicts[:len(s.verdicts)-1]
		return true, s.send(v.to, s.nodes[v.to].verdict(v.dead))
	}
}

// run steps until no event is left, killing as kills say and calling check after every
// step.
func (s *sim) run(kills []kill, check func() error) error {
	limit := 200*s.n*s.n + 1000
	for {
		for _, k := range kills {
			if k.step != s.steps {
				continue
			}
			v := k.victim
			switch v {
			case lowestLive:
				v = s.live(0)
			case secondLive:
				v = s.live(1)
			}
			if v >= 0 {
				s.kill(v)
			}
		}
		more, err := s.step()
		if err != nil {
			return fmt.Errorf("step %d: %v", s.steps, err)
		}
		if !more {
			return nil
		}
		if err := check(); err != nil {
			return fmt.Errorf("step %d: %v", s.steps, err)
		}
		if s.steps > limit {
			return fmt.Errorf("no quiescence after %d steps", s.steps)
		}
	}
}
