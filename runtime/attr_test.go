package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/runtimetest"
	"github.com/gorma-hpc/gorma/runtime/substrate"
)

// deleteLog records the values a Keyval's delete function saw, in order.
type deleteLog struct {
	mu   sync.Mutex
	seen []int
}

func (l *deleteLog) del(_ *runtime.World, v int) {
	l.mu.Lock()
	l.seen = append(l.seen, v)
	l.mu.Unlock()
}

func (l *deleteLog) take() []int {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.seen
	l.seen = nil
	return s
}

// want returns an error unless the next values deleted are exactly vals.
func (l *deleteLog) want(what string, vals ...int) error {
	if got := l.take(); !slices.Equal(got, vals) {
		return fmt.Errorf("%s: delete functions saw %v, want %v", what, got, vals)
	}
	return nil
}

// wantAttr returns an error unless w's attribute of k is v (ok) or absent (!ok).
func wantAttr[V comparable](w *runtime.World, k *runtime.Keyval[V], what string, v V, ok bool) error {
	got, has, err := runtime.GetAttr(w, k)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if has != ok || got != v {
		return fmt.Errorf("%s: GetAttr = %v, %v; want %v, %v", what, got, has, v, ok)
	}
	return nil
}

// TestAttrCopyOnDup: Dup runs each attribute's copy function, which decides whether the
// Dup gets it and with what value; Split and Sibling copy nothing; the Dup communicates
// as any Dup does (on one host, over tcp, and across two pretend hosts).
func TestAttrCopyOnDup(t *testing.T) {
	forTypeLayouts(t, func(ctx context.Context, w *runtime.World) error {
		var copies atomic.Int32
		var from atomic.Pointer[runtime.World] // the World the last copy function ran for
		same := runtime.NewKeyval(runtime.CopyOnDup[string], nil)
		none := runtime.NewKeyval[int](nil, nil)
		evens := runtime.NewKeyval(func(old *runtime.World, v int) (int, bool) {
			copies.Add(1)
			from.Store(old)
			return v * 10, v%2 == 0
		}, nil)
		r := w.Rank()
		for _, err := range []error{
			runtime.SetAttr(w, same, fmt.Sprint("rank", r)),
			runtime.SetAttr(w, none, r),
			runtime.SetAttr(w, evens, r),
		} {
			if err != nil {
				return err
			}
		}
		d, err := w.Dup()
		if err != nil {
			return err
		}
		if err := ring(ctx, d, 3, 7); err != nil {
			return err
		}
		if copies.Load() != 1 || from.Load() != w {
			return fmt.Errorf("evens' copy function ran %d times, want once, given the World Dup was called on", copies.Load())
		}
		errs := []error{
			wantAttr(d, same, "dup: CopyOnDup", fmt.Sprint("rank", r), true),
			wantAttr(d, none, "dup: nil copy", 0, false),
			wantAttr(d, evens, "dup: copy function", keptIfEven(r, r*10), r%2 == 0),
			wantAttr(w, evens, "original after Dup", r, true),
		}
		// A Dup of the Dup copies from it: evens' value is ten times larger again.
		dd, err := d.Dup()
		if err != nil {
			return err
		}
		if r%2 == 0 && from.Load() != d {
			errs = append(errs, errors.New("copy function of a Dup of a Dup not given the World Dup was called on"))
		}
		errs = append(errs, wantAttr(dd, evens, "dup of dup", keptIfEven(r, r*100), r%2 == 0), wantAttr(dd, same, "dup of dup: CopyOnDup", fmt.Sprint("rank", r), true))
		s, err := w.Split(ctx, r%2, 0)
		if err != nil {
			return err
		}
		errs = append(errs, wantAttr(s, same, "split", "", false))
		sib, err := substrate.Sibling(w)
		if err != nil {
			return err
		}
		if _, _, err := runtime.GetAttr(sib, same); !errors.Is(err, runtime.ErrInvalid) {
			errs = append(errs, fmt.Errorf("GetAttr on a sibling: %v, want ErrInvalid", err))
		}
		for _, x := range []*runtime.World{dd, d, s} {
			errs = append(errs, x.Free())
		}
		errs = append(errs, runtime.DeleteAttr(w, same), runtime.DeleteAttr(w, none), runtime.DeleteAttr(w, evens))
		return errors.Join(errs...)
	})
}

// keptIfEven is v for an even rank r, else 0 (GetAttr's value when absent).
func keptIfEven(r, v int) int {
	if r%2 == 0 {
		return v
	}
	return 0
}

