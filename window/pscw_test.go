package window_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/pmi"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/runtimetest"
	"github.com/gorma-hpc/gorma/window"
)

// TestPSCWRing: each rank exposes its window to its left neighbour and accesses its right
// one, 100 times with changing data; the target checks after each Wait.
func TestPSCWRing(t *testing.T) {
	forLayouts(t, func(ctx context.Context, w *runtime.World) error {
		const n, rounds = 64, 100
		win, err := window.Allocate[int64](ctx, w, n)
		if err != nil {
			return err
		}
		me, size := w.Rank(), w.Size()
		left, right := (me-1+size)%size, (me+1)%size
		src := make([]int64, n)
		got := make([]int64, 1)
		for round := range rounds {
			for i := range src {
				src[i] = int64(round*1_000_000 + me*1000 + i)
			}
			if err := win.Post(ctx, []int{left}, 0); err != nil {
				return err
			}
			if err := win.Start(ctx, []int{right}, 0); err != nil {
				return err
			}
			if err := win.Put(src, right, 0); err != nil {
				return err
			}
			if err := win.Get(got, right, n-1); err != nil {
				return err
			}
			if err := win.Complete(ctx); err != nil {
				return err
			}
			if err := win.Wait(ctx); err != nil {
				return err
			}
			// Put and Get of one epoch are unordered: this round's value or the last one's.
			cur := int64(round*1_000_000 + me*1000 + n - 1)
			prev := cur - 1_000_000
			if round == 0 {
				prev = 0
			}
			if got[0] != cur && got[0] != prev {
				return fmt.Errorf("round %d: get from rank %d = %d, want %d or %d", round, right, got[0], cur, prev)
			}
			for i, v := range win.Local() {
				if want := int64(round*1_000_000 + left*1000 + i); v != want {
					return fmt.Errorf("round %d: local[%d] = %d, want %d", round, i, v, want)
				}
			}
		}
		return win.Free(ctx)
	})
}

// TestPSCWGroups: rank 0 exposes to every other rank; each writes its own element. Then
// rank 0 accesses all the others (and itself) in one epoch.
func TestPSCWGroups(t *testing.T) {
	forLayouts(t, func(ctx context.Context, w *runtime.World) error {
		win, err := window.Allocate[int32](ctx, w, w.Size())
		if err != nil {
			return err
		}
		me, size := w.Rank(), w.Size()
		all := make([]int, size)
		for r := range all {
			all[r] = r
		}
		for round := range int32(20) {
			if me == 0 {
				if err := win.Post(ctx, all, 0); err != nil {
					return err
				}
			}
			if err := win.Start(ctx, []int{0}, 0); err != nil {
				return err
			}
			if err := win.Put([]int32{round*100 + int32(me)}, 0, me); err != nil {
				return err
			}
			if err := win.Complete(ctx); err != nil {
				return err
			}
			if me == 0 {
				if err := win.Wait(ctx); err != nil {
					return err
				}
				for r, v := range win.Local() {
					if v != round*100+int32(r) {
						return fmt.Errorf("round %d: element %d = %d", round, r, v)
					}
				}
			}
		}
		// Rank 0 writes everyone's element 0 (itself included), with NoCheck the second time.
		for i, assert := range []window.Assert{0, window.NoCheck} {
			if assert == window.NoCheck {
				if err := runtime.Barrier(ctx, w); err != nil { // NoCheck: the Posts come first
					return err
				}
			}
			if err := win.Post(ctx, []int{0}, assert); err != nil {
				return err
			}
			if assert == window.NoCheck {
				if err := runtime.Barrier(ctx, w); err != nil {
					return err
				}
			}
			if me == 0 {
				if err := win.Start(ctx, all, assert); err != nil {
					return err
				}
				for r := range size {
					if err := win.Put([]int32{int32(-1 - r - 10*i)}, r, 0); err != nil {
						return err
					}
				}
				if err := win.Complete(ctx); err != nil {
					return err
				}
			}
			if err := win.Wait(ctx); err != nil {
				return err
			}
			if v := win.Local()[0]; v != int32(-1-me-10*i) {
				return fmt.Errorf("pass %d: element 0 = %d", i, v)
			}
		}
		return win.Free(ctx)
	})
}

