package window_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/window"
)

// flavors makes a window of n int32 per rank with each constructor; dynamic windows
// attach n elements (Len stays 0: their memory is attachments, not Local).
var flavors = []struct {
	name string
	make func(ctx context.Context, w *runtime.World, n int) (*window.Win[int32], error)
}{
	{"allocate", func(ctx context.Context, w *runtime.World, n int) (*window.Win[int32], error) {
		return window.Allocate[int32](ctx, w, n)
	}},
	{"shared", func(ctx context.Context, w *runtime.World, n int) (*window.Win[int32], error) {
		return window.AllocateShared[int32](ctx, w, n)
	}},
	{"create", func(ctx context.Context, w *runtime.World, n int) (*window.Win[int32], error) {
		return window.Create(ctx, w, make([]int32, n))
	}},
	{"dynamic", func(ctx context.Context, w *runtime.World, n int) (*window.Win[int32], error) {
		return window.CreateDynamic[int32](ctx, w)
	}},
}

// winLog records the values a window Keyval's delete function saw, in order.
type winLog struct {
	mu   sync.Mutex
	seen []string
}

func (l *winLog) del(v string) {
	l.mu.Lock()
	l.seen = append(l.seen, v)
	l.mu.Unlock()
}

func (l *winLog) want(what string, vals ...string) error {
	l.mu.Lock()
	got := l.seen
	l.seen = nil
	l.mu.Unlock()
	if !slices.Equal(got, vals) {
		return fmt.Errorf("%s: delete functions saw %q, want %q", what, got, vals)
	}
	return nil
}

// TestAttrWinDelete: window attributes of every flavor: the delete function runs when
// DeleteAttr removes a value or SetAttr replaces it, and at Free for each value left (in
// the reverse of the order their keys were set); a freed window has none and takes none.
func TestAttrWinDelete(t *testing.T) {
	forLayouts(t, func(ctx context.Context, w *runtime.World) error {
		for _, fl := range flavors {
			if err := winDelete(ctx, w, fl.make); err != nil {
				return fmt.Errorf("%s: %w", fl.name, err)
			}
		}
		return nil
	})
}

func winDelete(ctx context.Context, w *runtime.World, mk func(context.Context, *runtime.World, int) (*window.Win[int32], error)) error {
	var log winLog
	a, b := window.NewKeyval(log.del), window.NewKeyval(log.del)
	plain := window.NewKeyval[int](nil)
	win, err := mk(ctx, w, 8)
	if err != nil {
		return err
	}
	r := fmt.Sprint(w.Rank())
	steps := []func() error{
		func() error { return window.SetAttr(win, a, "a1"+r) },
		func() error { return window.SetAttr(win, a, "a2"+r) },
		func() error { return log.want("replacing set", "a1"+r) },
		func() error { return window.DeleteAttr(win, a) },
		func() error { return window.DeleteAttr(win, a) },
		func() error { return log.want("delete, twice", "a2"+r) },
		func() error { return window.SetAttr(win, b, "b"+r) },
		func() error { return window.SetAttr(win, plain, 7) },
		func() error { return window.SetAttr(win, a, "a3"+r) },
		func() error {
			v, ok, err := window.GetAttr(win, b)
			if err != nil || !ok || v != "b"+r {
				return fmt.Errorf("GetAttr = %q, %v, %v; want %q", v, ok, err, "b"+r)
			}
			n, ok, err := window.GetAttr(win, plain)
			if err != nil || !ok || n != 7 {
				return fmt.Errorf("GetAttr = %d, %v, %v; want 7", n, ok, err)
			}
			return log.want("sets")
		},
		func() error { return win.Free(ctx) },
		func() error { return log.want("free", "a3"+r, "b"+r) },
		func() error {
			if _, ok, err := window.GetAttr(win, b); ok || err != nil {
				return fmt.Errorf("GetAttr on a freed window: %v, %v; want none", ok, err)
			}
			if err := window.SetAttr(win, b, "x"); !errors.Is(err, window.ErrFreed) {
				return fmt.Errorf("SetAttr on a freed window: %v, want ErrFreed", err)
			}
			return log.want("after free")
		},
	}
	for i, f := range steps {
		if err := f(); err != nil {
			return fmt.Errorf("step %d: %w", i, err)
		}
	}
	return nil
}

