package collectives

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/pmi"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/runtimetest"
)

// nbLayouts are the jobs the nonblocking and persistent tests run on: one host over shm,
// tcp between every pair, and two pretend hosts of two ranks (the lanes and hierarchical
// algorithms, shm within a host).
var nbLayouts = []struct {
	name string
	n    int
	opt  runtimetest.Options
}{
	{"shm", 3, runtimetest.Options{Transport: "shm"}},
	{"tcp", 3, runtimetest.Options{Transport: "tcp"}},
	{"hosts", 4, runtimetest.Options{Hosts: []string{"a", "a", "b", "b"}}},
}

// nbCase is one collective, made three ways with the same arguments: blocking, nonblocking
// and persistent. Each of make's calls returns fresh buffers holding the same input.
type nbCase struct {
	name string
	make func(w *runtime.World, seed int) (out []float64, blocking func(context.Context) error, nb func(context.Context) *Request, init func() *Request)
}

// nbInput is rank r's input of n elements for seed: small integers, so that sums are
// exact in any order.
func nbInput(r, n, seed int) []float64 {
	x := make([]float64, n)
	for i := range x {
		x[i] = float64((r*7+i*3+seed*11)%13 - 6)
	}
	return x
}

// nbCases covers every nonblocking and persistent collective, the rooted ones at root
// 1, with 5 elements per rank (or per block).
func nbCases() []nbCase {
	const n = 5
	return []nbCase{
		{"Barrier", func(w *runtime.World, seed int) ([]float64, func(context.Context) error, func(context.Context) *Request, func() *Request) {
			return nil, func(ctx context.Context) error { return Barrier(ctx, w) },
				func(ctx context.Context) *Request { return Ibarrier(ctx, w) },
				func() *Request { return BarrierInit(w) }
		}},
		{"Bcast", func(w *runtime.World, seed int) ([]float64, func(context.Context) error, func(context.Context) *Request, func() *Request) {
			buf := make([]float64, n)
			if w.Rank() == 1 {
				buf = nbInput(1, n, seed)
			}
			return buf, func(ctx context.Context) error { return Bcast(ctx, w, buf, 1) },
				func(ctx context.Context) *Request { return Ibcast(ctx, w, buf, 1) },
				func() *Request { return BcastInit(w, buf, 1) }
		}},
		{"Reduce", func(w *runtime.World, seed int) ([]float64, func(context.Context) error, func(context.Context) *Request, func() *Request) {
			send, recv := nbInput(w.Rank(), n, seed), make([]float64, n)
			op := Sum[float64]()
			return recv, func(ctx context.Context) error { return Reduce(ctx, w, send, recv, op, 1) },
				func(ctx context.Context) *Request { return Ireduce(ctx, w, send, recv, op, 1) },
				func() *Request { return ReduceInit(w, send, recv, op, 1) }
		}},
		{"Allreduce", func(w *runtime.World, seed int) ([]float64, func(context.Context) error, func(context.Context) *Request, func() *Request) {
			send, recv := nbInput(w.Rank(), n, seed), make([]float64, n)
			op := Sum[float64]()
			return recv, func(ctx context.Context) error { return Allreduce(ctx, w, send, recv, op) },
				func(ctx context.Context) *Request { return Iallreduce(ctx, w, send, recv, op) },
				func() *Request { return AllreduceInit(w, send, recv, op) }
		}},
		{"Allgather", func(w *runtime.World, seed int) ([]float64, func(context.Context) error, func(context.Context) *Request, func() *Request) {
			send, recv := nbInput(w.Rank(), n, seed), make([]float64, n*w.Size())
			return recv, func(ctx context.Context) error { return Allgather(ctx, w, send, recv) },
				func(ctx context.Context) *Request { return Iallgather(ctx, w, send, recv) },
				func() *Request { return AllgatherInit(w, send, recv) }
		}},
		{"Allgatherv", func(w *runtime.World, seed int) ([]float64, func(context.Context) error, func(context.Context) *Request, func() *Request) {
			counts := make([]int, w.Size())
			for i := range counts {
				counts[i] = i + 1
			}
			send, recv := nbInput(w.Rank(), w.Rank()+1, seed), make([]float64, w.Size()*(w.Size()+1)/2)
			return recv, func(ctx context.Context) error { return Allgatherv(ctx, w, send, recv, counts) },
				func(ctx context.Context) *Request { return Iallgatherv(ctx, w, send, recv, counts) },
				func() *Request { return AllgathervInit(w, send, recv, counts) }
		}},
		{"Alltoall", func(w *runtime.World, seed int) ([]float64, func(context.Context) error, func(context.Context) *Request, func() *Request) {
			send, recv := nbInput(w.Rank(), n*w.Size(), seed), make([]float64, n*w.Size())
			return recv, func(ctx context.Context) error { return Alltoall(ctx, w, send, recv) },
				func(ctx context.Context) *Request { return Ialltoall(ctx, w, send, recv) },
				func() *Request { return AlltoallInit(w, send, recv) }
		}},
		{"Alltoallv", func(w *runtime.World, seed int) ([]float64, func(context.Context) error, func(context.Context) *Request, func() *Request) {
			// Rank r sends r+d+1 elements to rank d.
			p, r := w.Size(), w.Rank()
			sc, rc := make([]int, p), make([]int, p)
			ns, nr := 0, 0
			for d := range p {
				sc[d], rc[d] = r+d+1, d+r+1
				ns, nr = ns+sc[d], nr+rc[d]
			}
			send, recv := nbInput(r, ns, seed), make([]float64, nr)
			return recv, func(ctx context.Context) error { return Alltoallv(ctx, w, send, sc, recv, rc) },
				func(ctx context.Context) *Request { return Ialltoallv(ctx, w, send, sc, recv, rc) },
				func() *Request { return AlltoallvInit(w, send, sc, recv, rc) }
		}},
		{"Gather", func(w *runtime.World, seed int) ([]float64, func(context.Context) error, func(context.Context) *Request, func() *Request) {
			send := nbInput(w.Rank(), n, seed)
			var recv []float64
			if w.Rank() == 1 {
				recv = make([]float64, n*w.Size())
			}
			return recv, func(ctx context.Context) error { return Gather(ctx, w, send, recv, 1) },
				func(ctx context.Context) *Request { return Igather(ctx, w, send, recv, 1) },
				func() *Request { return GatherInit(w, send, recv, 1) }
		}},
		{"Scatter", func(w *runtime.World, seed int) ([]float64, func(context.Context) error, func(context.Context) *Request, func() *Request) {
			var send []float64
			if w.Rank() == 1 {
				send = nbInput(1, n*w.Size(), seed)
			}
			recv := make([]float64, n)
			return recv, func(ctx context.Context) error { return Scatter(ctx, w, send, recv, 1) },
				func(ctx context.Context) *Request { return Iscatter(ctx, w, send, recv, 1) },
				func() *Request { return ScatterInit(w, send, recv, 1) }
		}},
		{"ReduceScatter", func(w *runtime.World, seed int) ([]float64, func(context.Context) error, func(context.Context) *Request, func() *Request) {
			send, recv := nbInput(w.Rank(), n*w.Size(), seed), make([]float64, n)
			op := Sum[float64]()
			return recv, func(ctx context.Context) error { return ReduceScatter(ctx, w, send, recv, op) },
				func(ctx context.Context) *Request { return IreduceScatter(ctx, w, send, recv, op) },
				func() *Request { return ReduceScatterInit(w, send, recv, op) }
		}},
		{"Gatherv", func(w *runtime.World, seed int) ([]float64, func(context.Context) error, func(context.Context) *Request, func() *Request) {
			// Rank r sends r+1 elements, placed at root in reverse rank order.
			p := w.Size()
			counts, displs := make([]int, p), make([]int, p)
			at := 0
			for r := p - 1; r >= 0; r-- {
				counts[r], displs[r] = r+1, at
				at += r + 1
			}
			send := nbInput(w.Rank(), w.Rank()+1, seed)
			var recv []float64
			if w.Rank() == 1 {
				recv = make([]float64, at)
			}
			return recv, func(ctx context.Context) error { return Gatherv(ctx, w, send, recv, counts, displs, 1) },
				func(ctx context.Context) *Request { return Igatherv(ctx, w, send, recv, counts, displs, 1) },
				func() *Request { return GathervInit(w, send, recv, counts, displs, 1) }
		}},
		{"Scatterv", func(w *runtime.World, seed int) ([]float64, func(context.Context) error, func(context.Context) *Request, func() *Request) {
			p := w.Size()
			counts := make([]int, p)
			total := 0
			for r := range p {
				counts[r] = r + 1
				total += r + 1
			}
			var send []float64
			if w.Rank() == 1 {
				send = nbInput(1, total, seed)
			}
			recv := make([]float64, w.Rank()+1)
			return recv, func(ctx context.Context) error { return Scatterv(ctx, w, send, counts, nil, recv, 1) },
				func(ctx context.Context) *Request { return Iscatterv(ctx, w, send, counts, nil, recv, 1) },
				func() *Request { return ScattervInit(w, send, counts, nil, recv, 1) }
		}},
		{"ReduceScatterV", func(w *runtime.World, seed int) ([]float64, func(context.Context) error, func(context.Context) *Request, func() *Request) {
			p := w.Size()
			counts := make([]int, p)
			total := 0
			for r := range p {
				counts[r] = 2*r + 1
				total += 2*r + 1
			}
			send, recv := nbInput(w.Rank(), total, seed), make([]float64, counts[w.Rank()])
			op := Sum[float64]()
			return recv, func(ctx context.Context) error { return ReduceScatterV(ctx, w, send, recv, counts, op) },
				func(ctx context.Context) *Request { return IreduceScatterV(ctx, w, send, recv, counts, op) },
				func() *Request { return ReduceScatterVInit(w, send, recv, counts, op) }
		}},
		{"Scan", func(w *runtime.World, seed int) ([]float64, func(context.Context) error, func(context.Context) *Request, func() *Request) {
			send, recv := nbInput(w.Rank(), n, seed), make([]float64, n)
			op := Max[float64]()
			return recv, func(ctx context.Context) error { return Scan(ctx, w, send, recv, op) },
				func(ctx context.Context) *Request { return Iscan(ctx, w, send, recv, op) },
				func() *Request { return ScanInit(w, send, recv, op) }
		}},
		{"Exscan", func(w *runtime.World, seed int) ([]float64, func(context.Context) error, func(context.Context) *Request, func() *Request) {
			send, recv := nbInput(w.Rank(), n, seed), make([]float64, n)
			op := Sum[float64]()
			return recv, func(ctx context.Context) error { return Exscan(ctx, w, send, recv, op) },
				func(ctx context.Context) *Request { return Iexscan(ctx, w, send, recv, op) },
				func() *Request { return ExscanInit(w, send, recv, op) }
		}},
	}
}

