package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/gorma-hpc/gorma/runtime"
)

// TestMprobe: Improbe finds nothing before the peers send; Mprobe takes each peer's
// messages in the order sent (eager, rendezvous, synchronous), a message it took is no
// longer seen by Iprobe, and Mrecv or Imrecv receives it exactly once; a synchronous
// send to this rank itself completes when its message is received, not when probed;
// ProcNull gives a message of nothing.
func TestMprobe(t *testing.T) {
	setups(t, func(ctx context.Context, w *runtime.World) error {
		r, n := w.Rank(), w.Size()
		sizes := []int{24, 200 << 10, 16}
		if r != 0 {
			if _, err := runtime.Recv(ctx, w, []byte{0}, 0, 9); err != nil {
				return err
			}
			for i, size := range sizes {
				msg := make([]byte, size)
				pattern(msg, r+i)
				var err error
				if i == 2 {
					err = runtime.Ssend(ctx, w, msg, 0, i+1)
				} else {
					err = runtime.Send(ctx, w, msg, 0, i+1)
				}
				if err != nil {
					return err
				}
			}
			return nil
		}
		if _, ok, _, err := runtime.Improbe(w, runtime.AnySource, runtime.AnyTag); ok || err != nil {
			return fmt.Errorf("improbe before any send: %v %v", ok, err)
		}
		for p := 1; p < n; p++ {
			if err := runtime.Send(ctx, w, []byte{1}, p, 9); err != nil {
				return err
			}
			for i, size := range sizes {
				m, st, err := runtime.Mprobe(ctx, w, p, runtime.AnyTag)
				if err != nil || st.Source != p || st.Tag != i+1 || st.Bytes != size {
					return fmt.Errorf("mprobe %d of rank %d: %+v %v", i, p, st, err)
				}
				if ok, st2, _ := runtime.Iprobe(w, p, i+1); ok {
					return fmt.Errorf("message %d of rank %d still seen after mprobe: %+v", i, p, st2)
				}
				buf := make([]byte, st.Bytes)
				if i == 1 {
					var rq *runtime.Request
					if rq, err = runtime.Imrecv(m, buf); err != nil {
						return err
					}
					st, err = rq.Wait(ctx)
				} else {
					st, err = runtime.Mrecv(ctx, m, buf)
				}
				if err != nil || st.Bytes != size || st.Source != p {
					return fmt.Errorf("mrecv %d of rank %d: %+v %v", i, p, st, err)
				}
				if err := checkPattern(buf, p+i); err != nil {
					return err
				}
				if _, err := runtime.Mrecv(ctx, m, buf); !errors.Is(err, runtime.ErrInvalid) {
					return fmt.Errorf("second mrecv: %v", err)
				}
			}
		}
		// To itself: the synchronous send waits for Mrecv, not Mprobe.
		s, err := runtime.Issend(w, []int64{5, 6}, 0, 4)
		if err != nil {
			return err
		}
		m, ok, st, err := runtime.Improbe(w, 0, 4)
		if !ok || err != nil || st.Bytes != 16 {
			return fmt.Errorf("improbe of a message to itself: %v %+v %v", ok, st, err)
		}
		if done, _, _ := s.Test(); done {
			return fmt.Errorf("synchronous send complete after a probe")
		}
		short := []int64{0}
		if _, err := runtime.Mrecv(ctx, m, short); !errors.Is(err, runtime.ErrTruncated) || short[0] != 5 {
			return fmt.Errorf("truncated mrecv: %v %v", short, err)
		}
		if _, err := s.Wait(ctx); err != nil {
			return err
		}
		m, st, err = runtime.Mprobe(ctx, w, runtime.ProcNull, runtime.AnyTag)
		if err != nil || st.Source != runtime.ProcNull {
			return fmt.Errorf("mprobe of ProcNull: %+v %v", st, err)
		}
		if st, err := runtime.Mrecv(ctx, m, short); err != nil || st.Source != runtime.ProcNull || st.Count != 0 {
			return fmt.Errorf("mrecv of ProcNull: %+v %v", st, err)
		}
		if _, err := runtime.Mrecv(ctx, nil, short); !errors.Is(err, runtime.ErrInvalid) {
			return fmt.Errorf("mrecv of nil: %v", err)
		}
		return nil
	})
}
