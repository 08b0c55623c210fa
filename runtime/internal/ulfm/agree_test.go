package ulfm

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// agreeNode is the caller of doc.go: it keeps the messages that arrive before Start.
type agreeNode struct {
	a       *Agreement
	started bool
	early   []early
}

type early struct {
	from int
	m    Msg
}

func (x *agreeNode) start() []Send {
	x.started = true
	out := x.a.Start()
	for _, e := range x.early {
		out = append(out, x.a.Recv(e.from, e.m)...)
	}
	x.early = nil
	return out
}

func (x *agreeNode) recv(from int, m Msg) []Send {
	if !x.started {
		x.early = append(x.early, early{from, m})
		return nil
	}
	return x.a.Recv(from, m)
}

func (x *agreeNode) verdict(dead int) []Send { return x.a.Failed(dead) }

// agreeRun is one simulated agreement.
type agreeRun struct {
	n       int
	seed    uint64
	mode    int
	preDead int // members dead before the agreement, known to some members at NewAgreement
	kills   []kill
}

func (r agreeRun) String() string {
	return fmt.Sprintf("n=%d seed=%d mode=%d preDead=%d kills=%v", r.n, r.seed, r.mode, r.preDead, r.kills)
}

// contribution returns member i's contribution in a group of n: word block 0..Words(n)-1
// has every bit set but bit i, so the AND names the members it includes; the last word
// is random.
func contribution(i, n int, rng *rand.Rand) []uint64 {
	w := make([]uint64, Words(n)+1)
	for j := range Words(n) {
		w[j] = ^uint64(0)
	}
	w[i/64] &^= 1 << (i % 64)
	if rng != nil {
		w[len(w)-1] = rng.Uint64()
	} else {
		w[len(w)-1] = 0x5a5a5a5a5a5a5a5a ^ uint64(i)<<32
	}
	return w
}

// agreeResult is what a run ended with.
type agreeResult struct {
	steps, sent int
}

// runAgree simulates r and checks termination, uniform agreement and validity.
func runAgree(r agreeRun) (agreeResult, error) {
	s := newSim(r.seed, r.n, r.mode)
	contrib := make([][]uint64, r.n)
	for i := range r.n {
		contrib[i] = contribution(i, r.n, s.rng)
	}
	dead := NewBitmap(r.n) // every member that died
	for range r.preDead {
		v := s.rng.IntN(r.n)
		dead.Set(v)
		s.kill(v)
	}
	agreements := make([]*Agreement, r.n)
	for i := range r.n {
		known := NewBitmap(r.n)
		for _, d := range dead.Members() {
			if d != i && s.rng.IntN(2) == 0 {
				known.Set(d)
			}
		}
		agreements[i] = NewAgreement(i, r.n, 7, contrib[i], known)
		s.nodes[i] = &agreeNode{a: agreements[i]}
		if s.alive[i] {
			s.starts = append(s.starts, i)
		}
	}
	decisions := make([]*Decision, r.n)
	var first *Decision
	check := func() error {
		for i, a := range agreements {
			d, ok := a.Decided()
			if !ok {
				continue
			}
			if decisions[i] == nil {
				decisions[i] = &d
				if d.Failed.Has(i) {
					return fmt.Errorf("member %d decided a failed set that holds itself: %v", i, d.Failed.Members())
				}
			}
			if !decisions[i].Equal(d) {
				return fmt.Errorf("member %d's decision changed", i)
			}
			if first == nil {
				first = decisions[i]
			}
			if !first.Equal(d) {
				return fmt.Errorf("member %d decided %v, another member %v", i, d, *first)
			}
		}
		return nil
	}
	err := s.run(r.kills, check)
	for i, ok := range s.alive {
		if !ok {
			dead.Set(i)
		}
	}
	res := agreeResult{steps: s.steps, sent: s.sent}
	if err != nil {
		return res, err
	}
	for i, a := range agreements {
		if _, ok := a.Decided(); s.alive[i] && !ok {
			return res, fmt.Errorf("live member %d did not decide", i)
		}
	}
	if first == nil {
		return res, nil // everyone died
	}
	return res, valid(*first, contrib, dead, r.n)
}

// valid checks a decision against the contributions and the members that died.
func valid(d Decision, contrib [][]uint64, dead Bitmap, n int) error {
	if len(d.And) != Words(n)+1 || !d.Failed.fits(n) {
		return fmt.Errorf("decision of the wrong shape: %v", d)
	}
	last := ^uint64(0)
	for i := range n {
		included := d.And[i/64]&(1<<(i%64)) == 0
		switch {
		case !dead.Has(i) && (!included || d.Failed.Has(i)):
			return fmt.Errorf("member %d never failed, but the decision leaves it out or lists it failed", i)
		case !included && !d.Failed.Has(i):
			return fmt.Errorf("member %d is neither included nor failed", i)
		case d.Failed.Has(i) && !dead.Has(i):
			return fmt.Errorf("member %d is listed failed but never died", i)
		}
		if included {
			last &= contrib[i][len(contrib[i])-1]
		}
	}
	if got := d.And[len(d.And)-1]; got != last {
		return fmt.Errorf("AND of the included members' last words is %#x, decision says %#x", last, got)
	}
	return nil
}

