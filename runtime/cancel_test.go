package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/gorma-hpc/gorma/runtime"
)

// TestWaitSome: TestSome reports nothing before any message is sent; WaitSome then
// reports every Request once (nil and ProcNull entries too), with its Status, setting
// reported entries to nil; a set of nils reports nothing.
func TestWaitSome(t *testing.T) {
	setups(t, func(ctx context.Context, w *runtime.World) error {
		r, n := w.Rank(), w.Size()
		if r != 0 {
			if _, err := runtime.Recv(ctx, w, []byte{0}, 0, 1); err != nil {
				return err
			}
			return runtime.Send(ctx, w, []int64{int64(r), int64(r)}, 0, 2)
		}
		rs := make([]*runtime.Request, n+1)
		bufs := make([][]int64, n)
		for p := 1; p < n; p++ {
			bufs[p] = make([]int64, 2)
			var err error
			if rs[p], err = runtime.Irecv(w, bufs[p], runtime.AnySource, 2); err != nil {
				return err
			}
		}
		// rs[0] stays nil; rs[n] receives from ProcNull.
		var err error
		if rs[n], err = runtime.Irecv(w, []int64{0}, runtime.ProcNull, 2); err != nil {
			return err
		}
		sts := make([]runtime.Status, len(rs))
		idx, err := runtime.TestSome(rs[:n], sts[:n])
		if len(idx) != 0 || err != nil {
			return fmt.Errorf("testsome before any send: %v %v", idx, err)
		}
		for p := 1; p < n; p++ {
			if err := runtime.Send(ctx, w, []byte{1}, p, 1); err != nil {
				return err
			}
		}
		var seen []int
		sources := map[int]bool{}
		for len(seen) < n {
			idx, err := runtime.WaitSome(ctx, rs, sts)
			if err != nil || len(idx) == 0 {
				return fmt.Errorf("waitsome: %v %v", idx, err)
			}
			for _, i := range idx {
				if rs[i] != nil {
					return fmt.Errorf("entry %d reported but not set to nil", i)
				}
				if i == n {
					if sts[i].Source != runtime.ProcNull {
						return fmt.Errorf("ProcNull entry: %+v", sts[i])
					}
				} else if sts[i].Count != 2 || sources[sts[i].Source] {
					return fmt.Errorf("entry %d: %+v", i, sts[i])
				} else {
					sources[sts[i].Source] = true
				}
			}
			seen = append(seen, idx...)
		}
		slices.Sort(seen)
		if want := []int{1}; len(seen) != n || seen[0] != want[0] || seen[n-1] != n {
			return fmt.Errorf("reported %v", seen)
		}
		if idx, err := runtime.WaitSome(ctx, rs, nil); idx != nil || err != nil {
			return fmt.Errorf("waitsome of nils: %v %v", idx, err)
		}
		if _, err := runtime.WaitSome(ctx, []*runtime.Request{new(runtime.Request)}, nil); !errors.Is(err, runtime.ErrInvalid) {
			return fmt.Errorf("waitsome of a request never started: %v", err)
		}
		return nil
	})
}

