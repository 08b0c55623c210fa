package main

import (
	"context"
	"errors"
	"fmt"
	"unsafe"

	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/window"
)

func init() {
	register("attr-attrt", "attr/attrt.c", 2, attrAttrt)
	register("attr-attrorder", "attr/attrorder.c", 1, attrAttrorder)
	register("attr-attrdeleteget", "attr/attrdeleteget.c", 1, attrAttrdeleteget)
	register("attr-baseattr2", "attr/baseattr2.c", 1, attrBaseattr2)
	register("attr-fkeyval", "attr/fkeyval.c", 1, attrFkeyval)
	register("attr-keyval_double_free", "attr/keyval_double_free.c", 1, attrKeyvalDoubleFree)
	register("comm-commname", "comm/commname.c", 4, commCommname)
	register("rma-winname", "rma/winname.c", 2, rmaWinname)
	register("rma-baseattrwin", "rma/baseattrwin.c", 1, rmaBaseattrwin)
	register("rma-fkeyvalwin", "rma/fkeyvalwin.c", 1, rmaFkeyvalwin)
	register("rma-attrorderwin", "rma/attrorderwin.c", 1, rmaAttrorderwin)
}

// attrAttrt: an attribute whose copy function keeps it (the World rank) and one with no
// copy function, set on the low half of a Dup of the World. The Dup of that half has the
// first with the same value and not the second. The delete function sees the World rank
// when the half is freed. The Comm_create, Split and Comm_compare parts of attrt.c are
// comm's own scenarios.
func attrAttrt(ctx context.Context, w *runtime.World) error {
	rank, size := w.Rank(), w.Size()
	var bad error
	key1 := runtime.NewKeyval(runtime.CopyOnDup[int], func(_ *runtime.World, v int) {
		if v != rank {
			bad = fmt.Errorf("delete function got %d, want the World rank %d", v, rank)
		}
	})
	key3 := runtime.NewKeyval[int](nil, nil)
	dw, err := w.Dup()
	if err != nil {
		return err
	}
	color := runtime.NoColor
	if rank < size-size/2 {
		color = 0
	}
	lo, err := dw.Split(ctx, color, rank)
	if err != nil {
		return err
	}
	if lo != nil {
		if err := first(runtime.SetAttr(lo, key1, rank), runtime.SetAttr(lo, key3, 0)); err != nil {
			return err
		}
		dup, err := lo.Dup()
		if err != nil {
			return err
		}
		v, ok, err := runtime.GetAttr(dup, key1)
		if err != nil || !ok || v != rank {
			return fmt.Errorf("dup key_1: %d, %v, %v; want %d", v, ok, err, rank)
		}
		if _, ok, err := runtime.GetAttr(dup, key3); ok || err != nil {
			return fmt.Errorf("dup key_3 found (%v)", err)
		}
		if err := first(key1.Free(), key3.Free(), runtime.Barrier(ctx, lo), lo.Free(), dup.Free()); err != nil {
			return err
		}
	}
	return first(bad, dw.Free())
}

// attrAttrorder: three attributes set and deleted in every order the MPICH test uses;
// after the sets each holds its value, after the deletes none is left.
func attrAttrorder(ctx context.Context, w *runtime.World) error {
	keys := []*runtime.Keyval[*int]{runtime.NewKeyval[*int](nil, nil), runtime.NewKeyval[*int](nil, nil), runtime.NewKeyval[*int](nil, nil)}
	vals := []int{0, 1024, 2048}
	check := func(what string, set bool) error {
		for i, k := range keys {
			p, ok, err := runtime.GetAttr(w, k)
			if err != nil {
				return err
			}
			if ok != set || (set && p != &vals[i]) {
				return fmt.Errorf("%s: key %d set %v (want %v), value %p (want %p)", what, i, ok, set, p, &vals[i])
			}
		}
		return nil
	}
	for _, order := range [][2][3]int{{{2, 1, 0}, {0, 1, 2}}, {{1, 2, 0}, {2, 1, 0}}, {{0, 1, 2}, {1, 2, 0}}} {
		for _, i := range order[0] {
			if err := runtime.SetAttr(w, keys[i], &vals[i]); err != nil {
				return err
			}
		}
		if err := check(fmt.Sprint("after sets in order ", order[0]), true); err != nil {
			return err
		}
		for _, i := range order[1] {
			if err := runtime.DeleteAttr(w, keys[i]); err != nil {
				return err
			}
		}
		if err := check(fmt.Sprint("after deletes in order ", order[1]), false); err != nil {
			return err
		}
	}
	return first(keys[0].Free(), keys[1].Free(), keys[2].Free())
}

