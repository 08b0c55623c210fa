package window_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/collectives"
	"github.com/gorma-hpc/gorma/internal/prof"
	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/internal/trace"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/runtimetest"
	"github.com/gorma-hpc/gorma/runtime/substrate"
	"github.com/gorma-hpc/gorma/window"
)

// observeEnv switches on the profile and the timeline of a test job's ranks.
func observeEnv(t *testing.T) map[string]string {
	return runtimetest.ObserveBoth(t.TempDir())
}

// TestObserveRMA: with the profile on, every RMA call counts at the origin the bytes it
// sends to its target (put; a Get's request is empty) and brings back (get), one message
// each, and one call of its kind; synchronization calls count as calls. The timeline holds an RMA event per
// operation naming its target, and an Epoch event per synchronization call and per epoch.
func TestObserveRMA(t *testing.T) {
	for _, tr := range []string{"shm", "tcp"} {
		t.Run(tr, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(30*time.Second))
			defer cancel()
			opt := runtimetest.Options{Transport: tr, Env: observeEnv(t)}
			runtimetest.Run(t, 4, opt, func(w *runtime.World) error { return observeRMA(ctx, w) })
		})
	}
}

// observeRMA runs the calls of TestObserveRMA at one rank: all go to its right
// neighbour, but the Get from its left one.
func observeRMA(ctx context.Context, w *runtime.World) error {
	o, _ := substrate.Observe(w)
	if o == nil || o.Prof == nil || o.Rec == nil {
		return fmt.Errorf("observer %v: want the profile and the timeline on", o)
	}
	win, err := window.Allocate[int64](ctx, w, 16)
	if err != nil {
		return err
	}
	me, p := w.Rank(), w.Size()
	next, prev := (me+1)%p, (me+p-1)%p
	before := o.Profile()
	var old int64
	steps := []func() error{
		func() error { return win.Fence(ctx, 0) },
		func() error { return win.Put(make([]int64, 5), next, 0) }, // put 40
		func() error { return win.Fence(ctx, 0) },
		func() error { return win.Get(make([]int64, 3), prev, 0) }, // get 24 from prev
		func() error { return win.Fence(ctx, window.NoSucceed) },
		func() error { return win.Lock(ctx, window.Exclusive, next, 0) },
		func() error { return win.FetchAndOp(1, &old, next, 0, collectives.Sum[int64]()) },          // put 8, get 8
		func() error { return win.CompareAndSwap(2, 1, &old, next, 1) },                             // put 8, get 8
		func() error { return win.Accumulate(make([]int64, 2), next, 2, collectives.Sum[int64]()) }, // put 16
		func() error { // put 16, get 16
			return win.GetAccumulate(make([]int64, 2), make([]int64, 2), next, 4, collectives.Sum[int64]())
		},
		func() error { return win.Unlock(ctx, next) },
		func() error { return win.LockAll(ctx, 0) },
		func() error { return wait(win.Rput(make([]int64, 1), next, 6)) }, // put 8
		func() error { return wait(win.Rget(make([]int64, 1), next, 7)) }, // get 8
		func() error { return win.UnlockAll(ctx) },
		func() error { return win.Post(ctx, []int{prev}, 0) },
		func() error { return win.Start(ctx, []int{next}, 0) },
		func() error { return win.Put(make([]int64, 1), next, 8) }, // put 8
		func() error { return win.Complete(ctx) },
		func() error { return win.Wait(ctx) },
	}
	for i, step := range steps {
		if err := step(); err != nil {
			return fmt.Errorf("step %d: %w", i, err)
		}
	}
	after := o.Profile()
	if err := win.Free(ctx); err != nil {
		return err
	}
	for q := range p {
		want := [2][2]uint64{} // put, get: bytes, messages
		if q == next {
			want = [2][2]uint64{{40 + 8 + 8 + 16 + 16 + 8 + 0 + 8, 8}, {8 + 8 + 16 + 8, 4}}
		}
		if q == prev { // a Get sends an empty request
			want = [2][2]uint64{{0, 1}, {24, 1}}
		}
		for i, row := range []struct{ a, b prof.Row }{{after.Put, before.Put}, {after.Get, before.Get}} {
			got := [2]uint64{row.a.Bytes[q] - row.b.Bytes[q], row.a.Msgs[q] - row.b.Msgs[q]}
			if got != want[i] {
				return fmt.Errorf("rank %d, %s row, peer %d: %d bytes in %d messages, want %v",
					me, []string{"put", "get"}[i], q, got[0], got[1], want[i])
			}
		}
	}
	calls := map[prof.CallKind][2]uint64{ // calls, bytes
		prof.CallPut: {3, 56}, prof.CallGet: {2, 32}, prof.CallAccumulate: {1, 16},
		prof.CallGetAccumulate: {1, 32}, prof.CallFetchAndOp: {1, 16}, prof.CallCompareAndSwap: {1, 16},
		prof.CallFence: {3, 0}, prof.CallLock: {2, 0}, prof.CallUnlock: {2, 0}, prof.CallPost: {1, 0},
		prof.CallStart: {1, 0}, prof.CallComplete: {1, 0}, prof.CallWaitEpoch: {1, 0},
	}
	for k, want := range calls {
		a, b := after.Call(k), before.Call(k)
		if got := [2]uint64{a.Calls - b.Calls, a.Bytes - b.Bytes}; got != want {
			return fmt.Errorf("rank %d: %v: %d calls of %d bytes, want %v", me, k, got[0], got[1], want)
		}
	}
	return checkWindowTimeline(o.Rec.Snapshot(), prev, next)
}

