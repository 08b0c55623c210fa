package main

import (
	"context"
	"fmt"
	"time"

	"github.com/gorma-hpc/gorma/datatype"
	"github.com/gorma-hpc/gorma/runtime"
)

func init() {
	register("pt2pt-bsend1", "pt2pt/bsend1.c", 1, ptBsend1)
	register("pt2pt-bsend2", "pt2pt/bsend2.c", 1, func(ctx context.Context, w *runtime.World) error { return bsendTen(ctx, w, "bsend") })
	register("pt2pt-bsend3", "pt2pt/bsend3.c", 1, func(ctx context.Context, w *runtime.World) error { return bsendTen(ctx, w, "bsend init") })
	register("pt2pt-bsend4", "pt2pt/bsend4.c", 1, func(ctx context.Context, w *runtime.World) error { return bsendTen(ctx, w, "ibsend") })
	register("pt2pt-isendrecv", "pt2pt/isendrecv.c", 4, ptIsendrecv)
	register("pt2pt-isendrecv_replace", "pt2pt/isendrecv_replace.c", 4, ptIsendrecvReplace)
	register("pt2pt-inactivereq", "pt2pt/inactivereq.c", 1, ptInactivereq)
	register("pt2pt-recvnull", "pt2pt/recvnull.c", 1, ptRecvnull)
	register("pt2pt-probenull", "pt2pt/probenull.c", 1, ptProbenull)
	register("pt2pt-pssend", "pt2pt/pssend.c", 2, ptPssend)
	register("pt2pt-huge_ssend", "pt2pt/huge_ssend.c", 2, ptHugeSsend)
	register("pt2pt-rcancel", "pt2pt/rcancel.c", 2, ptRcancel)
	register("pt2pt-cancelrecv", "pt2pt/cancelrecv.c", 2, ptCancelrecv)
}

// ptBsend1: with a buffer for three messages (7 bytes, 2 float64s, 17 bytes, each with
// BsendOverhead) attached, the rank Bsends them to itself and receives them (the second
// into 10 float64s); then detaches.
func ptBsend1(ctx context.Context, w *runtime.World) error {
	msg1, msg2, msg3 := []byte("012345\x00"), []float64{1.23, 3.21}, []byte("0123401234012341\x00")
	if err := runtime.BufferAttach(w, make([]byte, 3*runtime.BsendOverhead+8+16+24)); err != nil {
		return err
	}
	if err := first(runtime.Bsend(w, msg1, 0, 1), runtime.Bsend(w, msg2, 0, 1), runtime.Bsend(w, msg3, 0, 1)); err != nil {
		return err
	}
	r1, r2, r3 := make([]byte, 7), make([]float64, 10), make([]byte, 17)
	for _, f := range []func() error{
		func() error { _, err := runtime.Recv(ctx, w, r1, 0, 1); return err },
		func() error { _, err := runtime.Recv(ctx, w, r2, 0, 1); return err },
		func() error { _, err := runtime.Recv(ctx, w, r3, 0, 1); return err },
	} {
		if err := f(); err != nil {
			return err
		}
	}
	_, err := runtime.BufferDetach(ctx, w)
	return first(same("message 1", r1, msg1), same("message 2", r2[:2], msg2), same("message 3", r3, msg3), err)
}