// TestPSCWTest: the target polls with Test until the origin, which starts late, completes.
func TestPSCWTest(t *testing.T) {
	forLayouts(t, func(ctx context.Context, w *runtime.World) error {
		win, err := window.Allocate[float64](ctx, w, 4)
		if err != nil {
			return err
		}
		me, size := w.Rank(), w.Size()
		switch me {
		case 0:
			if err := win.Post(ctx, []int{size - 1}, 0); err != nil {
				return err
			}
			if err := runtime.Barrier(ctx, w); err != nil {
				return err
			}
			polls := 0
			for {
				done, err := win.Test()
				if err != nil {
					return err
				}
				if done {
					break
				}
				polls++
				if ctx.Err() != nil {
					return fmt.Errorf("Test never reported completion after %d polls", polls)
				}
				time.Sleep(50 * time.Microsecond)
			}
			if got := win.Local()[3]; got != 2.5 {
				return fmt.Errorf("element 3 = %v after Test", got)
			}
			if _, err := win.Test(); !errors.Is(err, window.ErrEpoch) {
				return fmt.Errorf("Test after the epoch closed: %v", err)
			}
		case size - 1:
			if err := runtime.Barrier(ctx, w); err != nil {
				return err
			}
			if err := win.Start(ctx, []int{0}, 0); err != nil {
				return err
			}
			if err := win.Put([]float64{2.5}, 0, 3); err != nil {
				return err
			}
			if err := win.Complete(ctx); err != nil {
				return err
			}
		default:
			if err := runtime.Barrier(ctx, w); err != nil {
				return err
			}
		}
		if err := runtime.Barrier(ctx, w); err != nil {
			return err
		}
		return win.Free(ctx)
	})
}

// TestPSCWMisuse: epochs out of order and bad groups fail with the right sentinels.
func TestPSCWMisuse(t *testing.T) {
	forLayouts(t, func(ctx context.Context, w *runtime.World) error {
		win, err := window.Allocate[int32](ctx, w, 8)
		if err != nil {
			return err
		}
		me, size := w.Rank(), w.Size()
		peer := (me + 1) % size
		checks := []struct {
			name string
			err  error
			want error
		}{
			{"complete without start", win.Complete(ctx), window.ErrEpoch},
			{"wait without post", win.Wait(ctx), window.ErrEpoch},
			{"start with a rank out of range", win.Start(ctx, []int{size}, 0), window.ErrInvalid},
			{"post with a negative rank", win.Post(ctx, []int{-1}, 0), window.ErrInvalid},
			{"post naming a rank twice", win.Post(ctx, []int{peer, peer}, 0), window.ErrInvalid},
		}
		_, terr := win.Test()
		checks = append(checks, struct {
			name string
			err  error
			want error
		}{"test without post", terr, window.ErrEpoch})
		for _, c := range checks {
			var we *window.Error
			if !errors.Is(c.err, c.want) || !errors.As(c.err, &we) {
				return fmt.Errorf("%s: %v, want %v", c.name, c.err, c.want)
			}
		}
		// A correct epoch pair, with misuse inside it.
		left := (me - 1 + size) % size
		if err := win.Post(ctx, []int{left}, 0); err != nil {
			return err
		}
		if err := win.Post(ctx, []int{left}, 0); !errors.Is(err, window.ErrEpoch) {
			return fmt.Errorf("second post: %v", err)
		}
		if err := win.Start(ctx, []int{peer}, 0); err != nil {
			return err
		}
		if err := win.Start(ctx, []int{peer}, 0); !errors.Is(err, window.ErrEpoch) {
			return fmt.Errorf("second start: %v", err)
		}
		far := (me + 2) % size
		if far != peer && far != me {
			if err := win.Put([]int32{1}, far, 0); !errors.Is(err, window.ErrEpoch) {
				return fmt.Errorf("put to rank %d outside the group: %v", far, err)
			}
		}
		if err := win.Fence(ctx, 0); !errors.Is(err, window.ErrEpoch) {
			return fmt.Errorf("fence in a PSCW epoch: %v", err)
		}
		if err := win.Lock(ctx, window.Shared, peer, 0); !errors.Is(err, window.ErrEpoch) {
			return fmt.Errorf("lock in a PSCW epoch: %v", err)
		}
		if err := win.Free(ctx); !errors.Is(err, window.ErrEpoch) {
			return fmt.Errorf("free in a PSCW epoch: %v", err)
		}
		if err := win.Put([]int32{7}, peer, 1); err != nil {
			return err
		}
		if err := win.Complete(ctx); err != nil {
			return err
		}
		if err := win.Put([]int32{1}, peer, 0); !errors.Is(err, window.ErrEpoch) {
			return fmt.Errorf("put after complete: %v", err)
		}
		if err := win.Wait(ctx); err != nil {
			return err
		}
		if v := win.Local()[1]; v != 7 {
			return fmt.Errorf("element 1 = %d", v)
		}
		// Passive-target epochs, and fence epochs that RMA calls used, exclude PSCW.
		if err := win.Lock(ctx, window.Shared, peer, 0); err != nil {
			return err
		}
		if err := win.Start(ctx, []int{peer}, 0); !errors.Is(err, window.ErrEpoch) {
			return fmt.Errorf("start in a passive epoch: %v", err)
		}
		if err := win.Unlock(ctx, peer); err != nil {
			return err
		}
		if err := win.Fence(ctx, 0); err != nil {
			return err
		}
		if err := win.Put([]int32{3}, peer, 2); err != nil {
			return err
		}
		if err := win.Post(ctx, []int{left}, 0); !errors.Is(err, window.ErrEpoch) {
			return fmt.Errorf("post in a used fence epoch: %v", err)
		}
		if err := win.Fence(ctx, window.NoSucceed); err != nil {
			return err
		}
		if err := win.Free(ctx); err != nil {
			return err
		}
		if err := win.Post(ctx, nil, 0); !errors.Is(err, window.ErrFreed) {
			return fmt.Errorf("post after free: %v", err)
		}
		return nil
	})
}

