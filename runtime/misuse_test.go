package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/substrate"
)

// noPanic runs f and turns a panic into an error naming the call, so that one misuse
// that panics does not hide the others.
func noPanic(name string, f func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%s panicked: %v", name, p)
		}
	}()
	return f()
}

// wantErr checks that err wraps sentinel and that its text holds every word of want.
func wantErr(t *testing.T, name string, err, sentinel error, want ...string) {
	t.Helper()
	if !errors.Is(err, sentinel) {
		t.Errorf("%s: got %v, want an error wrapping %q", name, err, sentinel)
		return
	}
	for _, s := range want {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("%s: error %q does not name %q", name, err, s)
		}
	}
}

// TestMisuseNilWorld passes a nil World to every call that takes one. The package
// promises ErrInvalid ("a bad argument: ... a nil World"), never a panic.
func TestMisuseNilWorld(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(5*time.Second))
	defer cancel()
	var w *runtime.World
	buf := make([]int32, 4)
	calls := map[string]func() error{
		"Send": func() error { return runtime.Send(ctx, w, buf, 0, 0) },
		"Recv": func() error { _, err := runtime.Recv(ctx, w, buf, 0, 0); return err },
		"Isend": func() error {
			r, err := runtime.Isend(w, buf, 0, 0)
			if r != nil {
				return errors.New("Isend returned a Request with its error")
			}
			return err
		},
		"Irecv": func() error {
			r, err := runtime.Irecv(w, buf, 0, 0)
			if r != nil {
				return errors.New("Irecv returned a Request with its error")
			}
			return err
		},
		"IsendWith": func() error { return runtime.IsendWith(new(runtime.Request), w, buf, 0, 0) },
		"IrecvWith": func() error { return runtime.IrecvWith(new(runtime.Request), w, buf, 0, 0) },
		"Probe":     func() error { _, err := runtime.Probe(ctx, w, 0, 0); return err },
		"Iprobe":    func() error { _, _, err := runtime.Iprobe(w, 0, 0); return err },
		"Barrier":   func() error { return runtime.Barrier(ctx, w) },
		"Finalize":  func() error { return w.Finalize(ctx) },
		"Dup":       func() error { _, err := w.Dup(); return err },
		"Sibling":   func() error { _, err := substrate.Sibling(w); return err },
	}
	for name, f := range calls {
		wantErr(t, name, noPanic(name, f), runtime.ErrInvalid, "nil World")
	}
}