// bsendTen: with 2000 bytes attached, every rank sends rank 0 ten messages of 10 int32s
// (tags 27..36) by Bsend, by a persistent BsendInit started and waited, or by Ibsend
// waited. Rank 0 receives each by source and tag and checks its status and contents.
func bsendTen(ctx context.Context, w *runtime.World, how string) error {
	rank, size := w.Rank(), w.Size()
	if err := runtime.BufferAttach(w, make([]byte, 2000)); err != nil {
		return err
	}
	a := make([]int32, 10)
	for j := 0; j < 10; j++ {
		var err error
		switch how {
		case "bsend":
			for i := range a {
				a[i] = int32((rank+10*j)*size + i)
			}
			err = runtime.Bsend(w, a, 0, 27+j)
		case "bsend init":
			var r *runtime.Request
			if r, err = runtime.BsendInit(w, a, 0, 27+j); err != nil {
				return err
			}
			for i := range a {
				a[i] = int32((rank+10*j)*size + i)
			}
			err = runtime.Start(r)
			if err == nil {
				_, err = r.Wait(ctx)
			}
			err = first(err, r.Free())
		case "ibsend":
			for i := range a {
				a[i] = int32((rank+10*j)*size + i)
			}
			var r *runtime.Request
			if r, err = runtime.Ibsend(w, a, 0, 27+j); err == nil {
				_, err = r.Wait(ctx)
			}
		}
		if err != nil {
			return fmt.Errorf("%s %d: %w", how, j, err)
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
					return fmt.Errorf("receive from %d tag %d: status source %d tag %d", i, 27+j, st.Source, st.Tag)
				}
				if err := same(fmt.Sprintf("message %d from %d", j, i), b, seq(10, func(k int) int32 { return int32((i+10*j)*size + k) })); err != nil {
					return err
				}
			}
		}
	}
	_, err := runtime.BufferDetach(ctx, w)
	return err
}

// ptIsendrecv: for each offset 0..size-2, every rank Isendrecvs 20 float32s to every
// rank i (block i) while receiving from rank (i+offset)%size into that rank's block;
// WaitAll; block i holds i*10000 + rank*100 + j.
func ptIsendrecv(ctx context.Context, w *runtime.World) error {
	const elems = 20
	rank, n := w.Rank(), w.Size()
	for off := 0; off < n-1; off++ {
		in := fill(n*elems, float32(-1))
		out := seq(n*elems, func(k int) float32 { return float32(rank*10000 + k/elems*100 + k%elems) })
		reqs := make([]*runtime.Request, n)
		for i := range reqs {
			j := (i + off) % n
			var err error
			if reqs[i], err = runtime.Isendrecv(w, out[i*elems:(i+1)*elems], i, 0, in[j*elems:(j+1)*elems], j, 0); err != nil {
				return err
			}
		}
		if err := runtime.WaitAll(ctx, reqs, nil); err != nil {
			return err
		}
		if err := same(fmt.Sprintf("offset %d", off), in, seq(n*elems, func(k int) float32 { return float32(k/elems*10000 + rank*100 + k%elems) })); err != nil {
			return err
		}
	}
	return nil
}

// ptIsendrecvReplace: for each offset 0..size-2, every rank IsendrecvReplaces block
// (i+offset)%size of its buffer (rank*100 + j) to rank i, receiving from that block's
// rank; WaitAll; block i holds i*100 + j.
func ptIsendrecvReplace(ctx context.Context, w *runtime.World) error {
	const elems = 20
	rank, n := w.Rank(), w.Size()
	for off := 0; off < n-1; off++ {
		buf := seq(n*elems, func(k int) float32 { return float32(rank*100 + k%elems) })
		reqs := make([]*runtime.Request, n)
		for i := range reqs {
			j := (i + off) % n
			var err error
			if reqs[i], err = runtime.IsendrecvReplace(w, buf[j*elems:(j+1)*elems], i, 0, j, 0); err != nil {
				return err
			}
		}
		if err := runtime.WaitAll(ctx, reqs, nil); err != nil {
			return err
		}
		if err := same(fmt.Sprintf("offset %d", off), buf, seq(n*elems, func(k int) float32 { return float32(k/elems*100 + k%elems) })); err != nil {
			return err
		}
	}
	return nil
}

// emptyStatus is nil if st is MPI's empty status: source AnySource, tag AnyTag, count 0.
func emptyStatus(what string, st runtime.Status) error {
	if st.Source != runtime.AnySource || st.Tag != runtime.AnyTag || st.Count != 0 {
		return fmt.Errorf("%s: status source %d tag %d count %d; want the empty status (source AnySource %d, tag AnyTag %d, count 0)",
			what, st.Source, st.Tag, st.Count, runtime.AnySource, runtime.AnyTag)
	}
	return nil
}