// TestPSCWContext: a Start whose target never posts ends with the context, and a later
// Start (after the Post) succeeds: the failed one changed nothing.
func TestPSCWContext(t *testing.T) {
	runtimetest.Run(t, 2, runtimetest.Options{Transport: "shm"}, func(w *runtime.World) error {
		ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(20*time.Second))
		defer cancel()
		win, err := window.Allocate[int32](ctx, w, 1)
		if err != nil {
			return err
		}
		if w.Rank() == 1 {
			short, stop := context.WithTimeout(ctx, 20*time.Millisecond)
			err := win.Start(short, []int{0}, 0)
			stop()
			if !errors.Is(err, context.DeadlineExceeded) {
				return fmt.Errorf("start without a post: %v", err)
			}
		}
		if err := runtime.Barrier(ctx, w); err != nil {
			return err
		}
		if w.Rank() == 0 {
			if err := win.Post(ctx, []int{1}, 0); err != nil {
				return err
			}
			if err := win.Wait(ctx); err != nil {
				return err
			}
			if v := win.Local()[0]; v != 42 {
				return fmt.Errorf("element 0 = %d", v)
			}
		} else {
			if err := win.Start(ctx, []int{0}, 0); err != nil {
				return err
			}
			if err := win.Put([]int32{42}, 0, 0); err != nil {
				return err
			}
			if err := win.Complete(ctx); err != nil {
				return err
			}
		}
		return win.Free(ctx)
	})
}

