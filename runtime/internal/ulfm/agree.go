package ulfm

import (
	"fmt"
	"slices"
)

// Decision is an agreement's value. And is the bitwise AND of the contributions of the
// members it includes. Failed holds every member it does not include, and members that
// some contributor knew failed. A member that never fails is included and not in Failed.
type Decision struct {
	And    []uint64
	Failed Bitmap
}

// Equal reports whether d and e hold the same words; nil and empty are equal.
func (d Decision) Equal(e Decision) bool {
	return slices.Equal(d.And, e.And) && slices.Equal(d.Failed, e.Failed)
}

// phase is a coordinator's progress.
type phase uint8

const (
	idle       phase = iota // not the coordinator, or not started
	collecting              // waiting for a Contrib from every member not known failed
	proposing               // waiting for an Ack from every member not known failed
	done                    // decided
)

// Agreement is one Agree (or Shrink) call at one member of a group: the uniform
// agreement of design.md. Its methods return the messages for the caller to send. An
// Agreement has one owner, who serializes its calls; the slices in what it returns are
// never modified afterwards and must not be modified by the caller.
type Agreement struct {
	me, n   int
	seq     uint32
	contrib []uint64
	failed  Bitmap // members known failed; never me
	started bool
	coord   int    // the lowest member not known failed
	promise uint32 // the highest ballot answered: Query and Propose below it are ignored

	acc    uint32 // ballot of the accepted Propose, 0 if none
	accVal Decision

	decided   bool
	decision  Decision
	announced bool // this member sent Decide to every live member as coordinator

	// The coordinator's state, while coord == me.
	phase    phase
	pending  int    // members neither heard from in this phase nor known failed
	heard    Bitmap // members whose Contrib or Ack this phase counted
	andAcc   []uint64
	failAcc  Bitmap
	best     uint32 // highest accepted ballot reported
	bestVal  Decision
	proposal Decision
}

// NewAgreement returns the Agreement of call seq at member me of a group of n members.
// and is me's contribution: every member's has the same number of words. failed holds
// the members me already knows failed, never me. It panics on arguments outside these
// rules.
func NewAgreement(me, n int, seq uint32, and []uint64, failed Bitmap) *Agreement {
	if n < 1 || n > MaxMembers || me < 0 || me >= n {
		panic(fmt.Sprintf("ulfm: member %d of a group of %d", me, n))
	}
	if len(and) > MaxAndWords {
		panic(fmt.Sprintf("ulfm: member %d contributes %d words, more than %d", me, len(and), MaxAndWords))
	}
	if !failed.fits(n) || failed.Has(me) {
		panic(fmt.Sprintf("ulfm: member %d's failed set %v is not a set of other members of %d", me, failed.Members(), n))
	}
	f := NewBitmap(n)
	f.Union(failed)
	return &Agreement{me: me, n: n, seq: seq, contrib: append([]uint64{}, and...), failed: f}
}

func ballot(c int) uint32 { return uint32(c) + 1 }

// lowestLive returns the lowest member not known failed: me at the latest.
func (a *Agreement) lowestLive() int {
	for i := range a.n {
		if !a.failed.Has(i) {
			return i
		}
	}
	panic("ulfm: unreachable: a member is never known failed to itself")
}

// Start begins the call: me reports to the coordinator, or collects if it is one. Call it
// once, before Recv.
func (a *Agreement) Start() []Send {
	if a.started {
		panic(fmt.Sprintf("ulfm: member %d started agreement %d twice", a.me, a.seq))
	}
	a.started = true
	a.coord = a.lowestLive()
	if a.coord == a.me {
		return a.lead(false)
	}
	a.promise = ballot(a.coord)
	return []Send{a.report(a.coord, a.promise)}
}

// Recv handles m from member from. The caller delivers messages of a seq only after that
// seq's Start, in the order from sent them; it panics on a message of another seq or
// shape, or before Start.
func (a *Agreement) Recv(from int, m Msg) []Send {
	a.check(from, m)
	if m.Kind == KindDecide {
		if !a.decided {
			a.decide(m.Value)
		}
		if a.coord == a.me {
			return a.announce(from)
		}
		return nil
	}
	if a.failed.Has(from) {
		return nil
	}
	if a.decided {
		if m.Kind == KindContrib || m.Kind == KindQuery || m.Kind == KindPropose {
			return []Send{{To: from, M: a.msg(KindDecide, 0, a.decision)}}
		}
		return nil
	}
	switch m.Kind {
	case KindQuery:
		if m.Ballot < a.promise {
			return nil
		}
		a.promise = m.Ballot
		return []Send{a.report(from, m.Ballot)}
	case KindPropose:
		if m.Ballot < a.promise {
			return nil
		}
		a.promise, a.acc, a.accVal = m.Ballot, m.Ballot, m.Value
		return []Send{{To: from, M: a.msg(KindAck, m.Ballot, Decision{})}}
	case KindAck:
		if a.phase != proposing || m.Ballot != ballot(a.me) || a.heard.Has(from) {
			return nil
		}
		a.heard.Set(from)
		a.pending--
		return a.advance()
	case KindContrib:
		if a.phase != collecting || m.Ballot != ballot(a.me) || a.heard.Has(from) {
			return nil
		}
		a.heard.Set(from)
		a.pending--
		a.add(m.Value, m.Accepted, m.AcceptedValue)
		return a.advance()
	}
	return nil
}

