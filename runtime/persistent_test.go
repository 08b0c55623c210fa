package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/gorma-hpc/gorma/runtime"
)

// TestPersistent: SendInit and RecvInit around a ring, started again and again (Start and
// StartAll), each round sending what the buffer holds at its Start, eager and rendezvous
// sizes, the receive from AnySource with AnyTag; an inactive Request reports the zero
// Status at once, before its first Start and after its completion was reported; the
// misuse errors; SsendInit waits for the match, BsendInit completes at once, RecvInit
// from ProcNull receives nothing.
func TestPersistent(t *testing.T) {
	setups(t, func(ctx context.Context, w *runtime.World) error {
		r, n := w.Rank(), w.Size()
		next, prev := (r+1)%n, (r+n-1)%n
		for _, size := range []int{4, 100 << 10} {
			send, recv := make([]int32, size), make([]int32, size)
			sr, err := runtime.SendInit(w, send, next, 1)
			if err != nil {
				return err
			}
			rr, err := runtime.RecvInit(w, recv, runtime.AnySource, runtime.AnyTag)
			if err != nil {
				return err
			}
			if st, err := rr.Wait(ctx); err != nil || st != (runtime.Status{Source: runtime.AnySource, Tag: runtime.AnyTag}) {
				return fmt.Errorf("wait before start: %+v %v", st, err)
			}
			if done, st, err := sr.Test(); !done || err != nil || st != (runtime.Status{Source: runtime.AnySource, Tag: runtime.AnyTag}) {
				return fmt.Errorf("test before start: %v %+v %v", done, st, err)
			}
			rs := []*runtime.Request{rr, sr}
			for round := 0; round < 5; round++ {
				for i := range send {
					send[i] = int32(r*1000 + round + i)
				}
				if round%2 == 0 {
					err = runtime.StartAll(rs)
				} else if err = runtime.Start(rr); err == nil {
					err = runtime.Start(sr)
				}
				if err != nil {
					return fmt.Errorf("round %d: %w", round, err)
				}
				if err := runtime.Start(sr); !errors.Is(err, runtime.ErrInvalid) || !containsAll(err.Error(), "active") {
					return fmt.Errorf("start of an active request: %v", err)
				}
				sts := make([]runtime.Status, 2)
				if err := runtime.WaitAll(ctx, rs, sts); err != nil {
					return fmt.Errorf("round %d: %w", round, err)
				}
				if sts[0].Source != prev || sts[0].Tag != 1 || sts[0].Count != size {
					return fmt.Errorf("round %d: status %+v", round, sts[0])
				}
				for i, v := range recv {
					if v != int32(prev*1000+round+i) {
						return fmt.Errorf("round %d: element %d is %d", round, i, v)
					}
				}
				if st, err := rr.Wait(ctx); err != nil || st != (runtime.Status{Source: runtime.AnySource, Tag: runtime.AnyTag}) {
					return fmt.Errorf("wait after the completion was reported: %+v %v", st, err)
				}
			}
			// WaitAny skips inactive requests as it skips nil ones.
			if i, _, err := runtime.WaitAny(ctx, rs); i != -1 || err != nil {
				return fmt.Errorf("waitany of inactive requests: %d %v", i, err)
			}
			if err := runtime.IsendWith(sr, w, send, next, 1); !errors.Is(err, runtime.ErrInvalid) {
				return fmt.Errorf("isendwith on a persistent request: %v", err)
			}
			if err := sr.Free(); err != nil {
				return err
			}
			if err := runtime.Start(sr); !errors.Is(err, runtime.ErrInvalid) {
				return fmt.Errorf("start of a freed request: %v", err)
			}
			if err := rr.Free(); err != nil {
				return err
			}
		}
		// Synchronous, to itself.
		ss, err := runtime.SsendInit(w, []int16{7}, r, 2)
		if err != nil {
			return err
		}
		for round := 0; round < 2; round++ {
			if err := runtime.Start(ss); err != nil {
				return err
			}
			if done, _, _ := ss.Test(); done {
				return fmt.Errorf("synchronous persistent send complete before the receive")
			}
			if _, err := runtime.Recv(ctx, w, []int16{0}, r, 2); err != nil {
				return err
			}
			if _, err := ss.Wait(ctx); err != nil {
				return err
			}
		}
		// Buffered.
		if err := runtime.BufferAttach(w, make([]byte, 2*(8+runtime.BsendOverhead))); err != nil {
			return err
		}
		bs, err := runtime.BsendInit(w, []int64{int64(r)}, next, 3)
		if err != nil {
			return err
		}
		for round := 0; round < 2; round++ {
			if err := runtime.Start(bs); err != nil {
				return err
			}
			if done, _, err := bs.Test(); !done || err != nil {
				return fmt.Errorf("buffered persistent send not complete at once: %v", err)
			}
			v := []int64{-1}
			if _, err := runtime.Recv(ctx, w, v, prev, 3); err != nil || v[0] != int64(prev) {
				return fmt.Errorf("buffered round %d: %v %v", round, v, err)
			}
		}
		if _, err := runtime.BufferDetach(ctx, w); err != nil {
			return err
		}
		if err := runtime.Start(bs); !errors.Is(err, runtime.ErrInvalid) {
			return fmt.Errorf("buffered start with no buffer: %v", err)
		}
		if st, err := bs.Wait(ctx); err != nil || st != (runtime.Status{Source: runtime.AnySource, Tag: runtime.AnyTag}) {
			return fmt.Errorf("a failed start leaves the request inactive: %+v %v", st, err)
		}
		// ProcNull, and the init calls' argument checks.
		nr, err := runtime.RecvInit(w, []int8{0}, runtime.ProcNull, 0)
		if err != nil {
			return err
		}
		if err := runtime.Start(nr); err != nil {
			return err
		}
		if st, err := nr.Wait(ctx); err != nil || st.Source != runtime.ProcNull {
			return fmt.Errorf("persistent receive from ProcNull: %+v %v", st, err)
		}
		if _, err := runtime.SendInit(w, []int8{0}, n, 0); !errors.Is(err, runtime.ErrInvalid) || !containsAll(err.Error(), "send_init", "rank") {
			return fmt.Errorf("send_init to rank %d: %v", n, err)
		}
		if _, err := runtime.RecvInit(w, []int8{0}, 0, -4); !errors.Is(err, runtime.ErrInvalid) {
			return fmt.Errorf("recv_init with tag -4: %v", err)
		}
		once, err := runtime.Isend(w, []int8{0}, r, 5)
		if err != nil {
			return err
		}
		if err := runtime.Start(once); !errors.Is(err, runtime.ErrInvalid) || !containsAll(err.Error(), "not persistent") {
			return fmt.Errorf("start of a one-off request: %v", err)
		}
		_, err = runtime.Recv(ctx, w, []int8{0}, r, 5)
		return err
	})
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

// TestPersistentZeroAllocs: Start and Wait of a persistent send and receive allocate
// nothing.
func TestPersistentZeroAllocs(t *testing.T) {
	w, err := single(t, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	sbuf, rbuf := []float64{1}, []float64{0}
	sr, err := runtime.SendInit(w, sbuf, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	rr, err := runtime.RecvInit(w, rbuf, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	round := func() {
		if err := runtime.Start(rr); err != nil {
			t.Fatal(err)
		}
		if err := runtime.Start(sr); err != nil {
			t.Fatal(err)
		}
		if _, err := rr.Wait(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := sr.Wait(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for range 10 {
		round()
	}
	if n := testing.AllocsPerRun(1000, round); n != 0 {
		t.Errorf("%v allocations per persistent Start+Wait pair", n)
	}
}
