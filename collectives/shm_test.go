package collectives

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/collectives/internal/hostgroup"
	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/pmi"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/runtimetest"
)

// shmCounts cross the algorithm's boundaries: empty, one element, the one-step limit
// (hostgroup.SmallMax bytes of 8-byte elements) and one past it, a vector of a few chunks
// (checked with fewer operators: the reference is costly under the race detector).
var shmCounts = []int{0, 1, 7, hostgroup.SmallMax / 8, hostgroup.SmallMax/8 + 1, 3000, 70001}

// shmSuite checks Allreduce over types and operators (non-commutative ones included),
// in place and not.
func shmSuite(e rankEnv, counts []int) error {
	for k, n := range counts {
		in := k%2 == 0
		errs := []error{
			checkAllreduce(e, floatCases[float64]()[0], n, in),
			checkAllreduce(e, affineCase[int64](), n, !in),
		}
		if n <= 3000 {
			errs = append(errs,
				checkAllreduce(e, floatCases[float32]()[3], n, !in),
				checkAllreduce(e, intCases[int32]()[6], n, !in),
				checkAllreduce(e, affineCase[uint64](), n, in),
				checkAllreduce(e, intCases[int8]()[1], n, !in),
				checkAllreduce(e, intCases[uint16]()[2], n, in),
				checkAllreduce(e, complexCases()[1], n, in))
		}
		for _, err := range errs {
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// TestAllreduceSHM checks the shared-memory Allreduce against the sequential reference
// on 1 to 9 ranks, and long vectors (several chunks, growing the scratch) on a few.
func TestAllreduceSHM(t *testing.T) {
	for p := 1; p <= 9; p++ {
		t.Run(fmt.Sprintf("p=%d", p), func(t *testing.T) {
			runJob(t, p, runtimetest.Options{Transport: "shm"}, 40*time.Second, func(e rankEnv) error {
				forceAllreduce(e.w, algoSHM)
				counts := shmCounts
				if p > 4 && p != 7 { // several chunks: enough with a few rank counts
					counts = counts[:len(counts)-1]
				}
				if err := shmSuite(e, counts); err != nil {
					return err
				}
				if p != 2 && p != 3 {
					return nil
				}
				const n = 2<<20/8 + 5 // about 2 MiB of float64: eight chunks
				for _, err := range []error{
					checkAllreduce(e, floatCases[float64]()[0], n, false),
					checkAllreduce(e, affineCase[int64](), n, true),
					checkAllreduce(e, intCases[int8]()[0], 1<<20+3, false), // 1 MiB of bytes, odd
					checkAllreduce(e, floatCases[float64]()[0], 5, true),   // back to short
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

// TestAllreduceHier checks the hierarchical Allreduce on pretend hosts: two of two
// ranks, three uneven ones, and hosts whose ranks are not consecutive (where a
// non-commutative operator falls back to a point-to-point algorithm).
func TestAllreduceHier(t *testing.T) {
	layouts := [][]string{
		{"a", "a", "b", "b"},
		{"a", "a", "a", "b", "c", "c"},
		{"a", "b", "a", "b", "b"},
		{"a", "b", "c"}, // a leader per host and nothing to share: auto picks p2p
	}
	for _, hosts := range layouts {
		t.Run(strings.Join(hosts, ""), func(t *testing.T) {
			runJob(t, len(hosts), runtimetest.Options{Hosts: hosts}, 40*time.Second, func(e rankEnv) error {
				for _, a := range []algo{algoAuto, algoHier} {
					forceAllreduce(e.w, a)
					if err := shmSuite(e, []int{0, 7, hostgroup.SmallMax/8 + 1, 70001}); err != nil {
						return fmt.Errorf("%v: %w", a, err)
					}
				}
				s, _ := stateOf(e.w)
				if l := s.local; len(l.host) > 1 && (l.onHost == nil || !l.onHost.Status().Ready) {
					return fmt.Errorf("rank %d: the hierarchical algorithm did not run on host %v", e.r, l.host)
				}
				forceAllreduce(e.w, algoSHM)
				err := Allreduce(e.ctx, e.w, nil, make([]float64, 3), Sum[float64]())
				if !errors.Is(err, runtime.ErrConfig) || !strings.Contains(err.Error(), "shm") {
					return fmt.Errorf("forced shm across hosts: got %v, want an ErrConfig error", err)
				}
				forceAllreduce(e.w, algoAuto)
				return Barrier(e.ctx, e.w)
			})
		})
	}
}

// TestAllreduceSHMMismatch: different counts fail with ErrMismatch on every rank, and
// the next (matching) call works: the scratch is set up again.
func TestAllreduceSHMMismatch(t *testing.T) {
	runJob(t, 3, runtimetest.Options{Transport: "shm"}, 30*time.Second, func(e rankEnv) error {
		for _, n := range []int{7, 5000} {
			m := n
			if e.r == 1 {
				m++
			}
			ctx, cancel := context.WithTimeout(e.ctx, 2*time.Second)
			err := Allreduce(ctx, e.w, make([]int32, m), make([]int32, m), Sum[int32]())
			cancel()
			if !errors.Is(err, ErrMismatch) || !strings.HasPrefix(err.Error(), "collectives: allreduce: ") {
				return fmt.Errorf("n=%d: got %v, want ErrMismatch", n, err)
			}
			if err := checkAllreduce(e, floatCases[float64]()[0], n, false); err != nil {
				return fmt.Errorf("after the mismatch: %w", err)
			}
		}
		return nil
	})
}

// TestAllreduceSHMPeerFailure: ranks waiting in the shm algorithm for a rank that fails
// end with its *runtime.ProcError, never hang.
func TestAllreduceSHMPeerFailure(t *testing.T) {
	for _, n := range []int{1, 100000} {
		t.Run(fmt.Sprintf("n=%d", n), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(20*time.Second))
			defer cancel()
			j, err := runtimetest.Start(ctx, 3, runtimetest.Options{Transport: "shm"})
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				fctx, stop := context.WithTimeout(context.Background(), 2*time.Second)
				defer stop()
				j.Finalize(fctx) // rank 0 counts as failed: errors expected
				j.Close()
			}()
			errs := make(chan error, 3)
			for _, w := range j.Worlds {
				go func() { errs <- Allreduce(ctx, w, nil, make([]float64, n), Sum[float64]()) }()
			}
			for range 3 { // set up the scratch
				if err := <-errs; err != nil {
					t.Fatal(err)
				}
			}
			for _, w := range j.Worlds[1:] { // rank 0 never comes
				go func() { errs <- Allreduce(ctx, w, nil, make([]float64, n), Sum[float64]()) }()
			}
			time.Sleep(20 * time.Millisecond) // past the spin: asleep on the doorbell
			for _, r := range []int{1, 2} {
				j.Notify(r, pmi.Event{Kind: pmi.ProcFailed, Rank: 0, Host: "node0", Code: 9, Cause: "killed by signal 9"})
			}
			for range 2 {
				select {
				case err := <-errs:
					var pe *runtime.ProcError
					if !errors.Is(err, runtime.ErrProcFailed) || !errors.As(err, &pe) || pe.Rank != 0 {
						t.Fatalf("got %v, want a *runtime.ProcError for rank 0", err)
					}
					t.Logf("as expected: %v", err)
				case <-time.After(5 * time.Second):
					t.Fatal("still blocked 5 s after rank 0 failed")
				}
			}
		})
	}
}

// TestAllreduceSHMZeroAllocs: the shm Allreduce allocates nothing in steady state, short
// or long.
func TestAllreduceSHMZeroAllocs(t *testing.T) {
	for _, n := range []int{1, 1 << 17} {
		t.Run(fmt.Sprintf("n=%d", n), func(t *testing.T) {
			j, err := runtimetest.Start(context.Background(), 2, runtimetest.Options{Transport: "shm"})
			if err != nil {
				t.Fatal(err)
			}
			defer j.Close()
			defer j.Finalize(context.Background())
			ctx := context.Background()
			const warm, runs = 5, 50
			op := Sum[float64]()
			other := make(chan error, 1)
			go func() {
				buf := make([]float64, n)
				for range warm + runs + 1 {
					if err := Allreduce(ctx, j.Worlds[1], nil, buf, op); err != nil {
						other <- err
						return
					}
				}
				other <- nil
			}()
			w, buf := j.Worlds[0], make([]float64, n)
			for range warm {
				Allreduce(ctx, w, nil, buf, op)
			}
			if a := testing.AllocsPerRun(runs, func() {
				if err := Allreduce(ctx, w, nil, buf, op); err != nil {
					t.Fatal(err)
				}
			}); a != 0 {
				t.Errorf("%v allocations per Allreduce of %d float64s", a, n)
			}
			if err := <-other; err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestSelectLocality(t *testing.T) {
	one := locality{oneHost: true, hosts: 1, shared: true, contiguous: true}
	two := locality{hosts: 2, shared: true, contiguous: true}
	mixed := locality{hosts: 2, shared: true}
	solo := locality{hosts: 3, contiguous: true}
	lanes4 := locality{hosts: 4, shared: true, contiguous: true, even: true}
	cases := []struct {
		force       algo
		bytes, p    int
		commutative bool
		loc         locality
		want        algo
	}{
		{algoAuto, 8, 2, true, one, algoSHM},
		{algoAuto, 64 << 20, 9, false, one, algoSHM},
		{algoAuto, 8, 4, false, two, algoHier},
		{algoAuto, 8, 4, true, mixed, algoHier},
		{algoAuto, 8, 4, false, mixed, algoRecdbl},
		{algoAuto, 1 << 20, 4, false, mixed, algoRabenseifner},
		{algoAuto, 8, 3, true, solo, algoRecdbl},
		{algoHier, 8, 4, false, mixed, algoRabenseifner},
		{algoSHM, 8, 4, true, two, algoSHM}, // fails at the call, saying why
		{algoRing, 1 << 20, 3, true, one, algoRing},
		{algoAuto, 1 << 20, 3, true, solo, algoDirect},
		{algoAuto, 8 << 10, 4, true, locality{hosts: 4}, algoDirect},
		{algoAuto, 4 << 10, 4, true, locality{hosts: 4}, algoRecdbl},
		{algoAuto, 1 << 20, 3, false, solo, algoRabenseifner},                                              // arrival order
		{algoAuto, 1 << 20, 5, true, locality{hosts: 5}, algoRing},                                         // beyond allreduceDirectMaxRanks
		{algoAuto, 1 << 20, 8, true, locality{hosts: 4, shared: true, contiguous: true}, algoRabenseifner}, // not a host each
		{algoDirect, 1 << 20, 4, false, one, algoRabenseifner},
		{algoAuto, 1 << 20, 8, true, lanes4, algoLanes},
		{algoAuto, 1<<20 - 8, 8, true, lanes4, algoHier},
		{algoAuto, 1 << 20, 8, false, lanes4, algoRabenseifner},                                                         // arrival order
		{algoAuto, 1 << 20, 16, true, locality{hosts: 8, shared: true, contiguous: true, even: true}, algoRabenseifner}, // beyond allreduceDirectMaxRanks hosts
		{algoAuto, 1 << 20, 12, true, locality{hosts: 4, shared: true, contiguous: true, even: true}, algoHier},         // not a power of two
		{algoLanes, 1 << 20, 8, false, lanes4, algoRabenseifner},
		{algoLanes, 8, 3, true, mixed, algoLanes}, // fails at the call, saying why
	}
	for _, c := range cases {
		if got := selectAllreduce(c.force, c.bytes, c.bytes/8, c.p, c.commutative, c.loc); got != c.want {
			t.Errorf("selectAllreduce(%v, %d B, p=%d, commutative %v, %+v) = %v, want %v", c.force, c.bytes, c.p, c.commutative, c.loc, got, c.want)
		}
	}
	for _, v := range []string{"shm", "hier", "direct", "lanes"} {
		if _, err := parseAllreduceEnv(v); err != nil {
			t.Errorf("%q: %v", v, err)
		}
	}
}

// benchSHM times an Allreduce of n float64s between 2 in-process ranks with the shm
// algorithm; rank 0 is timed, rank 1 runs the same number of calls.
func benchSHM(b *testing.B, n int) {
	j, err := runtimetest.Start(context.Background(), 2, runtimetest.Options{Transport: "shm"})
	if err != nil {
		b.Fatal(err)
	}
	defer j.Close()
	defer j.Finalize(context.Background())
	ctx, op := context.Background(), Sum[float64]()
	bufs := [2][2][]float64{{make([]float64, n), make([]float64, n)}, {make([]float64, n), make([]float64, n)}}
	run := func(w *runtime.World, iters int) error {
		forceAllreduce(w, algoSHM)
		send, recv := bufs[w.Rank()][0], bufs[w.Rank()][1]
		for range iters {
			if err := Allreduce(ctx, w, send, recv, op); err != nil {
				return err
			}
		}
		return nil
	}
	other := make(chan error, 1)
	go func() { other <- run(j.Worlds[1], b.N+1) }()
	if err := run(j.Worlds[0], 1); err != nil { // warm-up: sets the scratch up
		b.Fatal(err)
	}
	b.SetBytes(int64(8 * n))
	b.ReportAllocs()
	b.ResetTimer()
	if err := run(j.Worlds[0], b.N); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	if err := <-other; err != nil {
		b.Fatal(err)
	}
}

func BenchmarkAllreduceSHM(b *testing.B) {
	for _, c := range []struct {
		name string
		n    int
	}{{"8B", 1}, {"1MiB", 1 << 17}, {"16MiB", 1 << 21}, {"64MiB", 1 << 23}} {
		b.Run(c.name, func(b *testing.B) { benchSHM(b, c.n) })
	}
}