// check panics unless m fits a's group, seq and contribution length.
func (a *Agreement) check(from int, m Msg) {
	if err := a.Fits(from, m); err != nil {
		panic(err.Error())
	}
}

// Fits returns nil when m from member from belongs to a, and else why not: a message of
// another agreement, or one whose value has another shape (its sender called another
// operation at the same point). Recv panics on a message that does not fit.
func (a *Agreement) Fits(from int, m Msg) error {
	bad := ""
	switch {
	case !a.started:
		bad = "before Start"
	case from < 0 || from >= a.n || from == a.me:
		bad = "from a member outside the group"
	case m.Seq != a.seq || int(m.N) != a.n || m.Kind == KindRevoke:
		bad = "of another agreement"
	case hasValue(m.Kind) && (len(m.Value.And) != len(a.contrib) || !m.Value.Failed.fits(a.n)):
		bad = "with a value of another shape"
	case m.Accepted != 0 && (len(m.AcceptedValue.And) != len(a.contrib) || !m.AcceptedValue.Failed.fits(a.n)):
		bad = "with an accepted value of another shape"
	default:
		return nil
	}
	return fmt.Errorf("ulfm: member %d of %d, agreement %d: %v seq %d of %d members from %d %s",
		a.me, a.n, a.seq, m.Kind, m.Seq, m.N, from, bad)
}

// Failed tells a that member failed; a verdict must come from a perfect detector.
// Verdicts may come before Start and more than once. It panics if member is me.
func (a *Agreement) Failed(member int) []Send {
	if member < 0 || member >= a.n || member == a.me {
		panic(fmt.Sprintf("ulfm: member %d of %d told that member %d failed", a.me, a.n, member))
	}
	if a.failed.Has(member) {
		return nil
	}
	a.failed.Set(member)
	if !a.started {
		return nil
	}
	if a.coord == a.me {
		if (a.phase == collecting || a.phase == proposing) && !a.heard.Has(member) {
			a.pending--
			return a.advance()
		}
		return nil
	}
	if member != a.coord {
		return nil
	}
	a.coord = a.lowestLive()
	if a.coord == a.me {
		return a.lead(true)
	}
	if a.decided || ballot(a.coord) <= a.promise {
		return nil
	}
	a.promise = ballot(a.coord)
	return []Send{a.report(a.coord, a.promise)}
}

// Decided returns the decision once there is one.
func (a *Agreement) Decided() (Decision, bool) { return a.decision, a.decided }

// lead makes me the coordinator. A coordinator that was a participant (query) asks
// every live member for its state; one that has decided sends the decision instead.
func (a *Agreement) lead(query bool) []Send {
	a.promise = ballot(a.me)
	if a.decided {
		return a.announce(-1)
	}
	a.phase = collecting
	a.heard = NewBitmap(a.n)
	a.andAcc = append([]uint64{}, a.contrib...)
	a.failAcc = a.failed.Clone()
	a.best, a.bestVal = a.acc, a.accVal
	a.pending = 0
	var out []Send
	for i := range a.n {
		if i != a.me && !a.failed.Has(i) {
			a.pending++
			if query {
				out = append(out, Send{To: i, M: a.msg(KindQuery, a.promise, Decision{})})
			}
		}
	}
	return append(out, a.advance()...)
}

// add folds one member's Contrib into the coordinator's collection.
func (a *Agreement) add(v Decision, acc uint32, accVal Decision) {
	for i, w := range v.And {
		a.andAcc[i] &= w
	}
	a.failAcc.Union(v.Failed)
	if acc > a.best {
		a.best, a.bestVal = acc, accVal
	}
}

// advance moves the coordinator on once its phase has heard from every live member.
func (a *Agreement) advance() []Send {
	if a.pending > 0 {
		return nil
	}
	switch a.phase {
	case collecting:
		a.proposal = a.bestVal
		if a.best == 0 {
			a.failAcc.Union(a.failed)
			a.proposal = Decision{And: a.andAcc, Failed: a.failAcc}
		}
		a.acc, a.accVal = ballot(a.me), a.proposal
		a.phase = proposing
		a.heard = NewBitmap(a.n)
		var out []Send
		for i := range a.n {
			if i != a.me && !a.failed.Has(i) {
				a.pending++
				out = append(out, Send{To: i, M: a.msg(KindPropose, a.acc, a.proposal)})
			}
		}
		return append(out, a.advance()...)
	case proposing:
		a.decide(a.proposal)
		return a.announce(-1)
	}
	return nil
}

func (a *Agreement) decide(v Decision) {
	a.decided, a.decision, a.phase = true, v, done
}

// announce sends the decision to every live member but skip, once.
func (a *Agreement) announce(skip int) []Send {
	if a.announced {
		return nil
	}
	a.announced = true
	var out []Send
	for i := range a.n {
		if i != a.me && i != skip && !a.failed.Has(i) {
			out = append(out, Send{To: i, M: a.msg(KindDecide, 0, a.decision)})
		}
	}
	return out
}

// report is me's Contrib to coordinator c of ballot b.
func (a *Agreement) report(c int, b uint32) Send {
	m := a.msg(KindContrib, b, Decision{And: a.contrib, Failed: a.failed.Clone()})
	m.Accepted, m.AcceptedValue = a.acc, a.accVal
	return Send{To: c, M: m}
}

func (a *Agreement) msg(k Kind, b uint32, v Decision) Msg {
	return Msg{Kind: k, Seq: a.seq, N: uint32(a.n), Ballot: b, Value: v}
}
