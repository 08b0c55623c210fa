package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/runtimetest"
)

// TestSendrecvRing: every rank sends to the next and receives from the previous in one
// call, eager and rendezvous sizes, with different element types on the two sides.
func TestSendrecvRing(t *testing.T) {
	forEach(t, []int{1, 2, 3, 5}, func(t *testing.T, tr string, n int) {
		run(t, tr, n, func(ctx context.Context, w *runtime.World) error {
			r := w.Rank()
			next, prev := (r+1)%n, (r+n-1)%n
			for _, words := range []int{0, 2, 3000, 300 << 10} { // up to 1.2 MiB: rendezvous
				send := make([]uint32, words)
				for i := range send {
					send[i] = uint32(r<<24 + i)
				}
				recv := make([]byte, 4*words+8) // longer than the message
				st, err := runtime.Sendrecv(ctx, w, send, next, 7, recv, prev, 7)
				if err != nil {
					return fmt.Errorf("%d words: %w", words, err)
				}
				if st.Source != prev || st.Tag != 7 || st.Bytes != 4*words || st.Count != 4*words {
					return fmt.Errorf("%d words: status %+v, want source %d, %d bytes", words, st, prev, 4*words)
				}
				got := unsafe.Slice((*uint32)(unsafe.Pointer(unsafe.SliceData(recv))), words)
				for i, v := range got {
					if want := uint32(prev<<24 + i); v != want {
						return fmt.Errorf("%d words: word %d is %#x, want %#x", words, i, v, want)
					}
				}
			}
			// Wildcards on the receive side, a send to itself.
			one := []int64{int64(r)}
			got := []int64{-1}
			st, err := runtime.Sendrecv(ctx, w, one, r, 3, got, runtime.AnySource, runtime.AnyTag)
			if err != nil || got[0] != int64(r) || st.Source != r || st.Tag != 3 {
				return fmt.Errorf("sendrecv to itself: %v %+v %v", got, st, err)
			}
			return nil
		})
	})
}

// TestSendrecvErrors: bad arguments name what is wrong; a truncated receive fails after
// the send went out.
func TestSendrecvErrors(t *testing.T) {
	run(t, "shm", 2, func(ctx context.Context, w *runtime.World) error {
		b := make([]byte, 8)
		if _, err := runtime.Sendrecv(ctx, w, b, 2, 0, b, 0, 0); !errors.Is(err, runtime.ErrInvalid) || !strings.Contains(err.Error(), "rank 2") {
			return fmt.Errorf("dest out of range: %v", err)
		}
		if _, err := runtime.Sendrecv(ctx, w, b, 0, 0, b, 0, -5); !errors.Is(err, runtime.ErrInvalid) || !strings.Contains(err.Error(), "tag -5") {
			return fmt.Errorf("bad receive tag: %v", err)
		}
		if _, err := runtime.Sendrecv(ctx, nil, b, 0, 0, b, 0, 0); !errors.Is(err, runtime.ErrInvalid) {
			return fmt.Errorf("nil World: %v", err)
		}
		peer := 1 - w.Rank()
		big, small := make([]byte, 64), make([]byte, 16)
		_, err := runtime.Sendrecv(ctx, w, big, peer, 1, small, peer, 1)
		if !errors.Is(err, runtime.ErrTruncated) || !strings.Contains(err.Error(), "sendrecv: ") {
			return fmt.Errorf("truncated: %v", err)
		}
		return nil
	})
}

// TestWaitAny: receives completing in any order are each reported once, their entries
// set to nil; a set of nils gives -1.
func TestWaitAny(t *testing.T) {
	forEach(t, []int{3}, func(t *testing.T, tr string, n int) {
		run(t, tr, n, func(ctx context.Context, w *runtime.World) error {
			if w.Rank() != 0 {
				// Tags in reverse order, one large message among them.
				for tag := 3; tag >= 0; tag-- {
					buf := make([]byte, 8+tag*(100<<10))
					pattern(buf, w.Rank()*10+tag)
					if err := runtime.Send(ctx, w, buf, 0, tag); err != nil {
						return err
					}
				}
				return nil
			}
			var rs []*runtime.Request
			bufs := map[int][]byte{}
			for src := 1; src < n; src++ {
				for tag := range 4 {
					buf := make([]byte, 8+tag*(100<<10))
					r, err := runtime.Irecv(w, buf, src, tag)
					if err != nil {
						return err
					}
					bufs[len(rs)] = buf
					rs = append(rs, r)
				}
			}
			rs = append(rs, nil) // skipped
			seen := map[int]bool{}
			for range len(rs) - 1 {
				i, st, err := runtime.WaitAny(ctx, rs)
				if err != nil {
					return err
				}
				if i < 0 || seen[i] || rs[i] != nil {
					return fmt.Errorf("WaitAny gave %d (seen %v, entry %v)", i, seen[i], rs[i])
				}
				seen[i] = true
				src, tag := 1+i/4, i%4
				if st.Source != src || st.Tag != tag || st.Bytes != len(bufs[i]) {
					return fmt.Errorf("index %d: status %+v, want source %d tag %d", i, st, src, tag)
				}
				if err := checkPattern(bufs[i], src*10+tag); err != nil {
					return err
				}
			}
			if i, _, err := runtime.WaitAny(ctx, rs); i != -1 || err != nil {
				return fmt.Errorf("WaitAny over nils: %d, %v", i, err)
			}
			return nil
		})
	})
}