// TestRequestFree: a freed send still delivers its message and a freed receive still
// fills its buffer; a freed Request cannot be waited for, nor freed twice, and serves
// again once its operation completed.
func TestRequestFree(t *testing.T) {
	setups(t, func(ctx context.Context, w *runtime.World) error {
		r, n := w.Rank(), w.Size()
		next, prev := (r+1)%n, (r+n-1)%n
		for _, size := range []int{8, 300 << 10} {
			msg := make([]byte, size)
			pattern(msg, r)
			s, err := runtime.Isend(w, msg, next, 1)
			if err != nil {
				return err
			}
			if err := s.Free(); err != nil {
				return err
			}
			if _, err := s.Wait(ctx); !errors.Is(err, runtime.ErrInvalid) {
				return fmt.Errorf("wait on a freed request: %v", err)
			}
			if err := s.Free(); !errors.Is(err, runtime.ErrInvalid) {
				return fmt.Errorf("second free: %v", err)
			}
			got := make([]byte, size)
			if _, err := runtime.Recv(ctx, w, got, prev, 1); err != nil {
				return err
			}
			if err := checkPattern(got, prev); err != nil {
				return err
			}
			// The sender learns from its receiver that its message arrived, by a message
			// that follows the receiver's FIN on the queue pair (a synchronous send).
			ack, err := runtime.Irecv(w, []byte{0}, next, 2)
			if err != nil {
				return err
			}
			if err := runtime.Ssend(ctx, w, []byte{1}, prev, 2); err != nil {
				return err
			}
			if _, err := ack.Wait(ctx); err != nil {
				return err
			}
			// The freed send completed, so the Request serves again.
			if err := runtime.IsendWith(s, w, msg, next, 3); err != nil {
				return fmt.Errorf("reuse of a freed request: %w", err)
			}
			if _, err := runtime.Recv(ctx, w, got, prev, 3); err != nil {
				return err
			}
			if _, err := s.Wait(ctx); err != nil {
				return err
			}
		}
		// A freed eager receive: the message that follows it shows it matched.
		small := []int32{0}
		rq, err := runtime.Irecv(w, small, prev, 4)
		if err != nil {
			return err
		}
		if err := rq.Free(); err != nil {
			return err
		}
		if err := runtime.Send(ctx, w, []int32{int32(r + 1)}, next, 4); err != nil {
			return err
		}
		if err := runtime.Send(ctx, w, []int32{0}, next, 5); err != nil {
			return err
		}
		if _, err := runtime.Recv(ctx, w, []int32{0}, prev, 5); err != nil {
			return err
		}
		if small[0] != int32(prev+1) {
			return fmt.Errorf("freed receive got %d, want %d", small[0], prev+1)
		}
		return nil
	})
}

// TestCancel: an unmatched receive is withdrawn (Status.Cancelled) and a later message
// goes to a later receive; a matched receive and a sent message are not withdrawn; a
// synchronous send to this rank itself is, before a receive takes it; a send to a peer
// not yet connected may be (the receiver learns which and checks it); an Isendrecv
// whose receive is withdrawn reports it.
func TestCancel(t *testing.T) {
	setups(t, func(ctx context.Context, w *runtime.World) error {
		r, n := w.Rank(), w.Size()
		next, prev := (r+1)%n, (r+n-1)%n
		last := n - 1
		// First contact: rank 0 to the last rank.
		switch r {
		case 0:
			s, err := runtime.Isend(w, []int32{7}, last, 77)
			if err != nil {
				return err
			}
			if err := s.Cancel(); err != nil {
				return err
			}
			st, err := s.Wait(ctx)
			if err != nil {
				return err
			}
			flag := []byte{0}
			if st.Cancelled {
				flag[0] = 1
			}
			if err := runtime.Send(ctx, w, flag, last, 78); err != nil {
				return err
			}
		case last:
			flag := []byte{0}
			if _, err := runtime.Recv(ctx, w, flag, 0, 78); err != nil {
				return err
			}
			if flag[0] == 0 {
				if _, err := runtime.Recv(ctx, w, []int32{0}, 0, 77); err != nil {
					return err
				}
			}
			if ok, _, err := runtime.Iprobe(w, 0, 77); ok || err != nil {
				return fmt.Errorf("a message left after its send was cancelled (flag %d): %v", flag[0], err)
			}
		}
		// Unmatched receive.
		buf := []int64{42}
		rq, err := runtime.Irecv(w, buf, prev, 5)
		if err != nil {
			return err
		}
		if err := rq.Cancel(); err != nil {
			return err
		}
		st, err := rq.Wait(ctx)
		if err != nil || !st.Cancelled || buf[0] != 42 {
			return fmt.Errorf("cancelled receive: %+v %v %v", st, buf, err)
		}
		if err := runtime.Barrier(ctx, w); err != nil { // every rank's receive is cancelled
			return err
		}
		if err := runtime.Send(ctx, w, []int64{int64(r)}, next, 5); err != nil {
			return err
		}
		if st, err = runtime.Recv(ctx, w, buf, prev, 5); err != nil || st.Cancelled || buf[0] != int64(prev) {
			return fmt.Errorf("receive after a cancelled one: %+v %v %v", st, buf, err)
		}
		// Matched receive and a sent message: not withdrawn.
		s, err := runtime.Isend(w, []int64{int64(r)}, r, 6)
		if err != nil {
			return err
		}
		rq, err = runtime.Irecv(w, buf, r, 6)
		if err != nil {
			return err
		}
		for _, q := range []*runtime.Request{s, rq} {
			if err := q.Cancel(); err != nil {
				return err
			}
			if st, err := q.Wait(ctx); err != nil || st.Cancelled {
				return fmt.Errorf("cancel after the match: %+v %v", st, err)
			}
		}
		// A synchronous send to itself, not yet received.
		if s, err = runtime.Issend(w, []int64{1}, r, 7); err != nil {
			return err
		}
		if err := s.Cancel(); err != nil {
			return err
		}
		if st, err := s.Wait(ctx); err != nil || !st.Cancelled {
			return fmt.Errorf("cancelled synchronous send to itself: %+v %v", st, err)
		}
		if ok, _, err := runtime.Iprobe(w, r, 7); ok || err != nil {
			return fmt.Errorf("the cancelled message is still there: %v", err)
		}
		// An Isendrecv whose receive is withdrawn; its send goes to itself and is taken.
		p, err := runtime.Isendrecv(w, []int64{3}, r, 8, buf, prev, 9)
		if err != nil {
			return err
		}
		if err := p.Cancel(); err != nil {
			return err
		}
		if _, err := runtime.Recv(ctx, w, buf, r, 8); err != nil || buf[0] != 3 {
			return fmt.Errorf("isendrecv's send: %v %v", buf, err)
		}
		if st, err := p.Wait(ctx); err != nil || !st.Cancelled {
			return fmt.Errorf("cancelled isendrecv: %+v %v", st, err)
		}
		if err := new(runtime.Request).Cancel(); !errors.Is(err, runtime.ErrInvalid) {
			return fmt.Errorf("cancel of a request never started: %v", err)
		}
		return runtime.Barrier(ctx, w)
	})
}

