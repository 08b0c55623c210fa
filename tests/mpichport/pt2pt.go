package main

import (
	"context"
	"fmt"
	"time"

	"github.com/gorma-hpc/gorma/runtime"
)

func init() {
	register("pt2pt-anyall", "pt2pt/anyall.c", 2, ptAnyall)
	register("pt2pt-isendself", "pt2pt/isendself.c", 1, ptIsendself)
	register("pt2pt-isendselfprobe", "pt2pt/isendselfprobe.c", 1, ptIsendselfprobe)
	register("pt2pt-sendall", "pt2pt/sendall.c", 4, ptSendall)
	register("pt2pt-isendirecv", "pt2pt/isendirecv.c", 10, ptIsendirecv)
	register("pt2pt-recv_any", "pt2pt/recv_any.c", 2, ptRecvAny)
	register("pt2pt-sendrecv3", "pt2pt/sendrecv3.c", 2, ptSendrecv3)
	register("pt2pt-probe_unexp", "pt2pt/probe_unexp.c", 4, ptProbeUnexp)
}

// ptAnyall: rank 1 posts 30 receives from any source with any tag, of decreasing
// lengths, before rank 0 sends 30 messages of those lengths. WaitAny must pair each
// message with its receive (message ordering) and the data and counts must match.
func ptAnyall(ctx context.Context, w *runtime.World) error {
	const maxMsgs = 30
	const sender, receiver = 0, 1
	switch w.Rank() {
	case sender:
		if err := runtime.Barrier(ctx, w); err != nil {
			return err
		}
		for i := 0; i < maxMsgs; i++ {
			msg := seq(maxMsgs-i, func(j int) int32 { return int32(i*maxMsgs + j) })
			if err := runtime.Send(ctx, w, msg, receiver, 3); err != nil {
				return err
			}
		}
	case receiver:
		bufs := make([][]int32, maxMsgs)
		reqs := make([]*runtime.Request, maxMsgs)
		for i := range bufs {
			bufs[i] = fill(maxMsgs-i, int32(-1))
			var err error
			if reqs[i], err = runtime.Irecv(w, bufs[i], runtime.AnySource, runtime.AnyTag); err != nil {
				return err
			}
		}
		if err := runtime.Barrier(ctx, w); err != nil {
			return err
		}
		for range maxMsgs {
			idx, st, err := runtime.WaitAny(ctx, reqs)
			if err != nil {
				return err
			}
			if st.Count != maxMsgs-idx {
				return fmt.Errorf("receive %d: count %d, want %d", idx, st.Count, maxMsgs-idx)
			}
			if err := same(fmt.Sprintf("receive %d", idx), bufs[idx], seq(maxMsgs-idx, func(j int) int32 { return int32(idx*maxMsgs + j) })); err != nil {
				return err
			}
			reqs[idx] = nil
		}
	default:
		return runtime.Barrier(ctx, w)
	}
	return nil
}

// ptIsendself: an empty Isend to itself received from any source with any tag into a
// one-element buffer, then into no buffer: source, tag and count 0 in the status.
func ptIsendself(ctx context.Context, w *runtime.World) error {
	me := w.Rank()
	a := seq(10, func(i int) int32 { return int32(i + 1) })
	for _, rbuf := range [][]int32{make([]int32, 1), nil} {
		req, err := runtime.Isend(w, a[:0], me, 0)
		if err != nil {
			return err
		}
		st, err := runtime.Recv(ctx, w, rbuf, runtime.AnySource, runtime.AnyTag)
		if err != nil {
			return err
		}
		if st.Source != me || st.Tag != 0 || runtime.CountOf[int32](st) != 0 {
			return fmt.Errorf("status (source %d, tag %d, count %d), want (%d, 0, 0)", st.Source, st.Tag, runtime.CountOf[int32](st), me)
		}
		if _, err := req.Wait(ctx); err != nil {
			return err
		}
	}
	return nil
}