// inactiveCheck: Test on the inactive r reports done with the empty status, and so
// does Wait.
func inactiveCheck(ctx context.Context, what string, r *runtime.Request) error {
	ok, st, err := r.Test()
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%s: test of an inactive request is not done", what)
	}
	if err := emptyStatus(what+": test", st); err != nil {
		return err
	}
	if st, err = r.Wait(ctx); err != nil {
		return err
	}
	return emptyStatus(what+": wait", st)
}

// ptInactivereq: Test and Wait on an inactive persistent send, before its Start and
// after it completed (to rank 0, which receives from every rank), and on inactive
// persistent receives (from rank 0 and from any source) report done with the empty
// status. Persistent requests to and from ProcNull complete.
func ptInactivereq(ctx context.Context, w *runtime.World) error {
	const tag = 27
	buf, rbuf := make([]int32, 10), make([]int32, 10)
	r, err := runtime.SendInit(w, buf, 0, tag)
	if err != nil {
		return err
	}
	if err := inactiveCheck(ctx, "send init before start", r); err != nil {
		return err
	}
	var rr []*runtime.Request
	if w.Rank() == 0 {
		rr = make([]*runtime.Request, w.Size())
		for i := range rr {
			if rr[i], err = runtime.Irecv(w, rbuf, i, tag); err != nil {
				return err
			}
		}
	}
	if err := runtime.Start(r); err != nil {
		return err
	}
	if _, err := r.Wait(ctx); err != nil {
		return err
	}
	if err := runtime.WaitAll(ctx, rr, nil); err != nil {
		return err
	}
	if err := first(inactiveCheck(ctx, "send init after completion", r), r.Free()); err != nil {
		return err
	}
	for _, src := range []int{0, runtime.AnySource} {
		r, err := runtime.RecvInit(w, buf, src, tag)
		if err != nil {
			return err
		}
		if err := first(inactiveCheck(ctx, fmt.Sprintf("recv init from %d", src), r), r.Free()); err != nil {
			return err
		}
	}
	for _, mk := range []func() (*runtime.Request, error){
		func() (*runtime.Request, error) { return runtime.RecvInit(w, buf, runtime.ProcNull, tag) },
		func() (*runtime.Request, error) { return runtime.SendInit(w, buf, runtime.ProcNull, tag) },
	} {
		r, err := mk()
		if err != nil {
			return err
		}
		if err := runtime.Start(r); err != nil {
			return err
		}
		if _, err := r.Wait(ctx); err != nil {
			return err
		}
		if err := r.Free(); err != nil {
			return err
		}
	}
	return nil
}

// procNullStatus is nil if st is a receive's from ProcNull.
func procNullStatus(what string, st runtime.Status) error {
	if st.Source != runtime.ProcNull || st.Tag != runtime.AnyTag {
		return fmt.Errorf("%s: status source %d tag %d, want ProcNull and AnyTag", what, st.Source, st.Tag)
	}
	return nil
}

// ptRecvnull: an Irecv from ProcNull completes (WaitAll) with source ProcNull and tag
// AnyTag, and so does a Recv.
func ptRecvnull(ctx context.Context, w *runtime.World) error {
	r, err := runtime.Irecv(w, []byte(nil), runtime.ProcNull, 10)
	if err != nil {
		return err
	}
	sts := make([]runtime.Status, 1)
	if err := runtime.WaitAll(ctx, []*runtime.Request{r}, sts); err != nil {
		return err
	}
	if err := procNullStatus("irecv", sts[0]); err != nil {
		return err
	}
	st, err := runtime.Recv(ctx, w, []byte(nil), runtime.ProcNull, 10)
	if err != nil {
		return err
	}
	return procNullStatus("recv", st)
}

// ptProbenull: Iprobe from ProcNull finds a message with source ProcNull and tag AnyTag,
// and so does Probe.
func ptProbenull(ctx context.Context, w *runtime.World) error {
	ok, st, err := runtime.Iprobe(w, runtime.ProcNull, 10)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("iprobe from ProcNull found nothing")
	}
	if err := procNullStatus("iprobe", st); err != nil {
		return err
	}
	if st, err = runtime.Probe(ctx, w, runtime.ProcNull, 10); err != nil {
		return err
	}
	return procNullStatus("probe", st)
}

