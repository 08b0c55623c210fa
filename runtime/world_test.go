package runtime_test

import (
	"context"
	"errors"
	"fmt"
	goruntime "runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/pmi"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/internal/testhook"
	"github.com/gorma-hpc/gorma/runtime/runtimetest"
	"github.com/gorma-hpc/gorma/runtime/substrate"
)

// single returns a world of one, as Init gives a program not started by golaunch.
func single(t testing.TB, env map[string]string) (*runtime.World, error) {
	t.Helper()
	w, err := testhook.Init(context.Background(), testhook.Options{Getenv: func(k string) string { return env[k] }})
	if err != nil {
		return nil, err
	}
	return w.(*runtime.World), nil
}

func TestWorldOfOne(t *testing.T) {
	w, err := single(t, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if w.Rank() != 0 || w.Size() != 1 || w.LocalRank() != 0 || w.LocalSize() != 1 || w.Host() == "" || w.Transport(0) != "self" {
		t.Fatalf("rank %d size %d local %d/%d host %q transport %q", w.Rank(), w.Size(), w.LocalRank(), w.LocalSize(), w.Host(), w.Transport(0))
	}
	for _, size := range []int{0, 8, 1 << 20} {
		buf := make([]byte, size)
		pattern(buf, size)
		if err := runtime.Send(ctx, w, buf, 0, 1); err != nil { // never blocks, whatever the size
			t.Fatal(err)
		}
		st, err := runtime.Probe(ctx, w, 0, 1)
		if err != nil || st.Bytes != size {
			t.Fatalf("probe: %+v %v", st, err)
		}
		got := make([]byte, size)
		if st, err := runtime.Recv(ctx, w, got, runtime.AnySource, runtime.AnyTag); err != nil || st.Bytes != size || st.Source != 0 {
			t.Fatalf("recv: %+v %v", st, err)
		}
		if err := checkPattern(got, size); err != nil {
			t.Fatal(err)
		}
	}
	// A receive posted first, completed by a send from another goroutine.
	r, err := runtime.Irecv(w, make([]int32, 4), 0, 2)
	if err != nil {
		t.Fatal(err)
	}
	go runtime.Send(ctx, w, []int32{1, 2, 3, 4}, 0, 2)
	if st, err := r.Wait(ctx); err != nil || st.Count != 4 {
		t.Fatalf("wait: %+v %v", st, err)
	}
	// A blocked Recv wakes when another goroutine sends.
	done := result(func() error { _, err := runtime.Recv(ctx, w, make([]byte, 1), 0, 3); return err })
	time.Sleep(20 * time.Millisecond)
	if err := runtime.Send(ctx, w, []byte{9}, 0, 3); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := runtime.Barrier(ctx, w); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if _, err := runtime.Recv(short, w, make([]byte, 1), 0, 4); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Recv of a message never sent: %v", err)
	}
	if err := w.Finalize(ctx); err != nil {
		t.Fatal(err)
	}
	if err := runtime.Barrier(ctx, w); !errors.Is(err, runtime.ErrFinalized) {
		t.Fatalf("Barrier after Finalize: %v", err)
	}
}

func TestAbortWorldOfOne(t *testing.T) {
	var code atomic.Int32
	w, err := testhook.Init(context.Background(), testhook.Options{Getenv: func(string) string { return "" }, Exit: func(c int) { code.Store(int32(c)) }})
	if err != nil {
		t.Fatal(err)
	}
	w.(*runtime.World).Abort(7, "bye")
	if code.Load() != 7 {
		t.Fatalf("exit code %d, want 7", code.Load())
	}
}

func TestBadEnvironment(t *testing.T) {
	for _, c := range []struct{ name, value, mention string }{
		{runtime.EnvProgress, "fast", "spin, hybrid or block"},
		{runtime.EnvEagerLimit, "lots", runtime.EnvEagerLimit},
		{runtime.EnvEagerLimit, "1G", runtime.EnvEagerLimit},
		{runtime.EnvTCPCongestion, "Cubic!", "system for the kernel's default"},
		{runtime.EnvTCPCongestion, "sixteen-letters1", "cubic or reno"},
	} {
		_, err := single(t, map[string]string{c.name: c.value})
		if !errors.Is(err, runtime.ErrConfig) || indexOf(err.Error(), c.name) < 0 || indexOf(err.Error(), c.mention) < 0 {
			t.Errorf("%s=%s: %v", c.name, c.value, err)
		}
	}
}

// TestTCPCongestionRefused: a congestion control the kernel refuses fails Init of a job
// over tcp with ErrConfig naming the variable and the value.
func TestTCPCongestionRefused(t *testing.T) {
	_, err := runtimetest.Start(context.Background(), 2, runtimetest.Options{Transport: "tcp",
		Env: map[string]string{runtime.EnvTCPCongestion: "nosuchcc"}})
	if !errors.Is(err, runtime.ErrConfig) || indexOf(err.Error(), runtime.EnvTCPCongestion+`="nosuchcc"`) < 0 {
		t.Fatalf("Init with %s=nosuchcc: %v; want ErrConfig naming it", runtime.EnvTCPCongestion, err)
	}
}

