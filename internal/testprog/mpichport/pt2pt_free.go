package main

import (
	"context"
	"fmt"

	"github.com/gorma-hpc/gorma/runtime"
)

func init() {
	register("pt2pt-cancelanysrc", "pt2pt/cancelanysrc.c", 2, ptCancelanysrc)
	register("pt2pt-rqfree", "pt2pt/rqfree.c", 4, ptRqfree)
}

// ptCancelanysrc: rank 0 cancels a receive from any source, which Wait reports
// cancelled; after a Barrier, its next receive from any source gets rank 1's 42.
func ptCancelanysrc(ctx context.Context, w *runtime.World) error {
	msg := []int32{-1}
	if w.Rank() != 0 {
		return first(runtime.Barrier(ctx, w), runtime.Send(ctx, w, []int32{42}, 0, 0))
	}
	r, err := runtime.Irecv(w, msg, runtime.AnySource, 0)
	if err != nil {
		return err
	}
	if err := r.Cancel(); err != nil {
		return err
	}
	st, err := r.Wait(ctx)
	if err != nil {
		return err
	}
	if !st.Cancelled {
		return fmt.Errorf("a cancelled receive from any source is not reported cancelled")
	}
	if err := runtime.Barrier(ctx, w); err != nil {
		return err
	}
	if r, err = runtime.Irecv(w, msg, runtime.AnySource, 0); err != nil {
		return err
	}
	if _, err := r.Wait(ctx); err != nil {
		return err
	}
	return same("message", msg, []int32{42})
}

// ptRqfree: rank 1 posts receives of one int32 with tags 1..5 and of 10000 int32s with
// tag 6 from rank 0, then Barriers. Rank 0, after the Barrier and with a buffer
// attached, sends 10, 11, 12, 13 by Isend, Ibsend, Issend and Irsend, freeing each
// Request at once, 14 by Isend waited for, detaches, and sends the large message. Rank 1
// waits for its first four receives (10..13) and frees the last two.
func ptRqfree(ctx context.Context, w *runtime.World) error {
	const large, tag = 10000, 1
	switch w.Rank() {
	case 0:
		if err := runtime.Barrier(ctx, w); err != nil {
			return err
		}
		if err := runtime.BufferAttach(w, make([]byte, runtime.BsendOverhead+20+2000)); err != nil {
			return err
		}
		smsg := []int32{10, 11, 12, 13, 14}
		for i, send := range []func([]int32, int) (*runtime.Request, error){
			func(b []int32, t int) (*runtime.Request, error) { return runtime.Isend(w, b, 1, t) },
			func(b []int32, t int) (*runtime.Request, error) { return runtime.Ibsend(w, b, 1, t) },
			func(b []int32, t int) (*runtime.Request, error) { return runtime.Issend(w, b, 1, t) },
			func(b []int32, t int) (*runtime.Request, error) { return runtime.Irsend(w, b, 1, t) },
		} {
			r, err := send(smsg[i:i+1], tag+i)
			if err != nil {
				return err
			}
			if err := r.Free(); err != nil {
				return fmt.Errorf("free of send %d: %w", i, err)
			}
		}
		r, err := runtime.Isend(w, smsg[4:5], 1, tag+4)
		if err != nil {
			return err
		}
		if _, err := r.Wait(ctx); err != nil {
			return err
		}
		if _, err := runtime.BufferDetach(ctx, w); err != nil {
			return err
		}
		if r, err = runtime.Isend(w, make([]int32, large), 1, tag+5); err != nil {
			return err
		}
		_, err = r.Wait(ctx)
		return err
	case 1:
		rmsg := make([]int32, 5)
		reqs := make([]*runtime.Request, 6)
		for i := 0; i < 5; i++ {
			var err error
			if reqs[i], err = runtime.Irecv(w, rmsg[i:i+1], 0, tag+i); err != nil {
				return err
			}
		}
		var err error
		if reqs[5], err = runtime.Irecv(w, make([]int32, large), 0, tag+5); err != nil {
			return err
		}
		if err := runtime.Barrier(ctx, w); err != nil {
			return err
		}
		for i := 0; i < 4; i++ {
			if _, err := reqs[i].Wait(ctx); err != nil {
				return err
			}
		}
		if err := same("messages", rmsg[:4], []int32{10, 11, 12, 13}); err != nil {
			return err
		}
		return first(reqs[4].Free(), reqs[5].Free())
	}
	return runtime.Barrier(ctx, w)
}
