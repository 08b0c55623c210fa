package collectives

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/runtimetest"
)

var algos = []algo{algoRecdbl, algoRabenseifner, algoRing, algoDirect}

// everyType runs suite for every element type and operator.
func everyType(e rankEnv, counts []int) error {
	for _, f := range []func() error{
		func() error { return suite(e, intCases[int8](), counts) },
		func() error { return suite(e, intCases[uint16](), counts) },
		func() error { return suite(e, intCases[int32](), counts) },
		func() error { return suite(e, append(intCases[int64](), affineCase[int64]()), counts) },
		func() error { return suite(e, []opCase[uint64]{affineCase[uint64]()}, counts) },
		func() error { return suite(e, floatCases[float32](), counts) },
		func() error { return suite(e, floatCases[float64](), counts) },
		func() error { return suite(e, complexCases(), counts) },
	} {
		if err := f(); err != nil {
			return err
		}
	}
	return nil
}

// everyAlgo runs Allreduce with each algorithm forced, over a few types and operators.
func everyAlgo(e rankEnv, counts []int) error {
	defer forceAllreduce(e.w, algoAuto)
	for _, a := range algos {
		forceAllreduce(e.w, a)
		for k, n := range counts {
			in := k%2 == 0
			for _, err := range []error{
				checkAllreduce(e, floatCases[float64]()[0], n, in),
				checkAllreduce(e, intCases[int32]()[6], n, !in),
				checkAllreduce(e, affineCase[int64](), n, in),
				checkAllreduce(e, intCases[int8]()[1], n, !in),
				checkAllreduce(e, complexCases()[1], n, in),
			} {
				if err != nil {
					return fmt.Errorf("%v: %w", a, err)
				}
			}
		}
	}
	return nil
}

// TestCollectives checks every operation against the sequential reference on 1 to 9
// ranks, every type and operator, in place and not.
func TestCollectives(t *testing.T) {
	counts := []int{0, 1, 7, 3000}
	for p := 1; p <= 9; p++ {
		t.Run(fmt.Sprintf("p=%d", p), func(t *testing.T) {
			runJob(t, p, runtimetest.Options{Transport: "shm"}, 40*time.Second, func(e rankEnv) error {
				if err := everyType(e, counts); err != nil {
					return err
				}
				return everyAlgo(e, counts)
			})
		})
	}
}

// TestLarge checks vectors of about 1 MiB (the long-message algorithms and rendezvous).
func TestLarge(t *testing.T) {
	const n = 1 << 17 // float64s: 1 MiB
	sum, aff := floatCases[float64]()[0], affineCase[int64]()
	for _, p := range []int{2, 3, 4} {
		t.Run(fmt.Sprintf("p=%d", p), func(t *testing.T) {
			runJob(t, p, runtimetest.Options{Transport: "shm"}, 40*time.Second, func(e rankEnv) error {
				for _, a := range algos {
					forceAllreduce(e.w, a)
					if err := checkAllreduce(e, sum, n, a == algoRing || a == algoDirect); err != nil {
						return fmt.Errorf("%v: %w", a, err)
					}
				}
				forceAllreduce(e.w, algoAuto)
				for _, err := range []error{
					checkAllreduce(e, aff, n, false),
					checkReduce(e, sum, n, p-1, true),
					checkBcast(e, sum.gen, n+3, 1),
					checkAllgather(e, sum.gen, n/p, false),
					checkReduceScatter(e, sum, n/p, false),
					checkReduceScatter(e, aff, n/p, true),
					checkAlltoall(e, sum.gen, n/p, false),
				} {
					if err != nil {
						return err
					}
				}
				return nil
			})
		})
	}
}