// attrAttrdeleteget: the delete function of an attribute on a Split World runs at the
// World's Free, given that World, on which GetAttr works (and finds the attribute gone).
func attrAttrdeleteget(ctx context.Context, w *runtime.World) error {
	var key *runtime.Keyval[[]byte]
	var errs []error
	ran := false
	key = runtime.NewKeyval(nil, func(c *runtime.World, _ []byte) {
		ran = true
		if c == nil {
			errs = append(errs, errors.New("nil World passed to the delete function"))
			return
		}
		if _, _, err := runtime.GetAttr(c, key); err != nil {
			errs = append(errs, fmt.Errorf("GetAttr in the delete function: %w", err))
		}
	})
	s, err := w.Split(ctx, 1, 0)
	if err != nil {
		return err
	}
	if err := first(runtime.SetAttr(s, key, make([]byte, 100)), s.Free(), key.Free()); err != nil {
		return err
	}
	if !ran {
		errs = append(errs, errors.New("the delete function did not run at Free"))
	}
	return errors.Join(errs...)
}

// attrBaseattr2: the predefined attributes of the World: MPI_TAG_UB is runtime.MaxTag
// (at least 32767), MPI_WTIME_IS_GLOBAL is WtimeIsGlobal, MPI_APPNUM is AppNum (0
// under golaunch, never negative). MPI_HOST (no host process: ProcNull), MPI_IO (every
// rank does its own I/O), MPI_UNIVERSE_SIZE (no dynamic processes) and
// MPI_LASTUSEDCODE (errors are Go values) have no accessor.
func attrBaseattr2(ctx context.Context, w *runtime.World) error {
	if runtime.MaxTag < 32767 {
		return fmt.Errorf("MaxTag %d is below 32767", runtime.MaxTag)
	}
	if !w.WtimeIsGlobal() { // one rank: one clock
		return errors.New("WtimeIsGlobal false in a World of one rank")
	}
	if n, ok := w.AppNum(); !ok || n < 0 {
		return fmt.Errorf("AppNum = %d, %v; want a nonnegative number", n, ok)
	}
	return nil
}

// attrFkeyval: a Keyval freed while its attribute is set: the copy function still runs
// at Dup (it increments the shared value) and the delete function at the Dup's Free and
// at the World's (it decrements it). 32 more Keyvals made between do not take its place.
// On Init's World, which is never freed, the attribute is deleted explicitly.
func attrFkeyval(ctx context.Context, w *runtime.World) error {
	return eachComm(ctx, w, 1, func(c *runtime.World, name string) error {
		val := 1
		k := runtime.NewKeyval(func(_ *runtime.World, p *int) (*int, bool) { *p++; return p, true },
			func(_ *runtime.World, p *int) { *p-- })
		var err error
		if c != w { // the walk frees its own Worlds: give it a Dup to hold the attribute
			if c, err = c.Dup(); err != nil {
				return err
			}
		}
		if err := first(runtime.SetAttr(c, k, &val), k.Free()); err != nil {
			return err
		}
		others := make([]*runtime.Keyval[int], 32)
		for i := range others {
			others[i] = runtime.NewKeyval[int](nil, nil)
		}
		d, err := c.Dup()
		if err != nil {
			return err
		}
		if val != 2 {
			return fmt.Errorf("%s: attribute %d after Dup, want 2 (copied)", name, val)
		}
		if err := d.Free(); err != nil {
			return err
		}
		if val != 1 {
			return fmt.Errorf("%s: attribute %d after the Dup's Free, want 1", name, val)
		}
		if c == w { // MPI_Attr_delete with the saved key: the freed Keyval still deletes
			err = runtime.DeleteAttr(c, k)
		} else {
			err = c.Free()
		}
		if err != nil {
			return err
		}
		if val != 0 {
			return fmt.Errorf("%s: attribute %d after Free, want 0", name, val)
		}
		for _, o := range others {
			if err := o.Free(); err != nil {
				return err
			}
		}
		return nil
	})
}

