package main

import (
	"context"
	"fmt"

	"github.com/gorma-hpc/gorma/collectives"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/window"
)

func init() {
	register("rma-window_creation", "rma/window_creation.c", 2, rmaWindowCreation(false))
	register("rma-window_allocation", "rma/window_creation.c", 4, rmaWindowCreation(true))
	register("rma-win_flavors", "rma/win_flavors.c", 4, rmaWinFlavors)
	register("rma-rmazero", "rma/rmazero.c", 2, rmaRmazero)
}

// rmaWindowCreation: 500 windows of 4000 bytes each made in a row (Create over fresh
// memory; Allocate for window_allocation, built with -DUSE_WIN_ALLOCATE), a Barrier, then
// all freed.
func rmaWindowCreation(alloc bool) func(ctx context.Context, w *runtime.World) error {
	return func(ctx context.Context, w *runtime.World) error {
		const nelts, nwin = 1000, 500
		wins := make([]*window.Win[int32], nwin)
		for i := range wins {
			var err error
			if wins[i], err = newWin[int32](ctx, w, nelts, alloc); err != nil {
				return fmt.Errorf("window %d: %w", i, err)
			}
		}
		if err := runtime.Barrier(ctx, w); err != nil {
			return err
		}
		for i, win := range wins {
			if err := win.Free(ctx); err != nil {
				return fmt.Errorf("freeing window %d: %w", i, err)
			}
		}
		return nil
	}
}

// rmaWinFlavors: windows of rank*8 bytes (rank 0's empty) made by Create, Allocate and
// CreateDynamic report their flavor (MPI_WIN_CREATE_FLAVOR; gorma has no
// MPI_WIN_MODEL attribute to check), and Allocate gives every rank but 0 memory.
func rmaWinFlavors(ctx context.Context, w *runtime.World) error {
	rank := w.Rank()
	var buf []byte
	if rank > 0 {
		buf = make([]byte, rank*8)
	}
	cw, err := window.Create(ctx, w, buf)
	if err != nil {
		return err
	}
	if f := cw.Flavor(); f != window.FlavorCreate {
		return fmt.Errorf("the flavor of a Create window is %v, want %v", f, window.FlavorCreate)
	}
	if err := cw.Free(ctx); err != nil {
		return err
	}
	aw, err := window.Allocate[byte](ctx, w, rank*8)
	if err != nil {
		return err
	}
	if rank > 0 && len(aw.Local()) != rank*8 {
		return fmt.Errorf("allocate gave %d bytes, want %d", len(aw.Local()), rank*8)
	}
	if f := aw.Flavor(); f != window.FlavorAllocate {
		return fmt.Errorf("the flavor of an Allocate window is %v, want %v", f, window.FlavorAllocate)
	}
	if err := aw.Free(ctx); err != nil {
		return err
	}
	dw, err := window.CreateDynamic[byte](ctx, w)
	if err != nil {
		return err
	}
	if f := dw.Flavor(); f != window.FlavorDynamic {
		return fmt.Errorf("the flavor of a CreateDynamic window is %v, want %v", f, window.FlavorDynamic)
	}
	return dw.Free(ctx)
}

// rmaRmazero: zero-element Put, Get, Accumulate and GetAccumulate to rank 0 must
// succeed in Fence epochs and exclusive-lock epochs, and zero-element Rput, Rget,
// Raccumulate and RgetAccumulate in lock epochs, their requests completing, over each
// communicator (the contiguous-type variants of rmazero.c are the same calls here).
func rmaRmazero(ctx context.Context, w *runtime.World) error {
	const target = 0
	buf := make([]int32, 256)
	rma, result := make([]int32, 16), make([]int32, 256)
	sum := collectives.Sum[int32]()
	return eachComm(ctx, w, 1, func(c *runtime.World, name string) error {
		win, err := window.Create(ctx, c, buf)
		if err != nil {
			return err
		}
		ops := []struct {
			name string
			call func() error
		}{
			{"Put", func() error { return win.Put(rma[:0], target, 0) }},
			{"Get", func() error { return win.Get(rma[:0], target, 0) }},
			{"Accumulate", func() error { return win.Accumulate(rma[:0], target, 0, sum) }},
			{"GetAccumulate", func() error { return win.GetAccumulate(rma[:0], result[:0], target, 0, sum) }},
		}
		reqOps := []struct {
			name string
			call func() (*window.Request, error)
		}{
			{"Rput", func() (*window.Request, error) { return win.Rput(rma[:0], target, 0) }},
			{"Rget", func() (*window.Request, error) { return win.Rget(rma[:0], target, 0) }},
			{"Raccumulate", func() (*window.Request, error) { return win.Raccumulate(rma[:0], target, 0, sum) }},
			{"RgetAccumulate", func() (*window.Request, error) {
				return win.RgetAccumulate(rma[:0], result[:0], target, 0, sum)
			}},
		}
		if err := win.Fence(ctx, 0); err != nil {
			return err
		}
		for _, op := range ops {
			if err := first(op.call(), win.Fence(ctx, 0)); err != nil {
				return fmt.Errorf("%s: zero-element %s in a fence epoch: %w", name, op.name, err)
			}
		}
		for _, op := range ops {
			if err := first(win.Lock(ctx, window.Exclusive, target, 0), op.call(), win.Unlock(ctx, target)); err != nil {
				return fmt.Errorf("%s: zero-element %s in a lock epoch: %w", name, op.name, err)
			}
		}
		for _, op := range reqOps {
			if err := win.Lock(ctx, window.Exclusive, target, 0); err != nil {
				return err
			}
			req, err := op.call()
			if err = first(err, win.Unlock(ctx, target)); err == nil {
				err = req.Wait(ctx)
			}
			if err != nil {
				return fmt.Errorf("%s: zero-element %s in a lock epoch: %w", name, op.name, err)
			}
		}
		return win.Free(ctx)
	})
}