// TestWaitAnyParked: a goroutine in WaitAny while another goroutine is the poller (in a
// long Recv) is woken by the completions of its set. Without that it would sleep until
// its context ended, and rank 1 waits for its answer before it sends the poller's message.
func TestWaitAnyParked(t *testing.T) {
	forEach(t, []int{2}, func(t *testing.T, tr string, n int) {
		run(t, tr, n, func(ctx context.Context, w *runtime.World) error {
			if w.Rank() == 1 {
				time.Sleep(50 * time.Millisecond) // let rank 0's poller and WaitAny settle
				for tag := 1; tag <= 3; tag++ {
					if err := runtime.Send(ctx, w, []int32{int32(tag)}, 0, tag); err != nil {
						return err
					}
				}
				got := []int32{0}
				if _, err := runtime.Recv(ctx, w, got, 0, 50); err != nil {
					return err
				}
				return runtime.Send(ctx, w, []int32{99}, 0, 99)
			}
			poller := make(chan error, 1)
			go func() {
				got := []int32{0}
				_, err := runtime.Recv(ctx, w, got, 1, 99)
				if err == nil && got[0] != 99 {
					err = fmt.Errorf("tag 99 carried %d", got[0])
				}
				poller <- err
			}()
			time.Sleep(10 * time.Millisecond) // the Recv goroutine becomes the poller
			bufs := [][]int32{{0}, {0}, {0}}
			rs := make([]*runtime.Request, 3)
			for i := range rs {
				var err error
				if rs[i], err = runtime.Irecv(w, bufs[i], 1, i+1); err != nil {
					return err
				}
			}
			short, cancel := context.WithTimeout(ctx, testbudget.Scale(3*time.Second)) // the parked WaitAny returns at once when woken
			defer cancel()
			for range 3 {
				i, _, err := runtime.WaitAny(short, rs)
				if err != nil {
					return fmt.Errorf("WaitAny while another goroutine polls: %w", err)
				}
				if short.Err() != nil {
					return errors.New("the parked WaitAny was not woken by its completions: it returned only when its context ended")
				}
				if bufs[i][0] != int32(i+1) {
					return fmt.Errorf("tag %d carried %d", i+1, bufs[i][0])
				}
			}
			if err := runtime.Send(ctx, w, []int32{1}, 1, 50); err != nil {
				return err
			}
			return <-poller
		})
	})
}

