package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/gorma-hpc/gorma/apps/internal/benchkit"
	"github.com/gorma-hpc/gorma/collectives"
	"github.com/gorma-hpc/gorma/runtime"
)

// overlapSize16M is the overlap test's vector size unless --sizes, --min-size or
// --max-size say otherwise.
const overlapSize16M = 16 << 20

// overlapRow is one size's overlap figures (--test overlap): each rank's mean per
// iteration in microseconds, averaged over the ranks, and the overlap computed from
// those averages. The C twin writes the same fields.
type overlapRow struct {
	Bytes      int     `json:"bytes"`
	Iterations int     `json:"iterations"`
	Passes     int     `json:"compute_passes"` // sweeps of the compute kernel per iteration
	Polls      int     `json:"polls"`          // Test calls inside the overlapped compute
	CollUS     float64 `json:"coll_us"`        // blocking Allreduce alone
	CompUS     float64 `json:"comp_us"`        // the compute kernel alone
	OvlUS      float64 `json:"ovl_us"`         // Iallreduce, the compute kernel, Wait
	SumUS      float64 `json:"blocking_sum_us"`
	OverlapPct float64 `json:"overlap_pct"` // (coll + comp - ovl) / min(coll, comp) * 100
}

var overlapHeader = fmt.Sprintf("%-12s %10s %12s %12s %12s %12s %10s %8s", "#bytes", "iterations", "coll_us", "comp_us", "ovl_us", "sum_us", "overlap_%", "passes")

func formatOverlap(r overlapRow) string {
	return fmt.Sprintf("%-12d %10d %12.3f %12.3f %12.3f %12.3f %10.1f %8d", r.Bytes, r.Iterations, r.CollUS, r.CompUS, r.OvlUS, r.SumUS, r.OverlapPct, r.Passes)
}

// overlapPct is the OSU-style overlap: the share of the shorter of the two that the
// overlapped run hides, 100 when it takes as long as the longer one alone, 0 when it
// takes their sum (negative when it takes longer).
func overlapPct(coll, comp, ovl float64) float64 {
	if m := min(coll, comp); m > 0 {
		return (coll + comp - ovl) / m * 100
	}
	return 0
}

// kernelLen is the length of the compute kernel's array: 32 KiB, cache-resident, so that
// the kernel is arithmetic and does not compete with the Allreduce for memory bandwidth.
const kernelLen = 4096

// kernel is the compute of the overlap test: passes sweeps of float64 arithmetic over a
// private array. It calls nothing, so the Allreduce progresses during it only if the
// library progresses on its own. Deterministic: every sweep does the same work.
type kernel struct {
	a      []float64
	passes int
}

func newKernel() *kernel {
	k := &kernel{a: make([]float64, kernelLen), passes: 1}
	for i := range k.a {
		k.a[i] = 1
	}
	return k
}

// sweep runs n passes.
func (k *kernel) sweep(n int) {
	a := k.a
	for range n {
		for i := range a {
			a[i] = a[i]*0.999999 + 1e-6
		}
	}
}

// run runs the kernel's passes, in polls+1 chunks with poll called between them.
func (k *kernel) run(polls int, poll func()) {
	done := 0
	for c := range polls + 1 {
		n := k.passes*(c+1)/(polls+1) - done
		k.sweep(n)
		done += n
		if c < polls {
			poll()
		}
	}
}

// calibrate sets k.passes so that the kernel takes about target on this rank. It doubles
// a trial count until the trial takes at least a quarter of target (and 100 us), scales
// it to target, and scales once more by a run of that count.
func (k *kernel) calibrate(target time.Duration) {
	scale := func(n int) int {
		t0 := mono()
		k.sweep(n)
		d := mono() - t0
		if d < target/4 || d < 100*time.Microsecond {
			return 0
		}
		return max(int(float64(n)*float64(target)/float64(d)), 1)
	}
	n := 1
	for ; n < 1<<30; n *= 2 {
		if p := scale(n); p > 0 {
			n = p
			break
		}
	}
	k.passes = n
	if p := scale(n); p > 0 {
		k.passes = p
	}
}

// calibrationRounds bounds the trial runs of the kernel that correct its count.
const calibrationRounds = 3

