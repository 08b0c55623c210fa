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

func init() {
	register("pt2pt-issendselfcancel", "pt2pt/issendselfcancel.c", 1, ptIssendselfcancel)
	register("pt2pt-bsendalign", "pt2pt/bsendalign.c", 2, ptBsendalign)
}

// ptIssendselfcancel: on a World of this rank alone, an empty Issend to self (tag 123)
// is found by Probe from any source with any tag (source 0, tag 123), then cancelled
// and freed. An Irecv of that tag, cancelled, completes at Wait.
func ptIssendselfcancel(ctx context.Context, w *runtime.World) error {
	self, err := selfWorld(ctx, w)
	if err != nil {
		return err
	}
	r, err := runtime.Issend(self, []byte(nil), 0, 123)
	if err != nil {
		return err
	}
	st, err := runtime.Probe(ctx, self, runtime.AnySource, runtime.AnyTag)
	if err != nil {
		return err
	}
	if st.Source != 0 || st.Tag != 123 {
		return fmt.Errorf("probe: source %d tag %d, want 0 123", st.Source, st.Tag)
	}
	if err := first(r.Cancel(), r.Free()); err != nil {
		return err
	}
	if r, err = runtime.Irecv(self, []byte(nil), 0, 123); err != nil {
		return err
	}
	if err := r.Cancel(); err != nil {
		return err
	}
	if _, err := r.Wait(ctx); err != nil {
		return err
	}
	return self.Free()
}

// ptBsendalign: bsend2's exchange (every rank Bsends ten messages of 10 int32s to rank
// 0, which receives them by source and tag) with the 8000-byte buffer attached at byte
// offsets 0..6 of a larger one; each detach returns the buffer attached.
func ptBsendalign(ctx context.Context, w *runtime.World) error {
	const bufsize = 2000 * 4
	rank, size := w.Rank(), w.Size()
	buf := make([]byte, bufsize+8)
	for align := 0; align < 7; align++ {
		if err := runtime.BufferAttach(w, buf[align:align+bufsize]); err != nil {
			return err
		}
		for j := 0; j < 10; j++ {
			a := seq(10, func(i int) int32 { return int32((rank+10*j)*size + i) })
			if err := runtime.Bsend(w, a, 0, 27+j); err != nil {
				return fmt.Errorf("align %d, message %d: %w", align, j, err)
			}
		}
		if rank == 0 {
			b := make([]int32, 10)
			for i := 0; i < size; i++ {
				for j := 0; j < 10; j++ {
					st, err := runtime.Recv(ctx, w, b, i, 27+j)
					if err != nil {
						return err
					}
					if st.Source != i || st.Tag != 27+j {
						return fmt.Errorf("align %d: status source %d tag %d, want %d %d", align, st.Source, st.Tag, i, 27+j)
					}
					if err := same(fmt.Sprintf("align %d, message %d from %d", align, j, i), b, seq(10, func(k int) int32 { return int32((i+10*j)*size + k) })); err != nil {
						return err
					}
				}
			}
		}
		got, err := runtime.BufferDetach(ctx, w)
		if err != nil {
			return err
		}
		if len(got) != bufsize || &got[0] != &buf[align] {
			return fmt.Errorf("align %d: detach did not return the buffer attached", align)
		}
	}
	return nil
}
