package collectives

import (
	"context"
	"errors"
	"fmt"
	goruntime "runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/runtimetest"
)

// TestPersistentMatchesBlocking makes a persistent Request of every collective, starts
// them all three times with Startall (new input each time, written while they are
// inactive), and checks each round's results against the blocking calls'.
func TestPersistentMatchesBlocking(t *testing.T) {
	for _, l := range nbLayouts {
		t.Run(l.name, func(t *testing.T) {
			runJob(t, l.n, l.opt, 30*time.Second, func(e rankEnv) error {
				cases := nbCases()
				reqs := make([]*Request, len(cases))
				outs := make([][]float64, len(cases))
				for i, c := range cases {
					out, _, _, init := c.make(e.w, 0)
					outs[i], reqs[i] = out, init()
				}
				// Never started: inactive, finished for Wait and Test.
				if err := WaitAll(e.ctx, reqs); err != nil {
					return fmt.Errorf("Wait on never-started Requests: %w", err)
				}
				for round := range 3 {
					// The persistent Requests hold the buffers of seed 0; the blocking
					// calls get fresh ones of seed 0 too, so results must match every round.
					if err := Startall(e.ctx, reqs); err != nil {
						return fmt.Errorf("round %d: %w", round, err)
					}
					if err := WaitAll(e.ctx, reqs); err != nil {
						return fmt.Errorf("round %d: %w", round, err)
					}
					for i, c := range cases {
						want, blocking, _, _ := c.make(e.w, 0)
						if err := blocking(e.ctx); err != nil {
							return fmt.Errorf("blocking %s: %w", c.name, err)
						}
						if !undefinedOut(c, e.r) && !slices.Equal(outs[i], want) {
							return fmt.Errorf("round %d: %s: persistent result %v, blocking %v", round, c.name, outs[i], want)
						}
					}
				}
				for _, r := range reqs {
					if err := r.Free(); err != nil {
						return err
					}
				}
				return nil
			})
		})
	}
}

// TestPersistentRestart starts one AllreduceInit Request many times with new input
// written into its send buffer between runs, mixed with blocking calls and a nonblocking
// one, and checks every result.
func TestPersistentRestart(t *testing.T) {
	for _, l := range nbLayouts {
		t.Run(l.name, func(t *testing.T) {
			runJob(t, l.n, l.opt, 30*time.Second, func(e rankEnv) error {
				const n = 6
				send, recv := make([]float64, n), make([]float64, n)
				req := AllreduceInit(e.w, send, recv, Sum[float64]())
				for k := range 10 {
					copy(send, nbInput(e.r, n, k))
					if err := req.Start(e.ctx); err != nil {
						return fmt.Errorf("start %d: %w", k, err)
					}
					bc := make([]float64, 2)
					if e.r == 0 {
						bc[0], bc[1] = float64(k), 1
					}
					ib := Ibcast(e.ctx, e.w, bc, 0)
					if err := Barrier(e.ctx, e.w); err != nil {
						return err
					}
					if err := WaitAll(e.ctx, []*Request{req, ib}); err != nil {
						return fmt.Errorf("start %d: %w", k, err)
					}
					want := make([]float64, n)
					for r := range e.p {
						for i, v := range nbInput(r, n, k) {
							want[i] += v
						}
					}
					if !slices.Equal(recv, want) || bc[0] != float64(k) || bc[1] != 1 {
						return fmt.Errorf("start %d: Allreduce %v (want %v), Bcast %v", k, recv, want, bc)
					}
				}
				return req.Free()
			})
		})
	}
}