// TestAttrDeleteCallbacks: the delete function runs once per value that leaves a World:
// at DeleteAttr, when SetAttr replaces it, and at Free (in the reverse of the order the
// keys were set), never for a value still set; a Dup's copies are deleted with the Dup.
func TestAttrDeleteCallbacks(t *testing.T) {
	forEach(t, []int{1, 3}, func(t *testing.T, tr string, n int) {
		run(t, tr, n, func(ctx context.Context, w *runtime.World) error {
			var log deleteLog
			a := runtime.NewKeyval(runtime.CopyOnDup[int], log.del)
			b := runtime.NewKeyval(func(_ *runtime.World, v int) (int, bool) { return v + 1, true }, log.del)
			c := runtime.NewKeyval(nil, log.del)
			d, err := w.Dup()
			if err != nil {
				return err
			}
			steps := []func() error{
				func() error { return runtime.SetAttr(d, a, 1) },
				func() error { return log.want("first set") },
				func() error { return runtime.SetAttr(d, a, 2) },
				func() error { return log.want("replacing set", 1) },
				func() error { return runtime.DeleteAttr(d, a) },
				func() error { return log.want("delete", 2) },
				func() error { return runtime.DeleteAttr(d, a) },
				func() error { return log.want("delete of an absent attribute") },
				func() error { return runtime.SetAttr(d, b, 10) },
				func() error { return runtime.SetAttr(d, a, 20) },
				func() error { return runtime.SetAttr(d, c, 30) },
				func() error { return log.want("sets of three keys") },
				func() error {
					dd, err := d.Dup()
					if err != nil {
						return err
					}
					if err := errors.Join(wantAttr(dd, b, "dup b", 11, true), wantAttr(dd, a, "dup a", 20, true), wantAttr(dd, c, "dup c", 0, false)); err != nil {
						return err
					}
					if err := ring(ctx, dd, 1, 0); err != nil {
						return err
					}
					return errors.Join(log.want("dup"), dd.Free(), log.want("free of the dup", 20, 11))
				},
				func() error { return d.Free() },
				func() error { return log.want("free", 30, 20, 10) },
				func() error { return wantAttr(d, a, "get on a freed World", 0, false) },
				func() error {
					if err := runtime.SetAttr(d, a, 1); !errors.Is(err, runtime.ErrInvalid) {
						return fmt.Errorf("SetAttr on a freed World: %v, want ErrInvalid", err)
					}
					return nil
				},
			}
			for i, f := range steps {
				if err := f(); err != nil {
					return fmt.Errorf("step %d: %w", i, err)
				}
			}
			return nil
		})
	})
}

// TestAttrDeleteFunctionCalls (MPICH attr/attrdeleteget.c): a delete function running
// at Free may call GetAttr and DeleteAttr on the World being freed (which has no
// attributes left) and Dup and Free other Worlds, with the World's accessors still
// working.
func TestAttrDeleteFunctionCalls(t *testing.T) {
	forEach(t, []int{2}, func(t *testing.T, tr string, n int) {
		run(t, tr, n, func(ctx context.Context, w *runtime.World) error {
			var inner error
			var k *runtime.Keyval[*runtime.World]
			k = runtime.NewKeyval(nil, func(x *runtime.World, sub *runtime.World) {
				_, ok, err := runtime.GetAttr(x, k)
				switch {
				case err != nil:
					inner = err
				case ok:
					inner = errors.New("GetAttr in the delete function found the attribute being deleted")
				case x.Size() != w.Size():
					inner = fmt.Errorf("size %d in the delete function, want %d", x.Size(), w.Size())
				default:
					inner = errors.Join(runtime.DeleteAttr(x, k), ring(ctx, sub, 2, 5), sub.Free())
				}
			})
			s, err := w.Split(ctx, 1, 0)
			if err != nil {
				return err
			}
			sub, err := s.Dup() // the library's own World, freed with s
			if err != nil {
				return err
			}
			if err := runtime.SetAttr(s, k, sub); err != nil {
				return err
			}
			if err := s.Free(); err != nil {
				return err
			}
			if inner != nil {
				return inner
			}
			return k.Free()
		})
	})
}