// attrKeyvalDoubleFree: a second Free of a Keyval fails with ErrInvalid and does not
// disturb other Keyvals.
func attrKeyvalDoubleFree(ctx context.Context, w *runtime.World) error {
	k := runtime.NewKeyval[int](nil, nil)
	other := runtime.NewKeyval[int](nil, nil)
	if err := k.Free(); err != nil {
		return err
	}
	if err := k.Free(); !errors.Is(err, runtime.ErrInvalid) {
		return fmt.Errorf("second Free: %v, want ErrInvalid", err)
	}
	if err := runtime.SetAttr(w, other, 1); err != nil {
		return err
	}
	if v, ok, err := runtime.GetAttr(w, other); v != 1 || !ok || err != nil {
		return fmt.Errorf("other Keyval: %d, %v, %v", v, ok, err)
	}
	return first(runtime.DeleteAttr(w, other), other.Free())
}

// commCommname: Init's World is named runtime.InitName (MPI_COMM_WORLD's name; gorma
// has no MPI_COMM_SELF); every World of the walk takes the name SetName gives it.
func commCommname(ctx context.Context, w *runtime.World) error {
	if got := w.Name(); got != runtime.InitName {
		return fmt.Errorf("the World of Init is named %q, want %q", got, runtime.InitName)
	}
	cnt := 0
	return eachComm(ctx, w, 1, func(c *runtime.World, what string) error {
		name := fmt.Sprint("comm-", cnt)
		cnt++
		if err := c.SetName(name); err != nil {
			return err
		}
		if got := c.Name(); got != name {
			return fmt.Errorf("%s: named %q, want %q", what, got, name)
		}
		return nil
	})
}

// eachWin runs f on windows of every flavor over w, as MTestGetWin walks them:
// Create over the caller's memory, Allocate, and a dynamic window; each is freed after.
func eachWin(ctx context.Context, w *runtime.World, f func(win *window.Win[int32], what string) error) error {
	makers := []struct {
		what string
		make func() (*window.Win[int32], error)
	}{
		{"create", func() (*window.Win[int32], error) { return window.Create(ctx, w, make([]int32, 64)) }},
		{"allocate", func() (*window.Win[int32], error) { return window.Allocate[int32](ctx, w, 64) }},
		{"dynamic", func() (*window.Win[int32], error) { return window.CreateDynamic[int32](ctx, w) }},
	}
	for _, m := range makers {
		win, err := m.make()
		if err != nil {
			return err
		}
		if err := f(win, m.what); err != nil {
			return errors.Join(err, win.Free(ctx))
		}
		if err := win.Free(ctx); err != nil {
			return err
		}
	}
	return nil
}

// rmaWinname: every window of the walk takes the name SetName gives it.
func rmaWinname(ctx context.Context, w *runtime.World) error {
	cnt := 0
	return eachWin(ctx, w, func(win *window.Win[int32], what string) error {
		if win.Name() != "" {
			return fmt.Errorf("%s: a new window named %q", what, win.Name())
		}
		name := fmt.Sprint("win-", cnt)
		cnt++
		if err := win.SetName(name); err != nil {
			return err
		}
		if got := win.Name(); got != name {
			return fmt.Errorf("%s: named %q, want %q", what, got, name)
		}
		return nil
	})
}