func wait(r *window.Request, err error) error {
	if err != nil {
		return err
	}
	return r.Wait(context.Background())
}

// checkWindowTimeline checks the RMA and Epoch events of observeRMA at a rank whose
// neighbours are prev and next: 8 RMA events on next and one on prev, the
// synchronization calls, and the epochs: two of Fence, one of Lock on next, one of
// LockAll, one of access, one of exposure.
func checkWindowTimeline(d trace.Dump, prev, next int) error {
	rma, epochs := map[int]int{}, map[string]int{}
	for _, ev := range d.Events {
		switch ev.Kind {
		case trace.RMA:
			rma[int(ev.Peer)]++
		case trace.Epoch:
			epochs[d.Labels[ev.Label]]++
			if d.Labels[ev.Label] == "epoch lock" && int(ev.Peer) != next {
				return fmt.Errorf("Lock epoch on %d, want %d", ev.Peer, next)
			}
		}
	}
	want := map[string]int{"Fence": 3, "Lock": 1, "Unlock": 1, "LockAll": 1, "UnlockAll": 1, "Post": 1,
		"Start": 1, "Complete": 1, "WaitEpoch": 1, "epoch fence": 2, "epoch lock": 1, "epoch lock_all": 1,
		"epoch access": 1, "epoch exposure": 1}
	if rma[next] != 8 || rma[prev] != 1 || len(rma) != 2 || fmt.Sprint(epochs) != fmt.Sprint(want) {
		return fmt.Errorf("RMA events by peer %v, Epoch events %v; want 8 on %d, 1 on %d and %v", rma, epochs, next, prev, want)
	}
	return nil
}

