package runtime_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
	gorma "github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/runtimetest"
)

// Leak tests: run many cycles of an operation and check that what it uses comes back to
// where it was. Goroutines, fds and /dev/shm entries must be back to the baseline exactly
// (after a bounded settle); mappings and heap may move a little with the Go runtime's own
// growth, so they get a slack far below what one leaked resource per cycle would add.

// usage is what a leak check counts in this process.
type usage struct {
	goroutines int
	fds        int    // entries of /proc/self/fd
	maps       int    // lines of /proc/self/maps
	shm        int    // this process's /dev/shm/gorma-<pid>-* files
	heap       uint64 // HeapInuse after a GC
}

func (u usage) String() string {
	return fmt.Sprintf("goroutines %d, fds %d, mappings %d, /dev/shm files %d, heap %d KiB",
		u.goroutines, u.fds, u.maps, u.shm, u.heap>>10)
}

func measure() usage {
	goruntime.GC()
	var ms goruntime.MemStats
	goruntime.ReadMemStats(&ms)
	fds, _ := os.ReadDir("/proc/self/fd")
	maps, _ := os.ReadFile("/proc/self/maps")
	shm, _ := filepath.Glob(fmt.Sprintf("/dev/shm/gorma-%d-*", os.Getpid()))
	return usage{goruntime.NumGoroutine(), len(fds), bytes.Count(maps, []byte("\n")), len(shm), ms.HeapInuse}
}