// TestMisuseAfterFinalize finalizes a 2-rank job and then calls everything: every call
// must fail at once with ErrFinalized (a second Finalize returns nil), and a Request
// still pending at Finalize completes with ErrFinalized.
func TestMisuseAfterFinalize(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			j := start(t, tr, 2)
			w := j.Worlds[0]
			ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(5*time.Second))
			defer cancel()
			pendingRecv, err := runtime.Irecv(w, make([]int64, 4), 1, 9)
			if err != nil {
				t.Fatal(err)
			}
			pendingAny, err := runtime.Irecv(w, make([]int64, 4), runtime.AnySource, 77)
			if err != nil {
				t.Fatal(err)
			}
			done, err := runtime.Isend(w, []int64{1}, 0, 3) // to itself: completes at once
			if err != nil {
				t.Fatal(err)
			}
			if _, err := done.Wait(ctx); err != nil {
				t.Fatal(err)
			}
			dup, err := w.Dup()
			if err != nil {
				t.Fatal(err)
			}
			if _, err := j.Worlds[1].Dup(); err != nil { // Dup is collective in spirit
				t.Fatal(err)
			}
			sib, err := substrate.Sibling(w)
			if err != nil {
				t.Fatal(err)
			}
			if err := j.Finalize(ctx); err != nil {
				t.Fatal(err)
			}
			if err := w.Finalize(ctx); err != nil {
				t.Errorf("second Finalize: %v, want nil", err)
			}
			buf := make([]int64, 4)
			var req runtime.Request
			calls := map[string]func() error{
				"Send":      func() error { return runtime.Send(ctx, w, buf, 1, 0) },
				"SendSelf":  func() error { return runtime.Send(ctx, w, buf, 0, 0) },
				"Recv":      func() error { _, err := runtime.Recv(ctx, w, buf, 1, 0); return err },
				"RecvAny":   func() error { _, err := runtime.Recv(ctx, w, buf, runtime.AnySource, runtime.AnyTag); return err },
				"Isend":     func() error { _, err := runtime.Isend(w, buf, 1, 0); return err },
				"Irecv":     func() error { _, err := runtime.Irecv(w, buf, 1, 0); return err },
				"IsendWith": func() error { return runtime.IsendWith(&req, w, buf, 1, 0) },
				"Probe":     func() error { _, err := runtime.Probe(ctx, w, 1, 0); return err },
				"Iprobe":    func() error { _, _, err := runtime.Iprobe(w, 1, 0); return err },
				"Barrier":   func() error { return runtime.Barrier(ctx, w) },
				"Dup":       func() error { _, err := w.Dup(); return err },
				"Sibling":   func() error { _, err := substrate.Sibling(w); return err },
				"WaitPending": func() error {
					_, err := pendingRecv.Wait(ctx)
					return err
				},
				"TestPending": func() error {
					ok, _, err := pendingAny.Test()
					if !ok {
						return errors.New("Test of a Request pending at Finalize reports not done")
					}
					return err
				},
			}
			for name, f := range calls {
				c := make(chan error, 1)
				go func() { c <- noPanic(name, f) }()
				select {
				case err := <-c:
					wantErr(t, name, err, runtime.ErrFinalized)
				case <-time.After(testbudget.Scale(4 * time.Second)):
					t.Errorf("%s after Finalize still blocked", name)
				}
			}
			// A Request that completed before Finalize keeps its outcome.
			if ok, _, err := done.Test(); !ok || err != nil {
				t.Errorf("Test of a Request completed before Finalize: %v %v, want true <nil>", ok, err)
			}
			// Worlds derived before Finalize are finalized with it.
			for name, d := range map[string]*runtime.World{"dup": dup, "sibling": sib} {
				wantErr(t, name+" Send", runtime.Send(ctx, d, buf, 0, 0), runtime.ErrFinalized)
				_, err := runtime.Recv(ctx, d, buf, 1, 0)
				wantErr(t, name+" Recv", err, runtime.ErrFinalized)
			}
		})
	}
}