// exscanRank0 reports whether out is Exscan's output at rank 0, which is undefined.
func undefinedOut(c nbCase, r int) bool { return c.name == "Exscan" && r == 0 }

// TestNonblockingMatchesBlocking starts every nonblocking collective at once, waits for
// the last one and checks that the earlier ones had finished before it (they run in
// start order), then checks each result against the blocking call's on the same input.
func TestNonblockingMatchesBlocking(t *testing.T) {
	for _, l := range nbLayouts {
		t.Run(l.name, func(t *testing.T) {
			runJob(t, l.n, l.opt, 30*time.Second, func(e rankEnv) error {
				cases := nbCases()
				outs := make([][]float64, len(cases))
				reqs := make([]*Request, len(cases))
				for i, c := range cases {
					out, _, nb, _ := c.make(e.w, i)
					outs[i], reqs[i] = out, nb(e.ctx)
				}
				if err := reqs[len(reqs)-1].Wait(e.ctx); err != nil {
					return fmt.Errorf("last request: %w", err)
				}
				for i, r := range reqs[:len(reqs)-1] {
					if ok, err := r.Test(); !ok || err != nil {
						return fmt.Errorf("%s (started before the last) not finished when the last was: %v, %v", cases[i].name, ok, err)
					}
				}
				if err := WaitAll(e.ctx, reqs); err != nil {
					return err
				}
				if ok, err := TestAll(reqs); !ok || err != nil {
					return fmt.Errorf("TestAll after WaitAll: %v, %v", ok, err)
				}
				for i, c := range cases {
					want, blocking, _, _ := c.make(e.w, i)
					if err := blocking(e.ctx); err != nil {
						return fmt.Errorf("blocking %s: %w", c.name, err)
					}
					if !undefinedOut(c, e.r) && !slices.Equal(outs[i], want) {
						return fmt.Errorf("%s: nonblocking result %v, blocking %v", c.name, outs[i], want)
					}
				}
				return nil
			})
		})
	}
}

