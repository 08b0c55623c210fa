package collectives

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/collectives/internal/hostgroup"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/runtimetest"
)

func TestParseScratch(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Scratch
		ok   bool
	}{
		{"", ScratchArena, true},
		{"arena", ScratchArena, true},
		{"fresh", ScratchFresh, true},
		{"Fresh", ScratchArena, false},
		{"mmap", ScratchArena, false},
	} {
		got, err := ParseScratch(tc.in)
		if got != tc.want || (err == nil) != tc.ok {
			t.Errorf("ParseScratch(%q) = %v, %v; want %v, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
		if err != nil && (!errors.Is(err, runtime.ErrConfig) || !strings.Contains(err.Error(), EnvScratch)) {
			t.Errorf("ParseScratch(%q): %v does not wrap ErrConfig or name %s", tc.in, err, EnvScratch)
		}
	}
	if ScratchFresh.String() != "fresh" || Scratch(9).String() != "Scratch(9)" {
		t.Errorf("String: %v, %v", ScratchFresh, Scratch(9))
	}
}

// withScratch runs f with the process's policy undecided (as at start-up), restoring
// the default afterwards.
func withScratch(t *testing.T, f func()) {
	t.Cleanup(func() { scratchCur.Store(0); SetScratch(ScratchArena) })
	scratchCur.Store(0)
	f()
}

// TestScratchPolicyEnv: GORMA_SCRATCH is read once; a bad value fails the collective
// calls that take scratch with ErrConfig until SetScratch.
func TestScratchPolicyEnv(t *testing.T) {
	withScratch(t, func() {
		t.Setenv(EnvScratch, "fresh")
		if s, err := ScratchPolicy(); s != ScratchFresh || err != nil {
			t.Fatalf("GORMA_SCRATCH=fresh: %v, %v", s, err)
		}
		t.Setenv(EnvScratch, "arena")
		if s, _ := ScratchPolicy(); s != ScratchFresh {
			t.Fatalf("the variable was read again: %v", s)
		}
	})
	withScratch(t, func() {
		t.Setenv(EnvScratch, "bogus")
		if _, err := ScratchPolicy(); !errors.Is(err, runtime.ErrConfig) {
			t.Fatalf("GORMA_SCRATCH=bogus: %v, want ErrConfig", err)
		}
		runJob(t, 2, runtimetest.Options{Transport: "shm"}, 20*time.Second, func(e rankEnv) error {
			err := Allreduce(e.ctx, e.w, nil, make([]float64, 4), Sum[float64]())
			if !errors.Is(err, runtime.ErrConfig) || !strings.Contains(err.Error(), EnvScratch) {
				return fmt.Errorf("allreduce with GORMA_SCRATCH=bogus: %v, want ErrConfig", err)
			}
			return nil
		})
		SetScratch(ScratchArena)
		if s, err := ScratchPolicy(); s != ScratchArena || err != nil {
			t.Fatalf("after SetScratch: %v, %v", s, err)
		}
	})
}

// freshCounts cross the shm algorithm's boundaries (one step, one chunk, several) and
// give the point-to-point ones uneven blocks.
var freshCounts = []int{0, 7, hostgroup.SmallMax / 8, hostgroup.SmallMax/8 + 1, 3000, 70001}

// checkReleased verifies that no fresh scratch outlives a call.
func checkReleased(e rankEnv) error {
	s, err := stateOf(e.w)
	if err != nil {
		return err
	}
	l := s.local
	if l == nil {
		return nil
	}
	for _, g := range []*hostgroup.Group{l.world, l.onHost} {
		if g == nil {
			continue
		}
		if g.Status().BigHeld {
			return fmt.Errorf("rank %d: fresh big buffers outlive the call, or a peer's are still mapped", e.r)
		}
		if !g.Status().Fresh {
			return fmt.Errorf("rank %d: the shm group is not set up for fresh scratch", e.r)
		}
	}
	return nil
}

// TestAllreduceFreshScratch checks every Allreduce algorithm against the reference with
// scratch acquired per call, that none outlives its call, and that switching back to
// the arena works.
func TestAllreduceFreshScratch(t *testing.T) {
	for _, tc := range []struct {
		name  string
		p     int
		opt   runtimetest.Options
		algos []algo
	}{
		{"shm/p=2", 2, runtimetest.Options{Transport: "shm"}, []algo{algoSHM, algoRabenseifner, algoRing}},
		{"shm/p=3", 3, runtimetest.Options{Transport: "shm"}, []algo{algoSHM, algoRabenseifner, algoRing}},
		{"tcp/p=4", 4, runtimetest.Options{Transport: "tcp"}, []algo{algoRabenseifner, algoRing, algoDirect}},
		{"hier/aabbb", 5, runtimetest.Options{Hosts: []string{"a", "a", "b", "b", "b"}}, []algo{algoHier}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			SetScratch(ScratchFresh)
			t.Cleanup(func() { SetScratch(ScratchArena) })
			start := (freshAcquired.Load() + hostgroup.FreshAcquired())
			defer func() {
				// Each rank, each algorithm, each count from 3000: at least one acquisition.
				if got := (freshAcquired.Load() + hostgroup.FreshAcquired()) - start; got < int64(tc.p*len(tc.algos)*2) {
					t.Errorf("%d fresh acquisitions, want at least %d", got, tc.p*len(tc.algos)*2)
				}
			}()
			runJob(t, tc.p, tc.opt, 60*time.Second, func(e rankEnv) error {
				for _, a := range tc.algos {
					forceAllreduce(e.w, a)
					for k, n := range freshCounts {
						in := k%2 == 0
						for _, err := range []error{
							checkAllreduce(e, floatCases[float64]()[0], n, in),
							checkAllreduce(e, affineCase[int64](), n, !in),
						} {
							if err != nil {
								return fmt.Errorf("%v: %w", a, err)
							}
						}
						if err := checkReleased(e); err != nil {
							return fmt.Errorf("%v, %d elements: %w", a, n, err)
						}
					}
					if err := Barrier(e.ctx, e.w); err != nil {
						return err
					}
				}
				forceAllreduce(e.w, algoAuto)
				if err := Barrier(e.ctx, e.w); err != nil {
					return err
				}
				// Every rank sets it before its next call, so each reads the same value.
				SetScratch(ScratchArena)
				before := (freshAcquired.Load() + hostgroup.FreshAcquired())
				if err := checkAllreduce(e, floatCases[float64]()[0], 70001, false); err != nil {
					return err
				}
				if e.p == 2 && (freshAcquired.Load()+hostgroup.FreshAcquired()) != before {
					return fmt.Errorf("rank %d: fresh scratch acquired under ScratchArena", e.r)
				}
				return nil
			})
		})
	}
}

