package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/runtimetest"
)

// The tests of ULFM's calls follow ICLDisco/ulfm-testing's scenarios: revoke, agree with
// and without failures, shrink at 2 to 64 ranks, and failures during Agree, during
// Shrink and during an AnySource receive. A rank "dies" by KillTransport, as its process's
// death looks to the others: its connections fail and the agent reports it.

// startFT starts an n-rank job in fault-tolerant mode.
func startFT(t *testing.T, tr string, n int) *runtimetest.Job {
	t.Helper()
	j, err := runtimetest.Start(context.Background(), n, runtimetest.Options{Transport: tr,
		Env: map[string]string{runtime.EnvFT: "1"}, Timeout: 60 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(5*time.Second))
		defer cancel()
		j.Finalize(ctx)
		j.Close()
	})
	return j
}

// eachLive runs f at every rank of ranks concurrently and returns the first error, naming
// its rank.
func eachLive(ranks []int, f func(r int) error) error {
	errs := make([]error, len(ranks))
	var wg sync.WaitGroup
	for i, r := range ranks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f(r); err != nil {
				errs[i] = fmt.Errorf("rank %d: %w", r, err)
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// without returns 0..n-1 less dead.
func without(n int, dead ...int) []int {
	var live []int
	for r := range n {
		if !slices.Contains(dead, r) {
			live = append(live, r)
		}
	}
	return live
}

func ftCtx(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(d))
	t.Cleanup(cancel)
	return ctx
}

// TestRevoke: one rank's Revoke fails the receives that every other rank has pending on
// the World (from a live rank that never sends), and later calls, with ErrRevoked; Agree
// and Shrink still work on it, and the shrunk World works.
func TestRevoke(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			const n = 4
			j := startFT(t, tr, n)
			ctx := ftCtx(t, 20*time.Second)
			var pending []<-chan error
			for r := 1; r < n; r++ {
				pending = append(pending, result(func() error {
					_, err := runtime.Recv(ctx, j.Worlds[r], make([]byte, 8), 0, 7)
					return err
				}))
			}
			time.Sleep(20 * time.Millisecond)
			if err := j.Worlds[0].Revoke(); err != nil {
				t.Fatal(err)
			}
			for r, c := range pending {
				if err := <-c; !errors.Is(err, runtime.ErrRevoked) {
					t.Fatalf("rank %d's pending receive: %v, want ErrRevoked", r+1, err)
				}
			}
			if err := runtime.Send(ctx, j.Worlds[0], []byte{1}, 1, 0); !errors.Is(err, runtime.ErrRevoked) {
				t.Fatalf("a send on the revoked World: %v", err)
			}
			err := eachLive(without(n), func(r int) error {
				w := j.Worlds[r]
				if err := runtime.Barrier(ctx, w); !errors.Is(err, runtime.ErrRevoked) {
					return fmt.Errorf("Barrier on the revoked World: %v", err)
				}
				v, err := w.Agree(ctx, 0b110|r&1)
				if err != nil || v != 0b110 {
					return fmt.Errorf("Agree on the revoked World: %b %v", v, err)
				}
				s, err := w.Shrink(ctx)
				if err != nil {
					return err
				}
				if s.Size() != n || s.Rank() != r {
					return fmt.Errorf("shrunk World: rank %d of %d", s.Rank(), s.Size())
				}
				return runtime.Barrier(ctx, s)
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestRevokeAfterFailure: a revoke reaches every survivor when a rank is dead.
func TestRevokeAfterFailure(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			const n = 5
			j := startFT(t, tr, n)
			ctx := ftCtx(t, 20*time.Second)
			runtime.KillTransport(j.Worlds[3])
			var pending []<-chan error
			for _, r := range []int{0, 2, 4} {
				pending = append(pending, result(func() error {
					_, err := runtime.Recv(ctx, j.Worlds[r], make([]byte, 8), 1, 0)
					return err
				}))
			}
			if err := j.Worlds[1].Revoke(); err != nil {
				t.Fatal(err)
			}
			for _, c := range pending {
				if err := <-c; !errors.Is(err, runtime.ErrRevoked) {
					t.Fatalf("pending receive: %v, want ErrRevoked", err)
				}
			}
		})
	}
}

// TestAgree: without failures every rank gets the AND of the flags, at 2 to 64 ranks.
func TestAgree(t *testing.T) {
	for _, c := range []struct {
		tr string
		n  int
	}{{"shm", 2}, {"shm", 7}, {"shm", 64}, {"tcp", 2}, {"tcp", 9}} {
		if testing.Short() && c.n > 16 {
			continue
		}
		t.Run(fmt.Sprintf("%s/%d", c.tr, c.n), func(t *testing.T) {
			j := startFT(t, c.tr, c.n)
			ctx := ftCtx(t, 60*time.Second)
			want := -1
			for r := range c.n {
				want &^= 1 << (r % 40)
			}
			for round := range 3 {
				err := eachLive(without(c.n), func(r int) error {
					v, err := j.Worlds[r].Agree(ctx, -1&^(1<<(r%40)))
					if err != nil || v != want {
						return fmt.Errorf("round %d: Agree = %x, %v; want %x", round, v, err, want)
					}
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// TestAgreeAfterFailure: a rank dead before Agree makes every survivor's Agree report it,
// with the AND of the survivors' flags; once every survivor has acknowledged it, Agree
// reports nothing.
func TestAgreeAfterFailure(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			const n, dead = 5, 2
			j := startFT(t, tr, n)
			ctx := ftCtx(t, 20*time.Second)
			runtime.KillTransport(j.Worlds[dead])
			live := without(n, dead)
			err := eachLive(live, func(r int) error {
				w := j.Worlds[r]
				v, err := w.Agree(ctx, 3)
				var pe *runtime.ProcError
				if v != 3 || !errors.As(err, &pe) || pe.Rank != dead || !errors.Is(err, runtime.ErrProcFailed) {
					return fmt.Errorf("first Agree: %d %v; want 3 and rank %d's failure", v, err, dead)
				}
				f := w.GetFailed()
				if f.Size() != 1 {
					return fmt.Errorf("GetFailed has %d ranks after Agree, want 1", f.Size())
				}
				if got := w.AckFailed(f.Size()); got != 1 {
					return fmt.Errorf("AckFailed = %d", got)
				}
				v, err = w.Agree(ctx, 1|r<<1)
				if v != 1 || err != nil {
					return fmt.Errorf("Agree after the ack: %d %v; want 1, nil", v, err)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestAgreeCoordinatorDies: the lowest rank, which leads the agreement, dies before it
// contributes, while every other rank waits in Agree. They decide alike without it.
func TestAgreeCoordinatorDies(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			const n = 5
			j := startFT(t, tr, n)
			ctx := ftCtx(t, 20*time.Second)
			got := make([]int, n)
			done := result(func() error {
				return eachLive(without(n, 0), func(r int) error {
					v, err := j.Worlds[r].Agree(ctx, 0xff&^(1<<r))
					got[r] = v
					if !errors.Is(err, runtime.ErrProcFailed) {
						return fmt.Errorf("Agree: %v, want rank 0's failure", err)
					}
					return nil
				})
			})
			time.Sleep(50 * time.Millisecond)
			runtime.KillTransport(j.Worlds[0])
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			for r := 1; r < n; r++ {
				if got[r] != 0xe1 {
					t.Fatalf("rank %d agreed %x, want e1 (the AND of the survivors' flags)", r, got[r])
				}
			}
		})
	}
}

// TestShrink: survivors of one or two deaths shrink to a World of the rest, in their old
// order, at 2 to 64 ranks; a Barrier and a ring of messages work on it.
func TestShrink(t *testing.T) {
	for _, c := range []struct {
		tr   string
		n    int
		dead []int
	}{{"shm", 2, []int{1}}, {"shm", 4, []int{0}}, {"shm", 9, []int{3, 8}}, {"shm", 64, []int{0, 31, 63}},
		{"tcp", 2, []int{0}}, {"tcp", 6, []int{2, 5}}} {
		if testing.Short() && c.n > 16 {
			continue
		}
		t.Run(fmt.Sprintf("%s/%d", c.tr, c.n), func(t *testing.T) {
			j := startFT(t, c.tr, c.n)
			ctx := ftCtx(t, 60*time.Second)
			for _, d := range c.dead {
				runtime.KillTransport(j.Worlds[d])
			}
			live := without(c.n, c.dead...)
			err := eachLive(live, func(r int) error {
				s, err := j.Worlds[r].Shrink(ctx)
				if err != nil {
					return err
				}
				if s.Size() != len(live) || s.Rank() != slices.Index(live, r) {
					return fmt.Errorf("shrunk World: rank %d of %d, want %d of %d", s.Rank(), s.Size(), slices.Index(live, r), len(live))
				}
				if err := runtime.Barrier(ctx, s); err != nil {
					return err
				}
				me, k := s.Rank(), s.Size()
				next, prev := (me+1)%k, (me+k-1)%k
				in := make([]int32, 1)
				sent := result(func() error { return runtime.Send(ctx, s, []int32{int32(me)}, next, 5) })
				if _, err := runtime.Recv(ctx, s, in, prev, 5); err != nil || in[0] != int32(prev) {
					return fmt.Errorf("ring on the shrunk World: got %d from %d: %v", in[0], prev, err)
				}
				return <-sent
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestShrinkRankDiesDuring: a rank dies while the others wait in Shrink for it; they
// finish without it.
func TestShrinkRankDiesDuring(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			const n, dead = 6, 4
			j := startFT(t, tr, n)
			ctx := ftCtx(t, 20*time.Second)
			live := without(n, dead)
			done := result(func() error {
				return eachLive(live, func(r int) error {
					s, err := j.Worlds[r].Shrink(ctx)
					if err != nil {
						return err
					}
					if s.Size() != n-1 {
						return fmt.Errorf("shrunk to %d ranks, want %d", s.Size(), n-1)
					}
					return runtime.Barrier(ctx, s)
				})
			})
			time.Sleep(50 * time.Millisecond)
			runtime.KillTransport(j.Worlds[dead])
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestAnySourcePendingFailure: an AnySource receive pending when a rank dies fails with
// its failure, and so does the next one until the failure is acknowledged; then AnySource
// receives take the live ranks' messages.
func TestAnySourcePendingFailure(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			j := startFT(t, tr, 3)
			ctx := ftCtx(t, 20*time.Second)
			w0 := j.Worlds[0]
			pending := result(func() error {
				_, err := runtime.Recv(ctx, w0, make([]byte, 8), runtime.AnySource, 1)
				return err
			})
			time.Sleep(20 * time.Millisecond)
			runtime.KillTransport(j.Worlds[2])
			wantProcError(t, pending, runtime.ErrProcFailed, 2, 5*time.Second)
			if _, err := runtime.Recv(ctx, w0, make([]byte, 8), runtime.AnySource, 1); !errors.Is(err, runtime.ErrProcFailed) {
				t.Fatalf("AnySource receive before the ack: %v", err)
			}
			if n := w0.AckFailed(1); n != 1 {
				t.Fatalf("AckFailed = %d", n)
			}
			sent := result(func() error { return runtime.Send(ctx, j.Worlds[1], []byte("fromone!"), 0, 1) })
			buf := make([]byte, 8)
			st, err := runtime.Recv(ctx, w0, buf, runtime.AnySource, 1)
			if err != nil || st.Source != 1 || string(buf) != "fromone!" {
				t.Fatalf("AnySource receive after the ack: %+v %q %v", st, buf, err)
			}
			if err := <-sent; err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestFailureScopedToWorld: under GORMA_FT a death fails the collectives of the Worlds
// that hold the dead rank, and no others.
func TestFailureScopedToWorld(t *testing.T) {
	j := startFT(t, "shm", 4)
	ctx := ftCtx(t, 20*time.Second)
	halves := make([]*runtime.World, 4)
	if err := eachLive(without(4), func(r int) error {
		h, err := j.Worlds[r].Split(ctx, r/2, r)
		halves[r] = h
		return err
	}); err != nil {
		t.Fatal(err)
	}
	runtime.KillTransport(j.Worlds[3])
	if err := eachLive([]int{0, 1}, func(r int) error { return runtime.Barrier(ctx, halves[r]) }); err != nil {
		t.Fatalf("Barrier on the half without the dead rank: %v", err)
	}
	if err := runtime.Barrier(ctx, j.Worlds[2]); !errors.Is(err, runtime.ErrProcFailed) {
		t.Fatalf("Barrier on the World with the dead rank: %v", err)
	}
	if err := runtime.Barrier(ctx, halves[2]); !errors.Is(err, runtime.ErrProcFailed) {
		t.Fatalf("Barrier on the half with the dead rank: %v", err)
	}
}

// TestRevokeOpenOffer: a Revoke ends a rendezvous send without either rank taking the
// other for failed, wherever its offer is: read by the live receiver already (its FIN
// waits for the sender's next progress), unexpected there (the sender's msgCancel has it
// withdrawn), or still queued at the sender for a connection not yet up. The rendezvous
// the sender keeps meets the receiver's FIN or withdrawal. The two ranks then shrink to
// both of them, and Finalize finds nothing outstanding.
func TestRevokeOpenOffer(t *testing.T) {
	for _, tr := range transports {
		for _, where := range []string{"read", "unexpected", "queued"} {
			t.Run(tr+"/"+where, func(t *testing.T) {
				j := startFT(t, tr, 2)
				ctx := ftCtx(t, 20*time.Second)
				w0, w1 := j.Worlds[0], j.Worlds[1]
				if where != "queued" { // the connection is up: the offer leaves at once
					if err := eachLive(without(2), func(r int) error {
						_, err := runtime.Sendrecv(ctx, j.Worlds[r], []byte{1}, 1-r, 9, make([]byte, 1), 1-r, 9)
						return err
					}); err != nil {
						t.Fatal(err)
					}
				}
				big := make([]byte, 1<<20) // a rendezvous offer
				q, err := runtime.Isend(w0, big, 1, 3)
				if err != nil {
					t.Fatal(err)
				}
				if where == "read" {
					// Rank 0 makes no call meanwhile: the FIN waits for its next progress.
					if _, err := runtime.Recv(ctx, w1, make([]byte, len(big)), 0, 3); err != nil {
						t.Fatal(err)
					}
				}
				if err := w0.Revoke(); err != nil {
					t.Fatal(err)
				}
				if _, err := q.Wait(ctx); !errors.Is(err, runtime.ErrRevoked) {
					t.Fatalf("the revoked send: %v, want ErrRevoked", err)
				}
				err = eachLive(without(2), func(r int) error {
					w := j.Worlds[r]
					s, err := w.Shrink(ctx)
					if err != nil {
						return err
					}
					if f := w.GetFailed(); s.Size() != 2 || f.Size() != 0 {
						return fmt.Errorf("shrunk to %d ranks, %d known failed; want 2 and none", s.Size(), f.Size())
					}
					return runtime.Barrier(ctx, s)
				})
				if err != nil {
					t.Fatal(err)
				}
				if err := j.Finalize(ctx); err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}