// TestPSCWPeerFailure: a Start waiting for a Post and a Wait waiting for a Complete of a
// rank that fails end with the runtime's ErrProcFailed, never hang.
func TestPSCWPeerFailure(t *testing.T) {
	for _, tr := range []string{"shm", "tcp"} {
		t.Run(tr, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(20*time.Second))
			defer cancel()
			j, wins := failureJob(t, ctx, tr)
			errs := make(chan error, 3)
			go func() { errs <- wins[1].Start(ctx, []int{0}, 0) }() // rank 0 never posts
			go func() {
				if err := wins[2].Post(ctx, []int{0}, 0); err != nil {
					errs <- err
					return
				}
				errs <- wins[2].Wait(ctx) // rank 0 never completes
			}()
			time.Sleep(20 * time.Millisecond)
			for _, r := range []int{1, 2} {
				j.Notify(r, pmi.Event{Kind: pmi.ProcFailed, Rank: 0, Host: "node0", Code: 9, Cause: "killed by signal 9"})
			}
			for range 2 {
				select {
				case err := <-errs:
					var we *window.Error
					if !errors.Is(err, runtime.ErrProcFailed) || !errors.As(err, &we) {
						t.Fatalf("got %v, want a *window.Error wrapping ErrProcFailed", err)
					}
					t.Logf("as expected: %v", err)
				case <-time.After(testbudget.Scale(5 * time.Second)):
					t.Fatalf("still blocked %v after rank 0 failed", testbudget.Scale(5*time.Second))
				}
			}
		})
	}
}

// TestPSCWWakeOverTransport: a Start and a Wait asleep on their doorbell wake when a peer
// over tcp posts or completes, as they do for a peer on the same host that rings the
// bell itself: the peer's remote atomic, executed by the sleeper's own transport, rings
// it (substrate.Region.OnRemoteAtomic). Sleeps are made a minute long, so that a wake-up
// that does not come fails the test instead of costing a millisecond.
func TestPSCWWakeOverTransport(t *testing.T) {
	defer window.SetSleepMax(time.Minute)()
	for _, l := range []struct {
		name string
		n    int
		opt  runtimetest.Options
	}{
		{"tcp", 2, runtimetest.Options{Transport: "tcp"}},
		{"hosts", 4, runtimetest.Options{Hosts: []string{"a", "a", "b", "b"}}},
	} {
		t.Run(l.name, func(t *testing.T) {
			origin := l.n - 1 // on the other host from rank 0
			runtimetest.Run(t, l.n, l.opt, func(w *runtime.World) error {
				ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(40*time.Second))
				defer cancel()
				win, err := window.Allocate[int64](ctx, w, 1)
				if err != nil {
					return err
				}
				const late = 100 * time.Millisecond // the other side is well asleep by then
				for epoch := range int64(3) {
					switch w.Rank() {
					case 0:
						time.Sleep(late) // the origin's Start sleeps meanwhile
						if err := win.Post(ctx, []int{origin}, 0); err != nil {
							return err
						}
						if err := win.Wait(ctx); err != nil { // sleeps until the Complete
							return err
						}
						if v := win.Local()[0]; v != 100+epoch {
							return fmt.Errorf("epoch %d: element 0 = %d", epoch, v)
						}
					case origin:
						if err := win.Start(ctx, []int{0}, 0); err != nil {
							return err
						}
						if err := win.Put([]int64{100 + epoch}, 0, 0); err != nil {
							return err
						}
						time.Sleep(late) // the target's Wait sleeps meanwhile
						if err := win.Complete(ctx); err != nil {
							return err
						}
					}
				}
				return win.Free(ctx)
			})
		})
	}
}

// failureJob starts a 3-rank job on transport tr, each rank with a window of 4 int64s,
// for tests that then report rank 0 failed (Notify). Cleanup finalizes and closes it.
func failureJob(t *testing.T, ctx context.Context, tr string) (*runtimetest.Job, []*window.Win[int64]) {
	t.Helper()
	j, err := runtimetest.Start(ctx, 3, runtimetest.Options{Transport: tr})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		fctx, stop := context.WithTimeout(context.Background(), testbudget.Scale(2*time.Second))
		defer stop()
		j.Finalize(fctx) // rank 0 counts as failed: errors expected
		j.Close()
	})
	wins := make([]*window.Win[int64], 3)
	errs := make(chan error, 3)
	for r, w := range j.Worlds {
		go func() {
			var err error
			wins[r], err = window.Allocate[int64](ctx, w, 4)
			errs <- err
		}()
	}
	for range 3 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	return j, wins
}