// TestNonblockingMixed interleaves blocking and nonblocking calls on one World without
// waiting in between: each blocking call waits for the nonblocking ones started before
// it (never ErrConcurrent), and every result is the blocking call's.
func TestNonblockingMixed(t *testing.T) {
	for _, l := range nbLayouts {
		t.Run(l.name, func(t *testing.T) {
			runJob(t, l.n, l.opt, 30*time.Second, func(e rankEnv) error {
				const rounds = 20
				sum := Sum[float64]()
				var reqs []*Request
				var got, want [][]float64
				for k := range rounds {
					send, recv := nbInput(e.r, 3+k%4, k), make([]float64, 3+k%4)
					reqs = append(reqs, Iallreduce(e.ctx, e.w, send, recv, sum))
					got = append(got, recv)
					if k%3 == 0 {
						reqs = append(reqs, Ibarrier(e.ctx, e.w))
					}
					// The blocking call runs after the queued ones, while they may still run.
					b := make([]float64, 3+k%4)
					if err := Allreduce(e.ctx, e.w, send, b, sum); err != nil {
						return fmt.Errorf("round %d: blocking Allreduce after nonblocking calls: %w", k, err)
					}
					want = append(want, b)
					if ok, err := reqs[len(reqs)-1].Test(); !ok || err != nil {
						return fmt.Errorf("round %d: the blocking call returned before the nonblocking calls started earlier finished (%v, %v)", k, ok, err)
					}
				}
				if err := WaitAll(e.ctx, reqs); err != nil {
					return err
				}
				for k := range rounds {
					if !slices.Equal(got[k], want[k]) {
						return fmt.Errorf("round %d: Iallreduce gave %v, Allreduce %v", k, got[k], want[k])
					}
				}
				return nil
			})
		})
	}
}

