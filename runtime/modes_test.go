package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/runtimetest"
)

// setups runs f on three ranks over shm and over tcp, and on four ranks on two pretend
// hosts (shm within a host, tcp across).
func setups(t *testing.T, f func(ctx context.Context, w *runtime.World) error) {
	opts := map[string]runtimetest.Options{
		"shm":   {Transport: "shm"},
		"tcp":   {Transport: "tcp"},
		"hosts": {Hosts: []string{"a", "a", "b", "b"}},
	}
	for _, name := range []string{"shm", "tcp", "hosts"} {
		o := opts[name]
		n := 3
		if o.Hosts != nil {
			n = len(o.Hosts)
		}
		o.Timeout = 30 * time.Second
		t.Run(name, func(t *testing.T) {
			runtimetest.Run(t, n, o, func(w *runtime.World) error {
				ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(20*time.Second))
				defer cancel()
				return f(ctx, w)
			})
		})
	}
}

// TestProcNull: every point-to-point call takes ProcNull as its peer and completes at
// once; a receive from it reports Source ProcNull, Tag AnyTag and no data; a shift along
// a line of ranks with ProcNull at both ends needs no special case.
func TestProcNull(t *testing.T) {
	setups(t, func(ctx context.Context, w *runtime.World) error {
		null := runtime.ProcNull
		want := runtime.Status{Source: null, Tag: runtime.AnyTag}
		buf := []int32{7, 7}
		if err := runtime.Send(ctx, w, buf, null, 3); err != nil {
			return fmt.Errorf("send: %w", err)
		}
		if err := runtime.Ssend(ctx, w, buf, null, 3); err != nil {
			return fmt.Errorf("ssend: %w", err)
		}
		st, err := runtime.Recv(ctx, w, buf, null, runtime.AnyTag)
		if err != nil || st != want || buf[0] != 7 {
			return fmt.Errorf("recv: %+v %v %v", st, buf, err)
		}
		if st, err = runtime.Probe(ctx, w, null, 4); err != nil || st != want {
			return fmt.Errorf("probe: %+v %v", st, err)
		}
		if ok, st, err := runtime.Iprobe(w, null, 4); !ok || err != nil || st != want {
			return fmt.Errorf("iprobe: %v %+v %v", ok, st, err)
		}
		rs := make([]*runtime.Request, 3)
		if rs[0], err = runtime.Isend(w, buf, null, 1); err != nil {
			return err
		}
		if rs[1], err = runtime.Irecv(w, buf, null, 1); err != nil {
			return err
		}
		if rs[2], err = runtime.Issend(w, buf, null, 1); err != nil {
			return err
		}
		sts := make([]runtime.Status, 3)
		if ok, err := runtime.TestAll(rs, sts); !ok || err != nil {
			return fmt.Errorf("requests on ProcNull not complete at once: %v %v", ok, err)
		}
		if sts[1] != want || sts[0] != (runtime.Status{}) {
			return fmt.Errorf("statuses %+v", sts)
		}
		// Shift right along the line 0..n-1.
		r, n := w.Rank(), w.Size()
		left, right := r-1, r+1
		if left < 0 {
			left = null
		}
		if right == n {
			right = null
		}
		got := []int64{-1}
		st, err = runtime.Sendrecv(ctx, w, []int64{int64(r)}, right, 9, got, left, 9)
		if err != nil {
			return fmt.Errorf("sendrecv: %w", err)
		}
		if left == null && (st != want || got[0] != -1) || left != null && (st.Source != left || got[0] != int64(left)) {
			return fmt.Errorf("sendrecv from %d: %+v %v", left, st, got)
		}
		// Bad tags are refused with ProcNull as with any rank.
		if err := runtime.Send(ctx, w, buf, null, -3); !errors.Is(err, runtime.ErrInvalid) || !strings.Contains(err.Error(), "tag -3") {
			return fmt.Errorf("send bad tag: %v", err)
		}
		if _, err := runtime.Irecv(w, buf, null, -3); !errors.Is(err, runtime.ErrInvalid) {
			return fmt.Errorf("irecv bad tag: %v", err)
		}
		if _, err := runtime.Sendrecv(ctx, w, buf, null, 0, buf, null, -7); !errors.Is(err, runtime.ErrInvalid) {
			return fmt.Errorf("sendrecv bad tag: %v", err)
		}
		if err := runtime.Send(ctx, w, buf, -2, 0); !errors.Is(err, runtime.ErrInvalid) {
			return fmt.Errorf("send to rank -2: %v", err)
		}
		return nil
	})
}