// TestPersistentStates: Start and Free refuse an active Request (its peer has not
// started yet); after it finished, Free releases it and Start, Wait, Test and Free fail on
// it; Startall starts none when one Request cannot be started.
func TestPersistentStates(t *testing.T) {
	for _, opt := range []runtimetest.Options{{Transport: "shm"}, {Transport: "tcp"}} {
		t.Run(opt.Transport, func(t *testing.T) {
			checked := make(chan struct{})
			runJob(t, 2, opt, 30*time.Second, func(e rankEnv) error {
				buf := []int64{int64(e.r), 0}
				req := BcastInit(e.w, buf, 0)
				bar := BarrierInit(e.w)
				if e.r == 1 {
					<-checked
				} else {
					err := func() error {
						if err := req.Start(e.ctx); err != nil {
							return err
						}
						if err := req.Start(e.ctx); !errors.Is(err, runtime.ErrInvalid) {
							return fmt.Errorf("second Start of an active Request: %v, want ErrInvalid", err)
						}
						if err := req.Free(); !errors.Is(err, runtime.ErrInvalid) {
							return fmt.Errorf("Free of an active Request: %v, want ErrInvalid", err)
						}
						if err := Startall(e.ctx, []*Request{bar, req}); !errors.Is(err, runtime.ErrInvalid) {
							return fmt.Errorf("Startall with an active Request: %v, want ErrInvalid", err)
						}
						if err := Startall(e.ctx, []*Request{bar, bar}); !errors.Is(err, runtime.ErrInvalid) {
							return fmt.Errorf("Startall with a Request twice: %v, want ErrInvalid", err)
						}
						if ok, err := bar.Test(); !ok || err != nil {
							return fmt.Errorf("Barrier Request after the refused Startalls: %v, %v; want never started", ok, err)
						}
						return nil
					}()
					close(checked)
					if err != nil {
						return err
					}
				}
				if e.r == 1 {
					if err := req.Start(e.ctx); err != nil {
						return err
					}
				}
				if err := req.Wait(e.ctx); err != nil {
					return err
				}
				if buf[0] != 0 {
					return fmt.Errorf("Bcast gave %v, want root's 0", buf)
				}
				if err := req.Free(); err != nil {
					return err
				}
				for what, err := range map[string]error{
					"Start": req.Start(e.ctx),
					"Wait":  req.Wait(e.ctx),
					"Free":  req.Free(),
				} {
					if !errors.Is(err, runtime.ErrInvalid) {
						return fmt.Errorf("%s on a freed Request: %v, want ErrInvalid", what, err)
					}
				}
				if _, err := req.Test(); !errors.Is(err, runtime.ErrInvalid) {
					return fmt.Errorf("Test on a freed Request: %v, want ErrInvalid", err)
				}
				return bar.Free()
			})
		})
	}
}

// TestNonblockingWorldsCollected makes nonblocking and persistent calls on Dup'd Worlds
// that the program then drops (the persistent Requests freed): the Worlds are garbage
// collected, the queue's worker and finished Requests keeping none of them.
func TestNonblockingWorldsCollected(t *testing.T) {
	const dups = 10
	var live, made atomic.Int64
	runJob(t, 3, runtimetest.Options{Hosts: []string{"a", "a", "b"}}, 30*time.Second, func(e rankEnv) error {
		for range dups {
			d, err := e.w.Dup()
			if err != nil {
				return err
			}
			made.Add(1)
			live.Add(1)
			goruntime.AddCleanup(d, func(n *atomic.Int64) { n.Add(-1) }, &live)
			recv := make([]float64, 300)
			p := AllreduceInit(d, nil, recv, Sum[float64]())
			rs := []*Request{Iallreduce(e.ctx, d, nil, make([]float64, 3), Sum[float64]()), Ibarrier(e.ctx, d)}
			if err := p.Start(e.ctx); err != nil {
				return err
			}
			if err := WaitAll(e.ctx, append(rs, p)); err != nil {
				return err
			}
			if err := p.Free(); err != nil {
				return err
			}
		}
		return runtime.Barrier(e.ctx, e.w)
	})
	deadline := time.Now().Add(testbudget.Scale(5 * time.Second))
	for live.Load() > 0 && time.Now().Before(deadline) {
		goruntime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	if n := live.Load(); n > 0 {
		t.Errorf("%d of %d dropped Worlds used for nonblocking calls are still reachable after GC", n, made.Load())
	}
	if err := reaperIdle(5 * time.Second); err != nil {
		t.Error(err)
	}
}

// TestPersistentFinalized: a persistent Request started after its World's job was
// finalized fails with runtime.ErrFinalized at Wait.
func TestPersistentFinalized(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(20*time.Second))
	defer cancel()
	j, err := runtimetest.Start(ctx, 2, runtimetest.Options{Transport: "shm"})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	reqs := make([]*Request, 2)
	for i, w := range j.Worlds {
		reqs[i] = AllreduceInit(w, nil, make([]float64, 4), Sum[float64]())
	}
	if err := j.Finalize(ctx); err != nil {
		t.Fatal(err)
	}
	for i, r := range reqs {
		if err := r.Start(ctx); err != nil {
			t.Fatal(err)
		}
		if err := r.Wait(ctx); !errors.Is(err, runtime.ErrFinalized) {
			t.Errorf("rank %d: Wait after Finalize returned %v, want ErrFinalized", i, err)
		}
	}
}

