package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/pmi"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/runtimetest"
	"github.com/gorma-hpc/gorma/runtime/substrate"
)

// start starts an n-rank job for a test that manages the ranks itself.
func start(t *testing.T, tr string, n int) *runtimetest.Job {
	t.Helper()
	j, err := runtimetest.Start(context.Background(), n, runtimetest.Options{Transport: tr})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(2*time.Second))
		defer cancel()
		j.Finalize(ctx)
		j.Close()
	})
	return j
}

// result runs f in a goroutine and returns a channel with its error.
func result(f func() error) <-chan error {
	c := make(chan error, 1)
	go func() { c <- f() }()
	return c
}

func wantProcError(t *testing.T, c <-chan error, sentinel error, rank int, within time.Duration) {
	t.Helper()
	select {
	case err := <-c:
		var pe *runtime.ProcError
		if !errors.Is(err, sentinel) || !errors.As(err, &pe) || pe.Rank != rank {
			t.Fatalf("got %v, want a *ProcError of rank %d wrapping %v", err, rank, sentinel)
		}
		t.Logf("as expected: %v", err)
	case <-time.After(testbudget.Scale(within)):
		t.Fatalf("still blocked after %v", testbudget.Scale(within))
	}
}

// TestPeerDiesMidRecv closes rank 0's transport (as its death would) while rank 1 is
// blocked receiving from it, by name and from AnySource, and while rank 2 is blocked in
// Barrier. Every call must fail with ErrProcFailed naming rank 0, never hang.
func TestPeerDiesMidRecv(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			j := start(t, tr, 3)
			w0, w1, w2 := j.Worlds[0], j.Worlds[1], j.Worlds[2]
			ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(10*time.Second))
			defer cancel()
			named := result(func() error {
				_, err := runtime.Recv(ctx, w1, make([]byte, 8), 0, 0)
				return err
			})
			anySrc, err := runtime.Irecv(w1, make([]byte, 8), runtime.AnySource, 3)
			if err != nil {
				t.Fatal(err)
			}
			big := result(func() error { // a rendezvous receive whose offer will never come
				_, err := runtime.Recv(ctx, w2, make([]byte, 1<<20), 0, 0)
				return err
			})
			time.Sleep(50 * time.Millisecond)
			runtime.KillTransport(w0)
			wantProcError(t, named, runtime.ErrProcFailed, 0, 3*time.Second)
			wantProcError(t, result(func() error { _, err := anySrc.Wait(ctx); return err }), runtime.ErrProcFailed, 0, 3*time.Second)
			wantProcError(t, big, runtime.ErrProcFailed, 0, 3*time.Second)
			// Later calls involving rank 0 fail at once; the others still work.
			wantProcError(t, result(func() error { return runtime.Send(ctx, w1, []byte{1}, 0, 0) }), runtime.ErrProcFailed, 0, time.Second)
			wantProcError(t, result(func() error {
				_, err := runtime.Recv(ctx, w1, make([]byte, 1), runtime.AnySource, 0)
				return err
			}), runtime.ErrProcFailed, 0, time.Second)
			ok := result(func() error { return runtime.Send(ctx, w2, []byte("live"), 1, 4) })
			buf := make([]byte, 4)
			if _, err := runtime.Recv(ctx, w1, buf, 2, 4); err != nil || string(buf) != "live" {
				t.Fatalf("live peers: %q %v", buf, err)
			}
			if err := <-ok; err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestPeerDiesMidRendezvous kills the receiver while the sender waits for FIN.
func TestPeerDiesMidRendezvous(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			j := start(t, tr, 2)
			ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(10*time.Second))
			defer cancel()
			send := result(func() error { return runtime.Send(ctx, j.Worlds[0], make([]byte, 1<<20), 1, 0) })
			time.Sleep(50 * time.Millisecond)
			runtime.KillTransport(j.Worlds[1])
			wantProcError(t, send, runtime.ErrProcFailed, 1, 3*time.Second)
		})
	}
}

// TestLauncherReportsFailure delivers the agent's ProcFailed event for a rank whose
// transport still looks healthy (a hung process, a dead host the network has not
// noticed): blocked calls must fail all the same.
func TestLauncherReportsFailure(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			j := start(t, tr, 3)
			ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(10*time.Second))
			defer cancel()
			named := result(func() error { _, err := runtime.Recv(ctx, j.Worlds[0], make([]byte, 8), 2, 0); return err })
			anySrc := result(func() error {
				_, err := runtime.Recv(ctx, j.Worlds[1], make([]byte, 8), runtime.AnySource, 0)
				return err
			})
			time.Sleep(50 * time.Millisecond)
			j.Notify(-1, pmi.Event{Kind: pmi.ProcFailed, Rank: 2, Host: "node0", Code: 9, Cause: "killed by signal 9"})
			wantProcError(t, named, runtime.ErrProcFailed, 2, 3*time.Second)
			wantProcError(t, anySrc, runtime.ErrProcFailed, 2, 3*time.Second)
		})
	}
}

// TestAbort has rank 2 call Abort: it "exits" with its code (the test's exit hook), and
// the fake agent's Aborted event fails the other ranks' blocked calls with ErrAborted.
func TestAbort(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			j := start(t, tr, 3)
			ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(10*time.Second))
			defer cancel()
			r0 := result(func() error { _, err := runtime.Recv(ctx, j.Worlds[0], make([]byte, 8), 1, 0); return err })
			r1 := result(func() error { return runtime.Barrier(ctx, j.Worlds[1]) })
			time.Sleep(50 * time.Millisecond)
			j.Worlds[2].Abort(3, "input file missing")
			if code, ok := j.Exit(2); !ok || code != 3 {
				t.Fatalf("Abort exited with %d, %v; want 3", code, ok)
			}
			wantProcError(t, r0, runtime.ErrAborted, 2, 3*time.Second)
			wantProcError(t, r1, runtime.ErrAborted, 2, 3*time.Second)
			if err := runtime.Send(ctx, j.Worlds[0], []byte{1}, 1, 0); !errors.Is(err, runtime.ErrAborted) {
				t.Fatalf("Send after the abort: %v", err)
			}
		})
	}
}