// TestSsend: a synchronous send completes only once the receiver has matched it (the
// receiver takes it only after the sender saw it incomplete), for empty, eager-sized and
// rendezvous-sized messages; synchronous and standard sends from one sender keep their
// order for an AnySource, AnyTag receiver; a synchronous send to this rank itself
// completes when a receive takes it.
func TestSsend(t *testing.T) {
	setups(t, func(ctx context.Context, w *runtime.World) error {
		r, n := w.Rank(), w.Size()
		sizes := []int{0, 5, 200 << 10}
		if r == 0 {
			for peer := 1; peer < n; peer++ {
				for _, size := range sizes {
					msg := make([]byte, size)
					pattern(msg, peer)
					req, err := runtime.Issend(w, msg, peer, 5)
					if err != nil {
						return err
					}
					for i := 0; i < 3; i++ {
						if done, _, err := req.Test(); done || err != nil {
							return fmt.Errorf("%d bytes to %d: the synchronous send completed before the receiver matched it (%v)", size, peer, err)
						}
					}
					if err := runtime.Send(ctx, w, []byte{1}, peer, 9); err != nil { // "go ahead"
						return err
					}
					if _, err := req.Wait(ctx); err != nil {
						return fmt.Errorf("%d bytes to %d: %w", size, peer, err)
					}
				}
				// Order: standard, synchronous, standard, one tag each.
				for i, tag := range []int{1, 2, 3} {
					var err error
					if i == 1 {
						err = runtime.Ssend(ctx, w, []int64{int64(tag)}, peer, tag)
					} else {
						err = runtime.Send(ctx, w, []int64{int64(tag)}, peer, tag)
					}
					if err != nil {
						return err
					}
				}
				if err := runtime.Rsend(ctx, w, []int64{4}, peer, 4); err != nil {
					return err
				}
			}
		} else {
			for _, size := range sizes {
				if _, err := runtime.Recv(ctx, w, make([]byte, 1), 0, 9); err != nil {
					return err
				}
				buf := make([]byte, size)
				st, err := runtime.Recv(ctx, w, buf, 0, 5)
				if err != nil || st.Bytes != size {
					return fmt.Errorf("%d bytes: %+v %v", size, st, err)
				}
				if err := checkPattern(buf, r); err != nil {
					return err
				}
			}
			for want := 1; want <= 4; want++ {
				got := []int64{0}
				st, err := runtime.Recv(ctx, w, got, runtime.AnySource, runtime.AnyTag)
				if err != nil || st.Tag != want || got[0] != int64(want) || st.Source != 0 {
					return fmt.Errorf("message %d: %+v %v %v", want, st, got, err)
				}
			}
		}
		// To itself.
		req, err := runtime.Issend(w, []int32{int32(r)}, r, 6)
		if err != nil {
			return err
		}
		if done, _, _ := req.Test(); done {
			return fmt.Errorf("a synchronous send to itself completed before a receive took it")
		}
		got := []int32{-1}
		if _, err := runtime.Recv(ctx, w, got, r, 6); err != nil || got[0] != int32(r) {
			return fmt.Errorf("self: %v %v", got, err)
		}
		if _, err := req.Wait(ctx); err != nil {
			return err
		}
		if err := runtime.Ssend(ctx, w, got, n, 0); !errors.Is(err, runtime.ErrInvalid) || !strings.Contains(err.Error(), "ssend") {
			return fmt.Errorf("ssend to rank %d: %v", n, err)
		}
		return nil
	})
}