// TestNonblockingOverlap: rank 0 starts an Iallreduce and computes, not calling the
// library, until every other rank's Wait on the matching Iallreduce has returned; the
// others start theirs only once rank 0's Iallreduce has returned. So their Waits can
// return only if rank 0's call progresses in the background (an Iallreduce that did its
// work before returning, or in Wait, would leave every rank waiting). Rank 0 sets done
// after its computation; the others check that it is still unset when their Wait
// returns.
func TestNonblockingOverlap(t *testing.T) {
	for _, l := range append(nbLayouts, struct {
		name string
		n    int
		opt  runtimetest.Options
	}{"shm-big", 2, runtimetest.Options{Transport: "shm"}}) {
		t.Run(l.name, func(t *testing.T) {
			n := 1000
			if l.name == "shm-big" {
				n = 1 << 17 // the chunked shm algorithm, several steps
			}
			var done atomic.Bool
			var waited atomic.Int32
			started := make(chan struct{})   // closed by rank 0 once its Iallreduce returned
			computing := make(chan struct{}) // closed by the last rank whose Wait returned
			runJob(t, l.n, l.opt, 30*time.Second, func(e rankEnv) error {
				send, recv := nbInput(e.r, n, 0), make([]float64, n)
				var req *Request
				var err error
				if e.r == 0 {
					req = Iallreduce(e.ctx, e.w, send, recv, Sum[float64]())
					close(started)
					computeUntil(computing)
					done.Store(true)
					err = req.Wait(e.ctx)
				} else {
					<-started // rank 0 computes from here on
					req = Iallreduce(e.ctx, e.w, send, recv, Sum[float64]())
					err = req.Wait(e.ctx)
					if done.Load() {
						err = errors.Join(err, errors.New("rank 0 finished computing before this rank's Wait returned"))
					}
					if int(waited.Add(1)) == e.p-1 {
						close(computing)
					}
				}
				if err != nil {
					return err
				}
				want := make([]float64, n)
				if err := Allreduce(e.ctx, e.w, send, want, Sum[float64]()); err != nil {
					return err
				}
				if !slices.Equal(recv, want) {
					return errors.New("Iallreduce's result differs from Allreduce's")
				}
				return nil
			})
		})
	}
}