// TestKeyvalWin: a freed window Keyval is refused by SetAttr and a second Free fails,
// but GetAttr still reads its value and its delete function still runs at DeleteAttr
// and at the window's Free; nil arguments are refused with ErrInvalid.
func TestKeyvalWin(t *testing.T) {
	forLayouts(t, func(ctx context.Context, w *runtime.World) error {
		var deleted atomic.Int32
		k := window.NewKeyval(func(v *int) { *v--; deleted.Add(1) })
		win, err := window.Allocate[float64](ctx, w, 4)
		if err != nil {
			return err
		}
		val := 1
		if err := window.SetAttr(win, k, &val); err != nil {
			return err
		}
		errs := []error{k.Free()}
		if p, ok, err := window.GetAttr(win, k); p != &val || !ok || err != nil {
			errs = append(errs, fmt.Errorf("GetAttr with a freed Keyval: %p, %v, %v; want the value set", p, ok, err))
		}
		var nilWin *window.Win[float64]
		var nilK *window.Keyval[int]
		_, _, getNil := window.GetAttr(nilWin, k)
		for name, err := range map[string]error{
			"second Free":           k.Free(),
			"SetAttr, freed Keyval": window.SetAttr(win, k, &val),
			"SetAttr, nil Keyval":   window.SetAttr(win, nilK, 1),
			"GetAttr, nil window":   getNil,
			"Free, nil Keyval":      nilK.Free(),
		} {
			if !errors.Is(err, window.ErrInvalid) {
				errs = append(errs, fmt.Errorf("%s: %v, want ErrInvalid", name, err))
			}
		}
		other := 5
		k2 := window.NewKeyval(func(v *int) { *v = 0 })
		errs = append(errs, window.SetAttr(win, k2, &other), k2.Free(), window.DeleteAttr(win, k2))
		if other != 0 {
			errs = append(errs, errors.New("DeleteAttr with a freed Keyval did not run its delete function"))
		}
		errs = append(errs, win.Free(ctx))
		if val != 0 || deleted.Load() != 1 {
			errs = append(errs, fmt.Errorf("after Free: value %d, %d deletes; want 0 and 1", val, deleted.Load()))
		}
		return errors.Join(errs...)
	})
}

// TestNameWin: a window starts unnamed; SetName names it at this rank only, safely from
// several goroutines beside RMA calls; a freed window keeps its name and takes no other.
func TestNameWin(t *testing.T) {
	forLayouts(t, func(ctx context.Context, w *runtime.World) error {
		win, err := window.Allocate[int64](ctx, w, 16)
		if err != nil {
			return err
		}
		if win.Name() != "" {
			return fmt.Errorf("a new window is named %q", win.Name())
		}
		if err := win.Fence(ctx, 0); err != nil {
			return err
		}
		me, next := w.Rank(), (w.Rank()+1)%w.Size()
		var wg sync.WaitGroup
		putErrs := make([]error, 4)
		for g := range 4 {
			wg.Go(func() {
				_ = win.SetName(fmt.Sprint("g", g))
				_ = win.Name()
				putErrs[g] = win.Put([]int64{int64(me)}, next, g)
			})
		}
		wg.Wait()
		if err := errors.Join(putErrs...); err != nil {
			return err
		}
		if err := win.Fence(ctx, window.NoSucceed); err != nil {
			return err
		}
		name := fmt.Sprint("halo", me)
		if err := win.SetName(name); err != nil {
			return err
		}
		if win.Name() != name {
			return fmt.Errorf("named %q, want %q", win.Name(), name)
		}
		if err := win.Free(ctx); err != nil {
			return err
		}
		if err := win.SetName("x"); !errors.Is(err, window.ErrFreed) {
			return fmt.Errorf("SetName on a freed window: %v, want ErrFreed", err)
		}
		if win.Name() != name {
			return fmt.Errorf("freed window named %q, want %q", win.Name(), name)
		}
		return nil
	})
}