// TestBsend: buffered sends return before any receive is posted, their messages arrive in
// order; a message that does not fit the free space fails and sends nothing; the space of
// delivered messages is reused; BufferDetach waits for the buffered sends and returns the
// buffer.
func TestBsend(t *testing.T) {
	setups(t, func(ctx context.Context, w *runtime.World) error {
		r, n := w.Rank(), w.Size()
		next, prev := (r+1)%n, (r+n-1)%n
		if err := runtime.Bsend(w, []byte{1}, next, 0); !errors.Is(err, runtime.ErrInvalid) || !strings.Contains(err.Error(), "no buffer attached") {
			return fmt.Errorf("bsend without a buffer: %v", err)
		}
		const msgs, size = 4, 3000 // rendezvous-sized on shm
		attached := make([]byte, msgs*(size+runtime.BsendOverhead))
		if err := runtime.BufferAttach(w, attached); err != nil {
			return err
		}
		if err := runtime.BufferAttach(w, attached); !errors.Is(err, runtime.ErrInvalid) {
			return fmt.Errorf("second attach: %v", err)
		}
		msg := make([]byte, size)
		for i := 0; i < msgs; i++ {
			pattern(msg, r+i)
			if i == msgs-1 {
				req, err := runtime.Ibsend(w, msg, next, i)
				if err != nil {
					return err
				}
				if done, _, err := req.Test(); !done || err != nil {
					return fmt.Errorf("ibsend not complete on return: %v", err)
				}
				break
			}
			if err := runtime.Bsend(w, msg, next, i); err != nil {
				return fmt.Errorf("bsend %d: %w", i, err)
			}
		}
		clear(msg) // the messages were copied
		if err := runtime.Bsend(w, []byte{1}, next, 0); !errors.Is(err, runtime.ErrInvalid) || !strings.Contains(err.Error(), "free in one piece") {
			return fmt.Errorf("bsend into a full buffer: %v", err)
		}
		if err := runtime.Bsend(w, []byte{1}, runtime.ProcNull, 0); err != nil {
			return fmt.Errorf("bsend to ProcNull: %w", err)
		}
		for i := 0; i < msgs; i++ {
			st, err := runtime.Recv(ctx, w, msg, runtime.AnySource, runtime.AnyTag)
			if err != nil || st.Tag != i || st.Source != prev {
				return fmt.Errorf("message %d: %+v %v", i, st, err)
			}
			if err := checkPattern(msg, prev+i); err != nil {
				return fmt.Errorf("message %d: %w", i, err)
			}
		}
		got, err := runtime.BufferDetach(ctx, w)
		if err != nil || len(got) != len(attached) || &got[0] != &attached[0] {
			return fmt.Errorf("detach: %d bytes, %v", len(got), err)
		}
		// Room for one small message: an eager send completes as it is posted (the
		// connection is up), and its space serves the next.
		if err := runtime.BufferAttach(w, make([]byte, 8+runtime.BsendOverhead)); err != nil {
			return err
		}
		for i := 0; i < 3; i++ {
			if err := runtime.Bsend(w, []int64{int64(i)}, next, 10+i); err != nil {
				return fmt.Errorf("bsend %d into a buffer of one: %w", i, err)
			}
		}
		for i := 0; i < 3; i++ {
			v := []int64{-1}
			if _, err := runtime.Recv(ctx, w, v, prev, 10+i); err != nil || v[0] != int64(i) {
				return fmt.Errorf("small message %d: %v %v", i, v, err)
			}
		}
		if _, err := runtime.BufferDetach(ctx, w); err != nil {
			return err
		}
		if got, err := runtime.BufferDetach(ctx, w); got != nil || err != nil {
			return fmt.Errorf("second detach: %v %v", got, err)
		}
		return nil
	})
}