// settle polls, for at most 5 s, until goroutines, fds and /dev/shm files are back to
// base, and returns the last reading.
func settle(base usage) usage {
	deadline := time.Now().Add(testbudget.Scale(5 * time.Second))
	for {
		u := measure()
		if u.goroutines <= base.goroutines && u.fds <= base.fds && u.shm <= base.shm || time.Now().After(deadline) {
			return u
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// checkUsage fails t if now exceeds base: exactly for goroutines, fds and /dev/shm files,
// by more than mapSlack mappings or heapSlack bytes otherwise.
func checkUsage(t *testing.T, what string, base, now usage, mapSlack int, heapSlack uint64) {
	t.Helper()
	if now.goroutines > base.goroutines || now.fds > base.fds || now.shm > base.shm ||
		now.maps > base.maps+mapSlack || now.heap > base.heap+heapSlack {
		t.Errorf("%s:\n  before: %v\n  after:  %v\n  (allowed: +%d mappings, +%d KiB heap)", what, base, now, mapSlack, heapSlack>>10)
		buf := make([]byte, 1<<20)
		if now.goroutines > base.goroutines {
			t.Logf("goroutines:\n%s", buf[:goruntime.Stack(buf, true)])
		}
	}
}

// TestLeakJobCycles starts and finalizes whole jobs in this process, over shm, over tcp
// between pretend hosts and mixed, and checks that every job gives back its goroutines,
// fds, mappings, shared segments and heap.
func TestLeakJobCycles(t *testing.T) {
	cases := []struct {
		name  string
		opt   runtimetest.Options
		n     int
		jobs  int
		large bool
	}{
		{"shm", runtimetest.Options{Transport: "shm"}, 2, 30, true},
		{"tcp", runtimetest.Options{Transport: "tcp", Hosts: []string{"a", "b"}}, 2, 30, true},
		{"mixed", runtimetest.Options{Hosts: []string{"a", "a", "b"}}, 3, 20, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			job := func() {
				runtimetest.Run(t, c.n, c.opt, func(w *gorma.World) error {
					ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(10*time.Second))
					defer cancel()
					// Eager, fast-box and rendezvous traffic in a ring, then a barrier.
					for _, size := range []int{8, 1000, 100_000} {
						buf := make([]byte, size)
						next, prev := (w.Rank()+1)%w.Size(), (w.Rank()+w.Size()-1)%w.Size()
						q, err := gorma.Isend(w, buf, next, size%gorma.MaxTag)
						if err != nil {
							return err
						}
						if _, err := gorma.Recv(ctx, w, make([]byte, size), prev, size%gorma.MaxTag); err != nil {
							return err
						}
						if _, err := q.Wait(ctx); err != nil {
							return err
						}
					}
					return gorma.Barrier(ctx, w)
				})
			}
			job() // warm up: first-use allocations of the Go runtime and the packages
			base := measure()
			for range c.jobs {
				job()
			}
			now := settle(base)
			checkUsage(t, fmt.Sprintf("after %d jobs of %d ranks", c.jobs, c.n), base, now, 32, 4<<20)
		})
	}
}

// TestLeakRendezvousCancel cancels rendezvous sends by context once their offer has
// reached the receiver and before its receive is posted; the receiver takes them
// afterwards. The rendezvous table, the queues, the registrations and the arena must then
// come back to where they were.
func TestLeakRendezvousCancel(t *testing.T) {
	for _, tc := range []struct {
		name string
		opt  runtimetest.Options
		copy bool
	}{
		{"shm", runtimetest.Options{Transport: "shm"}, false},
		{"shm-copy", runtimetest.Options{Transport: "shm"}, true},
		{"tcp", runtimetest.Options{Transport: "tcp", Hosts: []string{"a", "b"}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const cycles = 100
			const size = 256 << 10 // past every eager limit
			opt := tc.opt
			opt.Timeout = time.Minute // a backstop for the phases' budgets, which name what stalls
			runtimetest.Run(t, 2, opt, func(w *gorma.World) error {
				// Connect first: ForceCopyRendezvous changes the peers connected so far.
				if err := within(10*time.Second, "the connecting barrier", func(ctx context.Context) error {
					return gorma.Barrier(ctx, w)
				}); err != nil {
					return err
				}
				if tc.copy {
					gorma.ForceCopyRendezvous(w)
				}
				buf := make([]byte, size)
				// Warm up: the registration cache entry.
				if err := within(10*time.Second, "the warm-up round", func(ctx context.Context) error {
					return cancelRound(ctx, w, buf)
				}); err != nil {
					return err
				}
				if err := settleRendezvous(w, "the warm-up round"); err != nil {
					return err
				}
				bytes0, mrs0 := runtimetest.ArenaUse(w)
				for i := range cycles {
					if err := within(10*time.Second, fmt.Sprintf("cycle %d of %d", i, cycles), func(ctx context.Context) error {
						return cancelRound(ctx, w, buf)
					}); err != nil {
						return err
					}
				}
				if err := settleRendezvous(w, fmt.Sprintf("%d cancelled rendezvous sends", cycles)); err != nil {
					return err
				}
				if posted, ux, table := gorma.Pending(w); posted+ux+table != 0 {
					return fmt.Errorf("after %d cancelled rendezvous sends: %d posted, %d unexpected, %d rendezvous table entries, want none", cycles, posted, ux, table)
				}
				if bytes1, mrs1 := runtimetest.ArenaUse(w); bytes1 != bytes0 || mrs1 != mrs0 {
					return fmt.Errorf("after %d cancelled rendezvous sends: arena %d bytes in use and %d live MRs, want %d and %d", cycles, bytes1, mrs1, bytes0, mrs0)
				}
				return nil
			})
		})
	}
}

// cancelRound is one round of TestLeakRendezvousCancel between ranks 0 and 1. Rank 0
// sends buf, which takes a rendezvous, and cancels the Send's context once rank 1 reports
// that the offer has arrived. The offer stands: rank 1 takes it after rank 0's go-ahead,
// which rank 0 sends once its Send has returned. A send whose context ends before its
// offer has left is never sent, so the context ends only after the arrival.
func cancelRound(ctx context.Context, w *gorma.World, buf []byte) error {
	const (
		tagOffer   = 1 // rank 0's rendezvous send
		tagArrived = 2 // rank 1 to rank 0: the offer is here, unmatched
		tagGo      = 3 // rank 0 to rank 1: the Send has returned
	)
	one := make([]byte, 1)
	if w.Rank() == 1 {
		if _, err := gorma.Probe(ctx, w, 0, tagOffer); err != nil {
			return fmt.Errorf("probe for the offer: %w", err)
		}
		if err := gorma.Send(ctx, w, one, 0, tagArrived); err != nil {
			return fmt.Errorf("report the offer's arrival: %w", err)
		}
		if _, err := gorma.Recv(ctx, w, one, 0, tagGo); err != nil {
			return fmt.Errorf("receive the go-ahead: %w", err)
		}
		if _, err := gorma.Recv(ctx, w, make([]byte, len(buf)), 0, tagOffer); err != nil {
			return fmt.Errorf("take the offer: %w", err)
		}
		return nil
	}
	sctx, scancel := context.WithCancel(ctx)
	defer scancel()
	arrived := make(chan error, 1)
	go func() {
		_, err := gorma.Recv(ctx, w, make([]byte, 1), 1, tagArrived)
		scancel()
		arrived <- err
	}()
	err := gorma.Send(sctx, w, buf, 1, tagOffer)
	if aerr := <-arrived; aerr != nil {
		return fmt.Errorf("receive the offer's arrival: %w", aerr)
	}
	if !errors.Is(err, context.Canceled) {
		return fmt.Errorf("send cancelled after its offer arrived: got %v, want context.Canceled", err)
	}
	if err := gorma.Send(ctx, w, one, 1, tagGo); err != nil {
		return fmt.Errorf("send the go-ahead: %w", err)
	}
	return nil
}

// settleRendezvous waits, after the rounds named what, until w's rendezvous table is
// empty, then joins a barrier. Each rank polls its own table: a FIN travels through the
// queue pair and the fast boxes' messages may overtake it, so after a barrier the
// sender's table may still hold entries that its peer has finished with. The barrier
// keeps every rank calling the runtime until each has drained: a FIN may wait in the
// provider's send queue of the rank that sent it until that rank calls the runtime again.
func settleRendezvous(w *gorma.World, what string) error {
	ctx, cancel := testbudget.Context(context.Background(), 5*time.Second, fmt.Sprintf("the emptying of rank %d's rendezvous table after %s", w.Rank(), what))
	defer cancel()
	for {
		posted, ux, table := gorma.Pending(w)
		if table == 0 {
			break
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%w: %d posted, %d unexpected, %d rendezvous table entries", context.Cause(ctx), posted, ux, table)
		}
		if _, _, err := gorma.Iprobe(w, gorma.AnySource, gorma.AnyTag); err != nil { // progress
			return err
		}
		time.Sleep(time.Millisecond)
	}
	return within(10*time.Second, "the barrier after "+what, func(ctx context.Context) error {
		return gorma.Barrier(ctx, w)
	})
}

// within runs f with a budget of d for what (testbudget.Context). An error of f after the
// budget's end says what had not happened.
func within(d time.Duration, what string, f func(ctx context.Context) error) error {
	ctx, cancel := testbudget.Context(context.Background(), d, what)
	defer cancel()
	err := f(ctx)
	if err != nil && ctx.Err() != nil {
		return fmt.Errorf("%w (%v)", context.Cause(ctx), err)
	}
	return err
}

// TestLeakCancelledReceives withdraws receives by context and checks that no posted
// receive, Request or table entry stays behind.
func TestLeakCancelledReceives(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			runtimetest.Run(t, 2, runtimetest.Options{Transport: tr, Hosts: hostsFor(tr), Timeout: 30 * time.Second}, func(w *gorma.World) error {
				ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(10*time.Second))
				defer cancel()
				for i := range 200 {
					rctx, rcancel := context.WithCancel(ctx)
					rcancel()
					if _, err := gorma.Recv(rctx, w, make([]byte, 64<<10), gorma.AnySource, 3); !errors.Is(err, context.Canceled) {
						return fmt.Errorf("cycle %d: cancelled receive returned %v", i, err)
					}
					q, err := gorma.Irecv(w, make([]byte, 64), 1-w.Rank(), 4)
					if err != nil {
						return err
					}
					rctx, rcancel = context.WithCancel(ctx)
					rcancel()
					// The peer's message may be in already: then Wait succeeds.
					if _, err := q.Wait(rctx); err != nil && !errors.Is(err, context.Canceled) {
						return fmt.Errorf("cycle %d: cancelled wait returned %v", i, err)
					}
					// The Irecv stays posted: satisfy it so the next cycle starts clean.
					if err := gorma.Send(ctx, w, []byte{byte(i)}, 1-w.Rank(), 4); err != nil {
						return err
					}
					if _, err := q.Wait(ctx); err != nil {
						return err
					}
				}
				if err := gorma.Barrier(ctx, w); err != nil {
					return err
				}
				if posted, ux, table := gorma.Pending(w); posted+ux+table != 0 {
					return fmt.Errorf("after 200 cancelled receives: %d posted, %d unexpected, %d rendezvous table entries, want none", posted, ux, table)
				}
				return nil
			})
		})
	}
}

// hostsFor places two ranks on pretend hosts of their own for tcp.
func hostsFor(tr string) []string {
	if tr == "tcp" {
		return []string{"a", "b"}
	}
	return nil
}