// overlapSize measures one size: t_coll (Allreduce alone), t_comp (the kernel, calibrated
// to the warm-up's Allreduce time, alone) and t_ovl (Iallreduce, the kernel, Wait). Each
// measured iteration runs the three in turn, each timed on its own and followed by a
// Barrier outside the timed region, so that a change of the machine's speed (other work
// on a shared host) hits all three alike.
func overlapSize(ctx context.Context, w *runtime.World, o options, k *kernel, size int) (overlapRow, error) {
	n := size / 8
	send, recv, recvOvl := make([]float64, n), make([]float64, n), make([]float64, n)
	fill(send, w.Rank())
	iters := scaled(o.iters, o.minIters, size)
	warmup := max(iters/10, 3)
	sum := collectives.Sum[float64]()
	timed := func(count int, op func() error) (time.Duration, error) {
		var total time.Duration
		for range count {
			t0 := mono()
			err := op()
			total += mono() - t0
			if err == nil {
				err = collectives.Barrier(ctx, w)
			}
			if err != nil {
				return 0, err
			}
		}
		return total, nil
	}
	// meanOver is the ranks' mean of d / count, in seconds (complete at every rank).
	meanOver := func(d time.Duration, count int) (float64, error) {
		m := []float64{d.Seconds() / float64(count)}
		err := collectives.Allreduce(ctx, w, nil, m, sum)
		return m[0] / float64(w.Size()), err
	}
	coll := func() error { return collectives.Allreduce(ctx, w, send, recv, sum) }
	comp := func() error { k.run(0, nil); return nil }
	ovl := func() error {
		req := collectives.Iallreduce(ctx, w, send, recvOvl, sum)
		var testErr error
		k.run(o.polls, func() {
			if _, err := req.Test(); err != nil && testErr == nil {
				testErr = err
			}
		})
		if err := req.Wait(ctx); err != nil {
			return err
		}
		return testErr
	}
	warm, err := timed(warmup, coll)
	if err != nil {
		return overlapRow{}, err
	}
	if iters, err = capIters(ctx, w, o, iters, warm, warmup); err != nil {
		return overlapRow{}, err
	}
	goal, err := meanOver(warm, warmup)
	if err != nil {
		return overlapRow{}, err
	}
	if err := calibrateJob(ctx, w, k, goal, warmup, timed, meanOver); err != nil {
		return overlapRow{}, err
	}
	if _, err := timed(1, ovl); err != nil { // the first Iallreduce starts the World's queue
		return overlapRow{}, err
	}
	clear(recvOvl)
	var t [3]time.Duration
	for range iters {
		for i, op := range []func() error{coll, comp, ovl} {
			d, err := timed(1, op)
			if err != nil {
				return overlapRow{}, err
			}
			t[i] += d
		}
	}
	if err := check(recvOvl, w.Size()); err != nil {
		return overlapRow{}, fmt.Errorf("wrong Iallreduce result: %w", err)
	}
	var us [3]float64
	for i := range t {
		if us[i], err = meanOver(t[i], iters); err != nil {
			return overlapRow{}, err
		}
		us[i] *= 1e6
	}
	r := overlapRow{Bytes: size, Iterations: iters, Passes: k.passes, Polls: o.polls,
		CollUS: benchkit.Round3(us[0]), CompUS: benchkit.Round3(us[1]), OvlUS: benchkit.Round3(us[2]),
		SumUS: benchkit.Round3(us[0] + us[1]), OverlapPct: benchkit.Round3(overlapPct(us[0], us[1], us[2]))}
	return r, nil
}

// calibrateJob sets k.passes, the same at every rank, so that the kernel takes about goal
// seconds: every rank calibrates (kernel.calibrate) and the largest count is everyone's.
// Then, while the ranks' mean over trials runs of the kernel is off goal by more than a
// tenth, the count scales by their ratio, at most calibrationRounds trials in all (a
// machine shared with other work makes a single trial a poor guide). Every rank computes
// the same ratio.
func calibrateJob(ctx context.Context, w *runtime.World, k *kernel, goal float64, trials int,
	timed func(int, func() error) (time.Duration, error), meanOver func(time.Duration, int) (float64, error)) error {
	k.calibrate(time.Duration(goal * 1e9))
	passes := []int64{int64(k.passes)}
	if err := collectives.Allreduce(ctx, w, nil, passes, collectives.Max[int64]()); err != nil {
		return err
	}
	k.passes = int(passes[0])
	for round := 1; round <= calibrationRounds; round++ {
		d, err := timed(trials, func() error { k.run(0, nil); return nil })
		if err != nil {
			return err
		}
		mean, err := meanOver(d, trials)
		if err != nil {
			return err
		}
		ratio := mean / goal
		if math.Abs(ratio-1) <= 0.1 || !(ratio > 0) {
			return nil
		}
		k.passes = max(int(float64(k.passes)/ratio), 1)
	}
	return nil
}

// overlap runs the overlap test over o.sizes, printing each row to text.
func overlap(ctx context.Context, w *runtime.World, o options, text io.Writer) ([]overlapRow, error) {
	fmt.Fprintf(text, "\n# overlap: Iallreduce (float64 sum), a compute kernel calibrated to the Allreduce's time (%d Test calls in it), Wait\n", o.polls)
	fmt.Fprintf(text, "# coll: Allreduce alone; comp: the kernel alone; ovl: overlapped; sum = coll + comp; overlap_%% = (sum - ovl) / min(coll, comp) * 100\n%s\n", overlapHeader)
	b := &buffers{rank: w.Rank(), size: w.Size(), send: make([]float64, o.sizes[0]/8), recv: make([]float64, o.sizes[0]/8)}
	fill(b.send, b.rank)
	if err := warmJob(ctx, w, options{sizes: o.sizes[:1]}, b); err != nil {
		return nil, fmt.Errorf("overlap warm-up: %w", err)
	}
	k := newKernel()
	var rows []overlapRow
	for _, size := range o.sizes {
		r, err := overlapSize(ctx, w, o, k, size)
		if err != nil {
			return rows, fmt.Errorf("overlap at %d bytes: %w", size, err)
		}
		rows = append(rows, r)
		fmt.Fprintln(text, formatOverlap(r))
	}
	return rows, nil
}
