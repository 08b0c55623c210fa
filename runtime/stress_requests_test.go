package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/substrate"
)

// Adversarial tests of requests: reuse after errors and peer failures, cancellation in
// the middle of a rendezvous, many goroutines waiting at once, and edge-sized receives.

// TestStressRequestReuseAfterErrors reuses Requests that completed with ErrTruncated (eager,
// fast box and rendezvous) and one whose Wait ended with its context: the later operations
// on them must work as on new ones.
func TestStressRequestReuseAfterErrors(t *testing.T) {
	forEach(t, []int{2}, func(t *testing.T, tr string, n int) {
		run(t, tr, n, func(ctx context.Context, w *runtime.World) error {
			lim := eagerLimit(w, 1-w.Rank())
			sizes := []int{fbLimit, lim, 3 * lim}
			var rq, sq runtime.Request
			for round := range 3 {
				for i, size := range sizes {
					id := round<<8 | i
					if w.Rank() == 0 {
						for k := range 2 { // the first is truncated, the second is not
							b := make([]byte, size)
							stamp(b, id<<1|k)
							if err := runtime.IsendWith(&sq, w, b, 1, i); err != nil {
								return err
							}
							if _, err := sq.Wait(ctx); err != nil {
								return err
							}
						}
						continue
					}
					short := make([]byte, size/3)
					if err := runtime.IrecvWith(&rq, w, short, 0, i); err != nil {
						return err
					}
					st, err := rq.Wait(ctx)
					if !errors.Is(err, runtime.ErrTruncated) || st.Bytes != len(short) {
						return fmt.Errorf("size %d into %d: %+v %v", size, len(short), st, err)
					}
					if err := checkStamp(short, id<<1); err != nil {
						return err
					}
					full := make([]byte, size)
					if err := runtime.IrecvWith(&rq, w, full, runtime.AnySource, runtime.AnyTag); err != nil {
						return err
					}
					st, err = rq.Wait(ctx)
					if err != nil || st.Bytes != size || st.Tag != i {
						return fmt.Errorf("reused after truncation, size %d: %+v %v", size, st, err)
					}
					if err := checkStamp(full, id<<1|1); err != nil {
						return err
					}
				}
			}
			// A Request whose Wait ended with its context stays in use until it completes.
			buf := make([]byte, 3*lim)
			if w.Rank() == 1 {
				if err := runtime.IrecvWith(&rq, w, buf, 0, 77); err != nil {
					return err
				}
				short, cancel := context.WithTimeout(ctx, 5*time.Millisecond)
				_, err := rq.Wait(short)
				cancel()
				if !errors.Is(err, context.DeadlineExceeded) {
					return fmt.Errorf("Wait with an expired context: %v", err)
				}
				if err := runtime.IrecvWith(&rq, w, buf, 0, 77); !errors.Is(err, runtime.ErrInvalid) {
					return fmt.Errorf("reuse of a pending Request: %v", err)
				}
			}
			if err := runtime.Barrier(ctx, w); err != nil {
				return err
			}
			if w.Rank() == 0 {
				stamp(buf, 4242)
				return runtime.Send(ctx, w, buf, 1, 77)
			}
			if st, err := rq.Wait(ctx); err != nil || st.Bytes != len(buf) {
				return fmt.Errorf("after the canceled Wait: %+v %v", st, err)
			}
			return checkStamp(buf, 4242)
		})
	})
}