func mustAgree(t *testing.T, r agreeRun) agreeResult {
	t.Helper()
	res, err := runAgree(r)
	if err != nil {
		t.Fatalf("%v: %v", r, err)
	}
	return res
}

// TestAgreeFailureFree: without failures every member decides after 4(n-1) messages.
func TestAgreeFailureFree(t *testing.T) {
	for n := 1; n <= 64; n++ {
		for seed := range uint64(3) {
			res := mustAgree(t, agreeRun{n: n, seed: seed})
			if res.sent != 4*(n-1) {
				t.Fatalf("n=%d seed=%d: %d messages, want 4(n-1) = %d", n, seed, res.sent, 4*(n-1))
			}
		}
	}
}

// TestAgreeKillEveryStep kills each member at each step of a run, for groups of 1 to 5,
// under each fate of the victim's queued messages.
func TestAgreeKillEveryStep(t *testing.T) {
	seeds := uint64(6)
	if testing.Short() {
		seeds = 2
	}
	runs := 0
	for n := 1; n <= 5; n++ {
		for seed := range seeds {
			end := mustAgree(t, agreeRun{n: n, seed: seed}).steps
			for v := range n {
				for k := 0; k <= end; k++ {
					for mode := range modes {
						mustAgree(t, agreeRun{n: n, seed: seed, mode: mode, kills: []kill{{k, v}}})
						runs++
					}
				}
			}
		}
	}
	t.Logf("%d runs", runs)
}

// TestAgreeKillTwo kills two members at every pair of steps, for groups of 3 and 4.
func TestAgreeKillTwo(t *testing.T) {
	stride := 1
	if testing.Short() {
		stride = 3
	}
	runs := 0
	for n := 3; n <= 4; n++ {
		end := mustAgree(t, agreeRun{n: n, seed: 1}).steps
		for v1 := range n {
			for v2 := range n {
				if v2 == v1 {
					continue
				}
				for k1 := 0; k1 <= end; k1 += stride {
					for k2 := k1; k2 <= end; k2 += stride {
						mode := (k1 + k2 + v1) % modes
						mustAgree(t, agreeRun{n: n, seed: uint64(k2), mode: mode, kills: []kill{{k1, v1}, {k2, v2}}})
						runs++
					}
				}
			}
		}
	}
	t.Logf("%d runs", runs)
}

// TestAgreeRandom: groups of up to 64 with up to 3 kills aimed mostly at the coordinator
// and its successor, members dead before the agreement, and runs where all but one die
// or all die.
func TestAgreeRandom(t *testing.T) {
	runs := 2000
	if testing.Short() {
		runs = 300
	}
	if *soak {
		runs = 100000
	}
	rng := rand.New(rand.NewPCG(47, 0))
	for i := range runs {
		n := 1 + rng.IntN(8)
		if rng.IntN(8) == 0 {
			n = 1 + rng.IntN(64)
		}
		r := agreeRun{n: n, seed: uint64(i), mode: rng.IntN(modes)}
		if rng.IntN(5) == 0 {
			r.preDead = 1 + rng.IntN(3)
		}
		nk := rng.IntN(4)
		switch rng.IntN(20) {
		case 0:
			nk = n - 1
		case 1:
			nk = n
		}
		for range nk {
			v := rng.IntN(n)
			switch rng.IntN(4) {
			case 0, 1:
				v = lowestLive
			case 2:
				v = secondLive
			}
			r.kills = append(r.kills, kill{rng.IntN(6*n + 4), v})
		}
		mustAgree(t, r)
	}
}

// TestAgreeAllButOne: a member that every other has left decides alone, whichever
// verdicts come before its Start.
func TestAgreeAllButOne(t *testing.T) {
	for n := 1; n <= 6; n++ {
		for me := range n {
			known := NewBitmap(n)
			for i := range n {
				if i != me {
					known.Set(i)
				}
			}
			a := NewAgreement(me, n, 0, []uint64{0b1011}, known)
			if out := a.Start(); len(out) != 0 {
				t.Fatalf("n=%d me=%d: sent %v with no one alive", n, me, out)
			}
			d, ok := a.Decided()
			if !ok || !slices.Equal(d.And, []uint64{0b1011}) || !slices.Equal(d.Failed.Members(), known.Members()) {
				t.Fatalf("n=%d me=%d: decided %v %v, want its own contribution and the others failed", n, me, d, ok)
			}
		}
	}
}