// TestNonblockingFinalizeEnds: a call that its peer never starts, running or queued
// behind it, fails with runtime.ErrFinalized when the job is finalized (the worker does
// not outlive the job), though its own context never ends.
func TestNonblockingFinalizeEnds(t *testing.T) {
	for _, opt := range []runtimetest.Options{{Transport: "shm"}, {Transport: "tcp"}} {
		t.Run(opt.Transport, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(20*time.Second))
			defer cancel()
			j, err := runtimetest.Start(ctx, 2, opt)
			if err != nil {
				t.Fatal(err)
			}
			defer j.Close()
			w := j.Worlds[0]
			reqs := []*Request{
				Iallreduce(context.Background(), w, nil, make([]float64, 3), Sum[float64]()),
				Ibarrier(context.Background(), w),
			}
			fctx, stop := context.WithTimeout(ctx, testbudget.Scale(5*time.Second))
			defer stop()
			j.Finalize(fctx) // rank 0's Finalize may report its peers' state: not checked
			for i, r := range reqs {
				if err := r.Wait(ctx); !errors.Is(err, runtime.ErrFinalized) {
					t.Errorf("request %d: Wait after Finalize returned %v, want ErrFinalized", i, err)
				}
			}
		})
	}
}

// TestNonblockingFreedWorld: on a World freed after its persistent Request was made, a
// Start's call fails with ErrInvalid at Wait, and so does a nonblocking call made after
// the Free; the World's parent goes on working.
func TestNonblockingFreedWorld(t *testing.T) {
	runJob(t, 2, runtimetest.Options{Transport: "shm"}, 30*time.Second, func(e rankEnv) error {
		d, err := e.w.Dup()
		if err != nil {
			return err
		}
		p := AllreduceInit(d, nil, make([]float64, 2), Sum[float64]())
		if err := Ibarrier(e.ctx, d).Wait(e.ctx); err != nil {
			return err
		}
		if err := d.Free(); err != nil {
			return err
		}
		if err := p.Start(e.ctx); err != nil {
			return err
		}
		if err := p.Wait(e.ctx); !errors.Is(err, runtime.ErrInvalid) {
			return fmt.Errorf("persistent call on a freed World: %v, want ErrInvalid", err)
		}
		if err := Iallreduce(e.ctx, d, nil, make([]float64, 2), Sum[float64]()).Wait(e.ctx); !errors.Is(err, runtime.ErrInvalid) {
			return fmt.Errorf("nonblocking call on a freed World: %v, want ErrInvalid", err)
		}
		if err := p.Free(); err != nil {
			return err
		}
		return Ibarrier(e.ctx, e.w).Wait(e.ctx)
	})
}