// TestBarrier checks that no rank leaves a barrier before every rank entered it, many
// times over, for every rank count.
func TestBarrier(t *testing.T) {
	forEach(t, []int{1, 2, 3, 4}, func(t *testing.T, tr string, n int) {
		var entered atomic.Int64
		run(t, tr, n, func(ctx context.Context, w *runtime.World) error {
			for i := 1; i <= 50; i++ {
				entered.Add(1)
				if err := runtime.Barrier(ctx, w); err != nil {
					return err
				}
				if got := entered.Load(); got < int64(i*n) {
					return fmt.Errorf("barrier %d: left after only %d of %d entries", i, got, i*n)
				}
				if err := runtime.Barrier(ctx, w); err != nil { // nobody enters i+1 before all saw i
					return err
				}
			}
			return nil
		})
	})
}

// TestBarrierIgnoresUserMessages: a wildcard receive posted before a barrier must not
// catch the barrier's messages.
func TestBarrierIgnoresUserMessages(t *testing.T) {
	run(t, "shm", 3, func(ctx context.Context, w *runtime.World) error {
		r, err := runtime.Irecv(w, make([]byte, 8), runtime.AnySource, runtime.AnyTag)
		if err != nil {
			return err
		}
		if err := runtime.Barrier(ctx, w); err != nil {
			return err
		}
		if err := runtime.Send(ctx, w, []byte("12345678"), (w.Rank()+1)%3, 0); err != nil {
			return err
		}
		st, err := r.Wait(ctx)
		if err == nil && (st.Bytes != 8 || st.Source != (w.Rank()+2)%3) {
			return fmt.Errorf("the wildcard receive caught %+v, not the user message", st)
		}
		return err
	})
}

func TestDup(t *testing.T) {
	run(t, "tcp", 2, func(ctx context.Context, w *runtime.World) error {
		d, err := w.Dup()
		if err != nil {
			return err
		}
		if w.Rank() == 0 {
			if err := runtime.Send(ctx, d, []byte("dup!"), 1, 0); err != nil {
				return err
			}
			return runtime.Send(ctx, w, []byte("wrld"), 1, 0)
		}
		buf := make([]byte, 4)
		if _, err := runtime.Recv(ctx, w, buf, runtime.AnySource, runtime.AnyTag); err != nil || string(buf) != "wrld" {
			return fmt.Errorf("world receive got %q %v", buf, err)
		}
		if _, err := runtime.Recv(ctx, d, buf, 0, 0); err != nil || string(buf) != "dup!" {
			return fmt.Errorf("dup receive got %q %v", buf, err)
		}
		return nil
	})
}

// TestSibling: a World's sibling is one context whatever the order of calls (rank 1 takes
// its siblings in the opposite order, after a Dup rank 0 makes later), its messages match
// neither the World's nor a Dup's, and a sibling has no sibling.
func TestSibling(t *testing.T) {
	run(t, "shm", 2, func(ctx context.Context, w *runtime.World) error {
		var d, sw, sd *runtime.World
		var err error
		if w.Rank() == 0 {
			if sw, err = substrate.Sibling(w); err == nil {
				if d, err = w.Dup(); err == nil {
					sd, err = substrate.Sibling(d)
				}
			}
		} else {
			if d, err = w.Dup(); err == nil {
				if sd, err = substrate.Sibling(d); err == nil {
					sw, err = substrate.Sibling(w)
				}
			}
		}
		if err != nil {
			return err
		}
		if _, err := substrate.Sibling(sw); !errors.Is(err, runtime.ErrInvalid) {
			return fmt.Errorf("a sibling's Sibling: %v, want ErrInvalid", err)
		}
		worlds := []*runtime.World{w, d, sw, sd}
		if w.Rank() == 0 {
			for i := len(worlds) - 1; i >= 0; i-- { // reverse order: unexpected at rank 1
				if err := runtime.Send(ctx, worlds[i], []int32{int32(i)}, 1, 5); err != nil {
					return err
				}
			}
			return nil
		}
		for i, x := range worlds {
			buf := []int32{-1}
			if _, err := runtime.Recv(ctx, x, buf, 0, 5); err != nil {
				return err
			}
			if buf[0] != int32(i) {
				return fmt.Errorf("world %d received the message of world %d", i, buf[0])
			}
		}
		return nil
	})
}

// TestMixedHosts places 4 ranks on 2 pretend hosts: shm within a host, tcp across, and
// one rank polling both devices.
func TestMixedHosts(t *testing.T) {
	for _, mode := range []string{"hybrid", "block", "spin"} {
		t.Run(mode, func(t *testing.T) {
			opt := runtimetest.Options{Hosts: []string{"a", "a", "b", "b"}, Env: map[string]string{runtime.EnvProgress: mode}}
			runtimetest.Run(t, 4, opt, func(w *runtime.World) error {
				ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(20*time.Second))
				defer cancel()
				for r := range 4 {
					want := "tcp"
					if r == w.Rank() {
						want = "self"
					} else if w.HostOf(r) == w.Host() {
						want = "shm"
					}
					if got := w.Transport(r); got != want {
						return fmt.Errorf("transport to rank %d is %q, want %q", r, got, want)
					}
				}
				if w.LocalSize() != 2 || w.LocalRank() != w.Rank()%2 {
					return fmt.Errorf("local rank %d of %d", w.LocalRank(), w.LocalSize())
				}
				return ringExchange(ctx, w, []int{8, 100_000}, 20)
			})
		})
	}
}