// computeSink keeps computeUntil's arithmetic from being optimized away.
var computeSink atomic.Uint64

// computeUntil computes, calling no library function, until stop is closed.
func computeUntil(stop <-chan struct{}) {
	x := uint64(1)
	for {
		select {
		case <-stop:
			computeSink.Store(x)
			return
		default:
		}
		for range 1000 {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
}

// TestNonblockingPeerFailure: ranks 1 and 2 start an Iallreduce and an Ibarrier that
// rank 0 never starts; when rank 0 fails, both Requests fail at both ranks with its
// *runtime.ProcError.
func TestNonblockingPeerFailure(t *testing.T) {
	for _, opt := range []runtimetest.Options{{Transport: "shm"}, {Transport: "tcp"}} {
		t.Run(opt.Transport, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(20*time.Second))
			defer cancel()
			j, err := runtimetest.Start(ctx, 3, opt)
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				fctx, stop := context.WithTimeout(context.Background(), testbudget.Scale(2*time.Second))
				defer stop()
				j.Finalize(fctx) // rank 0 counts as failed: errors expected
				j.Close()
			}()
			var reqs [][]*Request
			for _, w := range j.Worlds[1:] {
				reqs = append(reqs, []*Request{
					Iallreduce(ctx, w, nil, make([]float64, 1000), Sum[float64]()),
					Ibarrier(ctx, w),
				})
			}
			for _, r := range []int{1, 2} {
				j.Notify(r, pmi.Event{Kind: pmi.ProcFailed, Rank: 0, Host: "node0", Code: 9, Cause: "killed by signal 9"})
			}
			for i, rs := range reqs {
				for k, r := range rs {
					err := r.Wait(ctx)
					var pe *runtime.ProcError
					if !errors.Is(err, runtime.ErrProcFailed) || !errors.As(err, &pe) || pe.Rank != 0 {
						t.Errorf("rank %d, request %d: got %v, want a *runtime.ProcError for rank 0", i+1, k, err)
					}
				}
			}
		})
	}
}

// TestNonblockingWaitCancel: a Wait whose ctx ends returns ctx's error and leaves the
// Request active (Test reports it unfinished: the peer has not started its call yet); a
// later Wait completes it.
func TestNonblockingWaitCancel(t *testing.T) {
	for _, opt := range []runtimetest.Options{{Transport: "shm"}, {Transport: "tcp"}} {
		t.Run(opt.Transport, func(t *testing.T) {
			checked := make(chan struct{})
			runJob(t, 2, opt, 30*time.Second, func(e rankEnv) error {
				if e.r == 1 {
					<-checked
				}
				send, recv := nbInput(e.r, 8, 0), make([]float64, 8)
				req := Iallreduce(e.ctx, e.w, send, recv, Sum[float64]())
				if e.r == 0 {
					cctx, cancel := context.WithCancel(e.ctx)
					cancel()
					err := req.Wait(cctx)
					allErr := WaitAll(cctx, []*Request{req})
					ok, terr := req.Test()
					allOK, allTErr := TestAll([]*Request{nil, req})
					close(checked)
					switch {
					case !errors.Is(err, context.Canceled):
						return fmt.Errorf("Wait with a cancelled ctx returned %v, want context.Canceled", err)
					case !errors.Is(allErr, context.Canceled):
						return fmt.Errorf("WaitAll with a cancelled ctx returned %v, want context.Canceled", allErr)
					case allOK || allTErr != nil:
						return fmt.Errorf("TestAll after the cancelled Wait: %v, %v; want unfinished", allOK, allTErr)
					case ok || terr != nil:
						return fmt.Errorf("Test after the cancelled Wait: %v, %v; want the Request still active", ok, terr)
					}
				}
				if err := req.Wait(e.ctx); err != nil {
					return err
				}
				want := make([]float64, 8)
				for r := range 2 {
					for i, v := range nbInput(r, 8, 0) {
						want[i] += v
					}
				}
				if !slices.Equal(recv, want) {
					return fmt.Errorf("got %v, want %v", recv, want)
				}
				return nil
			})
		})
	}
}