// ptIsendselfprobe: rank 0 Isends one int to itself, polls Iprobe until it sees it
// (count 1), receives it, and waits for the send.
func ptIsendselfprobe(ctx context.Context, w *runtime.World) error {
	if w.Rank() != 0 {
		return nil
	}
	req, err := runtime.Isend(w, []int32{123}, 0, 0)
	if err != nil {
		return err
	}
	var st runtime.Status
	for ok := false; !ok; {
		if ok, st, err = runtime.Iprobe(w, 0, 0); err != nil {
			return err
		}
	}
	if n := runtime.CountOf[int32](st); n != 1 {
		return fmt.Errorf("probed count %d, want 1", n)
	}
	got := []int32{0}
	if _, err := runtime.Recv(ctx, w, got, 0, 0); err != nil {
		return err
	}
	if got[0] != 123 {
		return fmt.Errorf("received %d, want 123", got[0])
	}
	_, err = req.Wait(ctx)
	return err
}

// ptSendall: every rank posts a receive from every other, then sends to every other,
// then waits, for sizes 1 to 16 Ki ints, 10 runs each (completion is the check).
func ptSendall(ctx context.Context, w *runtime.World) error {
	const bufSize, runs = 16 * 1024, 10
	self, n := w.Rank(), w.Size()
	bufs := make([][]int32, n)
	for i := range bufs {
		bufs[i] = make([]int32, bufSize)
	}
	for size := 1; size <= bufSize; size += size {
		for range runs {
			if err := runtime.Barrier(ctx, w); err != nil {
				return err
			}
			var reqs []*runtime.Request
			for i := 0; i < n; i++ {
				if i != self {
					r, err := runtime.Irecv(w, bufs[i][:size], i, runtime.AnyTag)
					if err != nil {
						return err
					}
					reqs = append(reqs, r)
				}
			}
			for i := 0; i < n; i++ {
				if i != self {
					if err := runtime.Send(ctx, w, bufs[self][:size], i, 0); err != nil {
						return err
					}
				}
			}
			for _, r := range reqs {
				if _, err := r.Wait(ctx); err != nil {
					return err
				}
			}
		}
	}
	return runtime.Barrier(ctx, w)
}

// ptIsendirecv: every rank Irecvs 20 floats from every rank (itself included) and
// Isends 20 to every rank, then WaitAll on all of them.
func ptIsendirecv(ctx context.Context, w *runtime.World) error {
	const elems = 20
	n := w.Size()
	in := make([]float32, elems*n)
	out := seq(elems*n, func(i int) float32 { return float32(w.Rank()*1000 + i) })
	reqs := make([]*runtime.Request, 0, 2*n)
	for i := 0; i < n; i++ {
		r, err := runtime.Irecv(w, in[i*elems:(i+1)*elems], i, 0)
		if err != nil {
			return err
		}
		reqs = append(reqs, r)
	}
	for i := 0; i < n; i++ {
		r, err := runtime.Isend(w, out[i*elems:(i+1)*elems], i, 0)
		if err != nil {
			return err
		}
		reqs = append(reqs, r)
	}
	if err := runtime.WaitAll(ctx, reqs, nil); err != nil {
		return err
	}
	return same("received", in, seq(elems*n, func(k int) float32 { return float32((k/elems)*1000 + w.Rank()*elems + k%elems) }))
}

// ptRecvAny: 10 rounds, each tag the round: rank 0 receives from any source twice, first
// with Irecv + Wait, then with Recv, the 16 bytes rank 1 sends twice; the source and
// data must match.
func ptRecvAny(ctx context.Context, w *runtime.World) error {
	const bufSize, iter = 4, 10
	const dst, src = 0, 1
	sbuf := seq(bufSize, func(i int) int32 { return int32(i + 1) })
	rbuf := make([]int32, bufSize)
	for x := 0; x < iter; x++ {
		switch w.Rank() {
		case dst:
			req, err := runtime.Irecv(w, rbuf, runtime.AnySource, x)
			if err != nil {
				return err
			}
			st1, err := req.Wait(ctx)
			if err != nil {
				return err
			}
			st2, err := runtime.Recv(ctx, w, rbuf, runtime.AnySource, x)
			if err != nil {
				return err
			}
			if st1.Source != src || st2.Source != src {
				return fmt.Errorf("round %d: sources %d and %d, want %d", x, st1.Source, st2.Source, src)
			}
			if err := same(fmt.Sprintf("round %d", x), rbuf, sbuf); err != nil {
				return err
			}
		case src:
			if err := first(runtime.Send(ctx, w, sbuf, dst, x), runtime.Send(ctx, w, sbuf, dst, x)); err != nil {
				return err
			}
		}
	}
	return nil
}

