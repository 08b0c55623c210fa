package collectives

import (
	"context"
	"errors"
	"fmt"
	goruntime "runtime"
	"sync/atomic"
	"testing"
	"time"
	"weak"

	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/runtimetest"
)

// BenchmarkStateOf times the lookup of a World's state when the same World makes call
// after call (the lastState fast path), which every collective call takes.
func BenchmarkStateOf(b *testing.B) {
	w, err := runtime.Init(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	defer w.Finalize(context.Background())
	if _, err := stateOf(w); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := stateOf(w); err != nil {
			b.Fatal(err)
		}
	}
}

// TestStateOfAllocs checks that looking up a known World's state allocates nothing, on
// the fast path (the same World again) and through the map (another World in between).
func TestStateOfAllocs(t *testing.T) {
	ctx := context.Background()
	w, err := runtime.Init(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Finalize(ctx)
	d, err := w.Dup()
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range []*runtime.World{w, d} {
		if _, err := stateOf(x); err != nil {
			t.Fatal(err)
		}
	}
	if n := testing.AllocsPerRun(100, func() { stateOf(w) }); n != 0 {
		t.Errorf("stateOf on the same World: %v allocations, want 0", n)
	}
	if n := testing.AllocsPerRun(100, func() { stateOf(w); stateOf(d) }); n != 0 {
		t.Errorf("stateOf alternating between two Worlds: %v allocations, want 0", n)
	}
}

// TestForgetDroppedWorld checks that a dropped World's entry leaves states and lastState,
// and that its state does not keep it reachable meanwhile.
func TestForgetDroppedWorld(t *testing.T) {
	ctx := context.Background()
	w, err := runtime.Init(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Finalize(ctx)
	var gone atomic.Bool
	key, s := func() (weak.Pointer[runtime.World], *state) {
		d, err := w.Dup()
		if err != nil {
			t.Fatal(err)
		}
		goruntime.AddCleanup(d, func(b *atomic.Bool) { b.Store(true) }, &gone)
		if err := Barrier(ctx, d); err != nil {
			t.Fatal(err)
		}
		s, err := stateOf(d)
		if err != nil {
			t.Fatal(err)
		}
		return weak.Make(d), s
	}()
	if lastState.Load() != s {
		t.Fatal("the dropped World's state is not lastState before GC")
	}
	for deadline := time.Now().Add(testbudget.Scale(5 * time.Second)); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		goruntime.GC()
		if _, ok := states.load(key); gone.Load() && !ok && lastState.Load() != s {
			break
		}
	}
	if !gone.Load() {
		t.Fatal("the dropped World is still reachable after GC")
	}
	if _, ok := states.load(key); ok {
		t.Error("the dropped World's state is still in states")
	}
	if lastState.Load() == s {
		t.Error("the dropped World's state is still lastState")
	}
	// The job's World still finds its state.
	if err := Barrier(ctx, w); err != nil {
		t.Fatal(err)
	}
}

// TestReleaseWaitsForPeers checks that a rank that drops its World does not free the
// shared-memory scratch that a peer still maps: rank 0 drops its Dup'd World while rank 1
// keeps its own; rank 0's World is collected and its mappings of rank 1's scratch closed,
// but its own scratch stays allocated until rank 1 drops its World too, and then both
// ranks' go back.
func TestReleaseWaitsForPeers(t *testing.T) {
	var dropped atomic.Bool
	runJob(t, 2, runtimetest.Options{Transport: "shm"}, 30*time.Second, func(e rankEnv) error {
		// Connect first: the connection's slots and fast box stay in the arena.
		if err := runtime.Barrier(e.ctx, e.w); err != nil {
			return err
		}
		inUse0, mrs0 := runtimetest.ArenaUse(e.w)
		send, recv := make([]float64, 4096), make([]float64, 4096)
		d, err := e.w.Dup()
		if err != nil {
			return err
		}
		if err := Allreduce(e.ctx, d, send, recv, Sum[float64]()); err != nil {
			return err
		}
		if e.r == 0 {
			goruntime.AddCleanup(d, func(b *atomic.Bool) { b.Store(true) }, &dropped)
		}
		if err := runtime.Barrier(e.ctx, e.w); err != nil {
			return err
		}
		var errs []error
		if e.r == 0 {
			d = nil // rank 1 keeps its Dup until the next barrier
			for deadline := time.Now().Add(testbudget.Scale(5 * time.Second)); !dropped.Load() && time.Now().Before(deadline); time.Sleep(time.Millisecond) {
				goruntime.GC()
			}
			// Give the release, and a reaper tick or two, time to do something wrong.
			time.Sleep(50 * time.Millisecond)
			if !dropped.Load() {
				errs = append(errs, errors.New("rank 0's dropped World is still reachable after GC"))
			} else if inUse, mrs := runtimetest.ArenaUse(e.w); inUse <= inUse0 || mrs <= mrs0 {
				errs = append(errs, fmt.Errorf("rank 0 freed its scratch while rank 1 still maps it: arena %d bytes in use and %d live MRs, baseline %d and %d", inUse, mrs, inUse0, mrs0))
			}
		}
		if err := runtime.Barrier(e.ctx, e.w); err != nil {
			return errors.Join(append(errs, err)...)
		}
		if e.r == 1 {
			if err := waitDetached(d, 1, 5*time.Second); err != nil {
				errs = append(errs, err)
			}
		}
		goruntime.KeepAlive(d)
		if err := waitArena(e.w, inUse0, mrs0, 10*time.Second); err != nil {
			errs = append(errs, err)
		}
		return errors.Join(append(errs, runtime.Barrier(e.ctx, e.w))...)
	})
	if err := reaperIdle(5 * time.Second); err != nil {
		t.Error(err)
	}
}

// waitDetached waits, for at most d, until peers peers have let go of the region of w's
// shared-memory group.
func waitDetached(w *runtime.World, peers uint64, d time.Duration) error {
	s, err := stateOf(w)
	if err != nil {
		return err
	}
	g := s.local.world
	var n uint64
	for deadline := time.Now().Add(testbudget.Scale(d)); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if n = uint64(g.Status().Detached); n == peers {
			return nil
		}
	}
	return fmt.Errorf("%d peers let go of this rank's scratch, want %d", n, peers)
}

// waitArena collects garbage until w's arena is back to inUse0 bytes and mrs0 live MRs,
// for at most d.
func waitArena(w *runtime.World, inUse0, mrs0 int64, d time.Duration) error {
	var inUse, mrs int64
	for deadline := time.Now().Add(testbudget.Scale(d)); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		goruntime.GC()
		if inUse, mrs = runtimetest.ArenaUse(w); inUse == inUse0 && mrs == mrs0 {
			return nil
		}
	}
	return fmt.Errorf("arena %d bytes in use and %d live MRs after the dropped Worlds' release, want %d and %d", inUse, mrs, inUse0, mrs0)
}

// reaperIdle waits, for at most d, until no dropped state waits for its peers and the
// reaper's timer has stopped.
func reaperIdle(d time.Duration) error {
	var n int
	var armed bool
	for deadline := time.Now().Add(testbudget.Scale(d)); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		reaper.mu.Lock()
		n, armed = len(reaper.pending), reaper.armed
		reaper.mu.Unlock()
		if n == 0 && !armed {
			return nil
		}
	}
	return fmt.Errorf("reaper: %d dropped states still wait for their peers (timer armed: %v)", n, armed)
}