// TestNonblockingMisuse: a nil World's Request, and one started with a nil context,
// fail with ErrInvalid at Wait; Start and Free refuse a nonblocking Request; nil Requests
// count as finished.
func TestNonblockingMisuse(t *testing.T) {
	r := Iallreduce(context.Background(), nil, nil, make([]float64, 1), Sum[float64]())
	if err := r.Wait(context.Background()); !errors.Is(err, runtime.ErrInvalid) {
		t.Errorf("Iallreduce on a nil World: Wait returned %v, want ErrInvalid", err)
	}
	if err := r.Start(context.Background()); !errors.Is(err, runtime.ErrInvalid) {
		t.Errorf("Start on a nonblocking Request returned %v, want ErrInvalid", err)
	}
	if err := r.Free(); !errors.Is(err, runtime.ErrInvalid) {
		t.Errorf("Free on a nonblocking Request returned %v, want ErrInvalid", err)
	}
	runJob(t, 1, runtimetest.Options{}, 10*time.Second, func(e rankEnv) error {
		//lint:ignore SA1012 a nil context is the misuse under test
		if err := Ibarrier(nil, e.w).Wait(e.ctx); !errors.Is(err, runtime.ErrInvalid) {
			return fmt.Errorf("Ibarrier with a nil context: Wait returned %v, want ErrInvalid", err)
		}
		return Ibarrier(e.ctx, e.w).Wait(e.ctx)
	})
	if ok, err := TestAll([]*Request{nil}); !ok || err != nil {
		t.Errorf("TestAll of a nil Request: %v, %v", ok, err)
	}
	if err := WaitAll(context.Background(), []*Request{nil, r}); !errors.Is(err, runtime.ErrInvalid) {
		t.Errorf("WaitAll: %v, want the nil World's ErrInvalid", err)
	}
}

// TestNonblockingSizes starts Iallreduce calls of sizes across the algorithms' thresholds
// (the shm chunks, recursive doubling, the rendezvous ones), all outstanding at once with
// a blocking Bcast among them, and checks each against the reference sum.
func TestNonblockingSizes(t *testing.T) {
	sizes := []int{1, 600, 1 << 12, 1 << 16, 3, 70_000, 1 << 11}
	for _, l := range nbLayouts {
		t.Run(l.name, func(t *testing.T) {
			runJob(t, l.n, l.opt, 60*time.Second, func(e rankEnv) error {
				reqs := make([]*Request, len(sizes))
				recvs := make([][]float64, len(sizes))
				for i, n := range sizes {
					recvs[i] = make([]float64, n)
					reqs[i] = Iallreduce(e.ctx, e.w, nbInput(e.r, n, i), recvs[i], Sum[float64]())
					if i == len(sizes)/2 {
						b := []int64{int64(e.r)}
						if err := Bcast(e.ctx, e.w, b, 1); err != nil || b[0] != 1 {
							return fmt.Errorf("Bcast among the Iallreduces: %v, %v", b, err)
						}
					}
				}
				if err := WaitAll(e.ctx, reqs); err != nil {
					return err
				}
				for i, n := range sizes {
					want := make([]float64, n)
					for r := range e.p {
						for k, v := range nbInput(r, n, i) {
							want[k] += v
						}
					}
					if !slices.Equal(recvs[i], want) {
						return fmt.Errorf("Iallreduce of %d elements: wrong sum", n)
					}
				}
				return nil
			})
		})
	}
}
