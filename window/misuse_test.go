package window_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/collectives"
	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/runtimetest"
	"github.com/gorma-hpc/gorma/window"
)

// misuseCall runs f with a bound and turns a panic into an error, so that one misuse that
// panics or hangs does not hide the others.
func misuseCall(name string, f func() error) (err error) {
	c := make(chan error, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				c <- fmt.Errorf("%s panicked: %v", name, p)
			}
		}()
		c <- f()
	}()
	budget := testbudget.Scale(4 * time.Second)
	select {
	case err := <-c:
		return err
	case <-time.After(budget):
		return fmt.Errorf("%s still blocked after %v", name, budget)
	}
}

// isAny reports whether err wraps one of sentinels.
func isAny(err error, sentinels ...error) bool {
	for _, s := range sentinels {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}

func wantWinErr(name string, err error, words []string, sentinels ...error) error {
	if !isAny(err, sentinels...) {
		return fmt.Errorf("%s: got %v, want an error wrapping one of %v", name, err, sentinels)
	}
	var we *window.Error
	if !errors.As(err, &we) {
		return fmt.Errorf("%s: %v is not a *window.Error", name, err)
	}
	for _, w := range words {
		if !strings.Contains(err.Error(), w) {
			return fmt.Errorf("%s: error %q does not name %q", name, err, w)
		}
	}
	return nil
}

// TestMisuseWindowNilWorld: the constructors given a nil World fail with window.ErrInvalid
// error, never a panic.
func TestMisuseWindowNilWorld(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(5*time.Second))
	defer cancel()
	calls := map[string]func() error{
		"Allocate":       func() error { _, err := window.Allocate[int64](ctx, nil, 8); return err },
		"AllocateShared": func() error { _, err := window.AllocateShared[int64](ctx, nil, 8); return err },
		"Create":         func() error { _, err := window.Create(ctx, nil, make([]int64, 8)); return err },
		"CreateDynamic":  func() error { _, err := window.CreateDynamic[int64](ctx, nil); return err },
	}
	for name, f := range calls {
		if err := wantWinErr(name, misuseCall(name, f), []string{"nil World"}, window.ErrInvalid); err != nil {
			t.Error(err)
		}
	}
}

// TestMisuseWindowHugeCount asks for windows whose byte size overflows int: each fails
// with ErrInvalid (or an allocation error), never a panic or a window smaller than asked.
func TestMisuseWindowHugeCount(t *testing.T) {
	runtimetest.Run(t, 1, runtimetest.Options{Transport: "shm"}, func(w *runtime.World) error {
		ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(5*time.Second))
		defer cancel()
		for _, n := range []int{1 << 61, math.MaxInt/8 + 1, math.MaxInt, -1, math.MinInt} {
			for name, f := range map[string]func() error{
				"Allocate": func() error {
					win, err := window.Allocate[float64](ctx, w, n)
					if err == nil {
						return fmt.Errorf("a window of %d float64s, local length %d", n, len(win.Local()))
					}
					return err
				},
				"AllocateShared": func() error {
					win, err := window.AllocateShared[float64](ctx, w, n)
					if err == nil {
						return fmt.Errorf("a window of %d float64s, local length %d", n, len(win.Local()))
					}
					return err
				},
			} {
				err := misuseCall(name, f)
				if err == nil || strings.Contains(err.Error(), "panicked") || strings.Contains(err.Error(), "blocked") ||
					strings.Contains(err.Error(), "a window of") {
					return fmt.Errorf("%s(%d): %v", name, n, err)
				}
				var we *window.Error
				if !errors.As(err, &we) {
					return fmt.Errorf("%s(%d): %v is not a *window.Error", name, n, err)
				}
			}
		}
		// The World still makes windows afterwards.
		win, err := window.Allocate[float64](ctx, w, 4)
		if err != nil {
			return err
		}
		return win.Free(ctx)
	})
}

