package collectives

import (
	"context"
	"errors"
	"fmt"
	goruntime "runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/runtimetest"
)

// Leak tests: many Allreduce calls of growing and shrinking sizes, under both scratch
// policies, and failed calls followed by good ones, checking that each rank's arena
// (bytes in use, live MRs), the Requests and the process's mappings, goroutines and fds
// come back to where they were after a warm-up (arena scratch stays allocated at its
// high-water size by design, so the warm-up reaches the largest size first).

var leakLayouts = []struct {
	name string
	n    int
	opt  runtimetest.Options
}{
	{"shm", 2, runtimetest.Options{Transport: "shm"}},
	{"tcp", 2, runtimetest.Options{Transport: "tcp", Hosts: []string{"a", "b"}}},
	{"hier", 3, runtimetest.Options{Hosts: []string{"a", "a", "b"}}},
}

// leakSizes grow and shrink across the algorithms' thresholds (elements of float64).
var leakSizes = []int{1, 600, 1 << 12, 1 << 16, 1 << 9, 1 << 15, 3, 70_000, 1 << 11}

// checkRank compares a rank's arena with its baseline; rank 0 also checks the process
// (the other ranks wait in a barrier, as they did at the baseline). Every rank takes both
// barriers whatever it finds, so that a failure does not leave the others waiting.
func checkRank(t *testing.T, ctx context.Context, w *runtime.World, what string, inUse0, mrs0 int64, base *atomic.Pointer[runtimetest.Usage]) error {
	if err := runtime.Barrier(ctx, w); err != nil {
		return err
	}
	var errs []error
	if inUse, mrs := runtimetest.ArenaUse(w); inUse != inUse0 || mrs != mrs0 {
		errs = append(errs, fmt.Errorf("after %s: arena %d bytes in use and %d live MRs, want %d and %d", what, inUse, mrs, inUse0, mrs0))
	}
	if w.Rank() == 0 && base != nil {
		b := *base.Load()
		if u := runtimetest.SettleUsage(b); u.Goroutines > b.Goroutines || u.FDs > b.FDs || u.Maps > b.Maps+32 {
			errs = append(errs, fmt.Errorf("after %s: %+v, baseline %+v", what, u, b))
		}
	}
	errs = append(errs, runtime.Barrier(ctx, w))
	return errors.Join(errs...)
}

// leakBufs returns send and recv buffers for every size of leakSizes, made once: the
// runtime's registration cache keeps up to 64 registrations of buffers a rendezvous send
// used, so fresh buffers per call would show up as live MRs up to that bound.
func leakBufs(r int) (send, recv map[int][]float64) {
	send, recv = map[int][]float64{}, map[int][]float64{}
	for _, n := range append(leakSizes, 1<<14, 1<<14+8, 4) {
		send[n], recv[n] = make([]float64, n), make([]float64, n)
		for i := range send[n] {
			send[n][i] = float64(r + i%7)
		}
	}
	return send, recv
}

// TestLeakAllreduceScratch runs Allreduce over growing and shrinking sizes, 15 sweeps
// under each scratch policy, and checks that the arenas, mappings, goroutines and fds are
// where they were after the first sweep.
func TestLeakAllreduceScratch(t *testing.T) {
	const sweeps = 15
	for _, pol := range []Scratch{ScratchArena, ScratchFresh} {
		for _, l := range leakLayouts {
			t.Run(fmt.Sprintf("%v/%s", pol, l.name), func(t *testing.T) {
				SetScratch(pol)
				t.Cleanup(func() { SetScratch(ScratchArena) })
				var base atomic.Pointer[runtimetest.Usage]
				runJob(t, l.n, l.opt, 30*time.Second, func(e rankEnv) error {
					send, recv := leakBufs(e.r)
					sweep := func() error {
						for _, n := range leakSizes {
							if err := Allreduce(e.ctx, e.w, send[n], recv[n], Sum[float64]()); err != nil {
								return fmt.Errorf("%d elements: %w", n, err)
							}
						}
						return nil
					}
					if err := sweep(); err != nil {
						return err
					}
					// Two Barriers: once rank 0 leaves the second, every rank has left the
					// first, whose connections (made on first contact) are then all made.
					for range 2 {
						if err := runtime.Barrier(e.ctx, e.w); err != nil {
							return err
						}
					}
					if e.r == 0 {
						u := runtimetest.MeasureUsage()
						base.Store(&u)
					}
					inUse0, mrs0 := runtimetest.ArenaUse(e.w)
					if err := runtime.Barrier(e.ctx, e.w); err != nil {
						return err
					}
					for range sweeps {
						if err := sweep(); err != nil {
							return err
						}
					}
					return checkRank(t, e.ctx, e.w, fmt.Sprintf("%d sweeps of %d sizes", sweeps, len(leakSizes)), inUse0, mrs0, &base)
				})
			})
		}
	}
}