// TestMisuseBadArgs passes out-of-range ranks and tags and wildcards where they are not
// allowed: each call fails at once with ErrInvalid naming the value and the range, and a
// rank past the job's size says how many ranks to start.
func TestMisuseBadArgs(t *testing.T) {
	j := start(t, "shm", 2)
	w := j.Worlds[0]
	ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(5*time.Second))
	defer cancel()
	buf := []int32{1, 2}
	cases := []struct {
		name      string
		rank, tag int
		want      string
	}{
		{"rank -2", -2, 0, "rank -2 out of range [0, 2)"},
		{"rank Size", 2, 0, "rank 2 out of range [0, 2): the job has 2 ranks (start it with golaunch -n 3 or more)"},
		{"rank huge", 1 << 40, 0, "out of range"},
		{"tag -2", 0, -2, "tag -2 out of range"},
		{"tag MaxTag+1", 0, runtime.MaxTag + 1, fmt.Sprintf("tag %d out of range", runtime.MaxTag+1)},
	}
	for _, c := range cases {
		wantErr(t, "Send "+c.name, runtime.Send(ctx, w, buf, c.rank, c.tag), runtime.ErrInvalid, c.want, "send")
		_, err := runtime.Recv(ctx, w, buf, c.rank, c.tag)
		wantErr(t, "Recv "+c.name, err, runtime.ErrInvalid, c.want, "recv")
		_, err = runtime.Isend(w, buf, c.rank, c.tag)
		wantErr(t, "Isend "+c.name, err, runtime.ErrInvalid, c.want)
		_, err = runtime.Irecv(w, buf, c.rank, c.tag)
		wantErr(t, "Irecv "+c.name, err, runtime.ErrInvalid, c.want)
		_, err = runtime.Probe(ctx, w, c.rank, c.tag)
		wantErr(t, "Probe "+c.name, err, runtime.ErrInvalid, c.want)
		_, _, err = runtime.Iprobe(w, c.rank, c.tag)
		wantErr(t, "Iprobe "+c.name, err, runtime.ErrInvalid, c.want)
	}
	// Wildcards are for receives only.
	wantErr(t, "Send AnySource", runtime.Send(ctx, w, buf, runtime.AnySource, 0), runtime.ErrInvalid, "rank -1")
	wantErr(t, "Send AnyTag", runtime.Send(ctx, w, buf, 1, runtime.AnyTag), runtime.ErrInvalid, "tag -1")
	_, err := runtime.Isend(w, buf, runtime.AnySource, 0)
	wantErr(t, "Isend AnySource", err, runtime.ErrInvalid, "rank -1")
	_, err = runtime.Isend(w, buf, 1, runtime.AnyTag)
	wantErr(t, "Isend AnyTag", err, runtime.ErrInvalid, "tag -1")
	// A nil Request to the With forms.
	wantErr(t, "IsendWith nil", noPanic("IsendWith", func() error { return runtime.IsendWith(nil, w, buf, 1, 0) }), runtime.ErrInvalid, "nil Request")
	wantErr(t, "IrecvWith nil", noPanic("IrecvWith", func() error { return runtime.IrecvWith(nil, w, buf, 1, 0) }), runtime.ErrInvalid, "nil Request")
	// The World still works after all that.
	if err := runtime.Send(ctx, w, buf, 0, 1); err != nil {
		t.Fatal(err)
	}
	got := make([]int32, 2)
	if _, err := runtime.Recv(ctx, w, got, 0, 1); err != nil || got[1] != 2 {
		t.Fatalf("self message after misuse: %v %v", got, err)
	}
}

// TestMisuseRequestLifecycle: Wait and Test of a nil or never-started Request fail with
// ErrInvalid; Wait after Test succeeded returns the same outcome; reusing a Request that
// is in flight fails without disturbing it; concurrent Wait and Test all see one outcome.
func TestMisuseRequestLifecycle(t *testing.T) {
	j := start(t, "shm", 2)
	w0, w1 := j.Worlds[0], j.Worlds[1]
	ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(5*time.Second))
	defer cancel()

	var nilReq *runtime.Request
	_, err := noPanicSt(func() (runtime.Status, error) { return nilReq.Wait(ctx) })
	wantErr(t, "nil Wait", err, runtime.ErrInvalid, "nil Request")
	_, _, err = nilReq.Test()
	wantErr(t, "nil Test", err, runtime.ErrInvalid, "nil Request")
	var zero runtime.Request
	_, err = zero.Wait(ctx)
	wantErr(t, "never-started Wait", err, runtime.ErrInvalid, "Request", "not been started")
	ok, _, err := zero.Test()
	wantErr(t, "never-started Test", err, runtime.ErrInvalid, "Request", "not been started")
	if ok {
		t.Error("Test of a never-started Request reports done")
	}

	// Reuse of an in-flight Request.
	var r runtime.Request
	dst := make([]int64, 3)
	if err := runtime.IrecvWith(&r, w1, dst, 0, 5); err != nil {
		t.Fatal(err)
	}
	wantErr(t, "reuse in flight", runtime.IrecvWith(&r, w1, make([]int64, 3), 0, 6), runtime.ErrInvalid, "still in use")
	wantErr(t, "reuse in flight as send", runtime.IsendWith(&r, w1, []int64{1}, 0, 6), runtime.ErrInvalid, "still in use")

	// Concurrent Wait and Test of r while the message arrives.
	var wg sync.WaitGroup
	sts := make([]runtime.Status, 4)
	errs := make([]error, 4)
	for i := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sts[i], errs[i] = r.Wait(ctx)
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			ok, st, err := r.Test()
			if ok {
				sts[3], errs[3] = st, err
				return
			}
			time.Sleep(time.Millisecond)
		}
		errs[3] = ctx.Err()
	}()
	if err := runtime.Send(ctx, w0, []int64{7, 8, 9}, 1, 5); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	for i := range sts {
		if errs[i] != nil || sts[i] != (runtime.Status{Source: 0, Tag: 5, Count: 3, Bytes: 24}) {
			t.Errorf("waiter %d: %+v %v", i, sts[i], errs[i])
		}
	}
	if dst[0] != 7 || dst[2] != 9 {
		t.Errorf("received %v", dst)
	}
	// Wait after Test reported done: the same outcome at once.
	if st, err := r.Wait(ctx); err != nil || st.Count != 3 {
		t.Errorf("Wait after completion: %+v %v", st, err)
	}
	// The completed Request may now be reused.
	if err := runtime.IsendWith(&r, w1, []int64{4}, 1, 1); err != nil {
		t.Fatalf("reuse of a completed Request: %v", err)
	}
	if _, err := r.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := runtime.Recv(ctx, w1, make([]int64, 1), 1, 1); err != nil {
		t.Fatal(err)
	}
	// A Request of one job cannot be reused in another's.
	j2 := start(t, "shm", 1)
	wantErr(t, "other job", runtime.IsendWith(&r, j2.Worlds[0], []int64{1}, 0, 0), runtime.ErrInvalid, "another")
}