// TestObserveRMASubWorld: on a window over some ranks of the job, the counts and the
// events name the target by its job rank.
func TestObserveRMASubWorld(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(30*time.Second))
	defer cancel()
	opt := runtimetest.Options{Transport: "shm", Env: observeEnv(t)}
	runtimetest.Run(t, 4, opt, func(w *runtime.World) error {
		me := w.Rank()
		sub, err := w.Split(ctx, me%2, -me) // reversed: job rank 3 is rank 0 of the odd World
		if err != nil {
			return err
		}
		defer sub.Free()
		o, _ := substrate.Observe(sub)
		win, err := window.Allocate[int32](ctx, sub, 4)
		if err != nil {
			return err
		}
		before := o.Profile()
		other := 1 - sub.Rank() // the other rank of the sub-World: job rank me^2
		if err := win.Lock(ctx, window.Shared, other, 0); err != nil {
			return err
		}
		if err := win.Put(make([]int32, 3), other, 0); err != nil {
			return err
		}
		if err := win.Unlock(ctx, other); err != nil {
			return err
		}
		after := o.Profile()
		if err := win.Free(ctx); err != nil {
			return err
		}
		for q := range w.Size() {
			want := uint64(0)
			if q == me^2 {
				want = 12
			}
			if got := after.Put.Bytes[q] - before.Put.Bytes[q]; got != want {
				return fmt.Errorf("job rank %d, put to %d: %d bytes, want %d", me, q, got, want)
			}
		}
		for _, ev := range o.Rec.Snapshot().Events {
			if ev.Kind == trace.RMA && int(ev.Peer) != me^2 {
				return fmt.Errorf("job rank %d: RMA event on %d, want %d", me, ev.Peer, me^2)
			}
		}
		return nil
	})
}

// TestObserveRMAAllocs: observed, the RMA calls and a Flush on a mapped target allocate
// nothing.
func TestObserveRMAAllocs(t *testing.T) {
	if testing.CoverMode() != "" {
		t.Skip("coverage counters allocate")
	}
	ctx := context.Background()
	runtimetest.Run(t, 2, runtimetest.Options{Transport: "shm", Env: observeEnv(t)}, func(w *runtime.World) error {
		win, err := window.Allocate[int64](ctx, w, 4)
		if err != nil {
			return err
		}
		if w.Rank() == 0 {
			if err := win.Lock(ctx, window.Shared, 1, 0); err != nil {
				return err
			}
			sum := collectives.Sum[int64]()
			one, res := []int64{1, 1}, make([]int64, 2)
			var old int64
			for name, f := range map[string]func(){
				"put":              func() { win.Put(one, 1, 0) },
				"get":              func() { win.Get(res, 1, 0) },
				"accumulate":       func() { win.Accumulate(one, 1, 0, sum) },
				"get_accumulate":   func() { win.GetAccumulate(one, res, 1, 0, sum) },
				"fetch_and_op":     func() { win.FetchAndOp(1, &old, 1, 2, sum) },
				"compare_and_swap": func() { win.CompareAndSwap(1, old, &old, 1, 3) },
				"flush":            func() { win.Flush(ctx, 1) },
			} {
				if n := testing.AllocsPerRun(500, f); n != 0 {
					return fmt.Errorf("%s: %v allocations per call", name, n)
				}
			}
			if err := win.Unlock(ctx, 1); err != nil {
				return err
			}
		}
		if err := runtime.Barrier(ctx, w); err != nil {
			return err
		}
		return win.Free(ctx)
	})
}

// TestObserveCreate: creating and freeing a window counts none of the collective calls
// it makes on the window's internal World (its exchange, its Barriers) as the user's,
// nor their data.
func TestObserveCreate(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(30*time.Second))
	defer cancel()
	opt := runtimetest.Options{Env: observeEnv(t)}
	runtimetest.Run(t, 3, opt, func(w *runtime.World) error {
		o, _ := substrate.Observe(w)
		before := o.Profile()
		win, err := window.Allocate[int64](ctx, w, 16)
		if err != nil {
			return err
		}
		if err := win.Free(ctx); err != nil {
			return err
		}
		after := o.Profile()
		for k := range prof.NumCalls {
			if n := after.Call(k).Calls - before.Call(k).Calls; n != 0 {
				return fmt.Errorf("rank %d: Allocate and Free counted %d %v calls, want none", w.Rank(), n, k)
			}
		}
		for q := range w.Size() {
			if n := after.Coll.Bytes[q] - before.Coll.Bytes[q]; n != 0 {
				return fmt.Errorf("rank %d: Allocate and Free counted %d collective bytes to rank %d, want none", w.Rank(), n, q)
			}
		}
		return nil
	})
}