// TestMisuseWindowEpochs opens and closes epochs in the wrong order and passes bad ranks,
// lock types, displacements and operators: each call fails with the sentinel its doc
// names and a text naming the problem, and the window still works afterwards.
func TestMisuseWindowEpochs(t *testing.T) {
	forLayouts(t, func(ctx context.Context, w *runtime.World) error {
		win, err := window.Allocate[int64](ctx, w, 8)
		if err != nil {
			return err
		}
		me, n := w.Rank(), w.Size()
		peer := (me + 1) % n
		check := func(name string, err error, words []string, sentinels ...error) error {
			return wantWinErr(name, err, words, sentinels...)
		}
		var res int64
		steps := []func() error{
			func() error {
				return check("Complete without Start", win.Complete(ctx), nil, window.ErrEpoch)
			},
			func() error {
				return check("Wait without Post", win.Wait(ctx), nil, window.ErrEpoch)
			},
			func() error {
				_, err := win.Test()
				return check("Test without Post", err, nil, window.ErrEpoch)
			},
			func() error {
				return check("UnlockAll without LockAll", win.UnlockAll(ctx), nil, window.ErrEpoch)
			},
			func() error {
				return check("Flush outside an epoch", win.Flush(ctx, peer), nil, window.ErrEpoch)
			},
			func() error {
				return check("Lock rank -1", win.Lock(ctx, window.Shared, -1, 0), []string{"-1"}, window.ErrInvalid)
			},
			func() error {
				return check("Lock rank Size", win.Lock(ctx, window.Shared, n, 0), []string{fmt.Sprint(n)}, window.ErrInvalid)
			},
			func() error {
				return check("Lock type 99", win.Lock(ctx, window.LockType(99), peer, 0), []string{"lock type 99"}, window.ErrInvalid)
			},
			func() error { return win.Lock(ctx, window.Exclusive, peer, 0) },
			func() error {
				return check("nested Lock", win.Lock(ctx, window.Shared, peer, 0), []string{"already locked"}, window.ErrEpoch)
			},
			func() error {
				return check("LockAll inside Lock", win.LockAll(ctx, 0), nil, window.ErrEpoch)
			},
			func() error {
				return check("Fence inside Lock", win.Fence(ctx, 0), nil, window.ErrEpoch)
			},
			func() error {
				return check("Start inside Lock", win.Start(ctx, []int{peer}, 0), nil, window.ErrEpoch)
			},
			func() error {
				return check("Free inside Lock", win.Free(ctx), []string{"epoch"}, window.ErrEpoch)
			},
			func() error {
				return check("Put disp MaxInt", win.Put([]int64{1, 2}, peer, math.MaxInt), nil, window.ErrRange)
			},
			func() error {
				return check("Put disp MaxInt/8+1", win.Put([]int64{1}, peer, math.MaxInt/8+1), nil, window.ErrRange)
			},
			func() error {
				return check("Get disp MinInt", win.Get(make([]int64, 1), peer, math.MinInt), nil, window.ErrRange)
			},
			func() error {
				return check("Get one past the end", win.Get(make([]int64, 1), peer, 8), nil, window.ErrRange)
			},
			func() error {
				return check("Put rank -1", win.Put([]int64{1}, -1, 0), []string{"rank -1"}, window.ErrInvalid)
			},
			func() error {
				return check("Accumulate zero Op", win.Accumulate([]int64{1}, peer, 0, collectives.Op[int64]{}), nil, window.ErrInvalid)
			},
			func() error {
				return check("Accumulate nil user fn", win.Accumulate([]int64{1}, peer, 0, collectives.NewOp[int64]("nilfn", nil, true)), nil, window.ErrInvalid)
			},
			func() error {
				return check("FetchAndOp zero Op", win.FetchAndOp(1, &res, peer, 0, collectives.Op[int64]{}), nil, window.ErrInvalid)
			},
			func() error {
				return check("FetchAndOp nil result", win.FetchAndOp(1, nil, peer, 0, collectives.Sum[int64]()), []string{"nil result"}, window.ErrInvalid)
			},
			func() error {
				return check("CompareAndSwap nil result", win.CompareAndSwap(1, 0, nil, peer, 0), []string{"nil result"}, window.ErrInvalid)
			},
			func() error {
				return check("FetchAndOp disp 8", win.FetchAndOp(1, &res, peer, 8, collectives.Sum[int64]()), nil, window.ErrRange)
			},
			func() error {
				_, err := win.Rget(make([]int64, 2), peer, 7)
				return check("Rget past the end", err, nil, window.ErrRange)
			},
			func() error {
				return check("Unlock of another rank", win.Unlock(ctx, (me+2)%n), nil, window.ErrEpoch)
			},
			// Zero-length accesses at the end are fine (nothing to touch).
			func() error { return win.Put(nil, peer, 8) },
			func() error { return win.Unlock(ctx, peer) },
			func() error {
				return check("Unlock twice", win.Unlock(ctx, peer), []string{"not locked"}, window.ErrEpoch)
			},
			func() error {
				return check("PSCW group out of range", win.Start(ctx, []int{n}, 0), nil, window.ErrInvalid)
			},
			func() error {
				return check("PSCW group with a duplicate", win.Post(ctx, []int{peer, peer}, 0), nil, window.ErrInvalid)
			},
		}
		for i, s := range steps {
			if err := misuseCall(fmt.Sprint("step ", i), s); err != nil {
				return fmt.Errorf("step %d: %w", i, err)
			}
		}
		// The window still works: a ring of Puts under Fence.
		if err := win.Fence(ctx, 0); err != nil {
			return err
		}
		if err := win.Put([]int64{int64(me + 100)}, peer, 1); err != nil {
			return err
		}
		if err := win.Fence(ctx, 0); err != nil {
			return err
		}
		if got, want := win.Local()[1], int64((me-1+n)%n+100); got != want {
			return fmt.Errorf("after the misuse, the ring's Put left %d, want %d", got, want)
		}
		return win.Free(ctx)
	})
}

