package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

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
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
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
		if err := runtime.Send(ctx, w, buf, -3, 0); !errors.Is(err, runtime.ErrInvalid) {
			return fmt.Errorf("send to rank -3: %v", err)
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