// TestLeakAllreduceMismatch makes Allreduce calls with mismatched counts (every rank sees
// the mismatch: shm, and recursive doubling on two ranks) followed by good calls, and
// checks that the arena scratch set up again after each failure does not pile up.
func TestLeakAllreduceMismatch(t *testing.T) {
	const cycles = 25
	for _, l := range leakLayouts[:2] {
		t.Run(l.name, func(t *testing.T) {
			runJob(t, l.n, l.opt, 30*time.Second, func(e rankEnv) error {
				send, recv := leakBufs(e.r)
				round := func() error {
					n := 1 << 14
					if e.r == 1 {
						n += 8 // a mismatch every rank sees
					}
					err := Allreduce(e.ctx, e.w, send[n], recv[n], Sum[float64]())
					if !errors.Is(err, ErrMismatch) && !errors.Is(err, runtime.ErrTruncated) {
						return fmt.Errorf("mismatched call returned %v", err)
					}
					if err := runtime.Barrier(e.ctx, e.w); err != nil {
						return err
					}
					for _, n := range []int{4, 1 << 12, 1 << 16} {
						if err := Allreduce(e.ctx, e.w, send[n], recv[n], Sum[float64]()); err != nil {
							return fmt.Errorf("good call after a mismatch: %w", err)
						}
					}
					return nil
				}
				if err := round(); err != nil {
					return err
				}
				if err := runtime.Barrier(e.ctx, e.w); err != nil {
					return err
				}
				inUse0, mrs0 := runtimetest.ArenaUse(e.w)
				for i := range cycles {
					if err := round(); err != nil {
						return fmt.Errorf("cycle %d: %w", i, err)
					}
				}
				return checkRank(t, e.ctx, e.w, fmt.Sprintf("%d mismatched calls each followed by good ones", cycles), inUse0, mrs0, nil)
			})
		})
	}
}

// TestLeakDupWorlds runs collectives on Dup'd Worlds that the program then drops, and
// checks that their state goes: arena bytes in use and live MRs back to the baseline at
// every rank (the shared-memory scratch freed once every rank let go of it), the dropped
// Worlds garbage collected, and the job's own Worlds too once it is finalized (their
// cleanups then find the job finalized and free nothing). Layouts: one host (the shm
// algorithm and Barrier, under both scratch policies), two hosts sharing one (hier: an
// on-host group and the leaders' sub-group) and two hosts of two ranks (lanes: the host's
// and the lane's sub-groups). The vectors are long enough for the shm big buffers and
// short enough to go eager between ranks, so that no registration cache entry counts as
// a live MR. The leak it guards against: a state that keeps every World that made a call,
// with its scratch.
func TestLeakDupWorlds(t *testing.T) {
	const dups = 30
	for _, l := range []struct {
		name  string
		n     int
		opt   runtimetest.Options
		pol   Scratch
		force algo
	}{
		{"shm", 2, runtimetest.Options{Transport: "shm"}, ScratchArena, algoAuto},
		{"shm-fresh", 2, runtimetest.Options{Transport: "shm"}, ScratchFresh, algoAuto},
		{"hier", 3, runtimetest.Options{Hosts: []string{"a", "a", "b"}}, ScratchArena, algoAuto},
		{"lanes", 4, runtimetest.Options{Hosts: []string{"a", "a", "b", "b"}}, ScratchArena, algoLanes},
	} {
		t.Run(l.name, func(t *testing.T) {
			SetScratch(l.pol)
			t.Cleanup(func() { SetScratch(ScratchArena) })
			var live, made atomic.Int64
			track := func(w *runtime.World) {
				made.Add(1)
				live.Add(1)
				goruntime.AddCleanup(w, func(n *atomic.Int64) { n.Add(-1) }, &live)
			}
			runJob(t, l.n, l.opt, 40*time.Second, func(e rankEnv) error {
				send, recv := make([]float64, 4096), make([]float64, 4096)
				// The job's World makes a call too, before the baseline: its state is
				// dropped after Finalize.
				track(e.w)
				if err := Barrier(e.ctx, e.w); err != nil {
					return err
				}
				inUse0, mrs0 := runtimetest.ArenaUse(e.w)
				for range dups {
					if err := dupCycle(e, l.force, send, recv, track); err != nil {
						return err
					}
				}
				if err := runtime.Barrier(e.ctx, e.w); err != nil {
					return err
				}
				err := waitArena(e.w, inUse0, mrs0, 10*time.Second)
				if err != nil {
					err = fmt.Errorf("after collectives on %d dropped Dup'd Worlds: %w", dups, err)
				}
				return errors.Join(err, runtime.Barrier(e.ctx, e.w))
			})
			deadline := time.Now().Add(testbudget.Scale(5 * time.Second))
			for live.Load() > 0 && time.Now().Before(deadline) {
				goruntime.GC()
				time.Sleep(10 * time.Millisecond)
			}
			if n := live.Load(); n > 0 {
				t.Errorf("%d of %d dropped Worlds used for collectives are still reachable after GC", n, made.Load())
			}
			if err := reaperIdle(5 * time.Second); err != nil {
				t.Error(err)
			}
		})
	}
}

// dupCycle makes a Dup of e's World, runs collectives on it and drops it.
func dupCycle(e rankEnv, force algo, send, recv []float64, track func(*runtime.World)) error {
	d, err := e.w.Dup()
	if err != nil {
		return err
	}
	track(d)
	forceAllreduce(d, force)
	if err := Allreduce(e.ctx, d, send, recv, Sum[float64]()); err != nil {
		return err
	}
	if err := Allreduce(e.ctx, d, send[:3], recv[:3], Sum[float64]()); err != nil {
		return err
	}
	if err := Bcast(e.ctx, d, send[:100], 0); err != nil {
		return err
	}
	return Barrier(e.ctx, d)
}
