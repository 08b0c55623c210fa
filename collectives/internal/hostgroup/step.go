package hostgroup

import (
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/gorma-hpc/gorma/internal/futex"
	"github.com/gorma-hpc/gorma/runtime"
)

// steps is a member's place in the group's step protocol (design.md): the last step
// it published, the big buffers' turn, and what a call that fails at its first step
// goes back to.
type steps struct {
	seq      uint64  // last step published
	turn     bigTurn // the big buffers' turn
	lazy     uint64  // a call's last step, published, that some member may not have published yet (StepLast)
	clean    bool    // the current call failed at its first step, every member left in step (CleanFail)
	call     CallID  // the call that last prepared g: its meta words, Fail's resetMark
	callTurn bigTurn // turn when the current call began (CleanFail)
}

// bigTurn is whose turn each big buffer is.
type bigTurn struct {
	next int       // big buffer of the next step that writes one
	free [2]uint64 // step after which each big buffer's readers are done
}

// Next is the number of the next step: the one the caller publishes next.
func (s *steps) Next() uint64 { return s.seq + 1 }

// TakeBig returns the big buffer for a step v that writes one and whose data is read
// until the members publish step free. It waits for the buffer's previous readers if they
// may not be done (never with the alternation the algorithms use).
func (g *Group) TakeBig(c Call, v, free uint64) (int, error) {
	b := g.turn.next
	g.turn.next ^= 1
	if g.turn.free[b] > v-1 {
		if err := g.waitAll(c, g.turn.free[b], -1); err != nil {
			return 0, err
		}
	}
	g.turn.free[b] = free
	return b, nil
}

// A call's first step carries a meta word:
//
//	bits  0-35  the call's byte count (modulo 64 GiB)
//	bit     36  freshMeta: acquireBig's step under ScratchFresh
//	bits 37-52  the low bits of the call's tag (c.tag: its number, kind and root, see kindTag)
//	bits 53-59  the call's kind (Kind)
//	bits 60-63  the call's root plus 1, 15 for a root of 14 or more (0: no root)
//
// Steps are numbered by the group, not by call. A rank whose call takes no step (a count
// of 0 returns at once) goes on to its next call, whose first step then has the number
// the others' call is waiting for. With the byte count alone, a next call of the same
// count (or the stale meta word of the step two before, under a Barrier, which stores
// none otherwise) passed for the others' call, which then returned a result mixed from
// two calls, as a success. The call number tells them apart; the kind tells a Bcast from
// an Allreduce of as many bytes; kind and root name the other member's call in the error.
const (
	metaBytes     = 1<<36 - 1
	metaCallShift = 37
	metaCallMask  = 1<<16 - 1
	metaKindShift = 53
	metaRootShift = 60
	metaRootMax   = 15
)

// meta is the meta word of call id on vectors of bytes bytes (freshMeta may be set).
func meta(id CallID, bytes int) uint64 {
	root := uint64(0)
	if id.Root >= 0 {
		root = uint64(min(id.Root+1, metaRootMax))
	}
	return root<<metaRootShift | uint64(id.Kind)<<metaKindShift |
		uint64(id.Tag&metaCallMask)<<metaCallShift | uint64(bytes)&(metaBytes|freshMeta)
}

// metaCall is the part of a meta word that names the call (not its byte count).
func metaCall(m uint64) uint64 { return m >> metaCallShift }

// callText describes the call a meta word names, for mismatch errors.
func callText(m uint64) string {
	t := kindName(uint8(m >> metaKindShift & (1<<KindBits - 1)))
	switch r := m >> metaRootShift; {
	case r == metaRootMax:
		t += " (root 14 or more)"
	case r > 0:
		t += fmt.Sprintf(" (root %d)", r-1)
	}
	if b := m & metaBytes; b > 0 {
		t += fmt.Sprintf(" of %d bytes", b)
	}
	return t
}

// SetMeta records the meta word of the call that prepared g (Prepare), with its byte
// count bytes, for step v, the call's first.
func (g *Group) SetMeta(v uint64, bytes int) {
	storeRelease(word(g.mem[g.Me], flagOff(v)+flagMeta), meta(g.call, bytes))
}

// publish announces step v: seq of flag line v&1 = v, with a release store (on amd64 a
// plain store, which does not stall the member until the peers give up the line: it goes
// on to poll them meanwhile), then a ring if someone is seen sleeping on this member.
// Without a fence between the store and the look, a sleeper that counts itself just then
// may be missed while it misses the store. Its first sleep is short (sleepFirst), so
// that costs it at most that, in that rare race.
func (m *mapping) publish(me int, v uint64) {
	b := m.mem[me]
	storeRelease(word(b, flagOff(v)+flagSeq), v)
	if atomic.LoadUint64(word(b, offSleep)) != 0 {
		atomic.AddUint64(word(b, offBell), 1)
		futex.Wake(word(b, offBell), futex.All)
	}
}