// TestStressCancelMidRendezvous cancels blocking rendezvous receives and sends after
// varying delays, so that some end before the match, some during the read and some after;
// whatever happened, the message must be received intact exactly once, and the ranks must
// go on communicating correctly.
func TestStressCancelMidRendezvous(t *testing.T) {
	forEach(t, []int{2}, func(t *testing.T, tr string, n int) {
		run(t, tr, n, func(ctx context.Context, w *runtime.World) error {
			const size = 8 << 20
			buf := make([]byte, size)
			// Connect first: a send canceled while its connection is still being made
			// never goes out, and every round's message must arrive.
			if err := runtime.Barrier(ctx, w); err != nil {
				return err
			}
			for round := range 8 {
				delay := time.Duration(round) * 250 * time.Microsecond
				if w.Rank() == 0 {
					stampBig(buf, round)
					short, cancel := context.WithTimeout(ctx, delay)
					err := runtime.Send(short, w, buf, 1, round)
					cancel()
					if err != nil && !errors.Is(err, context.DeadlineExceeded) {
						return fmt.Errorf("round %d: Send: %w", round, err)
					}
					// The offer stands: buf must stay as it is until the receiver says so.
					if _, err := runtime.Recv(ctx, w, make([]byte, 1), 1, 100+round); err != nil {
						return err
					}
					// The small messages after it must be fine too.
					small := make([]byte, 100)
					stamp(small, 1000+round)
					if err := runtime.Send(ctx, w, small, 1, round); err != nil {
						return err
					}
					continue
				}
				clear(buf)
				short, cancel := context.WithTimeout(ctx, delay)
				st, err := runtime.Recv(short, w, buf, 0, round)
				cancel()
				if errors.Is(err, context.DeadlineExceeded) {
					if p, _, _ := runtime.Pending(w); p != 0 {
						return fmt.Errorf("round %d: a canceled receive is still posted", round)
					}
					st, err = runtime.Recv(ctx, w, buf, 0, round)
				}
				if err != nil || st.Bytes != size {
					return fmt.Errorf("round %d: %+v %v", round, st, err)
				}
				if err := checkStampBig(buf, round); err != nil {
					return fmt.Errorf("round %d: %w", round, err)
				}
				if err := runtime.Send(ctx, w, []byte{1}, 0, 100+round); err != nil {
					return err
				}
				small := make([]byte, 100)
				if st, err := runtime.Recv(ctx, w, small, 0, round); err != nil || st.Bytes != 100 {
					return fmt.Errorf("round %d small: %+v %v", round, st, err)
				}
				if err := checkStamp(small, 1000+round); err != nil {
					return fmt.Errorf("round %d small: %w", round, err)
				}
			}
			if err := runtime.Barrier(ctx, w); err != nil {
				return err
			}
			if _, _, table := runtime.Pending(w); table != 0 {
				return fmt.Errorf("%d rendezvous table entries left", table)
			}
			return nil
		})
	})
}

// TestStressIrecvWaitCancelMidRead ends Wait's context on a rendezvous Irecv at varying
// points, waits again, and checks the data; meanwhile the other direction carries a stream.
func TestStressIrecvWaitCancelMidRead(t *testing.T) {
	forEach(t, []int{2}, func(t *testing.T, tr string, n int) {
		run(t, tr, n, func(ctx context.Context, w *runtime.World) error {
			const size = 4 << 20
			peer := 1 - w.Rank()
			out, in := make([]byte, size), make([]byte, size)
			for round := range 6 {
				stampBig(out, w.Rank()<<8|round)
				clear(in)
				r, err := runtime.Irecv(w, in, peer, round)
				if err != nil {
					return err
				}
				s, err := runtime.Isend(w, out, peer, round)
				if err != nil {
					return err
				}
				short, cancel := context.WithTimeout(ctx, time.Duration(round)*200*time.Microsecond)
				_, err = r.Wait(short)
				cancel()
				if err != nil && !errors.Is(err, context.DeadlineExceeded) {
					return fmt.Errorf("round %d: %w", round, err)
				}
				st, err := r.Wait(ctx)
				if err != nil || st.Bytes != size || st.Source != peer {
					return fmt.Errorf("round %d: %+v %v", round, st, err)
				}
				if err := checkStampBig(in, peer<<8|round); err != nil {
					return fmt.Errorf("round %d: %w", round, err)
				}
				if _, err := s.Wait(ctx); err != nil {
					return err
				}
			}
			return nil
		})
	})
}