// ringExchange passes messages of the given sizes around the ring, both ways, rounds
// times, checking the data.
func ringExchange(ctx context.Context, w *runtime.World, sizes []int, rounds int) error {
	n, me := w.Size(), w.Rank()
	next, prev := (me+1)%n, (me+n-1)%n
	for i := 0; i < rounds; i++ {
		for _, size := range sizes {
			out, in := make([]byte, size), make([]byte, size)
			pattern(out, me+i)
			r, err := runtime.Irecv(w, in, prev, i)
			if err != nil {
				return err
			}
			if err := runtime.Send(ctx, w, out, next, i); err != nil {
				return err
			}
			if _, err := r.Wait(ctx); err != nil {
				return err
			}
			if err := checkPattern(in, prev+i); err != nil {
				return fmt.Errorf("from rank %d: %w", prev, err)
			}
		}
	}
	return nil
}

func TestProgressModes(t *testing.T) {
	for _, mode := range []string{"spin", "hybrid", "block"} {
		t.Run(mode, func(t *testing.T) {
			forEach(t, []int{2, 4}, func(t *testing.T, tr string, n int) {
				opt := runtimetest.Options{Transport: tr, Env: map[string]string{runtime.EnvProgress: mode}}
				runtimetest.Run(t, n, opt, func(w *runtime.World) error {
					ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(20*time.Second))
					defer cancel()
					if err := ringExchange(ctx, w, []int{8, 70_000}, 10); err != nil {
						return err
					}
					return runtime.Barrier(ctx, w)
				})
			})
		})
	}
}

// TestEagerLimit sets GORMA_EAGER_LIMIT=0: every non-empty message goes by rendezvous.
func TestEagerLimit(t *testing.T) {
	for _, tr := range transports {
		opt := runtimetest.Options{Transport: tr, Env: map[string]string{runtime.EnvEagerLimit: "0"}}
		runtimetest.Run(t, 2, opt, func(w *runtime.World) error {
			ctx := context.Background()
			return ringExchange(ctx, w, []int{0, 1, 8, 5000}, 5)
		})
	}
}

// TestConcurrentGoroutines has several goroutines per rank send and receive at once, on
// their own tags: the poller role must pass between them without losing a wake-up.
func TestConcurrentGoroutines(t *testing.T) {
	forEach(t, []int{2, 3}, func(t *testing.T, tr string, n int) {
		run(t, tr, n, func(ctx context.Context, w *runtime.World) error {
			const workers, rounds = 4, 30
			var wg sync.WaitGroup
			errs := make([]error, workers)
			for g := range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					me, n := w.Rank(), w.Size()
					next, prev := (me+1)%n, (me+n-1)%n
					for i := 0; i < rounds; i++ {
						size := 8
						if i%5 == 0 {
							size = 90_000
						}
						out, in := make([]byte, size), make([]byte, size)
						pattern(out, g*1000+i)
						send := result(func() error { return runtime.Send(ctx, w, out, next, g) })
						if _, err := runtime.Recv(ctx, w, in, prev, g); err != nil {
							errs[g] = err
							return
						}
						if err := <-send; err != nil {
							errs[g] = err
							return
						}
						if err := checkPattern(in, g*1000+i); err != nil {
							errs[g] = err
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

// TestHostCPUs: a World reports the processors its host gives the job's ranks from
// golaunch's contract (GOLAUNCH_HOST_CPUS), else this process's. Three ranks told that
// their host has one processor count as oversubscribed, so their waits give the
// processor away after a few microseconds (progress.go): messages still flow, in every
// progress mode.
func TestHostCPUs(t *testing.T) {
	runtimetest.Run(t, 2, runtimetest.Options{}, func(w *runtime.World) error {
		if got := w.HostCPUs(); got != goruntime.NumCPU() {
			return fmt.Errorf("HostCPUs %d without a contract value, want NumCPU %d", got, goruntime.NumCPU())
		}
		return nil
	})
	for _, mode := range []string{"spin", "hybrid", "block"} {
		t.Run(mode, func(t *testing.T) {
			opt := runtimetest.Options{Env: map[string]string{pmi.EnvHostCPUs: "1", runtime.EnvProgress: mode}}
			runtimetest.Run(t, 3, opt, func(w *runtime.World) error {
				if got := w.HostCPUs(); got != 1 {
					return fmt.Errorf("HostCPUs %d, want the contract's 1", got)
				}
				ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(20*time.Second))
				defer cancel()
				return ringExchange(ctx, w, []int{8, 300, 100_000}, 50)
			})
		})
	}
}