// TestAttrWinPredefined: the accessors that answer MPI's predefined window attributes:
// Local is the memory (MPI_WIN_BASE; Create's is the caller's slice), Len times
// DispUnit its size in bytes (MPI_WIN_SIZE), DispUnit the element size
// (MPI_WIN_DISP_UNIT), Flavor the constructor (MPI_WIN_CREATE_FLAVOR), and Model
// Unified (MPI_WIN_MODEL), which the Puts of peers show: after a Fence, and after the
// peer's Unlock and a Barrier, they are in the owner's Local memory.
func TestAttrWinPredefined(t *testing.T) {
	forLayouts(t, func(ctx context.Context, w *runtime.World) error {
		want := map[string]window.Flavor{"allocate": window.FlavorAllocate, "shared": window.FlavorShared, "create": window.FlavorCreate, "dynamic": window.FlavorDynamic}
		for _, fl := range flavors {
			if fl.name == "dynamic" {
				continue // no Local memory: checked below
			}
			n := 4 + w.Rank() // ranks may differ
			win, err := fl.make(ctx, w, n)
			if err != nil {
				return err
			}
			if err := unifiedPuts(ctx, w, win, fl.name); err != nil {
				return errors.Join(err, win.Free(ctx))
			}
			if win.Flavor() != want[fl.name] || win.DispUnit() != 4 || win.Model() != window.Unified || win.Len(w.Rank()) != n || len(win.Local()) != n {
				return errors.Join(fmt.Errorf("%s: flavor %v, disp unit %d, model %v, Len %d, len(Local) %d; want %v, 4, unified, %d, %d",
					fl.name, win.Flavor(), win.DispUnit(), win.Model(), win.Len(w.Rank()), len(win.Local()), want[fl.name], n, n), win.Free(ctx))
			}
			if err := win.Free(ctx); err != nil {
				return err
			}
		}
		buf := make([]uint8, 5)
		bw, err := window.Create(ctx, w, buf)
		if err != nil {
			return err
		}
		if unsafe.SliceData(bw.Local()) != unsafe.SliceData(buf) || bw.DispUnit() != 1 {
			return errors.Join(fmt.Errorf("Create: Local is not the caller's slice, or disp unit %d is not 1", bw.DispUnit()), bw.Free(ctx))
		}
		if err := bw.Free(ctx); err != nil {
			return err
		}
		dw, err := window.CreateDynamic[complex128](ctx, w)
		if err != nil {
			return err
		}
		if dw.Local() != nil || dw.Len(w.Rank()) != 0 || dw.DispUnit() != 16 || dw.Flavor() != window.FlavorDynamic || dw.Model() != window.Unified {
			return errors.Join(fmt.Errorf("dynamic: Local %v, Len %d, disp unit %d, flavor %v, model %v", dw.Local(), dw.Len(w.Rank()), dw.DispUnit(), dw.Flavor(), dw.Model()), dw.Free(ctx))
		}
		return dw.Free(ctx)
	})
}

// unifiedPuts has every rank Put into the next rank's window, once in a Fence epoch and
// once under Lock, and checks that the puts of the previous rank are in Local.
func unifiedPuts(ctx context.Context, w *runtime.World, win *window.Win[int32], name string) error {
	me, size := w.Rank(), w.Size()
	next, prev := (me+1)%size, (me+size-1)%size
	if err := win.Fence(ctx, 0); err != nil {
		return err
	}
	if err := win.Put([]int32{int32(100 + me)}, next, 0); err != nil {
		return err
	}
	if err := win.Fence(ctx, window.NoSucceed); err != nil {
		return err
	}
	if got := win.Local()[0]; got != int32(100+prev) {
		return fmt.Errorf("%s: after the Fence Local()[0] = %d, want rank %d's Put %d", name, got, prev, 100+prev)
	}
	if err := win.Lock(ctx, window.Exclusive, next, 0); err != nil {
		return err
	}
	if err := win.Put([]int32{int32(200 + me)}, next, 1); err != nil {
		return err
	}
	if err := win.Unlock(ctx, next); err != nil {
		return err
	}
	if err := runtime.Barrier(ctx, w); err != nil {
		return err
	}
	if got := win.Local()[1]; got != int32(200+prev) {
		return fmt.Errorf("%s: after the peer's Unlock and a Barrier Local()[1] = %d, want rank %d's Put %d", name, got, prev, 200+prev)
	}
	return nil
}