// TestIsendrecv: Isendrecv, IsendrecvReplace and SendrecvReplace around a ring, with
// eager and rendezvous sizes, the nonblocking ones overlapping; ProcNull on either side.
func TestIsendrecv(t *testing.T) {
	setups(t, func(ctx context.Context, w *runtime.World) error {
		r, n := w.Rank(), w.Size()
		next, prev := (r+1)%n, (r+n-1)%n
		for _, size := range []int{0, 40, 300 << 10} {
			send, recv := make([]byte, size), make([]byte, size+8)
			pattern(send, r)
			repl := make([]uint16, size/2)
			for i := range repl {
				repl[i] = uint16(r*1000 + i)
			}
			a, err := runtime.Isendrecv(w, send, next, 1, recv, prev, 1)
			if err != nil {
				return err
			}
			b, err := runtime.IsendrecvReplace(w, repl, prev, 2, next, runtime.AnyTag)
			if err != nil {
				return err
			}
			sts := make([]runtime.Status, 2)
			if err := runtime.WaitAll(ctx, []*runtime.Request{a, b}, sts); err != nil {
				return fmt.Errorf("%d bytes: %w", size, err)
			}
			if sts[0].Source != prev || sts[0].Tag != 1 || sts[0].Bytes != size || sts[1].Source != next || sts[1].Tag != 2 || sts[1].Count != size/2 {
				return fmt.Errorf("%d bytes: statuses %+v", size, sts)
			}
			if err := checkPattern(recv[:size], prev); err != nil {
				return err
			}
			for i, v := range repl {
				if v != uint16(next*1000+i) {
					return fmt.Errorf("%d bytes: replaced element %d is %d", size, i, v)
				}
			}
			st, err := runtime.SendrecvReplace(ctx, w, repl, next, 3, prev, 3)
			if err != nil || st.Source != prev || st.Count != size/2 {
				return fmt.Errorf("sendrecv_replace: %+v %v", st, err)
			}
			for i, v := range repl {
				if v != uint16(r*1000+i) {
					return fmt.Errorf("%d bytes: replaced back element %d is %d", size, i, v)
				}
			}
		}
		req, err := runtime.Isendrecv(w, []int8{1}, runtime.ProcNull, 0, []int8{0}, runtime.ProcNull, 0)
		if err != nil {
			return err
		}
		if st, err := req.Wait(ctx); err != nil || st.Source != runtime.ProcNull {
			return fmt.Errorf("isendrecv on ProcNull: %+v %v", st, err)
		}
		if _, err := runtime.Isendrecv(w, []int8{1}, n, 0, []int8{0}, prev, 0); !errors.Is(err, runtime.ErrInvalid) || !strings.Contains(err.Error(), "isendrecv") {
			return fmt.Errorf("isendrecv to rank %d: %v", n, err)
		}
		return nil
	})
}

// TestModesOnSplit: on a World made by Split, ranks and Status.Source of the send modes,
// Isendrecv, Mprobe and persistent receives are in the split World's numbering, and
// ProcNull stays ProcNull.
func TestModesOnSplit(t *testing.T) {
	setups(t, func(ctx context.Context, w *runtime.World) error {
		// Reverse order: split rank = Size-1-rank.
		s, err := w.Split(ctx, 0, w.Size()-w.Rank())
		if err != nil {
			return err
		}
		r, n := s.Rank(), s.Size()
		next, prev := (r+1)%n, (r+n-1)%n
		rr, err := runtime.RecvInit(s, []int64{0}, runtime.AnySource, 1)
		if err != nil {
			return err
		}
		if err := runtime.Start(rr); err != nil {
			return err
		}
		if err := runtime.Ssend(ctx, s, []int64{int64(r)}, next, 1); err != nil {
			return err
		}
		if st, err := rr.Wait(ctx); err != nil || st.Source != prev {
			return fmt.Errorf("persistent receive on a split World: %+v %v", st, err)
		}
		if err := runtime.Send(ctx, s, []int64{int64(r)}, next, 2); err != nil {
			return err
		}
		m, st, err := runtime.Mprobe(ctx, s, runtime.AnySource, 2)
		if err != nil || st.Source != prev {
			return fmt.Errorf("mprobe on a split World: %+v %v", st, err)
		}
		v := []int64{-1}
		if st, err := runtime.Mrecv(ctx, m, v); err != nil || st.Source != prev || v[0] != int64(prev) {
			return fmt.Errorf("mrecv on a split World: %+v %v %v", st, v, err)
		}
		q, err := runtime.Isendrecv(s, []int64{int64(r)}, prev, 3, v, next, 3)
		if err != nil {
			return err
		}
		if st, err := q.Wait(ctx); err != nil || st.Source != next || v[0] != int64(next) {
			return fmt.Errorf("isendrecv on a split World: %+v %v %v", st, v, err)
		}
		if st, err := runtime.Recv(ctx, s, v, runtime.ProcNull, 0); err != nil || st.Source != runtime.ProcNull {
			return fmt.Errorf("recv from ProcNull on a split World: %+v %v", st, err)
		}
		return s.Free()
	})
}