// TestFinalizeWithPendingRendezvous: rank 0 Isends a large message and finalizes at once;
// Finalize must serve the receiver's read before closing.
func TestFinalizeWaitsForRendezvous(t *testing.T) {
	forEach(t, []int{2}, func(t *testing.T, tr string, n int) {
		j, err := runtimetest.Start(context.Background(), 2, runtimetest.Options{Transport: tr})
		if err != nil {
			t.Fatal(err)
		}
		defer j.Close()
		ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(10*time.Second))
		defer cancel()
		big := make([]byte, 3<<20)
		pattern(big, 5)
		if _, err := runtime.Isend(j.Worlds[0], big, 1, 0); err != nil {
			t.Fatal(err)
		}
		fin := result(func() error { return j.Worlds[0].Finalize(ctx) })
		time.Sleep(50 * time.Millisecond)
		got := make([]byte, 3<<20)
		if _, err := runtime.Recv(ctx, j.Worlds[1], got, 0, 0); err != nil {
			t.Fatal(err)
		}
		if err := checkPattern(got, 5); err != nil {
			t.Fatal(err)
		}
		if err := j.Worlds[1].Finalize(ctx); err != nil {
			t.Fatal(err)
		}
		if err := <-fin; err != nil {
			t.Fatal(err)
		}
		if err := runtime.Send(ctx, j.Worlds[0], []byte{1}, 1, 0); !errors.Is(err, runtime.ErrFinalized) {
			t.Fatalf("Send after Finalize: %v", err)
		}
		if err := j.Worlds[0].Finalize(ctx); err != nil {
			t.Fatalf("second Finalize: %v", err)
		}
	})
}

func TestShmAcrossHostsIsAnError(t *testing.T) {
	_, err := runtimetest.Start(context.Background(), 2, runtimetest.Options{Transport: "shm", Hosts: []string{"a", "b"}, Timeout: 5 * time.Second})
	if !errors.Is(err, runtime.ErrTransport) {
		t.Fatalf("got %v, want ErrTransport", err)
	}
	t.Logf("as expected: %v", err)
	for _, want := range []string{"rank 1", `"b"`} {
		if !contains(err.Error(), want) {
			t.Errorf("error %q does not mention %s", err, want)
		}
	}
}

func contains(s, sub string) bool {
	return len(s) >= len(sub) && fmt.Sprint(s) != "" && indexOf(s, sub) >= 0
}

func indexOf(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return i
		}
	}
	return -1
}

// TestBarrierPeerDies kills rank 3 of 8 while the others are in Barrier. In the
// dissemination pattern rank 0 never talks to rank 3, yet it must not wait for ranks that
// left the barrier with an error: every rank fails, naming rank 3.
func TestBarrierPeerDies(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			j := start(t, tr, 8)
			ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(10*time.Second))
			defer cancel()
			var waits []<-chan error
			for r, w := range j.Worlds {
				if r != 3 {
					waits = append(waits, result(func() error { return runtime.Barrier(ctx, w) }))
				}
			}
			time.Sleep(50 * time.Millisecond)
			runtime.KillTransport(j.Worlds[3])
			for _, c := range waits {
				wantProcError(t, c, runtime.ErrProcFailed, 3, 3*time.Second)
			}
			if err := runtime.Barrier(ctx, j.Worlds[0]); !errors.Is(err, runtime.ErrProcFailed) {
				t.Fatalf("a later Barrier: %v", err)
			}
		})
	}
}

// TestSiblingReceivesFailOnAnyFailure: receives on a Sibling World (the collectives'
// traffic) from a live rank fail, naming the dead one, once any peer dies, as Barrier's
// do; on the World itself they wait on (operations among live ranks go on).
func TestSiblingReceivesFailOnAnyFailure(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			j := start(t, tr, 3)
			ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(10*time.Second))
			defer cancel()
			s1, err := substrate.Sibling(j.Worlds[1])
			if err != nil {
				t.Fatal(err)
			}
			blocking := result(func() error { // from rank 2, which lives
				_, err := runtime.Recv(ctx, s1, make([]byte, 8), 2, 1)
				return err
			})
			posted, err := runtime.Irecv(s1, make([]byte, 1<<20), 2, 2)
			if err != nil {
				t.Fatal(err)
			}
			plain, err := runtime.Irecv(j.Worlds[1], make([]byte, 8), 2, 1)
			if err != nil {
				t.Fatal(err)
			}
			time.Sleep(50 * time.Millisecond)
			runtime.KillTransport(j.Worlds[0])
			wantProcError(t, blocking, runtime.ErrProcFailed, 0, 3*time.Second)
			wantProcError(t, result(func() error { _, err := posted.Wait(ctx); return err }), runtime.ErrProcFailed, 0, 3*time.Second)
			// The World's own receive from the live rank 2 still completes.
			if err := runtime.Send(ctx, j.Worlds[2], []byte("stillok!"), 1, 1); err != nil {
				t.Fatal(err)
			}
			if st, err := plain.Wait(ctx); err != nil || st.Bytes != 8 {
				t.Fatalf("receive on the World from a live rank: %+v %v", st, err)
			}
		})
	}
}