// ptPssend: rank 0 starts a persistent synchronous send of nothing to rank 1, which has
// not posted its receive: Test says not done; after a Barrier, rank 1 receives and rank 0
// waits for the send.
func ptPssend(ctx context.Context, w *runtime.World) error {
	var r *runtime.Request
	if w.Rank() == 0 {
		var err error
		if r, err = runtime.SsendInit(w, []int32(nil), 1, 0); err != nil {
			return err
		}
		if err := runtime.Start(r); err != nil {
			return err
		}
		ok, _, err := r.Test()
		if err != nil {
			return err
		}
		if ok {
			return fmt.Errorf("a synchronous send completed before its receive was posted")
		}
	}
	if err := runtime.Barrier(ctx, w); err != nil {
		return err
	}
	switch w.Rank() {
	case 0:
		_, err := r.Wait(ctx)
		return first(err, r.Free())
	case 1:
		_, err := runtime.Recv(ctx, w, []int32(nil), 0, 0)
		return err
	}
	return nil
}

// ptHugeSsend: rank 0 Ssends 4 Mi int32s to rank 1.
func ptHugeSsend(ctx context.Context, w *runtime.World) error {
	buf := make([]int32, 4<<20)
	if w.Rank() == 0 {
		return runtime.Ssend(ctx, w, buf, 1, 0)
	}
	_, err := runtime.Recv(ctx, w, buf, 0, 0)
	return err
}

// ptRcancel: the last rank posts four receives from rank 0 (tags 0..3; 1, 100, 10000
// and 10^6 bytes); rank 0 sends one empty message with tag 1. Cancelling receives 2, 3
// and 0 reports them cancelled; receive 1 completes, not cancelled.
func ptRcancel(ctx context.Context, w *runtime.World) error {
	dest := w.Size() - 1
	switch w.Rank() {
	case 0:
		return runtime.Send(ctx, w, []byte(nil), dest, 1)
	case dest:
		reqs := make([]*runtime.Request, 4)
		for i, n := range []int{1, 100, 10000, 1000000} {
			var err error
			if reqs[i], err = runtime.Irecv(w, make([]byte, n), 0, i); err != nil {
				return err
			}
		}
		for _, i := range []int{2, 3, 0, 1} {
			if i != 1 {
				if err := reqs[i].Cancel(); err != nil {
					return err
				}
			}
			st, err := reqs[i].Wait(ctx)
			if err != nil {
				return err
			}
			if st.Cancelled != (i != 1) {
				return fmt.Errorf("receive %d: cancelled %v, want %v", i, st.Cancelled, i != 1)
			}
		}
	}
	return nil
}

// ptCancelrecv: rank 0 posts receives of 64 Ki int32s from rank 1 with tags 0, 1, 2 and
// cancels the second (between Barriers). Rank 1 then sends tag 0, Isends tag 2 and an
// Isend with tag 4, which it cancels. Rank 0's WaitAll reports only receive 1 cancelled;
// rank 1's TestAll, once done, reports the tag-4 send cancelled and the other not.
func ptCancelrecv(ctx context.Context, w *runtime.World) error {
	const n = 65536
	bufs := [3][]int32{fill(n, int32(-1)), fill(n, int32(-1)), fill(n, int32(-1))}
	switch w.Rank() {
	case 0:
		r := make([]*runtime.Request, 3)
		for i := range r {
			var err error
			if r[i], err = runtime.Irecv(w, bufs[i], 1, i); err != nil {
				return err
			}
		}
		if err := runtime.Barrier(ctx, w); err != nil {
			return err
		}
		if err := r[1].Cancel(); err != nil {
			return err
		}
		if err := runtime.Barrier(ctx, w); err != nil {
			return err
		}
		s := make([]runtime.Status, 3)
		if err := runtime.WaitAll(ctx, r, s); err != nil {
			return err
		}
		for i := range s {
			if s[i].Cancelled != (i == 1) {
				return fmt.Errorf("receive %d: cancelled %v, want %v", i, s[i].Cancelled, i == 1)
			}
		}
		return runtime.Barrier(ctx, w)
	case 1:
		if err := first(runtime.Barrier(ctx, w), runtime.Barrier(ctx, w)); err != nil {
			return err
		}
		if err := runtime.Send(ctx, w, bufs[0], 0, 0); err != nil {
			return err
		}
		r := make([]*runtime.Request, 2)
		var err error
		if r[1], err = runtime.Isend(w, bufs[2], 0, 2); err != nil {
			return err
		}
		if r[0], err = runtime.Isend(w, bufs[1], 0, 4); err != nil {
			return err
		}
		if err := r[0].Cancel(); err != nil {
			return err
		}
		s := make([]runtime.Status, 2)
		if _, err := runtime.TestAll(r, s); err != nil {
			return err
		}
		if err := runtime.Barrier(ctx, w); err != nil {
			return err
		}
		for {
			ok, err := runtime.TestAll(r, s)
			if err != nil {
				return err
			}
			if ok {
				break
			}
		}
		if !s[0].Cancelled || s[1].Cancelled {
			return fmt.Errorf("send with tag 4 cancelled %v, send with tag 2 cancelled %v; want true, false", s[0].Cancelled, s[1].Cancelled)
		}
	}
	return nil
}