// ptSendrecv3: ranks 0 and 1 exchange an empty Sendrecv, then Isend nmsg messages of
// 100, 1000, 10000 and 100000 ints to each other before receiving them. Then again with
// the second rank sleeping a second after the Sendrecv (the sender's Isends must not
// block for it: reported, not failed, as MPICH does).
func ptSendrecv3(ctx context.Context, w *runtime.World) error {
	sizes, nmsgs := []int{100, 1000, 10000, 100000}, []int{100, 10, 10, 4}
	rank := w.Rank()
	if rank > 1 {
		return nil
	}
	partner := (rank + 1) % 2
	for t, size := range sizes {
		bufs := make([][]int32, nmsgs[t])
		for i := range bufs {
			bufs[i] = make([]int32, size)
		}
		for pass := 0; pass < 2; pass++ {
			if _, err := runtime.Sendrecv(ctx, w, []int32{}, partner, 10, []int32{}, partner, 10); err != nil {
				return err
			}
			if pass == 1 && rank == 1 {
				time.Sleep(time.Second)
			}
			reqs := make([]*runtime.Request, len(bufs))
			for i, b := range bufs {
				var err error
				if reqs[i], err = runtime.Isend(w, b, partner, t); err != nil {
					return err
				}
			}
			recvd := make([]int32, size)
			for range bufs {
				if _, err := runtime.Recv(ctx, w, recvd, partner, t); err != nil {
					return err
				}
			}
			if err := runtime.WaitAll(ctx, reqs, nil); err != nil {
				return err
			}
		}
	}
	return nil
}

// ptProbeUnexp: over each communicator, for sizes 1 byte to 4 MiB, 5 messages each.
// Every rank but 0 sends rank 0 an empty message, then Probes from any source with any
// tag for the message rank 0 sends back on receiving it (so it arrives unexpected), and
// receives it. Source, tag and size must match in the probe and the receive.
func ptProbeUnexp(ctx context.Context, w *runtime.World) error {
	const maxLg, perSize = 22, 5
	buf := make([]byte, 1<<maxLg)
	return eachComm(ctx, w, 2, func(c *runtime.World, name string) error {
		for lg := 0; lg <= maxLg; lg++ {
			size := 1 << lg
			for k := 0; k < perSize; k++ {
				tag := lg*perSize + k
				if c.Rank() == 0 {
					for p := 1; p < c.Size(); p++ {
						st, err := runtime.Recv[byte](ctx, c, nil, runtime.AnySource, tag)
						if err != nil {
							return err
						}
						if st.Tag != tag {
							return fmt.Errorf("%s: sync message tag %d, want %d", name, st.Tag, tag)
						}
						if err := runtime.Send(ctx, c, buf[:size], st.Source, st.Tag); err != nil {
							return err
						}
					}
					continue
				}
				if err := runtime.Send[byte](ctx, c, nil, 0, tag); err != nil {
					return err
				}
				for _, probe := range []bool{true, false} {
					var st runtime.Status
					var err error
					if probe {
						st, err = runtime.Probe(ctx, c, runtime.AnySource, runtime.AnyTag)
					} else {
						st, err = runtime.Recv(ctx, c, buf[:size], 0, tag)
					}
					if err != nil {
						return err
					}
					if st.Source != 0 || st.Tag != tag || st.Bytes != size {
						return fmt.Errorf("%s: probe %v: (source %d, tag %d, %d bytes), want (0, %d, %d)", name, probe, st.Source, st.Tag, st.Bytes, tag, size)
					}
				}
			}
		}
		return nil
	})
}