// TestStressConcurrentGoroutines has four goroutines per rank exchange with the peer, each
// on its own tag and World, mixing every size class and blocking and non-blocking calls
// (MPI_THREAD_MULTIPLE): the poller role passes between them.
func TestStressConcurrentGoroutines(t *testing.T) {
	for _, mode := range []string{"hybrid", "block", "spin"} {
		for _, tr := range transports {
			t.Run(mode+"/"+tr, func(t *testing.T) {
				runEnv(t, tr, 2, map[string]string{runtime.EnvProgress: mode}, func(ctx context.Context, w *runtime.World) error {
					peer := 1 - w.Rank()
					sizes := limitSizes(eagerLimit(w, peer))
					const gs, rounds = 4, 24
					worlds := []*runtime.World{w, w}
					for range 2 {
						d, err := w.Dup()
						if err != nil {
							return err
						}
						worlds = append(worlds, d)
					}
					errs := make([]error, gs)
					var wg sync.WaitGroup
					for g := range gs {
						wg.Add(1)
						go func() {
							defer wg.Done()
							x := worlds[g]
							for k := range rounds {
								size := sizes[(k+g)%len(sizes)]
								out, in := make([]byte, size), make([]byte, size)
								stamp(out, w.Rank()<<16|g<<8|k)
								var err error
								if k%2 == 0 {
									var r *runtime.Request
									if r, err = runtime.Irecv(x, in, peer, g); err == nil {
										if err = runtime.Send(ctx, x, out, peer, g); err == nil {
											_, err = r.Wait(ctx)
										}
									}
								} else if w.Rank() == 0 {
									if err = runtime.Send(ctx, x, out, peer, g); err == nil {
										_, err = runtime.Recv(ctx, x, in, peer, g)
									}
								} else {
									if _, err = runtime.Recv(ctx, x, in, runtime.AnySource, g); err == nil {
										err = runtime.Send(ctx, x, out, peer, g)
									}
								}
								if err == nil {
									err = checkStamp(in, peer<<16|g<<8|k)
								}
								if err != nil {
									errs[g] = fmt.Errorf("goroutine %d round %d (%d bytes): %w", g, k, size, err)
									return
								}
							}
						}()
					}
					wg.Wait()
					return errors.Join(errs...)
				})
			})
		}
	}
}

// TestStressWaitOneRequestFromManyGoroutines has several goroutines Wait for one Request
// (a Request is safe for use by several goroutines) while another goroutine holds the
// poller role waiting for a message that comes only after every one of those Waits has
// returned: each of them must be woken when the Request completes, not only one.
func TestStressWaitOneRequestFromManyGoroutines(t *testing.T) {
	for _, mode := range []string{"hybrid", "block"} {
		for _, tr := range transports {
			t.Run(mode+"/"+tr, func(t *testing.T) {
				runEnv(t, tr, 2, map[string]string{runtime.EnvProgress: mode}, func(ctx context.Context, w *runtime.World) error {
					// A waiter left parked wakes only when its context ends (and then
					// returns the Request's outcome): the poller's Recv fails then.
					ctx, cancel := context.WithTimeout(ctx, testbudget.Scale(8*time.Second))
					defer cancel()
					if w.Rank() == 0 {
						if _, err := runtime.Recv(ctx, w, make([]byte, 1), 1, 2); err != nil { // ready
							return err
						}
						msg := make([]byte, 64)
						stamp(msg, 1)
						if err := runtime.Send(ctx, w, msg, 1, 1); err != nil {
							return err
						}
						if _, err := runtime.Recv(ctx, w, make([]byte, 1), 1, 4); err != nil { // all woke
							return err
						}
						return runtime.Send(ctx, w, []byte{3}, 1, 3)
					}
					in := make([]byte, 64)
					r, err := runtime.Irecv(w, in, 0, 1)
					if err != nil {
						return err
					}
					// The poller: waits for tag 3, sent once every Wait below has returned.
					poller := result(func() error {
						_, err := runtime.Recv(ctx, w, make([]byte, 1), 0, 3)
						return err
					})
					time.Sleep(20 * time.Millisecond) // let it take the poller role
					const waiters = 3
					errs := make([]error, waiters)
					var wg sync.WaitGroup
					for i := range waiters {
						wg.Add(1)
						go func() {
							defer wg.Done()
							st, err := r.Wait(ctx)
							if err == nil && st.Bytes != len(in) {
								err = fmt.Errorf("status %+v", st)
							}
							errs[i] = err
						}()
					}
					time.Sleep(20 * time.Millisecond) // let them park
					if err := runtime.Send(ctx, w, []byte{2}, 0, 2); err != nil {
						return err
					}
					wg.Wait()
					if err := errors.Join(errs...); err != nil {
						return fmt.Errorf("concurrent Waits for one Request: %w", err)
					}
					if err := checkStamp(in, 1); err != nil {
						return err
					}
					if err := runtime.Send(ctx, w, []byte{4}, 0, 4); err != nil {
						return err
					}
					return <-poller
				})
			})
		}
	}
}