// Step publishes v and waits until every member has; bytes >= 0 checks that the members'
// call numbers and byte counts (SetMeta) match.
func (g *Group) Step(c Call, v uint64, bytes int) error {
	return g.StepLast(c, v, bytes, WaitAll)
}

// Whom StepLast waits for: every member, none, or member i (i >= 0).
const (
	WaitAll  = -1
	WaitNone = -2
)

// StepLast publishes v and waits for the members this member reads from in step v: every
// member (WaitAll: step), none, or member only. A step that does not wait for every
// member must be the last of the call on g: the next call's settle waits for the rest
// before any write (so no member rewrites a slot another has yet to read). The wait
// checks the call numbers and byte counts of the members it waits for (bytes >= 0);
// a member that waits for none checks none, and leaves that to those that read its data.
func (g *Group) StepLast(c Call, v uint64, bytes, only int) error {
	g.publish(g.Me, v)
	var err error
	switch only {
	case WaitAll:
		err = g.waitAll(c, v, bytes)
	case WaitNone:
	default:
		if err = g.waiter.wait(c, g, only, v); err == nil && bytes >= 0 {
			err = g.checkMeta(only, v, meta(g.call, bytes))
		}
	}
	if err != nil {
		var ce countErr
		if errors.As(err, &ce) {
			return g.CleanFail(v, err)
		}
		return err
	}
	g.seq = v
	if only != WaitAll {
		g.lazy = v
	}
	return nil
}

// countErr is a mismatch seen at a call's first step v by every member that can see
// it: counts that differ within one call (not another call's number), or a v-form's
// verdict. Every member that saw it published v and no other step of the call, and a
// member that did not see it ended the call with v (StepLast), so the group's steps are
// still in step: CleanFail keeps the group, which needs no new setup.
type countErr struct{ error }

func (e countErr) Unwrap() error { return e.error }

// CleanFail records that the call failed at its first step v without leaving the group
// out of step (countErr): the group keeps its setup, and the big buffers' turn goes
// back to where the call began. localState.fail reads clean.
func (s *steps) CleanFail(v uint64, err error) error {
	s.seq, s.turn, s.clean, s.lazy = v, s.callTurn, true, v
	if _, ok := err.(countErr); ok {
		return err
	}
	return countErr{err}
}

// waitAll waits until every other member has published step v; bytes >= 0 also checks
// their call numbers and byte counts for step v.
func (g *Group) waitAll(c Call, v uint64, bytes int) error {
	// Load every member's flag line first. The loads are independent, so their line
	// transfers overlap; one wait after another would take them one at a time, and a
	// step on many members would cost a transfer per member.
	late := false
	var want uint64 // this call's meta word, once for every member checked
	if bytes >= 0 {
		want = meta(g.call, bytes)
	}
	for i := range g.Ranks {
		if i != g.Me && atomic.LoadUint64(word(g.mem[i], flagOff(v)+flagSeq)) < v {
			late = true
		}
	}
	for i := range g.Ranks {
		if i == g.Me {
			continue
		}
		if late {
			if err := g.waiter.wait(c, g, i, v); err != nil {
				return err
			}
		}
		if bytes < 0 {
			continue
		}
		if err := g.checkMeta(i, v, want); err != nil {
			return err
		}
	}
	return nil
}

// checkMeta checks member i's meta word of step v, a call's first, against want, this
// call's (meta). Another byte count within the same call is a countErr.
func (g *Group) checkMeta(i int, v, want uint64) error {
	got := atomic.LoadUint64(word(g.mem[i], flagOff(v)+flagMeta))
	switch {
	case metaCall(got) != metaCall(want):
		return fmt.Errorf("%w: rank %d is in %s, rank %d in %s (call #%d on this World's numbering): every rank must make its collective calls in the same order, with the same root and counts (a count of 0 returns without a step)",
			runtime.ErrMismatch, g.Ranks[i], callText(got), g.Ranks[g.Me], callText(want), g.call.Number)
	case got != want:
		return countErr{fmt.Errorf("%w: rank %d passed %d bytes to %s, rank %d passed %d (do all ranks pass the same counts?)",
			runtime.ErrMismatch, g.Ranks[i], got&metaBytes, kindName(g.call.Kind), g.Ranks[g.Me], want&metaBytes)}
	}
	return nil
}