func noPanicSt(f func() (runtime.Status, error)) (st runtime.Status, err error) {
	err = noPanic("call", func() error {
		var e error
		st, e = f()
		return e
	})
	return st, err
}

// TestMisuseTruncationStaysInBuffer receives messages longer than the receive buffer, on
// every path (fast box, eager, rendezvous) and with element types of different sizes
// (int32 sent, int64 received): the call fails with ErrTruncated naming the message's
// source, tag and length, the buffer holds the message's first bytes, and memory past
// len(buf), within the same backing array, is untouched.
func TestMisuseTruncationStaysInBuffer(t *testing.T) {
	for _, tr := range transports {
		for _, n := range []int{30, 3000, 100_000} { // int32s: fast box, eager, rendezvous
			t.Run(fmt.Sprintf("%s/%d", tr, n), func(t *testing.T) {
				run(t, tr, 2, func(ctx context.Context, w *runtime.World) error {
					if w.Rank() == 0 {
						msg := make([]int32, n)
						for i := range msg {
							msg[i] = int32(i + 1)
						}
						return runtime.Send(ctx, w, msg, 1, 0)
					}
					const guard = -0x5a5a5a5a5a5a5a5b
					back := make([]int64, n/4+64)
					for i := range back {
						back[i] = guard
					}
					recv := back[:n/4] // room for half the message's bytes
					st, err := runtime.Recv(ctx, w, recv, 0, 0)
					if !errors.Is(err, runtime.ErrTruncated) {
						return fmt.Errorf("got %v, want ErrTruncated", err)
					}
					if want := fmt.Sprintf("a %d-byte message from rank 0 (tag 0) into a %d-byte buffer (receive it into %d bytes or more", 4*n, 8*(n/4), 4*n); !strings.Contains(err.Error(), want) {
						return fmt.Errorf("got %q, want it to say %q", err, want)
					}
					if st.Source != 0 || st.Tag != 0 {
						return fmt.Errorf("status %+v", st)
					}
					for i, v := range back[n/4:] {
						if v != guard {
							return fmt.Errorf("element %d past the buffer was overwritten: %#x", n/4+i, v)
						}
					}
					// The buffer holds the message's first bytes: int32 pairs, little-endian.
					for i, v := range recv {
						if want := int64(2*i+1) | int64(2*i+2)<<32; v != want {
							return fmt.Errorf("element %d is %#x, want %#x", i, v, want)
						}
					}
					return nil
				})
			})
		}
	}
}