// TestStressCounterWaitHandsOff has a goroutine wait in Counter.Wait for a large one-sided
// read, holding the poller role, while another goroutine blocks in Recv and parks behind
// it; the message for the Recv arrives only after Counter.Wait has returned and nothing
// else of the rank calls the runtime. Counter.Wait must hand the poller role over when it
// leaves, or the Recv sleeps until its context ends.
func TestStressCounterWaitHandsOff(t *testing.T) {
	forEach(t, []int{2}, func(t *testing.T, tr string, n int) {
		run(t, tr, n, func(ctx context.Context, w *runtime.World) error {
			ctx, cancel := context.WithTimeout(ctx, testbudget.Scale(8*time.Second))
			defer cancel()
			const size = 32 << 20
			if w.Rank() == 0 {
				reg, err := substrate.AllocRegion(w, size)
				if err != nil {
					return err
				}
				defer reg.Free()
				stampBig(reg.Bytes(), 7)
				if err := runtime.Send(ctx, w, reg.AppendDesc(nil), 1, 1); err != nil {
					return err
				}
				for range 3 {
					if _, err := runtime.Recv(ctx, w, make([]byte, 1), 1, 2); err != nil { // go
						return err
					}
					time.Sleep(100 * time.Millisecond) // after the reader's Counter.Wait (not for correctness)
					if err := runtime.Send(ctx, w, []byte("late"), 1, 3); err != nil {
						return err
					}
				}
				return runtime.Barrier(ctx, w)
			}
			rm, c, done, err := attachFrom(ctx, w, 0)
			if err != nil {
				return err
			}
			defer done()
			dst := make([]byte, size)
			for round := range 3 {
				if err := runtime.Send(ctx, w, []byte{1}, 0, 2); err != nil {
					return err
				}
				clear(dst)
				if err := rm.Read(c, 0, dst); err != nil {
					return err
				}
				read := result(func() error { return c.Wait(ctx) })
				time.Sleep(time.Millisecond) // let it take the poller role (not for correctness)
				late := result(func() error {
					buf := make([]byte, 4)
					if _, err := runtime.Recv(ctx, w, buf, 0, 3); err != nil {
						return err
					}
					if string(buf) != "late" {
						return fmt.Errorf("got %q", buf)
					}
					return nil
				})
				if err := <-read; err != nil {
					return fmt.Errorf("round %d: read: %w", round, err)
				}
				if err := checkStampBig(dst, 7); err != nil {
					return fmt.Errorf("round %d: read: %w", round, err)
				}
				if err := <-late; err != nil {
					return fmt.Errorf("round %d: Recv parked behind Counter.Wait: %w", round, err)
				}
			}
			return runtime.Barrier(ctx, w)
		})
	})
}

// TestStressEdgeReceives receives messages of every class into an empty buffer (all of
// it truncated, the sender still completes) and uses the largest tag with AnyTag.
func TestStressEdgeReceives(t *testing.T) {
	forEach(t, []int{2}, func(t *testing.T, tr string, n int) {
		run(t, tr, n, func(ctx context.Context, w *runtime.World) error {
			lim := eagerLimit(w, 1-w.Rank())
			small := []int{1, fbLimit, fbLimit + 1, lim, lim + 1, 5 * lim}
			if w.Rank() == 0 {
				for i, size := range small {
					b := make([]byte, size)
					stamp(b, i)
					if err := runtime.Send(ctx, w, b, 1, runtime.MaxTag); err != nil {
						return fmt.Errorf("size %d: %w", size, err)
					}
				}
				return runtime.Barrier(ctx, w)
			}
			for i, size := range small {
				st, err := runtime.Recv(ctx, w, []byte{}, 0, runtime.AnyTag)
				if !errors.Is(err, runtime.ErrTruncated) || st.Bytes != 0 || st.Tag != runtime.MaxTag || st.Source != 0 {
					return fmt.Errorf("message %d of %d bytes into an empty buffer: %+v %v", i, size, st, err)
				}
			}
			return runtime.Barrier(ctx, w)
		})
	})
}