// TestKeyvalFree (MPICH attr/fkeyval.c, keyval_double_free.c): a freed Keyval is
// refused by SetAttr and a second Free fails, but the values set with it are still
// read by GetAttr, copied by Dup, and deleted by Free and DeleteAttr.
func TestKeyvalFree(t *testing.T) {
	run(t, "shm", 2, func(ctx context.Context, w *runtime.World) error {
		val := 1
		k := runtime.NewKeyval(func(_ *runtime.World, p *int) (*int, bool) { *p++; return p, true },
			func(_ *runtime.World, p *int) { *p-- })
		c, err := w.Dup()
		if err != nil {
			return err
		}
		if err := runtime.SetAttr(c, k, &val); err != nil {
			return err
		}
		if err := k.Free(); err != nil {
			return err
		}
		if err := k.Free(); !errors.Is(err, runtime.ErrInvalid) {
			return fmt.Errorf("second Free: %v, want ErrInvalid", err)
		}
		if err := runtime.SetAttr(c, k, &val); !errors.Is(err, runtime.ErrInvalid) {
			return fmt.Errorf("SetAttr with a freed Keyval: %v, want ErrInvalid", err)
		}
		if p, ok, err := runtime.GetAttr(c, k); p != &val || !ok || err != nil {
			return fmt.Errorf("GetAttr with a freed Keyval: %p, %v, %v; want the value set", p, ok, err)
		}
		d, err := c.Dup()
		if err != nil {
			return err
		}
		if val != 2 {
			return fmt.Errorf("after Dup the value is %d, want 2 (the copy function ran)", val)
		}
		if err := d.Free(); err != nil {
			return err
		}
		if val != 1 {
			return fmt.Errorf("after the Dup's Free the value is %d, want 1", val)
		}
		if err := c.Free(); err != nil {
			return err
		}
		if val != 0 {
			return fmt.Errorf("after Free the value is %d, want 0", val)
		}
		// On Init's World, never freed, DeleteAttr removes the value of a freed Keyval.
		k2 := runtime.NewKeyval(nil, func(_ *runtime.World, p *int) { *p-- })
		val = 1
		if err := errors.Join(runtime.SetAttr(w, k2, &val), k2.Free(), runtime.DeleteAttr(w, k2)); err != nil {
			return err
		}
		if val != 0 {
			return fmt.Errorf("after DeleteAttr with a freed Keyval the value is %d, want 0", val)
		}
		return nil
	})
}

// TestAttrErrors: nil Worlds and Keyvals and siblings are refused with ErrInvalid.
func TestAttrErrors(t *testing.T) {
	run(t, "shm", 1, func(ctx context.Context, w *runtime.World) error {
		k := runtime.NewKeyval[int](nil, nil)
		sib, err := substrate.Sibling(w)
		if err != nil {
			return err
		}
		_, _, getNil := runtime.GetAttr[int](nil, k)
		_, _, getNilK := runtime.GetAttr[int](w, nil)
		var nilK *runtime.Keyval[int]
		for name, err := range map[string]error{
			"SetAttr nil World":     runtime.SetAttr(nil, k, 1),
			"SetAttr nil Keyval":    runtime.SetAttr(w, nil, 1),
			"GetAttr nil World":     getNil,
			"GetAttr nil Keyval":    getNilK,
			"DeleteAttr nil World":  runtime.DeleteAttr(nil, k),
			"DeleteAttr nil Keyval": runtime.DeleteAttr(w, nilK),
			"SetAttr sibling":       runtime.SetAttr(sib, k, 1),
			"SetName sibling":       sib.SetName("x"),
			"Free nil Keyval":       nilK.Free(),
		} {
			if !errors.Is(err, runtime.ErrInvalid) {
				return fmt.Errorf("%s: %v, want ErrInvalid", name, err)
			}
		}
		return nil
	})
}

// TestAttrConcurrent: goroutines set, replace, read and delete attributes of one World
// and Dup it at once; every value set is deleted exactly once, by DeleteAttr, a
// replacing SetAttr or Free.
func TestAttrConcurrent(t *testing.T) {
	const goroutines, rounds = 4, 200
	run(t, "shm", 2, func(ctx context.Context, w *runtime.World) error {
		var sets, dels, copies atomic.Int64
		k := runtime.NewKeyval(func(_ *runtime.World, v int) (int, bool) { copies.Add(1); return v, true },
			func(_ *runtime.World, v int) { dels.Add(1) })
		d, err := w.Dup()
		if err != nil {
			return err
		}
		var wg sync.WaitGroup
		errs := make([]error, goroutines)
		for g := range goroutines {
			wg.Go(func() {
				for i := range rounds {
					var err error
					switch i % 3 {
					case 0, 1:
						sets.Add(1)
						err = runtime.SetAttr(d, k, g*rounds+i)
					default:
						_, _, err = runtime.GetAttr(d, k)
						if err == nil && i%6 == 5 {
							err = runtime.DeleteAttr(d, k)
						}
					}
					if err != nil {
						errs[g] = err
						return
					}
				}
			})
		}
		// Dups run beside them (collective: one goroutine makes them, in order).
		for range 5 {
			dd, err := d.Dup()
			if err != nil {
				return err
			}
			if err := dd.Free(); err != nil {
				return err
			}
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return err
		}
		if err := d.Free(); err != nil {
			return err
		}
		if got, want := dels.Load(), sets.Load()+copies.Load(); got != want {
			return fmt.Errorf("%d deletes for %d values set and %d copied", got, sets.Load(), copies.Load())
		}
		return nil
	})
}

