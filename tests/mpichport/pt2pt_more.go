package main

import (
	"context"
	"fmt"

	"github.com/gorma-hpc/gorma/runtime"
)

func init() {
	register("pt2pt-huge_anysrc", "pt2pt/huge_anysrc.c", 2, ptHugeAnysrc)
	register("pt2pt-huge_dupcomm", "pt2pt/huge_dupcomm.c", 2, ptHugeDupcomm)
	register("pt2pt-huge_underflow", "pt2pt/huge_underflow.c", 2, ptHugeUnderflow)
	register("pt2pt-many_isend", "pt2pt/many_isend.c", 3, ptManyIsend)
	register("pt2pt-manylmt", "pt2pt/manylmt.c", 2, ptManylmt)
	register("pt2pt-waitany_null", "pt2pt/waitany_null.c", 1, ptWaitanyNull)
	register("pt2pt-waittestnull", "pt2pt/waittestnull.c", 1, ptWaittestnull)
}

// ptHugeAnysrc: rank 0 Isends 32 messages of 10 MiB to the last rank, which has posted
// 32 receives from any source; WaitAll on both sides.
func ptHugeAnysrc(ctx context.Context, w *runtime.World) error {
	const ntry, blk = 32, 10 << 20
	dest := w.Size() - 1
	if w.Rank() != 0 && w.Rank() != dest {
		return nil
	}
	buf := fill(ntry*blk, byte(0xff))
	reqs := make([]*runtime.Request, ntry)
	for i := range reqs {
		var err error
		if w.Rank() == 0 {
			reqs[i], err = runtime.Isend(w, buf[i*blk:(i+1)*blk], dest, 0)
		} else {
			reqs[i], err = runtime.Irecv(w, buf[i*blk:(i+1)*blk], runtime.AnySource, 0)
		}
		if err != nil {
			return err
		}
	}
	return runtime.WaitAll(ctx, reqs, nil)
}

// ptHugeDupcomm: one 16 MiB message on each of 4 Dups of the World, from rank 0 to
// rank 1, all outstanding at once.
func ptHugeDupcomm(ctx context.Context, w *runtime.World) error {
	const count, ncomms = 4 << 20, 4
	buf := make([]int32, count*ncomms)
	comms := make([]*runtime.World, ncomms)
	reqs := make([]*runtime.Request, ncomms)
	for i := range comms {
		var err error
		if comms[i], err = w.Dup(); err != nil {
			return err
		}
	}
	for i, c := range comms {
		var err error
		part := buf[i*count : (i+1)*count]
		if w.Rank() == 0 {
			reqs[i], err = runtime.Isend(c, part, 1, 0)
		} else {
			reqs[i], err = runtime.Irecv(c, part, 0, 0)
		}
		if err != nil {
			return err
		}
	}
	if err := runtime.WaitAll(ctx, reqs, nil); err != nil {
		return err
	}
	for _, c := range comms {
		if err := c.Free(); err != nil {
			return err
		}
	}
	return nil
}

// ptHugeUnderflow: a one-byte message received into a 10 MiB buffer.
func ptHugeUnderflow(ctx context.Context, w *runtime.World) error {
	const huge = 10 << 20
	buf := make([]byte, huge)
	dest := w.Size() - 1
	switch w.Rank() {
	case 0:
		if err := runtime.Send(ctx, w, buf[:1], dest, 0); err != nil {
			return err
		}
	case dest:
		st, err := runtime.Recv(ctx, w, buf, 0, 0)
		if err != nil {
			return err
		}
		if st.Bytes != 1 {
			return fmt.Errorf("received %d bytes, want 1", st.Bytes)
		}
	}
	return runtime.Barrier(ctx, w)
}

// ptManyIsend: 5 rounds: every rank Isends 16 KiB of its rank to every rank, itself
// included, receives one message from any source at a time (each holding its
// source's rank), then WaitAll on its sends.
func ptManyIsend(ctx context.Context, w *runtime.World) error {
	const iter, count = 5, 16 * 1024 / 4
	n := w.Size()
	for x := 0; x < iter; x++ {
		if err := runtime.Barrier(ctx, w); err != nil {
			return err
		}
		send, recv := fill(count, int32(w.Rank())), make([]int32, count)
		reqs := make([]*runtime.Request, n)
		for i := range reqs {
			var err error
			if reqs[i], err = runtime.Isend(w, send, i, 0); err != nil {
				return err
			}
		}
		for range n {
			for i := range recv {
				recv[i] = -1
			}
			st, err := runtime.Recv(ctx, w, recv, runtime.AnySource, runtime.AnyTag)
			if err != nil {
				return err
			}
			if err := same(fmt.Sprintf("round %d, from rank %d", x, st.Source), recv, fill(count, int32(st.Source))); err != nil {
				return err
			}
		}
		if err := runtime.WaitAll(ctx, reqs, make([]runtime.Status, n)); err != nil {
			return err
		}
	}
	return runtime.Barrier(ctx, w)
}

// ptWaitanyNull: WaitAny over 10 null requests returns at once, without error, with the
// index MPI_UNDEFINED (-1).
func ptWaitanyNull(ctx context.Context, w *runtime.World) error {
	i, _, err := runtime.WaitAny(ctx, make([]*runtime.Request, 10))
	if err != nil {
		return err
	}
	if i != -1 {
		return fmt.Errorf("waitany over null requests: index %d, want -1", i)
	}
	return nil
}

// ptWaittestnull: TestAll, WaitAll, TestAny and WaitAny over no requests succeed, and the
// tests report completion (flag true). (waittestnull.c also calls Testsome and
// Waitsome, which gorma lacks.)
func ptWaittestnull(ctx context.Context, w *runtime.World) error {
	var none []*runtime.Request
	ok, err := runtime.TestAll(none, nil)
	if err != nil {
		return fmt.Errorf("testall: %w", err)
	}
	if !ok {
		return fmt.Errorf("testall over no requests: flag false, want true")
	}
	if err := runtime.WaitAll(ctx, none, nil); err != nil {
		return fmt.Errorf("waitall: %w", err)
	}
	i, ok, _, err := runtime.TestAny(none)
	if err != nil {
		return fmt.Errorf("testany: %w", err)
	}
	if !ok || i != -1 {
		return fmt.Errorf("testany over no requests: flag %v, index %d; want true and -1 (MPI_UNDEFINED)", ok, i)
	}
	if i, _, err := runtime.WaitAny(ctx, none); err != nil || i != -1 {
		return fmt.Errorf("waitany over no requests: index %d, error %v; want -1 and none", i, err)
	}
	return nil
}

// ptManylmt: huge_anysrc with the source named: 32 messages of 10 MiB from rank 0 to the
// last rank, all outstanding at once.
func ptManylmt(ctx context.Context, w *runtime.World) error {
	const ntry, blk = 32, 10 << 20
	dest := w.Size() - 1
	if w.Rank() != 0 && w.Rank() != dest {
		return nil
	}
	buf := fill(ntry*blk, byte(0xff))
	reqs := make([]*runtime.Request, ntry)
	for i := range reqs {
		var err error
		if w.Rank() == 0 {
			reqs[i], err = runtime.Isend(w, buf[i*blk:(i+1)*blk], dest, 0)
		} else {
			reqs[i], err = runtime.Irecv(w, buf[i*blk:(i+1)*blk], 0, 0)
		}
		if err != nil {
			return err
		}
	}
	return runtime.WaitAll(ctx, reqs, nil)
}