// TestAllreduceFreshMismatch: different counts fail with ErrMismatch under fresh
// scratch too, and the next (matching) call works.
func TestAllreduceFreshMismatch(t *testing.T) {
	SetScratch(ScratchFresh)
	t.Cleanup(func() { SetScratch(ScratchArena) })
	runJob(t, 3, runtimetest.Options{Transport: "shm"}, 30*time.Second, func(e rankEnv) error {
		for _, n := range []int{5000, 70000} {
			m := n
			if e.r == 1 {
				m++
			}
			err := Allreduce(e.ctx, e.w, make([]int32, m), make([]int32, m), Sum[int32]())
			if !errors.Is(err, ErrMismatch) {
				return fmt.Errorf("n=%d: got %v, want ErrMismatch", n, err)
			}
			if err := checkAllreduce(e, floatCases[float64]()[0], n, false); err != nil {
				return fmt.Errorf("after the mismatch: %w", err)
			}
			if err := checkReleased(e); err != nil {
				return err
			}
		}
		return nil
	})
}

// FuzzParseScratch: every value either names a policy whose String parses back to it,
// or fails with an ErrConfig error naming the variable.
func FuzzParseScratch(f *testing.F) {
	for _, v := range []string{"", "arena", "fresh", "FRESH", "arena ", "\x00"} {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v string) {
		s, err := ParseScratch(v)
		if err != nil {
			if !errors.Is(err, runtime.ErrConfig) || !strings.Contains(err.Error(), EnvScratch) {
				t.Fatalf("ParseScratch(%q): %v", v, err)
			}
			return
		}
		if back, err := ParseScratch(s.String()); err != nil || back != s {
			t.Fatalf("ParseScratch(%q) = %v, which parses back as %v, %v", v, s, back, err)
		}
	})
}