func init() {
	register("pt2pt-bsendpending", "pt2pt/bsendpending.c", 2, ptBsendpending)
	register("pt2pt-bsendfrag", "pt2pt/bsendfrag.c", 2, ptBsendfrag)
	register("pt2pt-precv_anysrc", "pt2pt/precv_anysrc.c", 2, ptPrecvAnysrc)
}

// ptBsendpending: on each communicator, rank 0 attaches room for three 128 KiB messages,
// Bsends them to the last rank, exchanges an empty Sendrecv with it and detaches, which
// waits for the three to go and returns the whole buffer. The last rank, after the
// Sendrecv, waits (200 ms; MPICH spins 2 s) before receiving them, and checks them.
func ptBsendpending(ctx context.Context, w *runtime.World) error {
	const msgsize = 128 * 1024
	pattern := func(k int) []uint8 {
		return seq(msgsize, func(i int) uint8 { return 0xff ^ uint8(k*i&0xff) })
	}
	return eachComm(ctx, w, 2, func(c *runtime.World, name string) error {
		rank, dest := c.Rank(), c.Size()-1
		switch rank {
		case 0:
			bufsize := 3 * (runtime.BsendOverhead + msgsize)
			if err := runtime.BufferAttach(c, make([]byte, bufsize)); err != nil {
				return err
			}
			for _, k := range []int{1, 3, 5} {
				if err := runtime.Bsend(c, pattern(k), dest, 0); err != nil {
					return fmt.Errorf("%s: %w", name, err)
				}
			}
			if _, err := runtime.Sendrecv(ctx, c, []uint8(nil), dest, 10, []uint8(nil), dest, 10); err != nil {
				return err
			}
			b, err := runtime.BufferDetach(ctx, c)
			if err != nil {
				return fmt.Errorf("%s: detach: %w", name, err)
			}
			if len(b) != bufsize {
				return fmt.Errorf("%s: detach returned %d bytes, want %d", name, len(b), bufsize)
			}
		case dest:
			if _, err := runtime.Sendrecv(ctx, c, []uint8(nil), 0, 10, []uint8(nil), 0, 10); err != nil {
				return err
			}
			time.Sleep(200 * time.Millisecond)
			for _, k := range []int{1, 3, 5} {
				msg := make([]uint8, msgsize)
				if _, err := runtime.Recv(ctx, c, msg, 0, 0); err != nil {
					return err
				}
				if err := same(fmt.Sprintf("%s: message %d", name, k), msg, pattern(k)); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// ptBsendfrag: rank 0, with room for four messages of 17000 int32s attached, Bsends
// them (tags 0..3) to rank 1, negating each buffer after its Bsend, Barriers and
// detaches. Rank 1 receives them after the Barrier in the order 1, 0, 3, 2 and finds
// the values sent.
func ptBsendfrag(ctx context.Context, w *runtime.World) error {
	const n = 17000
	bufs := [4][]int32{}
	for k := range bufs {
		bufs[k] = seq(n, func(i int) int32 { return int32(k*n + i) })
	}
	switch w.Rank() {
	case 0:
		if err := runtime.BufferAttach(w, make([]byte, 4*(n*4+runtime.BsendOverhead))); err != nil {
			return err
		}
		for k, b := range bufs {
			if err := runtime.Bsend(w, b, 1, k); err != nil {
				return err
			}
			for i := range b {
				b[i] = -b[i]
			}
		}
		if err := runtime.Barrier(ctx, w); err != nil {
			return err
		}
		_, err := runtime.BufferDetach(ctx, w)
		return err
	case 1:
		if err := runtime.Barrier(ctx, w); err != nil {
			return err
		}
		for _, k := range []int{1, 0, 3, 2} {
			got := make([]int32, n)
			if _, err := runtime.Recv(ctx, w, got, 0, k); err != nil {
				return err
			}
			if err := same(fmt.Sprintf("message %d", k), got, bufs[k]); err != nil {
				return err
			}
		}
		return nil
	}
	return runtime.Barrier(ctx, w)
}

// ptPrecvAnysrc: for messages of 64, 32768 and 2000000 bytes, rank 0 makes a persistent
// receive from any source with any tag, Barriers, starts and waits for it. Rank 1 Isends
// j%100 before the Barrier and waits after it: rank 0 receives them.
func ptPrecvAnysrc(ctx context.Context, w *runtime.World) error {
	for _, size := range []int{64, 32768, 2000000} {
		want := seq(size, func(j int) uint8 { return uint8(j % 100) })
		buf := make([]uint8, size)
		switch w.Rank() {
		case 0:
			r, err := runtime.RecvInit(w, buf, runtime.AnySource, runtime.AnyTag)
			if err != nil {
				return err
			}
			if err := runtime.Barrier(ctx, w); err != nil {
				return err
			}
			if err := runtime.Start(r); err != nil {
				return err
			}
			if _, err := r.Wait(ctx); err != nil {
				return err
			}
			if err := first(r.Free(), same(fmt.Sprintf("%d bytes", size), buf, want)); err != nil {
				return err
			}
		case 1:
			copy(buf, want)
			r, err := runtime.Isend(w, buf, 0, 1)
			if err != nil {
				return err
			}
			if err := runtime.Barrier(ctx, w); err != nil {
				return err
			}
			if _, err := r.Wait(ctx); err != nil {
				return err
			}
		default:
			if err := runtime.Barrier(ctx, w); err != nil {
				return err
			}
		}
	}
	return nil
}

func init() {
	register("pt2pt-sendrecv2", "pt2pt/sendrecv2.c", 2, ptSendrecv2)
}

// ptSendrecv2: for i = 8, 12, ..., 60, rank 0 sends a vector of i blocks of 128 bytes,
// 129 apart, over rows of 129 bytes holding their row number. Rank 1 receives it with
// the same type into zeros: each row's 128 bytes hold its number, the 129th stays 0.
func ptSendrecv2(ctx context.Context, w *runtime.World) error {
	for i := 8; i < 64; i += 4 {
		t, err := datatype.Vector[int8](i, 128, 129)
		if err != nil {
			return err
		}
		buf := make([]int8, 64*129)
		switch w.Rank() {
		case 0:
			for j := 0; j < i; j++ {
				for k := 0; k < 129; k++ {
					buf[129*j+k] = int8(j)
				}
			}
			if err := runtime.SendType(ctx, w, buf, 1, t, 1, i); err != nil {
				return err
			}
		case 1:
			if _, err := runtime.RecvType(ctx, w, buf, 1, t, 0, i); err != nil {
				return err
			}
			if err := same(fmt.Sprintf("vector of %d rows", i), buf[:129*i], seq(129*i, func(x int) int8 {
				if x%129 == 128 {
					return 0
				}
				return int8(x / 129)
			})); err != nil {
				return err
			}
		}
	}
	return nil
}