// TestStressAboveReadChunk sends a message above the rendezvous read chunk (64 MiB) into a
// buffer 3 bytes shorter than it: two RDMA reads, the second of 2 bytes, and truncation.
func TestStressAboveReadChunk(t *testing.T) {
	forEach(t, []int{2}, func(t *testing.T, tr string, n int) {
		run(t, tr, n, func(ctx context.Context, w *runtime.World) error {
			const huge = 64<<20 + 5
			big := make([]byte, huge)
			if w.Rank() == 0 {
				stampBig(big, 99)
				return runtime.Send(ctx, w, big, 1, 0)
			}
			st, err := runtime.Recv(ctx, w, big[:huge-3], 0, 0)
			if !errors.Is(err, runtime.ErrTruncated) || st.Bytes != huge-3 {
				return fmt.Errorf("%d bytes into %d: %+v %v", huge, huge-3, st, err)
			}
			if big[huge-3] != 0 {
				return errors.New("a truncated receive wrote past its buffer")
			}
			return checkStampBig(big[:huge-3], 99)
		})
	})
}

// TestStressRequestReuseAfterPeerFailure reuses Requests that failed because their peer
// died (a posted rendezvous receive, a rendezvous send awaiting FIN, an eager send queued
// behind it) for traffic with a live peer, of every size class.
func TestStressRequestReuseAfterPeerFailure(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			j := start(t, tr, 3)
			w0, w1, w2 := j.Worlds[0], j.Worlds[1], j.Worlds[2]
			ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(8*time.Second))
			defer cancel()
			lim := eagerLimit(w1, 2)
			var rx, tx, tx2 runtime.Request
			if err := runtime.IrecvWith(&rx, w1, make([]byte, 3*lim), 0, 1); err != nil {
				t.Fatal(err)
			}
			if err := runtime.IsendWith(&tx, w1, make([]byte, 3*lim), 0, 1); err != nil {
				t.Fatal(err)
			}
			if err := runtime.IsendWith(&tx2, w1, make([]byte, 10), 0, 1); err != nil {
				t.Fatal(err)
			}
			runtime.KillTransport(w0)
			for name, r := range map[string]*runtime.Request{"receive": &rx, "send": &tx} {
				if _, err := r.Wait(ctx); !errors.Is(err, runtime.ErrProcFailed) {
					t.Fatalf("%s from the dead rank: %v", name, err)
				}
			}
			if _, err := tx2.Wait(ctx); err != nil && !errors.Is(err, runtime.ErrProcFailed) {
				t.Fatalf("eager send to the dead rank: %v", err)
			}
			done := result(func() error {
				for i, size := range limitSizes(lim) {
					b := make([]byte, size)
					stamp(b, i)
					if err := runtime.Send(ctx, w2, b, 1, i); err != nil {
						return err
					}
					if _, err := runtime.Recv(ctx, w2, b, 1, i); err != nil {
						return err
					}
					if err := checkStamp(b, 1000+i); err != nil {
						return fmt.Errorf("echo %d: %w", i, err)
					}
				}
				return nil
			})
			for i, size := range limitSizes(lim) {
				in := make([]byte, size)
				if err := runtime.IrecvWith(&rx, w1, in, 2, i); err != nil {
					t.Fatal(err)
				}
				if st, err := rx.Wait(ctx); err != nil || st.Bytes != size || st.Source != 2 {
					t.Fatalf("size %d on a reused Request: %+v %v", size, st, err)
				}
				if err := checkStamp(in, i); err != nil {
					t.Fatal(err)
				}
				stamp(in, 1000+i)
				if err := runtime.IsendWith(&tx, w1, in, 2, i); err != nil {
					t.Fatal(err)
				}
				if _, err := tx.Wait(ctx); err != nil {
					t.Fatalf("size %d: send on a reused Request: %v", size, err)
				}
			}
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		})
	}
}