// TestLayouts runs a subset over tcp and over two pretend hosts.
func TestLayouts(t *testing.T) {
	layouts := []struct {
		name string
		n    int
		opt  runtimetest.Options
	}{
		{"shm", 3, runtimetest.Options{Transport: "shm"}},
		{"tcp", 3, runtimetest.Options{Transport: "tcp"}},
		{"hosts", 4, runtimetest.Options{Hosts: []string{"a", "a", "b", "b"}}},
	}
	for _, l := range layouts {
		t.Run(l.name, func(t *testing.T) {
			runJob(t, l.n, l.opt, 40*time.Second, func(e rankEnv) error {
				counts := []int{1, 3000, 40000}
				if err := everyAlgo(e, counts); err != nil {
					return err
				}
				if err := suite(e, []opCase[float64]{floatCases[float64]()[0]}, counts); err != nil {
					return err
				}
				return suite(e, []opCase[int64]{affineCase[int64]()}, counts)
			})
		})
	}
}

// TestMismatch: ranks passing different counts get errors, never a wrong answer.
func TestMismatch(t *testing.T) {
	type job struct {
		name string
		run  func(ctx context.Context, w *runtime.World, n int) error
	}
	jobs := []job{
		{"bcast", func(ctx context.Context, w *runtime.World, n int) error {
			return Bcast(ctx, w, make([]int32, n), 0)
		}},
		{"allgather", func(ctx context.Context, w *runtime.World, n int) error {
			return Allgather(ctx, w, make([]int32, n), make([]int32, 3*n))
		}},
		{"reduce_scatter", func(ctx context.Context, w *runtime.World, n int) error {
			return ReduceScatter(ctx, w, make([]int32, 3*n), make([]int32, n), Sum[int32]())
		}},
	}
	for _, a := range algos {
		jobs = append(jobs, job{"allreduce-" + a.String(), func(ctx context.Context, w *runtime.World, n int) error {
			forceAllreduce(w, a)
			return Allreduce(ctx, w, make([]int32, n), make([]int32, n), Sum[int32]())
		}})
	}
	clear := make([]atomic.Int32, len(jobs)) // ranks that saw ErrMismatch or ErrTruncated
	runJob(t, 3, runtimetest.Options{Transport: "shm"}, 30*time.Second, func(e rankEnv) error {
		for k, j := range jobs {
			ctx, cancel := context.WithTimeout(e.ctx, testbudget.Scale(time.Second))
			n := 7
			if e.r == 1 {
				n = 8
			}
			err := j.run(ctx, e.w, n)
			cancel()
			// Ranks leave a mismatched call at different times; start the next together.
			if berr := Barrier(e.ctx, e.w); berr != nil {
				return berr
			}
			switch {
			case err == nil && j.name == "bcast" && e.r != 1:
				// Root only sends: it and the ranks whose count matches root's get root's
				// vector, which is right for them; rank 1 must fail.
				continue
			case err == nil:
				return fmt.Errorf("%s: mismatched counts succeeded", j.name)
			case errors.Is(err, ErrMismatch) || errors.Is(err, runtime.ErrTruncated):
				clear[k].Add(1)
			case !errors.Is(err, context.DeadlineExceeded):
				return fmt.Errorf("%s: %w", j.name, err)
			}
			if !strings.HasPrefix(err.Error(), "collectives: "+strings.Split(j.name, "-")[0]+": ") {
				return fmt.Errorf("%s: error does not name the collective: %v", j.name, err)
			}
		}
		return Barrier(e.ctx, e.w)
	})
	for k, j := range jobs {
		if clear[k].Load() == 0 {
			t.Errorf("%s: no rank reported the mismatch (all timed out)", j.name)
		}
	}
}

func TestSelect(t *testing.T) {
	cases := []struct {
		force       algo
		bytes, p    int
		commutative bool
		want        algo
	}{
		{algoAuto, 8, 4, true, algoRecdbl},
		{algoAuto, 8, 3, false, algoRecdbl},
		{algoAuto, 1 << 20, 4, true, algoRabenseifner},
		{algoAuto, 1 << 20, 6, true, algoRing},
		{algoAuto, 1 << 20, 6, false, algoRabenseifner},
		{algoRing, 8, 2, true, algoRing},
		{algoRing, 1 << 20, 3, false, algoRabenseifner},
		{algoRecdbl, 1 << 20, 3, true, algoRecdbl},
	}
	for _, c := range cases {
		if got := selectAllreduce(c.force, c.bytes, c.bytes/8, c.p, c.commutative, locality{}); got != c.want {
			t.Errorf("selectAllreduce(%v, %d B, p=%d, commutative %v) = %v, want %v", c.force, c.bytes, c.p, c.commutative, got, c.want)
		}
	}
	for _, v := range []string{"", "auto", "recdbl", "rabenseifner", "ring"} {
		if _, err := parseAllreduceEnv(v); err != nil {
			t.Errorf("%q: %v", v, err)
		}
	}
	_, err := parseAllreduceEnv("fast")
	if !errors.Is(err, runtime.ErrConfig) || !strings.Contains(err.Error(), EnvAllreduce) || !strings.Contains(err.Error(), "rabenseifner") {
		t.Errorf("bad value: %v", err)
	}
}

