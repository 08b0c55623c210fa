package ulfm

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

type revokeNode struct{ r *Revoke }

func (x *revokeNode) start() []Send { return x.r.Local() }

func (x *revokeNode) recv(from int, m Msg) []Send {
	if m.Kind != KindRevoke {
		panic(fmt.Sprintf("member %d got %v", from, m.Kind))
	}
	return x.r.Recv(from)
}

func (x *revokeNode) verdict(dead int) []Send {
	x.r.Failed(dead)
	return nil
}

type revokeRun struct {
	n, initiators int
	seed          uint64
	mode          int
	kills         []kill
}

// runRevoke simulates r: initiators call Local at random points. It checks that the
// live members end all revoked or none, all if a live member called Local, and none if
// no member did.
func runRevoke(r revokeRun) (sent int, err error) {
	s := newSim(r.seed, r.n, r.mode)
	rev := make([]*Revoke, r.n)
	for i := range r.n {
		rev[i] = NewRevoke(i, r.n, nil)
		s.nodes[i] = &revokeNode{rev[i]}
	}
	s.starts = append(s.starts, s.rng.Perm(r.n)[:r.initiators]...)
	initiators := append([]int(nil), s.starts...)
	if err := s.run(r.kills, func() error { return nil }); err != nil {
		return s.sent, err
	}
	called, liveCalled := false, false
	for _, m := range initiators {
		if rev[m].Revoked() {
			called = true
			liveCalled = liveCalled || s.alive[m]
		}
	}
	revoked, live := 0, 0
	for i, ok := range s.alive {
		if rev[i].Revoked() && !called {
			return s.sent, fmt.Errorf("member %d is revoked, but no member called Local", i)
		}
		if ok {
			live++
			if rev[i].Revoked() {
				revoked++
			}
		}
	}
	if revoked != 0 && revoked != live || liveCalled && revoked != live {
		return s.sent, fmt.Errorf("%d of %d live members revoked", revoked, live)
	}
	return s.sent, nil
}

// TestRevokeFailureFree: one Local reaches every member in (n-1)^2 messages.
func TestRevokeFailureFree(t *testing.T) {
	for _, n := range []int{1, 2, 3, 4, 5, 8, 17, 64} {
		sent, err := runRevoke(revokeRun{n: n, initiators: 1, seed: uint64(n)})
		if err != nil || sent != (n-1)*(n-1) {
			t.Fatalf("n=%d: %d messages (want (n-1)^2 = %d), %v", n, sent, (n-1)*(n-1), err)
		}
	}
}

// TestRevokeKillEveryStep kills each member at each step, initiators included.
func TestRevokeKillEveryStep(t *testing.T) {
	for n := 1; n <= 5; n++ {
		for init := 0; init <= 2 && init <= n; init++ {
			for seed := range uint64(4) {
				for v := range n {
					for k := 0; k <= (n-1)*(n-1)+init+1; k++ {
						for mode := range modes {
							r := revokeRun{n: n, initiators: init, seed: seed, mode: mode, kills: []kill{{k, v}}}
							if _, err := runRevoke(r); err != nil {
								t.Fatalf("%+v: %v", r, err)
							}
						}
					}
				}
			}
		}
	}
}

// TestRevokeRandom: groups of up to 64, most of up to 8, with up to three kills, or all
// but one.
func TestRevokeRandom(t *testing.T) {
	runs := 1000
	if testing.Short() {
		runs = 200
	}
	if *soak {
		runs = 50000
	}
	rng := rand.New(rand.NewPCG(48, 0))
	for i := range runs {
		n := 1 + rng.IntN(8)
		if rng.IntN(16) == 0 {
			n = 1 + rng.IntN(64)
		}
		r := revokeRun{n: n, initiators: rng.IntN(min(n, 3) + 1), seed: uint64(i), mode: rng.IntN(modes)}
		nk := rng.IntN(4)
		if rng.IntN(10) == 0 {
			nk = n - 1
		}
		for range nk {
			r.kills = append(r.kills, kill{rng.IntN(n*n + 4), rng.IntN(n)})
		}
		if _, err := runRevoke(r); err != nil {
			t.Fatalf("%+v: %v", r, err)
		}
	}
}