// rmaBaseattrwin: a window Created over 1024 bytes: MPI_WIN_BASE is Local (the
// caller's memory itself), MPI_WIN_SIZE Len times DispUnit (the bytes given),
// MPI_WIN_DISP_UNIT DispUnit (the element's size, 4 for int32; gorma's displacements
// count elements). The window's flavor and model are checked too.
func rmaBaseattrwin(ctx context.Context, w *runtime.World) error {
	const n = 1024
	base := make([]byte, n)
	win, err := window.Create(ctx, w, base)
	if err != nil {
		return err
	}
	var errs []error
	if unsafe.SliceData(win.Local()) != unsafe.SliceData(base) {
		errs = append(errs, errors.New("the slice Local returns is not the memory given to Create"))
	}
	if got := win.Len(win.Rank()) * win.DispUnit(); got != n {
		errs = append(errs, fmt.Errorf("window size %d bytes, want %d", got, n))
	}
	if win.DispUnit() != 1 || win.Flavor() != window.FlavorCreate || win.Model() != window.Unified {
		errs = append(errs, fmt.Errorf("disp unit %d, flavor %v, model %v; want 1, create, unified", win.DispUnit(), win.Flavor(), win.Model()))
	}
	ints, err := window.Allocate[int32](ctx, w, n/4)
	if err != nil {
		return errors.Join(append(errs, err, win.Free(ctx))...)
	}
	if ints.DispUnit() != 4 || ints.Len(ints.Rank())*ints.DispUnit() != n {
		errs = append(errs, fmt.Errorf("int32 window: disp unit %d, %d bytes; want 4, %d", ints.DispUnit(), ints.Len(ints.Rank())*ints.DispUnit(), n))
	}
	return errors.Join(append(errs, ints.Free(ctx), win.Free(ctx))...)
}

// rmaFkeyvalwin: a window Keyval freed while its attribute is set: the delete function
// still runs at the window's Free; 32 more Keyvals made between do not take its place.
func rmaFkeyvalwin(ctx context.Context, w *runtime.World) error {
	makers := []func() (*window.Win[int32], error){
		func() (*window.Win[int32], error) { return window.Create(ctx, w, make([]int32, 64)) },
		func() (*window.Win[int32], error) { return window.Allocate[int32](ctx, w, 64) },
		func() (*window.Win[int32], error) { return window.CreateDynamic[int32](ctx, w) },
	}
	for i, mk := range makers {
		win, err := mk()
		if err != nil {
			return err
		}
		val := 1
		k := window.NewKeyval(func(p *int) { *p-- })
		if err := first(window.SetAttr(win, k, &val), k.Free()); err != nil {
			return errors.Join(err, win.Free(ctx))
		}
		others := make([]*window.Keyval[int], 32)
		for j := range others {
			others[j] = window.NewKeyval[int](nil)
		}
		if err := win.Free(ctx); err != nil {
			return err
		}
		if val != 0 {
			return fmt.Errorf("window %d: attribute %d after Free, want 0", i, val)
		}
		for _, o := range others {
			if err := o.Free(); err != nil {
				return err
			}
		}
	}
	return nil
}

// rmaAttrorderwin: attrorder.c on a window: three attributes set and deleted in
// several orders; after the sets each holds its value, after the deletes none is left.
func rmaAttrorderwin(ctx context.Context, w *runtime.World) error {
	win, err := window.Allocate[int32](ctx, w, 1)
	if err != nil {
		return err
	}
	keys := []*window.Keyval[*int]{window.NewKeyval[*int](nil), window.NewKeyval[*int](nil), window.NewKeyval[*int](nil)}
	vals := []int{0, 1024, 2048}
	check := func(what string, set bool) error {
		for i, k := range keys {
			p, ok, err := window.GetAttr(win, k)
			if err != nil {
				return err
			}
			if ok != set || (set && p != &vals[i]) {
				return fmt.Errorf("%s: key %d set %v (want %v)", what, i, ok, set)
			}
		}
		return nil
	}
	run := func() error {
		for _, order := range [][2][3]int{{{2, 1, 0}, {0, 1, 2}}, {{1, 2, 0}, {2, 1, 0}}, {{0, 1, 2}, {1, 2, 0}}} {
			for _, i := range order[0] {
				if err := window.SetAttr(win, keys[i], &vals[i]); err != nil {
					return err
				}
			}
			if err := check(fmt.Sprint("after sets in order ", order[0]), true); err != nil {
				return err
			}
			for _, i := range order[1] {
				if err := window.DeleteAttr(win, keys[i]); err != nil {
					return err
				}
			}
			if err := check(fmt.Sprint("after deletes in order ", order[1]), false); err != nil {
				return err
			}
		}
		return first(keys[0].Free(), keys[1].Free(), keys[2].Free())
	}
	return errors.Join(run(), win.Free(ctx))
}