func TestEnvOverride(t *testing.T) {
	t.Setenv(EnvAllreduce, "fastest")
	runJob(t, 1, runtimetest.Options{}, 10*time.Second, func(e rankEnv) error {
		err := Allreduce(e.ctx, e.w, []float64{1}, make([]float64, 1), Sum[float64]())
		if !errors.Is(err, runtime.ErrConfig) || !strings.Contains(err.Error(), EnvAllreduce) {
			return fmt.Errorf("GORMA_ALLREDUCE=fastest: %v", err)
		}
		return Bcast(e.ctx, e.w, []float64{1}, 0) // the others are unaffected
	})
}

func TestBadArguments(t *testing.T) {
	runJob(t, 2, runtimetest.Options{Transport: "shm"}, 10*time.Second, func(e rankEnv) error {
		sum := Sum[int32]()
		for _, err := range []error{
			Allreduce(e.ctx, e.w, make([]int32, 2), make([]int32, 3), sum),
			Allreduce(e.ctx, e.w, nil, make([]int32, 3), Op[int32]{}),
			Reduce(e.ctx, e.w, make([]int32, 2), make([]int32, 2), sum, 2),
			Bcast(e.ctx, e.w, make([]int32, 2), -1),
			Allgather(e.ctx, e.w, make([]int32, 2), make([]int32, 3)),
			ReduceScatter(e.ctx, e.w, make([]int32, 3), make([]int32, 2), sum),
			Alltoall(e.ctx, e.w, make([]int32, 3), make([]int32, 3)),
			Barrier(e.ctx, nil),
		} {
			if !errors.Is(err, runtime.ErrInvalid) || !strings.HasPrefix(err.Error(), "collectives: ") {
				return fmt.Errorf("want an ErrInvalid error, got %v", err)
			}
		}
		return Barrier(e.ctx, e.w)
	})
}

// TestZeroAllocs: a small Allreduce, alternating with Barrier as a benchmark's loop
// does, allocates nothing in steady state.
func TestZeroAllocs(t *testing.T) {
	for _, p := range []int{2, 3} {
		t.Run(fmt.Sprintf("p=%d", p), func(t *testing.T) {
			j, err := runtimetest.Start(context.Background(), p, runtimetest.Options{Transport: "shm"})
			if err != nil {
				t.Fatal(err)
			}
			defer j.Close()
			defer j.Finalize(context.Background())
			ctx := context.Background()
			const warm, runs = 100, 500
			op := Sum[float64]()
			others := make(chan error, p)
			for _, w := range j.Worlds[1:] {
				go func() {
					buf := []float64{1}
					for range warm + runs + 1 { // AllocsPerRun calls its function runs+1 times
						if err := Allreduce(ctx, w, nil, buf, op); err != nil {
							others <- err
							return
						}
						if err := Barrier(ctx, w); err != nil {
							others <- err
							return
						}
					}
					others <- nil
				}()
			}
			w, buf := j.Worlds[0], []float64{1}
			for range warm {
				Allreduce(ctx, w, nil, buf, op)
				Barrier(ctx, w)
			}
			if n := testing.AllocsPerRun(runs, func() {
				if err := Allreduce(ctx, w, nil, buf, op); err != nil {
					t.Fatal(err)
				}
				if err := Barrier(ctx, w); err != nil {
					t.Fatal(err)
				}
			}); n != 0 {
				t.Errorf("%v allocations per 8-byte Allreduce and Barrier", n)
			}
			for range p - 1 {
				if err := <-others; err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}