// TestMisuseWindowAfterFinalize finalizes a job while its windows are open (a Fence
// epoch, a Lock epoch, a dynamic window with memory attached) and then calls every window
// call: each must fail at once with an error (runtime.ErrFinalized, or ErrFreed for a
// window whose World is gone), never panic, hang, or touch memory that Finalize unmapped.
// Free then returns nil, and a second Free fails with ErrFreed.
func TestMisuseWindowAfterFinalize(t *testing.T) {
	for _, tr := range []string{"shm", "tcp"} {
		t.Run(tr, func(t *testing.T) {
			j, err := runtimetest.Start(context.Background(), 2, runtimetest.Options{Transport: tr})
			if err != nil {
				t.Fatal(err)
			}
			defer j.Close()
			ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(10*time.Second))
			defer cancel()
			wins := make([]*window.Win[int64], 2)
			dyns := make([]*window.Win[int64], 2)
			errs := make(chan error, 2)
			for r, w := range j.Worlds {
				go func() {
					errs <- func() error {
						win, err := window.Allocate[int64](ctx, w, 16)
						if err != nil {
							return err
						}
						dyn, err := window.CreateDynamic[int64](ctx, w)
						if err != nil {
							return err
						}
						if _, err := dyn.Attach(ctx, make([]int64, 4)); err != nil {
							return err
						}
						wins[r], dyns[r] = win, dyn
						if err := win.Fence(ctx, 0); err != nil {
							return err
						}
						return win.Put([]int64{int64(r)}, 1-r, 0)
					}()
				}()
			}
			for range 2 {
				if err := <-errs; err != nil {
					t.Fatal(err)
				}
			}
			if err := j.Finalize(ctx); err != nil {
				t.Fatal(err)
			}
			win, dyn, w := wins[0], dyns[0], j.Worlds[0]
			var res int64
			sum := collectives.Sum[int64]()
			calls := map[string]func() error{
				"Put":            func() error { return win.Put([]int64{1}, 1, 0) },
				"PutSelf":        func() error { return win.Put([]int64{1}, 0, 0) },
				"Get":            func() error { return win.Get(make([]int64, 1), 1, 0) },
				"Accumulate":     func() error { return win.Accumulate([]int64{1}, 1, 0, sum) },
				"GetAccumulate":  func() error { return win.GetAccumulate([]int64{1}, make([]int64, 1), 1, 0, sum) },
				"FetchAndOp":     func() error { return win.FetchAndOp(1, &res, 1, 0, sum) },
				"CompareAndSwap": func() error { return win.CompareAndSwap(1, 0, &res, 1, 0) },
				"Fence":          func() error { return win.Fence(ctx, 0) },
				"Lock":           func() error { return win.Lock(ctx, window.Shared, 1, 0) },
				"LockAll":        func() error { return win.LockAll(ctx, 0) },
				"Post":           func() error { return win.Post(ctx, []int{1}, 0) },
				"Start":          func() error { return win.Start(ctx, []int{1}, 0) },
				"Sync":           func() error { return win.Sync(ctx) },
				"FlushAll":       func() error { return win.FlushAll(ctx) },
				"DynPut":         func() error { return dyn.Put([]int64{1}, 1, 0) },
				"Attach":         func() error { _, err := dyn.Attach(ctx, make([]int64, 4)); return err },
				"Allocate":       func() error { _, err := window.Allocate[int64](ctx, w, 8); return err },
				"Create":         func() error { _, err := window.Create(ctx, w, make([]int64, 8)); return err },
			}
			for name, f := range calls {
				t.Run(name, func(t *testing.T) {
					err := misuseCall(name, f)
					if !isAny(err, runtime.ErrFinalized, window.ErrFreed) {
						t.Errorf("%s after Finalize: %v, want an error wrapping runtime.ErrFinalized or window.ErrFreed", name, err)
					} else {
						t.Logf("%s after Finalize: %v", name, err)
					}
				})
			}
			for name, v := range map[string]*window.Win[int64]{"Free": win, "DynFree": dyn} {
				if err := v.Free(ctx); err != nil {
					t.Errorf("%s after Finalize: %v, want nil", name, err)
				}
				if err := v.Free(ctx); !errors.Is(err, window.ErrFreed) {
					t.Errorf("a second %s after Finalize: %v, want ErrFreed", name, err)
				}
			}
		})
	}
}