// TestCancelOffer: a send above the eager limit (and an Ssend) whose offer has reached
// the receiver unmatched is withdrawn by Cancel: Status.Cancelled, and a later receive
// with the same envelope gets the next message instead. One already matched and read
// completes as sent.
func TestCancelOffer(t *testing.T) {
	setups(t, func(ctx context.Context, w *runtime.World) error {
		r, n := w.Rank(), w.Size()
		next, prev := (r+1)%n, (r+n-1)%n
		big := make([]byte, 1<<20) // above every transport's eager limit
		for i := range big {
			big[i] = byte(i)
		}
		for _, sync := range []bool{false, true} {
			var s *runtime.Request
			var err error
			if sync {
				s, err = runtime.Issend(w, []int64{int64(r)}, next, 4)
			} else {
				s, err = runtime.Isend(w, big, next, 4)
			}
			if err != nil {
				return err
			}
			// The offer has arrived once the receiver's probe sees it.
			if _, err := runtime.Probe(ctx, w, prev, 4); err != nil {
				return err
			}
			if err := runtime.Barrier(ctx, w); err != nil {
				return err
			}
			if err := s.Cancel(); err != nil {
				return err
			}
			st, err := s.Wait(ctx)
			if err != nil || !st.Cancelled {
				return fmt.Errorf("sync %v: cancel of an unmatched offer: %+v, %v", sync, st, err)
			}
			if err := runtime.Barrier(ctx, w); err != nil { // every offer withdrawn
				return err
			}
			if err := runtime.Send(ctx, w, []byte{byte(r)}, next, 4); err != nil {
				return err
			}
			got := make([]byte, 1<<20)
			st, err = runtime.Recv(ctx, w, got, prev, 4)
			if err != nil || st.Bytes != 1 || got[0] != byte(prev) {
				return fmt.Errorf("sync %v: after the withdrawn offer the receive got %d bytes (first %d), %v; want the 1-byte message", sync, st.Bytes, got[0], err)
			}
			if ok, _, err := runtime.Iprobe(w, prev, 4); ok || err != nil {
				return fmt.Errorf("sync %v: a withdrawn offer is still there: %v", sync, err)
			}
			if err := runtime.Barrier(ctx, w); err != nil { // before the next round's sends
				return err
			}
		}
		// Matched and read before Cancel: it completes as sent.
		s, err := runtime.Isend(w, big, next, 5)
		if err != nil {
			return err
		}
		got := make([]byte, len(big))
		if _, err := runtime.Recv(ctx, w, got, prev, 5); err != nil {
			return err
		}
		if err := runtime.Barrier(ctx, w); err != nil {
			return err
		}
		if err := s.Cancel(); err != nil {
			return err
		}
		if st, err := s.Wait(ctx); err != nil || st.Cancelled || !slices.Equal(got, big) {
			return fmt.Errorf("cancel of a send already read: %+v, %v, data equal %v", st, err, slices.Equal(got, big))
		}
		return runtime.Barrier(ctx, w)
	})
}