// TestName: Init's World is named InitName, a Dup or Split has no name (as in MPI) until
// SetName gives it one; names are local, and a freed World keeps its name but refuses a
// new one.
func TestName(t *testing.T) {
	forTypeLayouts(t, func(ctx context.Context, w *runtime.World) error {
		if got := w.Name(); got != runtime.InitName {
			return fmt.Errorf("Init's World is named %q, want %q", got, runtime.InitName)
		}
		d, err := w.Dup()
		if err != nil {
			return err
		}
		s, err := w.Split(ctx, 0, -w.Rank())
		if err != nil {
			return err
		}
		if d.Name() != "" || s.Name() != "" {
			return fmt.Errorf("Dup named %q, Split %q; want both unnamed", d.Name(), s.Name())
		}
		var wg sync.WaitGroup
		for i := range 4 { // SetName and Name from several goroutines at once
			wg.Go(func() {
				_ = d.SetName(fmt.Sprint("dup", i))
				_ = d.Name()
			})
		}
		wg.Wait()
		mine := fmt.Sprint("rank", w.Rank())
		errs := []error{w.SetName("main"), d.SetName(mine), s.SetName("")}
		if w.Name() != "main" || d.Name() != mine || s.Name() != "" {
			errs = append(errs, fmt.Errorf("names %q %q %q, want main, %s and empty", w.Name(), d.Name(), s.Name(), mine))
		}
		dd, err := d.Dup()
		if err != nil {
			return err
		}
		if dd.Name() != "" {
			errs = append(errs, fmt.Errorf("a Dup of a named World is named %q, want no name", dd.Name()))
		}
		if err := ring(ctx, d, 4, 1); err != nil { // names do not disturb messages
			return err
		}
		errs = append(errs, dd.Free(), d.Free(), s.Free())
		if d.Name() != mine {
			errs = append(errs, fmt.Errorf("freed World named %q, want %q", d.Name(), mine))
		}
		if err := d.SetName("x"); !errors.Is(err, runtime.ErrInvalid) {
			errs = append(errs, fmt.Errorf("SetName on a freed World: %v, want ErrInvalid", err))
		}
		return errors.Join(errs...)
	})
}

// TestAttrPredefined: WtimeIsGlobal holds when every rank of the World runs on one host,
// and AppNum is 0 under golaunch's contract (one program).
func TestAttrPredefined(t *testing.T) {
	forTypeLayouts(t, func(ctx context.Context, w *runtime.World) error {
		oneHost := true
		for r := range w.Size() {
			oneHost = oneHost && w.HostOf(r) == w.Host()
		}
		if w.WtimeIsGlobal() != oneHost {
			return fmt.Errorf("WtimeIsGlobal %v on a World whose ranks are on one host: %v", w.WtimeIsGlobal(), oneHost)
		}
		local, err := w.SplitShared(ctx, 0)
		if err != nil {
			return err
		}
		if !local.WtimeIsGlobal() {
			return errors.New("WtimeIsGlobal false on a World of one host's ranks")
		}
		if n, ok := w.AppNum(); n != 0 || !ok {
			return fmt.Errorf("AppNum = %d, %v; want 0, true", n, ok)
		}
		return local.Free()
	})
}

// TestAttrFinalize: Finalize runs the delete functions of Init's World's attributes
// first, newest first, while the World still communicates (the delete function
// Barriers), and only once, a second Finalize running none.
func TestAttrFinalize(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			var order [2][]string
			runtimetest.Run(t, 2, runtimetest.Options{Transport: tr, Timeout: 30 * time.Second}, func(w *runtime.World) error {
				ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(20*time.Second))
				defer cancel()
				me := w.Rank()
				del := func(name string) func(*runtime.World, int) {
					return func(dw *runtime.World, v int) {
						if err := runtime.Barrier(ctx, dw); err != nil || dw.Finalized() {
							name += fmt.Sprintf(" (barrier %v, finalized %v)", err, dw.Finalized())
						}
						order[me] = append(order[me], fmt.Sprintf("%s=%d", name, v))
					}
				}
				a, b := runtime.NewKeyval(nil, del("a")), runtime.NewKeyval(nil, del("b"))
				if err := errors.Join(runtime.SetAttr(w, a, 1), runtime.SetAttr(w, b, 2)); err != nil {
					return err
				}
				if err := w.Finalize(ctx); err != nil {
					return err
				}
				if err := w.Finalize(ctx); err != nil {
					return err
				}
				if got := strings.Join(order[me], " "); got != "b=2 a=1" {
					return fmt.Errorf("delete functions at Finalize: %q, want \"b=2 a=1\"", got)
				}
				return nil
			})
		})
	}
}
