package ulfm

import (
	"fmt"
	"strings"
	"testing"
)

// script drives a group by hand: every message waits in its (sender, receiver) queue
// until a step delivers it, so a test spells out one interleaving.
type script struct {
	t     *testing.T
	n     int
	a     []*Agreement
	q     map[[2]int][]Msg
	dead  []bool
	trace []string
}

func newScript(t *testing.T, n int) *script {
	s := &script{t: t, n: n, q: map[[2]int][]Msg{}, dead: make([]bool, n)}
	for i := range n {
		s.a = append(s.a, NewAgreement(i, n, 1, []uint64{^uint64(0) &^ (1 << i)}, nil))
	}
	return s
}

func (s *script) out(from int, sends []Send) {
	for _, o := range sends {
		s.q[[2]int{from, o.To}] = append(s.q[[2]int{from, o.To}], o.M)
	}
}

// start starts members.
func (s *script) start(ms ...int) {
	for _, m := range ms {
		s.out(m, s.a[m].Start())
	}
}

// deliver delivers the oldest message from->to, which must be of kind k.
func (s *script) deliver(from, to int, k Kind) {
	s.t.Helper()
	q := s.q[[2]int{from, to}]
	if len(q) == 0 || q[0].Kind != k {
		s.t.Fatalf("no %v from %d to %d in flight; queue %v", k, from, to, kinds(q))
	}
	s.q[[2]int{from, to}] = q[1:]
	s.trace = append(s.trace, fmt.Sprintf("%d->%d %v", from, to, k))
	s.out(to, s.a[to].Recv(from, q[0]))
}

// drop loses every message from->to in flight.
func (s *script) drop(from, to int) { delete(s.q, [2]int{from, to}) }

// kill kills member v; its messages in flight stay until delivered or dropped.
func (s *script) kill(v int) { s.dead[v] = true }

// verdict tells member to that member dead failed.
func (s *script) verdict(dead, to int) { s.out(to, s.a[to].Failed(dead)) }

// drain delivers everything in flight to live members, lowest pair first, until quiet.
func (s *script) drain() {
	for more := true; more; {
		more = false
		for f := range s.n {
			for to := range s.n {
				if q := s.q[[2]int{f, to}]; len(q) > 0 && !s.dead[to] {
					s.deliver(f, to, q[0].Kind)
					more = true
				}
			}
		}
	}
}

func kinds(q []Msg) string {
	var b strings.Builder
	for _, m := range q {
		fmt.Fprint(&b, m.Kind, " ")
	}
	return b.String()
}

func (s *script) decided(m int) Decision {
	s.t.Helper()
	d, ok := s.a[m].Decided()
	if !ok {
		s.t.Fatalf("member %d has not decided; trace %v", m, s.trace)
	}
	return d
}

// TestAgreeFailureFreeScript: one Agree of three members, phase by phase.
func TestAgreeFailureFreeScript(t *testing.T) {
	s := newScript(t, 3)
	s.start(0, 1, 2)
	s.deliver(1, 0, KindContrib) // phase 1: contributions to the coordinator, member 0
	s.deliver(2, 0, KindContrib)
	s.deliver(0, 1, KindPropose) // phase 2: every live member accepts the value
	s.deliver(0, 2, KindPropose)
	s.deliver(1, 0, KindAck)
	if _, ok := s.a[0].Decided(); ok {
		t.Fatal("the coordinator decided before every live member accepted")
	}
	s.deliver(2, 0, KindAck)
	s.deliver(0, 1, KindDecide) // phase 3: the decision
	s.deliver(0, 2, KindDecide)
	for m := range 3 {
		if d := s.decided(m); d.And[0] != ^uint64(0)&^0b111 || d.Failed.Len() != 0 {
			t.Fatalf("member %d decided %v, want every bit but 0..2 and no failure", m, d)
		}
	}
}

// TestAgreeLateProposeIgnored: a dead coordinator's Propose that arrives after a newer
// coordinator's Propose must not replace the accepted value, or a survivor could decide
// otherwise than a coordinator that decided and died.
func TestAgreeLateProposeIgnored(t *testing.T) {
	s := newScript(t, 3)
	s.start(0, 1, 2)
	s.deliver(1, 0, KindContrib)
	s.deliver(2, 0, KindContrib)
	s.kill(0) // member 0 proposed; its Propose to 1 is lost, the one to 2 is late
	s.drop(0, 1)
	s.verdict(0, 1) // member 1 takes over and asks member 2
	s.deliver(1, 2, KindQuery)
	s.deliver(2, 1, KindContrib)
	s.deliver(1, 2, KindPropose) // the value without member 0
	s.deliver(2, 1, KindAck)
	v1 := s.decided(1)
	s.kill(1) // member 1 decided and died before its Decide left
	s.drop(1, 2)
	s.deliver(0, 2, KindPropose) // the late Propose of the older ballot
	s.verdict(0, 2)
	s.verdict(1, 2)
	s.drain()
	if d := s.decided(2); !d.Equal(v1) {
		t.Fatalf("member 2 decided %v, member 1 decided %v", d, v1)
	}
}

// TestAgreeDecideReachesSome: the coordinator dies after its Decide reached one member;
// the next coordinator learns the decision from that member's answer to its Query.
func TestAgreeDecideReachesSome(t *testing.T) {
	s := newScript(t, 4)
	s.start(0, 1, 2, 3)
	for m := 1; m < 4; m++ {
		s.deliver(m, 0, KindContrib)
	}
	for m := 1; m < 4; m++ {
		s.deliver(0, m, KindPropose)
		s.deliver(m, 0, KindAck)
	}
	s.deliver(0, 3, KindDecide)
	s.kill(0)
	s.drop(0, 1)
	s.drop(0, 2)
	v := s.decided(3)
	for m := 1; m < 4; m++ {
		s.verdict(0, m)
	}
	s.drain()
	for m := 1; m < 4; m++ {
		if d := s.decided(m); !d.Equal(v) || d.Failed.Len() != 0 {
			t.Fatalf("member %d decided %v, want %v: the dead coordinator contributed before it died", m, d, v)
		}
	}
}