// TestWaitAllAndTest: statuses, joined errors with indexes, ctx ending first, TestAll and
// TestAny polling.
func TestWaitAllAndTest(t *testing.T) {
	forEach(t, []int{2}, func(t *testing.T, tr string, n int) {
		run(t, tr, n, func(ctx context.Context, w *runtime.World) error {
			peer := 1 - w.Rank()
			send := make([]byte, 200<<10)
			pattern(send, w.Rank())
			ok := make([]byte, len(send))
			short := make([]byte, 10)
			rOK, err := runtime.Irecv(w, ok, peer, 1)
			if err != nil {
				return err
			}
			rShort, err := runtime.Irecv(w, short, peer, 2)
			if err != nil {
				return err
			}
			s1, err := runtime.Isend(w, send, peer, 1)
			if err != nil {
				return err
			}
			s2, err := runtime.Isend(w, send[:20], peer, 2)
			if err != nil {
				return err
			}
			rs := []*runtime.Request{rOK, nil, rShort, s1, s2}
			sts := make([]runtime.Status, len(rs))
			err = runtime.WaitAll(ctx, rs, sts)
			if !errors.Is(err, runtime.ErrTruncated) || !strings.Contains(err.Error(), "waitall: request 2 (recv): message truncated") {
				return fmt.Errorf("WaitAll with a truncated receive: %v", err)
			}
			if sts[0].Bytes != len(send) || sts[0].Source != peer || sts[2].Tag != 2 || sts[1] != empty || sts[3] != (runtime.Status{}) {
				return fmt.Errorf("statuses %+v", sts)
			}
			if err := checkPattern(ok, peer); err != nil {
				return err
			}
			if rs[0] == nil || rs[2] == nil {
				return errors.New("WaitAll changed the slice")
			}
			if err := runtime.WaitAll(ctx, rs, make([]runtime.Status, 2)); !errors.Is(err, runtime.ErrInvalid) {
				return fmt.Errorf("short statuses: %v", err)
			}

			// A receive nobody sends yet: ctx ends first and the request stays usable.
			late := []int64{0}
			rLate, err := runtime.Irecv(w, late, peer, 3)
			if err != nil {
				return err
			}
			tiny, cancel := context.WithTimeout(ctx, 30*time.Millisecond)
			err = runtime.WaitAll(tiny, []*runtime.Request{rLate}, nil)
			cancel()
			if !errors.Is(err, context.DeadlineExceeded) {
				return fmt.Errorf("WaitAll past its deadline: %v", err)
			}
			if done, err := runtime.TestAll([]*runtime.Request{rLate}, nil); done || err != nil {
				return fmt.Errorf("TestAll before the send: %v %v", done, err)
			}
			if _, ok, _, err := runtime.TestAny([]*runtime.Request{rLate}); ok || err != nil {
				return fmt.Errorf("TestAny before the send: %v %v", ok, err)
			}
			if err := runtime.Barrier(ctx, w); err != nil { // both saw their receive pending
				return err
			}
			if err := runtime.Send(ctx, w, []int64{int64(40 + w.Rank())}, peer, 3); err != nil {
				return err
			}
			set := []*runtime.Request{nil, rLate}
			deadline := time.Now().Add(testbudget.Scale(10 * time.Second))
			for {
				i, ok, st, err := runtime.TestAny(set)
				if err != nil {
					return err
				}
				if ok {
					if i != 1 || set[1] != nil || st.Tag != 3 || late[0] != int64(40+peer) {
						return fmt.Errorf("TestAny: %d %+v %v", i, st, late)
					}
					break
				}
				if time.Now().After(deadline) {
					return errors.New("TestAny never saw the receive complete")
				}
			}
			if done, err := runtime.TestAll([]*runtime.Request{rLate, nil}, nil); !done || err != nil {
				return fmt.Errorf("TestAll after completion: %v %v", done, err)
			}
			return nil
		})
	})
}

// TestMultiMisuse: sets mixing jobs, never-started Requests, empty sets.
func TestMultiMisuse(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(20*time.Second))
	defer cancel()
	a, err := runtimetest.Start(ctx, 1, runtimetest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := runtimetest.Start(ctx, 1, runtimetest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ra, err := runtime.Irecv(a.Worlds[0], make([]byte, 1), 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	rb, err := runtime.Irecv(b.Worlds[0], make([]byte, 1), 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := runtime.WaitAny(ctx, []*runtime.Request{ra, rb}); !errors.Is(err, runtime.ErrInvalid) || !strings.Contains(err.Error(), "another job") {
		t.Errorf("WaitAny across jobs: %v", err)
	}
	if err := runtime.WaitAll(ctx, []*runtime.Request{ra, rb}, nil); !errors.Is(err, runtime.ErrInvalid) {
		t.Errorf("WaitAll across jobs: %v", err)
	}
	if _, err := runtime.TestAll([]*runtime.Request{new(runtime.Request)}, nil); !errors.Is(err, runtime.ErrInvalid) || !strings.Contains(err.Error(), "request 0") {
		t.Errorf("TestAll of a Request never started: %v", err)
	}
	if i, ok, _, err := runtime.TestAny(nil); i != -1 || !ok || err != nil {
		t.Errorf("TestAny of nothing: %d %v %v, want -1 true nil (MPI_UNDEFINED, flag true)", i, ok, err)
	}
	if i, ok, _, err := runtime.TestAny([]*runtime.Request{nil, nil}); i != -1 || !ok || err != nil {
		t.Errorf("TestAny of nils: %d %v %v, want -1 true nil", i, ok, err)
	}
	if err := runtime.WaitAll(ctx, []*runtime.Request{nil}, []runtime.Status{{Source: 9}}); err != nil {
		t.Errorf("WaitAll of nils: %v", err)
	}
	// Complete both so that the jobs finalize cleanly.
	for i, w := range []*runtime.World{a.Worlds[0], b.Worlds[0]} {
		if err := runtime.Send(ctx, w, []byte{1}, 0, 1); err != nil {
			t.Fatal(err)
		}
		if _, err := []*runtime.Request{ra, rb}[i].Wait(ctx); err != nil {
			t.Fatal(err)
		}
	}
}