// TestMisuseZeroLength sends and receives empty and nil buffers, and a non-empty message
// into a nil buffer (ErrTruncated).
func TestMisuseZeroLength(t *testing.T) {
	run(t, "shm", 2, func(ctx context.Context, w *runtime.World) error {
		if w.Rank() == 0 {
			if err := runtime.Send[float64](ctx, w, nil, 1, 0); err != nil {
				return err
			}
			if err := runtime.Send(ctx, w, []float64{}, 1, 1); err != nil {
				return err
			}
			return runtime.Send(ctx, w, []float64{1}, 1, 2)
		}
		for tag := range 2 {
			st, err := runtime.Recv(ctx, w, []float64{}, 0, tag)
			if err != nil || st.Count != 0 || st.Bytes != 0 {
				return fmt.Errorf("tag %d: %+v %v", tag, st, err)
			}
		}
		st, err := runtime.Recv[float64](ctx, w, nil, 0, 2)
		if !errors.Is(err, runtime.ErrTruncated) {
			return fmt.Errorf("a message into a nil buffer: %+v %v, want ErrTruncated", st, err)
		}
		return nil
	})
}

// TestMisuseFinalizePending finalizes with a rendezvous Isend its receiver never
// matches: Finalize waits for the send, so it ends with its ctx (bounded, never a hang),
// the Request then fails with ErrFinalized, and so does every later call. The receiver,
// finalizing later, fails within its own ctx (the sender left without the fence) rather
// than hanging.
func TestMisuseFinalizePending(t *testing.T) {
	j := start(t, "shm", 2)
	w0, w1 := j.Worlds[0], j.Worlds[1]
	req, err := runtime.Isend(w0, make([]byte, 1<<20), 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if err := w0.Finalize(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Finalize with an unmatched rendezvous send: %v, want DeadlineExceeded", err)
	}
	wctx, wcancel := context.WithTimeout(context.Background(), testbudget.Scale(3*time.Second))
	defer wcancel()
	if _, err := req.Wait(wctx); !errors.Is(err, runtime.ErrFinalized) {
		t.Errorf("Wait of the send pending at Finalize: %v, want ErrFinalized", err)
	}
	wantErr(t, "Send after a Finalize that timed out", runtime.Send(wctx, w0, []byte{1}, 1, 0), runtime.ErrFinalized)
	if err := w0.Finalize(wctx); err != nil {
		t.Errorf("second Finalize after one that timed out: %v, want nil", err)
	}
	err = w1.Finalize(wctx)
	if !errors.Is(err, runtime.ErrAborted) && !errors.Is(err, runtime.ErrProcFailed) {
		t.Errorf("the receiver's Finalize: %v, want an error wrapping runtime.ErrAborted or ErrProcFailed (the sender left without the fence)", err)
	}
	t.Logf("receiver's Finalize: %v", err)
}

// TestMisuseAbortConcurrent aborts from several goroutines of a rank at once with
// different codes (the test hook's exit returns): nothing panics, every goroutine's
// Abort returns to the hook, and the other rank's blocked receive fails with ErrAborted.
func TestMisuseAbortConcurrent(t *testing.T) {
	j := start(t, "shm", 2)
	w0, w1 := j.Worlds[0], j.Worlds[1]
	ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(5*time.Second))
	defer cancel()
	blocked := result(func() error { _, err := runtime.Recv(ctx, w1, make([]byte, 8), 0, 0); return err })
	mine := result(func() error { _, err := runtime.Recv(ctx, w0, make([]byte, 8), 1, 0); return err })
	var wg sync.WaitGroup
	for _, code := range []int{0, 3, 300, -1} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := noPanic("Abort", func() error { w0.Abort(code, "misuse test"); return nil }); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if _, ok := j.Exit(0); !ok {
		t.Error("Abort did not exit")
	}
	for name, c := range map[string]<-chan error{"peer": blocked, "self": mine} {
		select {
		case err := <-c:
			wantErr(t, name, err, runtime.ErrAborted, "aborted", "rank 0")
		case <-time.After(testbudget.Scale(4 * time.Second)):
			t.Errorf("%s receive still blocked after Abort", name)
		}
	}
	wantErr(t, "Send after Abort", runtime.Send(ctx, w0, []byte{1}, 1, 0), runtime.ErrAborted)
}
